"""correct: very short sequences: each input is one character, one token (vowel / consonant / digit /
punctuation), a transformer encoder with an attention mask and mean pooling. Its split audit dropped the
one-token input_ids as an example id (one integer per example, all different) and called 22 validation
examples copies of training ones (2026-12-05)."""

import torch
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._char_encoder import SPLIT, PooledEncoder, pad_ids

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
        ids, mask = pad_ids([it["input_ids"] for it in items], tok.PAD_ID)
        return {
            "input_ids": ids,
            "attention_mask": mask,
            "labels": torch.tensor([it["label"] for it in items]),
            "index": torch.tensor([it["index"] for it in items]),
        }

    return TaskData(
        kind="classification",
        splits=make_splits(examples, SPLIT),
        encode=encode,
        collate=collate,
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda logits, b: logits.argmax(-1),
        forward=lambda model, b: model(b["input_ids"], b["attention_mask"]),
        class_names=CLASSES,
        raw_label=lambda e: CLASSES[_class(e.fields["text"])],
        decode_tokens=tok.token_strings,
        info={"num_classes": 4, "pad_id": tok.PAD_ID, "target_unit": "example"},
    )


def build_model(task: TaskData) -> torch.nn.Module:
    return PooledEncoder(tok.VOCAB_SIZE, 4)
