"""Word tags written one per token (a tagger, ``target_position="same_position"``): a warning from
the data alone.

A word tag list belongs to words, and a tokenizer splits words into pieces: aligned (transformers'
``word_ids()``), each word's tag sits on its first piece and its other pieces are -100 (or carry the
tag too). Written one per token from the start instead (``labels = tags + [-100] * (len(ids) -
len(tags))``), the counted labels still equal the declared tags in order, but wherever a word splits,
every later tag lands on another word's piece. What shows it without the words: in a row with more
tokens than labels, the unlabelled tokens all trail after the last label, none between two labels
(aligned, a split word's pieces leave gaps wherever it stands). Statistical evidence: a ``warn``.
"""

from __future__ import annotations

from typing import Any

from pilot.checks.result import Finding
from pilot.checks.tag_offset import tagged_rows
from pilot.data.task import IGNORE_INDEX, TaskData

MIN_ROWS = 10  # rows with more tokens than labels (beyond the fewest any row leaves unlabelled)
SHARE = 0.8  # of those, the share whose unlabelled tokens all trail after the last label


def _spans(ids: list[int], labels: list[int]) -> tuple[int, int, int] | None:
    """Unlabelled tokens before the first label, between labels and after the last; None: no label."""
    labelled = [t for t, label in enumerate(labels) if label >= 0 and label != IGNORE_INDEX]
    if not labelled:
        return None
    first, last = labelled[0], labelled[-1]
    return first, (last - first + 1) - len(labelled), len(ids) - 1 - last


def tag_pieces_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    if task.target_position != "same_position" or not encoded:
        return [], {}
    items = encoded[:1000]
    rows = tagged_rows(items)
    if not rows:
        return [], {}
    padded_in_encode = len({len(ids) for ids, _ in rows}) == 1 and not any("attention_mask" in i for i in items)
    spans = [s for ids, labels in rows if (s := _spans(ids, labels)) is not None]
    if padded_in_encode or not spans:  # one width for every row, padding not told apart: nothing to judge
        return [], {}
    lead, tail = min(s[0] for s in spans), min(s[2] for s in spans)  # special tokens every row has
    extra = [s for s in spans if s[0] > lead or s[1] or s[2] > tail]
    trailing = [s for s in extra if s[0] == lead and not s[1]]
    details = {"rows_with_unlabelled_tokens": len(extra), "trailing_only": len(trailing)}
    if len(extra) < MIN_ROWS or len(trailing) < SHARE * len(extra):
        return [], details
    return [
        Finding(
            f"the tags look written one per token from the start, not onto their words: in {len(trailing)} of "
            f"{len(extra)} training rows with more tokens than labels, the labels run unbroken from the first "
            "and every other token trails after the last (aligned with words, a word split into pieces leaves "
            "unlabelled pieces wherever it stands). Where a word splits, every later tag then tags another "
            "word's piece, while the labels counted in order still equal the word tags. Fix: align tags with "
            f"the words (a fast tokenizer's word_ids()): each word's tag on its first piece, {IGNORE_INDEX} "
            "(or the same tag) on its other pieces"
        )
    ], details
