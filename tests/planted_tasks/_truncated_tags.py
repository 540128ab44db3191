"""shared: the character tagger (consonant / vowel / space) of ``_text_tasks`` on phrases of up to three
words, each row truncated to its last ``MAX`` characters (a tokenizer with truncation_side='left'), the
tags cut by ``cut_tags``."""

import torch

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._text_tasks import Tagger, tag_of, tagging_task

MAX = 12


def truncated_task(cut_tags):
    def encode(e):
        text = e.fields["text"]
        ids = tok.encode(text)[-MAX:]
        return {
            "index": e.index,
            "input_ids": torch.tensor(ids),
            "labels": torch.tensor(cut_tags([tag_of(c) for c in text])),
        }

    return tagging_task(encode=encode, expected_targets=None)


def build_model(task):
    return Tagger()
