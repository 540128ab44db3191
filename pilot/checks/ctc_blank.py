"""Part of ``alignment``: the blank a CTC-style loss uses, against the targets. A CTC loss (output frames that
are not the labels' positions) scores every alignment of the target through its blank class; a target that
holds the blank's id is read as "nothing here" at that letter. The vocabulary numbered 0.. with the blank
meant last while ``F.ctc_loss`` keeps its default ``blank=0`` makes the first letter the blank: every 'a' in
a target is lost.

Which class the loss uses as its blank is measured, not declared: with every score even (all 0), the loss's
gradient pushes up, at most real frames, the class that most alignments pass through, the blank (it fills
every frame between and around the letters). A ``fail`` where the training targets hold that class.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch

from pilot.checks.loss_floor import with_logits
from pilot.checks.loss_probe import padding_mask
from pilot.checks.result import CheckResult
from pilot.data.task import TaskData, logits_of

SHARE = 0.5  # of the real frames whose most pushed-up class is the blank, at least


def ctc_blank_verdict(
    task: TaskData, model: torch.nn.Module, batches: list[dict[str, Any]], details: dict
) -> CheckResult | None:
    """A fail where the targets hold the class the loss uses as its blank; None when they do not, or when it
    cannot be told."""
    pushed: Counter = Counter()
    frames = 0
    held: Counter = Counter()
    for batch in batches:
        with torch.no_grad():
            output = task.forward(model, batch)
        scores = logits_of(output)
        if scores.dim() != 3 or not torch.is_tensor(batch.get("labels")):
            return None
        even = torch.zeros_like(scores, dtype=torch.float32, requires_grad=True)
        try:
            with torch.enable_grad():
                task.loss_sum(with_logits(output, even), batch).backward()
        except Exception:  # noqa: BLE001 - a loss that cannot take even scores: not judged
            return None
        real = padding_mask(task, batch)
        top = (-even.grad).argmax(-1)
        top = top[real.bool()] if real is not None and real.shape == top.shape else top.reshape(-1)
        pushed.update(top.tolist())
        frames += top.numel()
        labels = batch["labels"]
        held.update(labels[labels >= 0].tolist())
    if not frames or not pushed:
        return None
    blank, count = pushed.most_common(1)[0]
    details["ctc_blank"] = {"class": blank, "share_of_frames": count / frames, "held_by_targets": held.get(blank, 0)}
    if count < SHARE * frames or not held.get(blank):
        return None
    names = task.names()
    named = f" ({names[blank]!r})" if blank < len(names) else ""
    return CheckResult(
        "alignment",
        "fail",
        f"the loss uses class {blank}{named} as its CTC blank (with every score even, its gradient pushes that class "
        f"up at {count} of {frames} real frames) and the training targets hold it {held[blank]} times: each of those "
        "letters is read as 'nothing here'. Fix: give the loss the blank id the vocabulary keeps for it "
        "(F.ctc_loss(..., blank=<its id>)), one no target holds",
        [],
        details,
    )
