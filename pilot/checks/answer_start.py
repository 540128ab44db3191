"""The answer's first token masked with the prompt (a generation task that declares no
``expected_targets`` to compare with): a warning from the data alone.

A prompt mask one token too long (``labels[:len(prompt) + 1] = -100``, a prompt length counted with a
special token the answer then lacks) trains every answer from its second token: the model never learns
how an answer begins. What shows it without knowing the template: a template ends every prompt on the
same token (``\\n``, ``=>``, an end-of-turn marker), so the token just before the first counted target is
the same in most rows. With the answer's first token masked, that token is the answer's first — different
from row to row — and the template's last token sits one position earlier, the same in most rows.
Prompts without a fixed ending (free text right before the answer) vary at both positions and are not
judged; nor are answers that are not text after a prompt.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from pilot.checks.result import Finding
from pilot.checks.stop_token import token_list
from pilot.data.task import IGNORE_INDEX, NEXT_TOKEN, TaskData

MIN_ROWS = 10
PROMPT_AT_LEAST = 3  # masked positions before a row's first counted target
TEMPLATE_SHARE = 0.8  # one position earlier: the same token in at least this share of rows
VARIED_SHARE = 0.5  # just before the first target: its most common token in at most this share
DISTINCT = 5  # ... and at least this many different tokens there


def _first_target_at(ids: list[int], labels: list[int]) -> int | None:
    """Where, in ``ids``, the first counted target token is: at its label's position (labels as wide as
    the inputs, shifted inside the model) or one later (labels already shifted); None when neither holds."""
    counted = [t for t, label in enumerate(labels) if label >= 0 and label != IGNORE_INDEX]
    if len(ids) != len(labels) or not counted or counted[0] < PROMPT_AT_LEAST:
        return None
    if all(labels[t] == ids[t] for t in counted):
        return counted[0]
    if all(t + 1 < len(ids) and labels[t] == ids[t + 1] for t in counted):
        return counted[0] + 1
    return None


def answer_start_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    if task.convention != NEXT_TOKEN or task.expected_targets is not None or not encoded:
        return [], {}
    before, earlier, first_row = [], [], None
    for item in encoded[:1000]:
        ids, labels = token_list(item.get("input_ids")), token_list(item.get("labels"))
        at = _first_target_at(ids, labels) if ids is not None and labels is not None else None
        if at is None or at < 2:
            continue
        before.append(ids[at - 1])
        earlier.append(ids[at - 2])
        first_row = first_row if first_row is not None else item.get("index")
    if len(before) < MIN_ROWS:
        return [], {}
    (template, template_rows), (_, common_rows) = (
        Counter(earlier).most_common(1)[0],
        Counter(before).most_common(1)[0],
    )
    details = {
        "rows": len(before),
        "distinct_before_first_target": len(set(before)),
        "rows_sharing_the_token_before": common_rows,
        "rows_sharing_the_token_one_earlier": template_rows,
    }
    if not (
        template_rows >= TEMPLATE_SHARE * len(before)
        and common_rows <= VARIED_SHARE * len(before)
        and len(set(before)) >= DISTINCT
    ):
        return [], details
    shown = task.decode_tokens([template])[0] if task.decode_tokens is not None else f"id {template}"
    return [
        Finding(
            f"the answer's first token looks masked with the prompt: in {template_rows} of {len(before)} training "
            f"rows the token two positions before the first counted target is {shown!r} (a template's last token), "
            f"while the token right before it differs from row to row ({len(set(before))} different tokens: the "
            "answers' first tokens). The model never learns how an answer begins. Fix: mask the prompt's tokens only "
            "(labels[:len(prompt_ids)] = -100), or declare expected_targets so the counted tokens are compared",
            "train",
            first_row if isinstance(first_row, int) else None,
        )
    ], details
