"""correct: very short sequences: each input is one character, one token (vowel / consonant / digit /
punctuation), a transformer encoder with an attention mask and mean pooling. Its split audit dropped the
one-token input_ids as an example id (one integer per example, all different) and called 22 validation
examples copies of training ones (2026-12-05)."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import Example, TaskData
from tests.planted_tasks._char_encoder import PooledEncoder, batch_of, pad_ids, pooled_classification

EXPECTED = None
CLASSES = ["vowel", "consonant", "digit", "punct"]


def _class(c: str) -> int:
    return 0 if c in "aeiouAEIOU" else 1 if c.isalpha() else 2 if c.isdigit() else 3


def make_task() -> TaskData:
    chars = [chr(i) for i in range(33, 127)]
    examples = [Example(index=i, group=f"c{i}", fields={"text": c}) for i, c in enumerate(chars)]

    def encode(e: Example) -> dict:
        return {"index": e.index, "input_ids": tok.encode(e.fields["text"]), "label": _class(e.fields["text"])}

    def collate(items: list[dict]) -> dict:
        return batch_of(items, *pad_ids([it["input_ids"] for it in items], tok.PAD_ID))

    return pooled_classification(
        examples,
        encode,
        collate,
        CLASSES,
        lambda e: CLASSES[_class(e.fields["text"])],
        tok.token_strings,
        {"pad_id": tok.PAD_ID},
    )


def build_model(task: TaskData) -> torch.nn.Module:
    return PooledEncoder(tok.VOCAB_SIZE, 4)
