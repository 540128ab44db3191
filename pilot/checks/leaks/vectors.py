"""Near-duplicate vectors: standardised features, each example's nearest neighbour in an earlier split
(chunked matrix products), flagged below an RMS distance and a share of the typical one, and closer
than ``near_dup_own_share`` of that earlier example's distance to its own nearest neighbour in its
split: where examples crowd (near-constant silence frames), a close pair across splits is no copy."""

from __future__ import annotations

import numpy as np

from pilot.checks.leaks.model_views import ModelViews, feature_matrix, scalar_labels
from pilot.checks.result import Finding


def _standardise(views: ModelViews, key: str) -> dict[str, np.ndarray]:
    matrices = {s: feature_matrix(views, key, s) for s in views.order()}
    stacked = np.concatenate(list(matrices.values()))
    mean, std = stacked.mean(axis=0), stacked.std(axis=0)
    varies = std > 1e-12 * max(1.0, float(np.abs(stacked).max()))
    return {s: (m[:, varies] - mean[varies]) / std[varies] for s, m in matrices.items()}


def nearest(
    query: np.ndarray, base: np.ndarray, chunk_cells: int = 4_000_000, others: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """For each query row, the index of the nearest base row and the RMS distance per feature
    (``others``: query is base, and each row's nearest other row)."""
    features = max(1, query.shape[1])
    base_sq = (base * base).sum(axis=1)
    best_d, best_i = np.empty(len(query)), np.empty(len(query), dtype=np.int64)
    step = max(1, chunk_cells // max(1, len(base)))
    for start in range(0, len(query), step):
        q = query[start : start + step]
        d2 = (q * q).sum(axis=1)[:, None] + base_sq[None, :] - 2.0 * (q @ base.T)
        if others:
            d2[np.arange(len(q)), start + np.arange(len(q))] = np.inf
        idx = d2.argmin(axis=1)
        best_i[start : start + step] = idx
        best_d[start : start + step] = np.sqrt(np.maximum(d2[np.arange(len(q)), idx], 0.0) / features)
    return best_d, best_i


def vector_near_duplicates(views, key, pairs, reported, limits, note, skipped) -> list[Finding]:
    features = int(np.prod(views.inputs[views.order()[0]][0][key].shape))
    if features > limits.max_vector_features:
        skipped.append(
            f"near-duplicate vectors: {features} features > max_vector_features {limits.max_vector_features}"
        )
        return []
    z = _standardise(views, key)
    warnings = []
    for a, b in pairs:
        if not len(z[a]) or not len(z[b]) or not z[a].shape[1]:
            continue
        if len(z[a]) * len(z[b]) > limits.max_pairs:
            skipped.append(
                f"near-duplicate vectors {a}/{b}: {len(z[a])} x {len(z[b])} pairs > max_pairs {limits.max_pairs}"
            )
            continue
        dist, idx = nearest(z[b], z[a])
        own = nearest(z[a], z[a], others=True)[0] if len(z[a]) > 1 else np.full(len(z[a]), np.inf)
        labels_a, labels_b = scalar_labels(views, a), scalar_labels(views, b)
        typical = float(np.median(dist))
        cutoff = min(limits.near_dup_rms, limits.near_dup_relative * typical)
        hits = [
            (int(idx[j]), j, float(dist[j]))
            for j in np.flatnonzero(dist < cutoff)
            if (b, views.splits[b][j].index) not in reported and dist[j] <= limits.near_dup_own_share * own[idx[j]]
        ]
        same = sum(
            1 for i, j, _ in hits if labels_a is not None and labels_b is not None and labels_a[i] == labels_b[j]
        )
        listed = [
            f"{a} example {views.splits[a][i].index} ~ {b} example {views.splits[b][j].index} (RMS {d:.3g})"
            for i, j, d in sorted(hits, key=lambda h: h[2])[: limits.listed]
        ]
        note((a, b), "near_duplicate_vectors", len(hits), listed)
        if hits and (len(hits) >= limits.near_dup_min_examples or any(d == 0 for _, _, d in hits)):
            label_note = f", {same} with the same label" if labels_a is not None else ""
            warnings.append(
                Finding(
                    f"{len(hits)} {b} example(s) within RMS {limits.near_dup_rms} (per standardised feature) "
                    f"of a {a} example{label_note}: {'; '.join(listed)}",
                    detail=f"near-duplicates: a {b} example's nearest {a} example is usually much farther "
                    f"(median {typical:.3g}); drop the copies or group them",
                )
            )
    return warnings
