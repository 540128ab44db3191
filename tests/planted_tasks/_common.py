"""Correct building blocks the planted tasks start from; each bug module replaces one part.

- ``generation_task``: instruction -> answer in byte tokens (``<bos> instruction "=> " answer
  <eos>``), labels aligned with the inputs and -100 on the instruction, the shift in ``loss_sum``;
- ``lm_task``: plain language modelling, every token a target;
- ``classification_task``: 3 classes of noisy 8-feature vectors, named, with ``raw_label``;
- models: ``tiny_gpt(task)`` and ``MLP``.
Small (<= ~200 examples), seeded, no download.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Batch, Example, TaskData
from pilot.models.tiny_gpt import TinyGPT

SPLIT = {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}
SEPARATOR = "=> "
EVERY_CHECK = {  # a task's SETTINGS that also runs tiny_subset (seconds of training)
    "checks": [
        "inspect",
        "split_audit",
        "alignment",
        "objective",
        "smallest_micro_batch",
        "eval_determinism",
        "tiny_subset",
    ],
}
CONSONANTS, VOWELS = "bcdfghjklmnprstvz", "aeiou"


# ----------------------------------------------------------------------------- text data
def words(count: int, seed: int = 0) -> list[str]:
    """``count`` distinct pronounceable words (4-8 letters)."""
    return list(_words(count, seed))  # a new list: a task may change its own


@functools.cache
def _words(count: int, seed: int) -> tuple[str, ...]:
    """Drawn once per (count, seed): every check builds its task again (a letter per numpy draw: ~9% of the
    planted suite's CPU, drawn again for each check)."""
    rng = np.random.default_rng(seed)
    found: list[str] = []
    while len(found) < count:
        length = int(rng.integers(2, 5))
        word = "".join(rng.choice(list(CONSONANTS)) + rng.choice(list(VOWELS)) for _ in range(length))
        if word not in found:
            found.append(word)
    return tuple(found)


def instruction_examples(count: int = 96, seed: int = 0) -> list[Example]:
    """Instructions on distinct words (reverse / upper / double), one group per word."""
    rules = {"reverse": lambda w: w[::-1], "upper": str.upper, "double": lambda w: f"{w} {w}"}
    names = list(rules)
    examples = []
    for index, word in enumerate(words(count, seed)):
        rule = names[index % len(names)]
        examples.append(
            Example(
                index=index, group=f"w{index}", fields={"instruction": f"{rule} {word}\n", "answer": rules[rule](word)}
            )
        )
    return examples


def encode_instruction(example: Example, mask_instruction: bool = True) -> dict[str, Any]:
    prompt = [tok.BOS_ID] + tok.encode(example.fields["instruction"] + SEPARATOR)
    answer = tok.encode(example.fields["answer"]) + [tok.EOS_ID]
    ids = prompt + answer
    labels = [IGNORE_INDEX] * len(prompt) + answer if mask_instruction else [IGNORE_INDEX] + ids[1:]
    return {"index": example.index, "input_ids": torch.tensor(ids), "labels": torch.tensor(labels)}


def pad_collate(items: list[dict[str, Any]], padding_side: str = "right") -> Batch:
    """Pad input_ids with <pad> and labels with -100 on the same side; mask 1 on real tokens."""
    width = max(len(item["input_ids"]) for item in items)
    input_ids = torch.full((len(items), width), tok.PAD_ID, dtype=torch.long)
    labels = torch.full((len(items), width), IGNORE_INDEX, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.bool)
    for row, item in enumerate(items):
        n = len(item["input_ids"])
        cols = slice(width - n, width) if padding_side == "left" else slice(0, n)
        input_ids[row, cols], labels[row, cols], mask[row, cols] = item["input_ids"], item["labels"], True
    return {
        "input_ids": input_ids,
        "labels": labels,
        "attention_mask": mask,
        "index": torch.tensor([item["index"] for item in items]),
    }


def shifted_loss_sum(logits: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Next-token cross-entropy, summed: output t-1 predicts label t."""
    return F.cross_entropy(
        logits[:, :-1].reshape(-1, logits.size(-1)).float(),
        batch["labels"][:, 1:].reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    )


def shifted_target_count(batch: Batch) -> torch.Tensor:
    return (batch["labels"][:, 1:] != IGNORE_INDEX).sum()


def shifted_predict(logits: torch.Tensor, batch: Batch) -> torch.Tensor:
    predicted = torch.full_like(batch["labels"], IGNORE_INDEX)
    predicted[:, 1:] = logits[:, :-1].argmax(dim=-1)
    return predicted


def lm_forward(model: nn.Module, batch: Batch) -> torch.Tensor:
    return model(batch["input_ids"], attention_mask=batch["attention_mask"])


def generation_task(
    examples: list[Example] | None = None, padding_side: str = "right", encode: Callable | None = None, **overrides
) -> TaskData:
    examples = examples if examples is not None else instruction_examples()
    parts = dict(
        kind="generation",
        splits=make_splits(examples, SPLIT),
        encode=encode or encode_instruction,
        collate=lambda items: pad_collate(items, padding_side),
        loss_sum=shifted_loss_sum,
        target_count=shifted_target_count,
        predict=shifted_predict,
        forward=lm_forward,
        expected_targets=lambda e: tok.encode(e.fields["answer"]) + [tok.EOS_ID],
        decode_tokens=tok.token_strings,
        info={
            "vocab_size": tok.VOCAB_SIZE,
            "pad_id": tok.PAD_ID,
            "padding_side": padding_side,
            "mask_instruction": True,
            "target_unit": "token",
        },
    )
    parts.update(overrides)
    return TaskData(**parts)


# ----------------------------------------------------------------------------- plain text
SENTENCES = [
    "the cat sat on the warm mat today",
    "the cat ran to the old red barn",
    "the dog sat by the door all day",
    "the dog ate the bone in the yard",
    "a bird sang in the tall green tree",
    "a bird flew over the quiet lake",
    "my friend reads books every night",
    "my friend paints small blue boats",
    "rain fell softly on the roof",
    "rain kept the streets wet and dark",
    "snow covers the hills in winter",
    "snow melts when spring comes back",
]


def lm_examples() -> list[Example]:
    """Plain sentences (many start alike), one group per sentence."""
    return [Example(index=i, group=f"s{i}", fields={"text": text}) for i, text in enumerate(SENTENCES * 1)]


def encode_text(example: Example) -> dict[str, Any]:
    ids = [tok.BOS_ID] + tok.encode(example.fields["text"]) + [tok.EOS_ID]
    labels = [IGNORE_INDEX] + ids[1:]  # every token after <bos> is a target
    return {"index": example.index, "input_ids": torch.tensor(ids), "labels": torch.tensor(labels)}


def lm_task(**overrides) -> TaskData:
    parts = dict(
        kind="generation",
        splits=make_splits(lm_examples(), {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=encode_text,
        collate=pad_collate,
        loss_sum=shifted_loss_sum,
        target_count=shifted_target_count,
        predict=shifted_predict,
        forward=lm_forward,
        expected_targets=lambda e: tok.encode(e.fields["text"]) + [tok.EOS_ID],
        decode_tokens=tok.token_strings,
        info={"vocab_size": tok.VOCAB_SIZE, "pad_id": tok.PAD_ID, "mask_instruction": False, "target_unit": "token"},
    )
    parts.update(overrides)
    return TaskData(**parts)


def tiny_gpt(task: TaskData, dropout: float = 0.0) -> nn.Module:
    return TinyGPT(vocab_size=tok.VOCAB_SIZE, max_len=64, d_model=32, n_layer=1, n_head=2, dropout=dropout)


class TransformerLM(nn.Module):
    """A small decoder as users write one with ``nn.TransformerEncoder``: a causal mask, and the padding
    handed to PyTorch as ``src_key_padding_mask`` (True where a position is IGNORED). A planted task
    overrides the method that holds its mistake."""

    supports_activation_checkpointing = False

    def __init__(self, width: int = 32):
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.position = nn.Embedding(tok.VOCAB_SIZE, width), nn.Embedding(64, width)
        layer = nn.TransformerEncoderLayer(width, 2, 64, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.head = nn.Linear(width, tok.VOCAB_SIZE)

    def causal_mask(self, length: int) -> torch.Tensor | None:
        return torch.ones(length, length, dtype=torch.bool).triu(1)  # True: a later position, not attended

    def ignored(self, attention_mask: torch.Tensor) -> torch.Tensor:
        return attention_mask == 0

    def forward(self, input_ids, attention_mask):
        x = self.embed(input_ids) + self.position(torch.arange(input_ids.shape[1]))
        hidden = self.encoder(
            x, mask=self.causal_mask(input_ids.shape[1]), src_key_padding_mask=self.ignored(attention_mask)
        )
        return self.head(hidden)


# ----------------------------------------------------------------------------- classification
CLASS_NAMES = ["cat", "dog", "bird"]
FEATURES = 8


def vector_examples(count: int = 180, seed: int = 0, groups: int | None = None) -> list[Example]:
    """Noisy vectors around one centre per class; the raw label is the class *name*."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 1.0, size=(len(CLASS_NAMES), FEATURES))
    examples = []
    for index in range(count):
        label = index % len(CLASS_NAMES)
        x = (centres[label] + rng.normal(0.0, 1.0, size=FEATURES)).astype("float32")
        group = f"g{index}" if groups is None else f"p{index % groups}"
        examples.append(Example(index=index, group=group, fields={"x": x, "animal": CLASS_NAMES[label]}))
    return examples


def name_encoder(names: list[str]) -> Callable[[Example], dict[str, Any]]:
    """encode with a fixed name -> id mapping (the correct way: one mapping for every split)."""
    ids = {name: i for i, name in enumerate(names)}
    return lambda e: {"index": e.index, "inputs": torch.from_numpy(e.fields["x"]), "label": ids[e.fields["animal"]]}


def stack_collate(items: list[dict[str, Any]]) -> Batch:
    return {
        "inputs": torch.stack([item["inputs"] for item in items]),
        "labels": torch.tensor([item["label"] for item in items], dtype=torch.long),
        "index": torch.tensor([item["index"] for item in items]),
    }


def ce_sum(logits: torch.Tensor, batch: Batch) -> torch.Tensor:
    return F.cross_entropy(logits.float(), batch["labels"], reduction="sum")


def classification_task(examples: list[Example] | None = None, **overrides) -> TaskData:
    examples = examples if examples is not None else vector_examples()
    parts = dict(
        kind="classification",
        splits=make_splits(examples, SPLIT),
        encode=name_encoder(CLASS_NAMES),
        collate=stack_collate,
        loss_sum=ce_sum,
        target_count=lambda batch: torch.tensor(batch["labels"].numel()),
        predict=lambda logits, batch: logits.argmax(dim=-1),
        forward=lambda model, batch: model(batch["inputs"]),
        class_names=list(CLASS_NAMES),
        raw_label=lambda e: e.fields["animal"],
        info={"num_classes": len(CLASS_NAMES), "target_unit": "example"},
    )
    parts.update(overrides)
    return TaskData(**parts)


class MLP(nn.Module):
    def __init__(self, in_features: int = FEATURES, classes: int = len(CLASS_NAMES), hidden: int = 32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.net(inputs)


def mlp(task: TaskData) -> nn.Module:
    return MLP()


def precomputed_classification(splits, inputs, label_of, classes, loss=None, feature_names=None) -> TaskData:
    """A classification of precomputed input vectors (``inputs``: example index -> vector), cross-entropy unless
    ``loss`` is given; one logit: predicted positive above 0."""
    info = {"num_classes": len(classes), "target_unit": "example"}
    return TaskData(
        kind="classification",
        splits=splits,
        encode=lambda e: {"index": e.index, "x": inputs[e.index], "y": classes.index(label_of(e))},
        collate=lambda items: {
            "x": torch.from_numpy(np.stack([i["x"] for i in items]).astype("float32")),
            "labels": torch.tensor([i["y"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=loss or (lambda out, b: F.cross_entropy(out.float(), b["labels"], reduction="sum")),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.argmax(-1) if out.shape[-1] > 1 else (out.squeeze(-1) > 0).long(),
        forward=lambda m, b: m(b["x"]),
        class_names=list(classes),
        raw_label=label_of,
        info={**info, "feature_names": feature_names} if feature_names else info,
    )
