"""Shared parts of the character-level classification tasks: padded ids, a small transformer encoder
with an attention mask and mean pooling, syllable words (from an outside examination, 2026-12-05)."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import TaskData

SPLIT = {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}
SYLLABLES = ["ka", "to", "mi", "ra", "ne", "lu", "so", "pe", "di", "ba", "go", "fi", "zu", "he", "wa"]


def words(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return ["".join(rng.choice(SYLLABLES, size=int(rng.integers(1, 4)))) for _ in range(n)]


def pad_ids(rows: list[list[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for row, values in enumerate(rows):
        ids[row, : len(values)] = torch.as_tensor(values)
        mask[row, : len(values)] = 1
    return ids, mask


class PooledEncoder(nn.Module):
    supports_activation_checkpointing = False

    def __init__(self, vocab: int, classes: int, padding_idx: int | None = None, width: int = 32):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(vocab, width, padding_idx=padding_idx)
        self.position = nn.Embedding(128, width)
        layer = nn.TransformerEncoderLayer(width, 2, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(width, classes)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        h = self.embed(input_ids) + self.position(torch.arange(input_ids.shape[1]))
        h = self.encoder(h, src_key_padding_mask=attention_mask == 0)
        m = attention_mask.unsqueeze(-1).float()
        return self.head((h * m).sum(1) / m.sum(1).clamp(min=1))


def pooled_classification(examples, encode, collate, classes: list[str], raw_label, decode, info: dict) -> TaskData:
    """A sequence classifier's task over ``examples``: cross-entropy summed, one target per example, the
    model given input_ids and attention_mask."""
    return TaskData(
        kind="classification",
        splits=make_splits(examples, SPLIT),
        encode=encode,
        collate=collate,
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda logits, b: logits.argmax(-1),
        forward=lambda model, b: model(b["input_ids"], b["attention_mask"]),
        class_names=classes,
        raw_label=raw_label,
        decode_tokens=decode,
        info={"num_classes": len(classes), "target_unit": "example", **info},
    )


def batch_of(items: list[dict], ids: torch.Tensor, mask: torch.Tensor) -> dict:
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "labels": torch.tensor([it["label"] for it in items]),
        "index": torch.tensor([it["index"] for it in items]),
    }
