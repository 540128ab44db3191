"""A regression's training-only flip or rotation that leaves the target as it was (``moved_target_findings``):
a blob's x coordinate regressed from an image flipped left-right as augmentation, its target not turned into
1 - x. The flipped examples teach the model the mirror of the relation validation asks for.

Judged where ``train_transform`` finds a training-only transform of the raw arrays: the relation between
raw array and target is learnt from the untransformed examples (k nearest neighbours on the raw arrays, every
split), and a transformed example's target is compared with what that relation gives for its raw array and
for its transformed one (what the model sees). Warned when the transform moves what the relation gives
(the two differ by ``MOVES`` of the targets' standard deviation on average: the target depends on where things
are) and the targets sit far closer to the raw array's (at most ``CLOSER`` of the distance to the transformed
one's): the input was transformed and the target was not. A target the transform does not move (an age, a
count) says nothing; nor do transformed arrays unlike every stored one (``FAMILIAR``: images all framed one
way, flipped), whose neighbours say nothing of their target."""

from __future__ import annotations

from typing import Any

import numpy as np

from pilot.checks.result import Finding

MOVES = 0.5  # of the targets' standard deviation: the transform changes what the relation predicts
CLOSER = 0.5  # the targets' distance to the raw arrays' predictions, at most this share of the other
MIN_FIT, NEIGHBOURS = 20, 5
FAMILIAR = 1.5  # a transformed array's nearest stored one at most this much farther than its raw array's


def _predictor(raws: np.ndarray, targets: np.ndarray):
    from sklearn.neighbors import KNeighborsRegressor

    return KNeighborsRegressor(min(NEIGHBOURS, len(raws))).fit(raws.reshape(len(raws), -1), targets)


def moved_target_findings(
    name: str, op, field: str, transformed: list[tuple[np.ndarray, float]], plain: list[tuple[np.ndarray, float]]
) -> tuple[list[Finding], dict[str, Any]]:
    """``transformed``: (raw array, target) of the training examples the model sees through ``op`` (``name``);
    ``plain``: those of every example it sees as stored."""
    if len(plain) < MIN_FIT or not transformed:
        return [], {}
    fit = _predictor(np.stack([r for r, _ in plain]), np.array([t for _, t in plain]))
    raws = np.stack([r for r, _ in transformed]).reshape(len(transformed), -1)
    seen = np.stack([op(r) for r, _ in transformed]).reshape(len(transformed), -1)
    # only examples whose transformed array lies among the stored ones as near as its own does: where every
    # stored array is framed one way (a blob always on the left), a flipped one has no neighbour to read
    near = fit.kneighbors(seen, 1)[0][:, 0] <= FAMILIAR * fit.kneighbors(raws, 1)[0][:, 0] + 1e-12
    if near.sum() < MIN_FIT // 2:
        return [], {"transformed_among_stored": int(near.sum())}
    raws, seen = raws[near], seen[near]
    targets = np.array([t for _, t in transformed])[near]
    as_stored, as_seen = fit.predict(raws), fit.predict(seen)
    spread = float(np.std([t for _, t in plain])) or 1.0
    moves = float(np.mean(np.abs(as_stored - as_seen))) / spread
    to_stored, to_seen = float(np.mean(np.abs(targets - as_stored))), float(np.mean(np.abs(targets - as_seen)))
    report = {"transform_moves_targets_by_sd": moves, "distance_to_stored": to_stored, "distance_to_seen": to_seen}
    if moves < MOVES or to_stored > CLOSER * to_seen:
        return [], report
    return [
        Finding(
            f"a {name} applied to {len(transformed)} training examples only leaves their regression targets as they "
            f"were: the targets follow the raw {field!r} (mean distance {to_stored:.3g} to what the untransformed "
            f"examples' relation gives for it), not the {name} the model sees ({to_seen:.3g}), and the {name} moves "
            f"that relation by {moves:.2f} standard deviations of the targets (a position, a direction)",
            detail=f"an augmentation that changes what the target means (a flipped image keeps x where 1 - x is "
            f"due): those examples teach the mirrored relation. Fix: transform the target with the input, or leave "
            f"the {name} out",
        )
    ], report
