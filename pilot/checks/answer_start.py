"""The answer's first token masked with the prompt (a generation task that declares no
``expected_targets`` to compare with): a warning from the data alone.

A prompt mask one token too long (``labels[:len(prompt) + 1] = -100``, a prompt length counted with a
special token the answer then lacks) trains every answer from its second token: the model never learns
how an answer begins. Two things show it without knowing the template:

- the examples' own text fields, where they hold the answer: a row whose counted tokens decode to one of
  its fields without that field's first token — the token right before them, masked, completes it —
  trains the answer from its second token; one whose counted tokens decode to a field whole trains the
  whole answer (special tokens, spaces and case aside). When most rows say either, that is the verdict:
  a prompt that ends on a varying token of its own ("step 2 after k" -> "ll") is told from a masked
  answer start, which the positions below cannot tell apart.
- otherwise the positions: a template ends every prompt on the same token (``\n``, ``=>``, an end-of-turn
  marker), so the token just before the first counted target is the same in most rows. With the answer's
  first token masked, that token is the answer's first — different from row to row — and the template's
  last token sits one position earlier, the same in most rows. Prompts without a fixed ending (free text
  right before the answer) vary at both positions and are not judged; nor are answers that are not text
  after a prompt.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from pilot.checks.field_end import comparable
from pilot.checks.result import Finding
from pilot.checks.stop_token import token_list
from pilot.data.task import IGNORE_INDEX, NEXT_TOKEN, TaskData

MIN_ROWS = 10
PROMPT_AT_LEAST = 3  # masked positions before a row's first counted target
TEMPLATE_SHARE = 0.8  # one position earlier: the same token in at least this share of rows
VARIED_SHARE = 0.5  # just before the first target: its most common token in at most this share
DISTINCT = 5  # ... and at least this many different tokens there
FIELD_ROWS = 256  # rows compared with their examples' fields (two decodes each)


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


@dataclass
class _Row:
    index: Any  # the example's
    ids: list[int]
    at: int  # where in ``ids`` the first counted target is
    counted: list[int]  # the counted target tokens, in order


def answer_start_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    if task.convention != NEXT_TOKEN or task.expected_targets is not None or not encoded:
        return [], {}
    rows = []
    for item in encoded[:1000]:
        ids, labels = token_list(item.get("input_ids")), token_list(item.get("labels"))
        at = _first_target_at(ids, labels) if ids is not None and labels is not None else None
        if at is not None and at >= 2:
            counted = [label for label in labels if label >= 0 and label != IGNORE_INDEX]
            rows.append(_Row(item.get("index"), ids, at, counted))
    if len(rows) < MIN_ROWS:
        return [], {}
    whole, masked, compared = _against_the_fields(task, rows)
    details = {"rows": len(rows), "rows_with_text_fields": compared, "rows_counting_a_whole_field": whole}
    if compared >= MIN_ROWS and len(masked) >= TEMPLATE_SHARE * compared:
        return [_masked_by_fields(masked, compared)], {
            **details,
            "rows_counting_a_field_but_its_first_token": len(masked),
        }
    if compared >= MIN_ROWS and whole >= TEMPLATE_SHARE * compared:  # the prompt's own last token varies
        return [], details
    return _by_positions(task, rows, details)


def _by_positions(task: TaskData, rows: list[_Row], details: dict[str, Any]) -> tuple[list[Finding], dict[str, Any]]:
    """The template's last token one position too early: the same in most rows, the token after it varied."""
    before, earlier = [row.ids[row.at - 1] for row in rows], [row.ids[row.at - 2] for row in rows]
    (template, template_rows), (_, common_rows) = (
        Counter(earlier).most_common(1)[0],
        Counter(before).most_common(1)[0],
    )
    details = {
        **details,
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
    first_row = rows[0].index
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


def _against_the_fields(task: TaskData, rows: list[_Row]) -> tuple[int, list[tuple[Any, str, str, str]], int]:
    """Of the rows whose example has text fields: how many count tokens that decode to one of its fields
    whole; those whose counted tokens are a field without its first token, which the token right before
    them completes (example index, field name, field text, that token); and how many were compared."""
    if task.decode_tokens is None:
        return 0, [], 0
    by_index = {example.index: example for example in task.splits.get("train", [])}
    whole, masked, compared = 0, [], 0
    for row in rows[:FIELD_ROWS]:
        try:
            fields = getattr(by_index.get(row.index), "fields", None) or {}
        except TypeError:  # an index that is no key (a list): the row is not judged
            continue
        texts = {name: comparable(value) for name, value in fields.items() if isinstance(value, str)}
        texts = {name: text for name, text in texts.items() if text}
        try:
            counted = comparable("".join(task.decode_tokens(row.counted)))
            token = task.decode_tokens([row.ids[row.at - 1]])[0]
        except Exception:  # noqa: BLE001 - a decode that cannot read these ids: the row is not judged
            continue
        if not texts:
            continue
        compared += 1
        if counted in texts.values():
            whole += 1
            continue
        name = next((n for n, text in texts.items() if counted and comparable(token) + counted == text), None)
        if name is not None:
            masked.append((row.index, name, fields[name], token))
    return whole, masked, compared


def _masked_by_fields(masked: list[tuple[Any, str, str, str]], compared: int) -> Finding:
    index, name, text, token = masked[0]
    return Finding(
        f"the answer's first token is masked with the prompt: in {len(masked)} of {compared} training rows the "
        f"counted tokens are field '{name}' without its first token, which the row holds masked right before them "
        f"(example {index}: {text!r} is trained from after {token!r}). The model never learns how an answer begins. "
        "Fix: mask the prompt's tokens only (labels[:len(prompt_ids)] = -100)",
        "train",
        index if isinstance(index, int) else None,
    )
