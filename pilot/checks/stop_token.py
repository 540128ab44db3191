"""Answers that never end on a stop token (a generation task whose rows train an answer after a masked
prompt): a warning from the data alone.

Fine-tuned to answer, a model learns to stop only where a stop token (``<eos>``, a chat template's
end of turn) is a target at the end of each answer. Written without it (the answer tokenised with
``add_special_tokens=False`` and nothing appended), every row ends on the answer's own last token, and
the model keeps generating past every answer. What shows it without knowing the stop token: the last
counted target of the training rows is the same token in most rows when one is appended, and many
different tokens when none is. Answers of a few words each (class names) end on few tokens and are not
judged.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch

from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, NEXT_TOKEN, TaskData

MIN_ROWS = 10
PROMPTED = 0.8  # of rows with a masked prompt (an answer trained after it)
PROMPT_AT_LEAST = 3  # masked positions before a row's first counted target
SHARE = 0.5  # a stop token ends at least this share of the rows
DISTINCT = 5  # fewer distinct last targets: short answers from a closed set, not judged


def token_list(value: Any) -> list[int] | None:
    """One example's token ids or labels as a list of ints (a 1-D integer tensor or a list); None otherwise."""
    if torch.is_tensor(value):
        return value.tolist() if value.dim() == 1 and not value.is_floating_point() else None
    return value if isinstance(value, list) and all(isinstance(v, int) for v in value) else None


def _last_targets(encoded: list[dict[str, Any]]) -> tuple[list[int], int]:
    """Each row's last counted target, and how many rows train after a masked prompt."""
    lasts, prompted = [], 0
    for item in encoded:
        labels = token_list(item.get("labels"))
        if labels is None:
            return [], 0
        counted = [t for t, label in enumerate(labels) if label >= 0 and label != IGNORE_INDEX]
        if counted:
            lasts.append(labels[counted[-1]])
            prompted += counted[0] >= PROMPT_AT_LEAST
    return lasts, prompted


def stop_token_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    if task.convention != NEXT_TOKEN or not encoded:
        return [], {}
    lasts, prompted = _last_targets(encoded[:1000])
    if len(lasts) < MIN_ROWS or prompted < PROMPTED * len(lasts):
        return [], {}
    (token, ending), distinct = Counter(lasts).most_common(1)[0], len(set(lasts))
    details = {"rows": len(lasts), "most_common_last_target": token, "rows_it_ends": ending, "distinct": distinct}
    if ending >= SHARE * len(lasts) or distinct < DISTINCT:
        return [], details
    shown = task.decode_tokens([token])[0] if task.decode_tokens is not None else f"id {token}"
    return [
        Finding(
            f"no stop token ends the answers: the most common last target ({shown!r}) ends {ending} of "
            f"{len(lasts)} training rows, which end on {distinct} different tokens, so the model never learns "
            "where an answer ends and keeps generating past it. Fix: append the tokenizer's eos (or the chat "
            "template's end-of-turn token) to every answer, in input_ids and in labels"
        )
    ], details
