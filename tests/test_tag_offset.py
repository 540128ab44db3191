"""Labels off their tokens (pilot/checks/tag_offset.py): one position over the split, some rows one
position, rows truncated on another side than their labels (another offset in each row)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # tests.planted_tasks is imported by its package path
    sys.path.insert(0, str(ROOT))

from pilot.checks.tag_offset import tag_offset_findings  # noqa: E402
from tests.planted_tasks import runner  # noqa: E402


def _findings(name: str):
    task = runner.load(name).make_task()
    return tag_offset_findings(task, task.encoded("train"))


def test_rows_truncated_on_another_side_than_their_labels_are_named_and_rows_cut_alike_are_not():
    """Ids cut to their last 12 tokens, tags to their first 12: each truncated row is off by another number
    of positions (no single offset over the split); cut alike, nothing is said."""
    findings, details = _findings("bug_tagger_labels_truncated_other_side")
    assert findings and "cut on different sides" in findings[0].problem, details
    assert details["rows_off"] >= 0.5 * details["rows_judged"]
    findings, details = _findings("ok_tagger_tags_truncated_with_ids")
    assert not findings and details["rows_off"] == 0


def test_one_position_off_over_the_split_is_said_where_a_labelled_token_leads_every_row():
    """<bos> put before the ids and not the tags: the token after each label fixes it, and every row starts
    with one labelled token. A task whose labels the next token fixes by nature (punctuation restoration:
    each word tagged with the punctuation after it) starts rows with different tokens: not said."""
    findings, _ = _findings("bug_tag_labels_shifted")
    assert findings and "one position off their tokens" in findings[0].problem
    import torch

    from pilot.data.task import IGNORE_INDEX

    task = runner.load("bug_tag_labels_shifted").make_task()
    encoded = []
    for item in task.encoded("train"):  # no <bos>; each token labelled with the next one's tag
        ids = item["input_ids"][1:]
        labels = torch.cat([item["labels"][1 : len(ids)], torch.tensor([IGNORE_INDEX])])
        encoded.append({"input_ids": ids, "labels": labels})
    findings, details = tag_offset_findings(task, encoded)
    assert details["entropy_by_offset"][1] < 0.5 * details["entropy_by_offset"][0]  # the token after fixes it
    assert not findings


def test_labels_drifting_one_position_per_comma_name_the_comma_and_tags_aligned_pre_split_are_not():
    """Tags per whitespace word ("Paris," one word) aligned with word_ids that count the comma as a word: after
    each comma every tag is read from the next word (no single offset fits). Encoded pre-split, nothing is said."""
    findings, details = _findings("bug_ner_word_ids_count_punctuation")
    assert findings and "after each ','" in findings[0].problem, details
    assert details["drift"] <= 0.5 * details["constant"]
    findings, details = _findings("ok_ner_word_ids_pre_split_commas")
    assert not findings and "drift_token" not in details
