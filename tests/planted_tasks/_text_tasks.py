"""Building blocks for the tagging and sequence-classification tasks: a correct token-classification (tagging) task and a
correct sequence-classification task on byte tokens. Each task module replaces one part."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Batch, Example, TaskData
from tests.planted_tasks._common import words

SPLIT = {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}
TAGS = ["consonant", "vowel", "space"]


def tag_of(ch: str) -> int:
    if ch == " ":
        return 2
    return 1 if ch in "aeiou" else 0


def phrase_examples(count: int = 120, seed: int = 0) -> list[Example]:
    ws = words(count * 3, seed)
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(1, 4))
        text = " ".join(ws[3 * i : 3 * i + n])
        out.append(Example(index=i, group=f"p{i}", fields={"text": text}))
    return out


def encode_tags(example: Example) -> dict[str, Any]:
    text = example.fields["text"]
    ids = tok.encode(text)
    tags = [tag_of(c) for c in text]
    return {"index": example.index, "input_ids": torch.tensor(ids), "labels": torch.tensor(tags)}


def pad_collate_tags(items: list[dict[str, Any]]) -> Batch:
    width = max(len(item["input_ids"]) for item in items)
    input_ids = torch.full((len(items), width), tok.PAD_ID, dtype=torch.long)
    labels = torch.full((len(items), width), IGNORE_INDEX, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for row, item in enumerate(items):
        n = len(item["input_ids"])
        input_ids[row, :n], labels[row, :n], mask[row, :n] = item["input_ids"], item["labels"], 1
    return {
        "input_ids": input_ids,
        "labels": labels,
        "attention_mask": mask,
        "index": torch.tensor([item["index"] for item in items]),
    }


def tag_loss_sum(logits: torch.Tensor, batch: Batch) -> torch.Tensor:
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(),
        batch["labels"].reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    )


def tag_target_count(batch: Batch) -> torch.Tensor:
    return (batch["labels"] != IGNORE_INDEX).sum()


def tagging_task(**overrides) -> TaskData:
    parts = dict(
        kind="tagging",
        splits=make_splits(phrase_examples(), SPLIT),
        encode=encode_tags,
        collate=pad_collate_tags,
        loss_sum=tag_loss_sum,
        target_count=tag_target_count,
        predict=lambda logits, batch: logits.argmax(dim=-1),
        forward=lambda model, batch: model(batch["input_ids"], attention_mask=batch["attention_mask"]),
        target_position="same_position",
        expected_targets=lambda e: [tag_of(c) for c in e.fields["text"]],
        decode_tokens=tok.token_strings,
        class_names=list(TAGS),
        info={"vocab_size": tok.VOCAB_SIZE, "pad_id": tok.PAD_ID, "num_classes": 3, "target_unit": "token"},
    )
    parts.update(overrides)
    return TaskData(**parts)


class Tagger(nn.Module):
    """A bidirectional encoder tagger (nn.TransformerEncoder, padding passed as key padding mask)."""

    supports_activation_checkpointing = False

    def __init__(self, classes: int = 3, width: int = 32):
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.position = nn.Embedding(tok.VOCAB_SIZE, width), nn.Embedding(64, width)
        layer = nn.TransformerEncoderLayer(width, 2, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(width, classes)

    def forward(self, input_ids, attention_mask):
        x = self.embed(input_ids) + self.position(torch.arange(input_ids.shape[1]))
        hidden = self.encoder(x, src_key_padding_mask=attention_mask == 0)
        return self.head(hidden)


# ----------------------------------------------------------------------------- sequence classification
SENTIMENT = ["neg", "pos"]


def sentence_examples(count: int = 160, seed: int = 1) -> list[Example]:
    """Phrase of 1-4 words; class 'pos' when the phrase has more vowel-initial words ... keep simple:
    the class is whether the first letter of the first word is in the first half of the alphabet."""
    ws = words(count * 4, seed)
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(1, 5))
        text = " ".join(ws[4 * i : 4 * i + n])
        label = SENTIMENT[int(text[0] < "m")]
        out.append(Example(index=i, group=f"s{i}", fields={"text": text, "sentiment": label}))
    return out


def encode_sentence(example: Example) -> dict[str, Any]:
    return {
        "index": example.index,
        "input_ids": torch.tensor(tok.encode(example.fields["text"])),
        "label": SENTIMENT.index(example.fields["sentiment"]),
    }


def pad_collate_sentences(items: list[dict[str, Any]]) -> Batch:
    width = max(len(item["input_ids"]) for item in items)
    input_ids = torch.full((len(items), width), tok.PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for row, item in enumerate(items):
        n = len(item["input_ids"])
        input_ids[row, :n], mask[row, :n] = item["input_ids"], 1
    return {
        "input_ids": input_ids,
        "attention_mask": mask,
        "labels": torch.tensor([item["label"] for item in items]),
        "index": torch.tensor([item["index"] for item in items]),
    }


def seqcls_task(**overrides) -> TaskData:
    parts = dict(
        kind="classification",
        splits=make_splits(sentence_examples(), SPLIT),
        encode=encode_sentence,
        collate=pad_collate_sentences,
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda logits, b: logits.argmax(dim=-1),
        forward=lambda model, b: model(b["input_ids"], attention_mask=b["attention_mask"]),
        class_names=list(SENTIMENT),
        raw_label=lambda e: e.fields["sentiment"],
        info={"num_classes": 2, "target_unit": "example", "pad_id": tok.PAD_ID},
    )
    parts.update(overrides)
    return TaskData(**parts)


class MeanPoolClassifier(nn.Module):
    """Embedding + encoder + masked mean pooling + linear head."""

    supports_activation_checkpointing = False

    def __init__(self, classes: int = 2, width: int = 32):
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.position = nn.Embedding(tok.VOCAB_SIZE, width), nn.Embedding(64, width)
        layer = nn.TransformerEncoderLayer(width, 2, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(width, classes)

    def pool(self, hidden, attention_mask):
        m = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1)

    def forward(self, input_ids, attention_mask):
        x = self.embed(input_ids) + self.position(torch.arange(input_ids.shape[1]))
        hidden = self.encoder(x, src_key_padding_mask=attention_mask == 0)
        return self.head(self.pool(hidden, attention_mask))
