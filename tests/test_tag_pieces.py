"""Word tags written one per token instead of onto their words (pilot/checks/tag_pieces.py)."""

from __future__ import annotations

import random
from types import SimpleNamespace

import torch

from pilot.checks.tag_pieces import tag_pieces_findings
from pilot.data.task import IGNORE_INDEX

TAGGER = SimpleNamespace(target_position="same_position")


def _sentences(n: int = 40, seed: int = 0) -> list[list[int]]:
    """Each sentence as its words' piece counts (1 to 3 pieces a word)."""
    rng = random.Random(seed)
    return [[rng.choice((1, 1, 2, 3)) for _ in range(rng.randint(4, 9))] for _ in range(n)]


def _row(pieces: list[int], aligned: bool, as_lists: bool = False) -> dict:
    """[CLS] + pieces + [SEP]; tags (1 a word) on each word's first piece, or zipped onto the first tokens."""
    tokens = sum(pieces)
    if aligned:
        labels = [tag for count in pieces for tag in [1] + [IGNORE_INDEX] * (count - 1)]
    else:
        labels = [1] * len(pieces) + [IGNORE_INDEX] * (tokens - len(pieces))
    ids, labels = list(range(5, 7 + tokens)), [IGNORE_INDEX, *labels, IGNORE_INDEX]
    return (
        {"input_ids": ids, "labels": labels}
        if as_lists
        else {"input_ids": torch.tensor(ids), "labels": torch.tensor(labels)}
    )


def test_tags_zipped_onto_the_first_tokens_are_warned_about_and_aligned_ones_are_not():
    zipped = [_row(p, aligned=False) for p in _sentences()]
    findings, details = tag_pieces_findings(TAGGER, zipped)
    assert findings and "one per token" in str(findings[0]) and "word_ids()" in str(findings[0])
    assert details["trailing_only"] == details["rows_with_unlabelled_tokens"] > 10
    aligned = [_row(p, aligned=True, as_lists=True) for p in _sentences()]  # lists, as encode often leaves them
    assert tag_pieces_findings(TAGGER, aligned)[0] == []
    assert tag_pieces_findings(SimpleNamespace(target_position="next_token"), zipped) == ([], {})


def test_padding_is_told_apart_by_the_mask_and_rows_of_one_width_without_it_are_not_judged():
    width = 40
    padded = []
    for pieces in _sentences(seed=1):
        row = _row(pieces, aligned=True)
        fill = width - len(row["input_ids"])
        padded.append(
            {
                "input_ids": torch.cat([row["input_ids"], torch.zeros(fill, dtype=torch.long)]),
                "labels": torch.cat([row["labels"], torch.full((fill,), IGNORE_INDEX)]),
                "attention_mask": torch.tensor([1] * len(row["input_ids"]) + [0] * fill),
            }
        )
    assert tag_pieces_findings(TAGGER, padded)[0] == []  # aligned: the padding is not an unlabelled tail
    unmasked = [{k: v for k, v in item.items() if k != "attention_mask"} for item in padded]
    assert tag_pieces_findings(TAGGER, unmasked) == ([], {})  # cannot tell padding from pieces: not judged
