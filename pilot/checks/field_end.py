"""A text field that reaches the model without its end (a warning from the data alone).

An off-by-one where a prompt is cut (``prompt_ids[:-1] + answer_ids``, written to drop an end token the
tokenizer never added; a slice meant for the labels applied to the inputs) trains every example on a prompt
without its last token: the ``=>`` or ``Answer:`` the model will be given at inference time is never seen
before an answer, and no loss-reading check notices. Seen without a model: each training row as training
collates it, decoded with the task's ``decode_tokens`` (its real positions), against the example's own text
fields. Text is compared without spaces, underscores, case and the tokenizers' word markers (``Ġ``, ``▁``,
``##``, ``⏎``). A
field found whole in its row is fine; one found only without its last few characters (at most
``MAX_CUT``) with more of the row after it (an answer) is *cut at its end*. Warned when most of a field's judged rows (``SHARE``) are cut. Fields the
inputs do not hold (an answer read by the labels only, an id) are found in neither form and not judged;
truncation to a length cuts long rows by more than a token, and only them. A free-text field (values mostly
distinct) that as many rows hold but that is wholly absent (not even its first ``MIN_CHARS`` characters) from ``ABSENT_SHARE`` of the
rows (while another field of the row is there; a collate that draws at random, masking tokens, and a
seq2seq task, whose target field its decoder reads, are not judged) was cut away by truncation (a text pair joined and cut from the right drops the second text of long
rows): warned too.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from pilot.checks.collated import collate_is_random
from pilot.checks.loss_probe import SEQ2SEQ, input_ids_of, micro_batches, padding_mask, row_items
from pilot.checks.result import Finding
from pilot.data.task import TaskData

ROWS = 256  # first training examples read
BATCH = 8
MIN_CHARS = 8  # a field this long or longer, compared
MAX_CUT = 6  # characters: a cut of one or two tokens
MIN_ROWS = 10
SHARE = 0.8
ABSENT_SHARE = 0.1  # of the rows, at least, hold not even the start of a field that most rows hold whole
MIN_AFTER = 2  # letters or digits of the row after a cut field: an answer follows it
_SPECIALS = re.compile(r"<[^<>]{1,20}>|\[[A-Za-z]{2,10}\]|[«»]")  # <eos>, </s>, <|im_end|>, [SEP], « »
_MARKERS = re.compile(r"\s|Ġ|▁|Ċ|##|</w>|⏎|_|·")  # spaces, word markers, and how tokens are shown


def _plain(text: str) -> str:
    return _MARKERS.sub("", text).lower()


def comparable(text: str) -> str:
    """``text`` as decoded tokens and a field's own text are compared: without special tokens (``<eos>``,
    ``</s>``, ``«``), spaces, word markers and case."""
    return _plain(_SPECIALS.sub("", text))


def _cut(text: str, decoded: str) -> int | None:
    """0 when ``text`` is in ``decoded`` whole, the characters missing from its end when only a shorter
    start of it is (at most ``MAX_CUT``) *and more text follows it in the row* (a prompt cut before its
    answer), None otherwise: a field that ends the row without its end was left out on purpose (a
    trailing '.' stripped, a word that is the label, the last token that is only a target)."""
    if text in decoded:
        return 0
    for k in range(1, min(MAX_CUT, len(text) - MIN_CHARS) + 1):
        at = decoded.find(text[:-k])
        if at >= 0:
            after = _SPECIALS.sub("", decoded[at + len(text) - k :])
            return k if sum(c.isalnum() for c in after) >= MIN_AFTER else None
    return None


def _rows(task: TaskData, encoded: list[dict[str, Any]]):
    """(example, decoded real input) of each training row as training collates it."""
    by_index = {example.index: example for example in task.splits.get("train", [])}
    for start, batch in micro_batches(task, encoded[:ROWS], BATCH):
        ids, mask = input_ids_of(batch), padding_mask(task, batch)
        if ids is None:
            return
        chunk = encoded[start : start + BATCH]
        for row, item in enumerate(row_items(batch, chunk)):
            example = by_index.get(chunk[item].get("index"))
            if example is None:
                continue
            real = ids[row][mask[row]] if mask is not None and mask.shape == ids.shape else ids[row]
            yield example, _plain("".join(task.decode_tokens(real.tolist())))


def field_end_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    if task.decode_tokens is None or not encoded:
        return [], {}
    found: dict[str, Counter] = {}
    first_cut: dict[str, Any] = {}
    values: dict[str, set] = {}  # each field's distinct texts
    try:
        # no absence judged where masked tokens hide a field's text, or a decoder reads the target field
        drawn = task.kind == SEQ2SEQ or collate_is_random(task, encoded[:BATCH])
        for example, decoded in _rows(task, encoded):
            absent = []
            for name, value in example.fields.items():
                if not isinstance(value, str) or not value.isascii() or len(text := _plain(value)) < MIN_CHARS:
                    continue
                values.setdefault(name, set()).add(text)
                cut = _cut(text, decoded)
                if cut is None and text[:MIN_CHARS] not in decoded:  # not even its start reaches the model
                    absent.append((name, value))
                if cut is not None:
                    found.setdefault(name, Counter())["whole" if cut == 0 else "cut"] += 1
                    if cut:
                        first_cut.setdefault(name, (example.index, value, text[-cut:]))
            held = len(absent) < sum(1 for name in values if name in example.fields)  # another field is there
            for name, value in absent if held and not drawn else ():
                found.setdefault(name, Counter())["absent"] += 1
                first_cut.setdefault(f"{name} absent", (example.index, value, ""))
    except Exception:  # noqa: BLE001 - a collate or decode this cannot run on: the other checks report it
        return [], {}
    details = {name: dict(counts) for name, counts in found.items()}
    findings = [
        _absent(name, counts, first_cut[f"{name} absent"])
        for name, counts in found.items()
        if _gone(counts, len(values.get(name, ())))
    ]
    for name, counts in found.items():
        judged = counts["whole"] + counts["cut"]
        if judged < MIN_ROWS or counts["cut"] < SHARE * judged:
            continue
        index, value, missing = first_cut[name]
        findings.append(
            Finding(
                f"field '{name}' reaches the model without its end in {counts['cut']} of {judged} training rows: "
                f"the inputs hold the field's text up to its last few characters, e.g. example {index}'s ends "
                f"{value[-24:]!r} and its row lacks the last {len(missing)} ({missing!r}, spaces aside). A prompt cut by one token (prompt_ids[:-1], a "
                "slice meant for an end token the tokenizer did not add) trains every answer after a prompt the model "
                "will not be given. Fix: keep the field's every token in the inputs",
                "train",
                index,
            )
        )
    return findings, details


def _gone(counts: Counter, distinct: int) -> bool:
    """A free-text field (its values mostly distinct: not a class name) that ``ABSENT_SHARE`` of the rows
    (at least 3) hold not even the start of, while as many others hold it."""
    rows = counts["whole"] + counts["cut"] + counts["absent"]
    least = max(3, ABSENT_SHARE * rows)
    held = counts["whole"] + counts["cut"]
    return rows >= MIN_ROWS and distinct >= 0.5 * rows and counts["absent"] >= least and held >= least


def _absent(name: str, counts: Counter, first: tuple[Any, str, str]) -> Finding:
    rows = counts["whole"] + counts["cut"] + counts["absent"]
    index, value, _ = first
    return Finding(
        f"field '{name}' never reaches the model in {counts['absent']} of {rows} training rows, where others "
        f"hold it: e.g. example {index}'s {value[:40]!r} is not in its row at all. Truncation that cuts the "
        "end of a joined text (premise + hypothesis cut to a length from the right) removes the field entirely "
        "from long rows, and their label is learnt without it. Fix: truncate the other field (the tokenizer's "
        "truncation='only_first' on a text pair), or raise the length limit",
        "train",
        index,
    )
