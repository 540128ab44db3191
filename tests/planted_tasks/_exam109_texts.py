"""shared (from an outside examination's tasks, 2026-12-06): texts beside a float vector the model reads — reviews
with features computed from their raw text (hashed words, length, '!' count), and card payments named by their
merchant (short, repeated multi-word names) with amount and hour in a dict field, the hour a float tensor of its own.
The model: a bag of the text's bytes beside the numbers."""

import re
import zlib

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

WORDS = (
    "good bad great awful fine broken fast slow cheap pricey love hate works failed easy hard nice poor solid flimsy"
)
MERCHANTS = ["Blue Bottle Coffee", "Shell Gas Station", "Whole Foods Market", "Apple Store Online", "Corner Deli NYC"]


def text_vector(text: str) -> np.ndarray:
    """Features of the raw review: a hashed bag of its lower-cased words (16), its length, its '!' count."""
    vector = np.zeros(18, "float32")
    for word in re.findall(r"[a-z]+", text.lower()):
        vector[zlib.crc32(word.encode()) % 16] += 1
    vector[16], vector[17] = len(text) / 100, text.count("!")
    return vector


def _task(examples, numbers, text: str, extra=None) -> TaskData:
    def encode(e):
        ids = torch.tensor(list(e.fields[text].encode())[:120], dtype=torch.long)
        item = {"index": e.index, "ids": ids, "x": torch.from_numpy(numbers(e)), "y": int(e.fields["label"] == "yes")}
        return {**item, **(extra(e) if extra else {})}

    def collate(items):
        ids = torch.zeros(len(items), max(len(i["ids"]) for i in items), dtype=torch.long)
        for row, item in enumerate(items):
            ids[row, : len(item["ids"])] = item["ids"]
        batch = {"ids": ids, "x": torch.stack([i["x"] for i in items]), "labels": torch.tensor([i["y"] for i in items])}
        if extra:
            batch["hour"] = torch.stack([i["hour"] for i in items])
        return {**batch, "index": torch.tensor([i["index"] for i in items])}

    return TaskData(
        kind="classification",
        splits=make_splits(examples, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=lambda out, b: F.cross_entropy(out.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda m, b: m(b["ids"], torch.cat([b["x"], b["hour"]], -1) if "hour" in b else b["x"]),
        class_names=["no", "yes"],
        raw_label=lambda e: e.fields["label"],
        info={"num_classes": 2, "target_unit": "example"},
    )


def reposted_reviews() -> TaskData:
    """240 distinct reviews (positive: "yes"), 12 of them posted again by another user with other case,
    spacing and '!!' (a repost: the same text once normalised)."""
    rng = np.random.default_rng(0)
    examples = []
    for i in range(240):
        words = list(rng.choice(WORDS.split(), int(rng.integers(6, 12))))
        good = sum(w in "good great fine fast cheap love works easy nice solid" for w in words)
        fields = {"text": " ".join(words) + f" item {i}", "label": "yes" if good * 2 >= len(words) - 2 else "no"}
        examples.append(Example(index=i, group=f"user{i}", fields=fields))
    for j in range(12):
        fields = {
            "text": examples[j].fields["text"].capitalize().replace(" ", "  ", 2) + "!!",
            "label": examples[j].fields["label"],
        }
        examples.append(Example(index=len(examples), group=f"repost{j}", fields=fields))
    return _task(examples, lambda e: text_vector(e.fields["text"]), "text")


def card_payments() -> TaskData:
    """400 payments (fraud: "yes"), each named by its merchant, amount and hour in a dict field."""
    rng = np.random.default_rng(0)
    examples = []
    for i in range(400):
        amount, hour = float(np.round(rng.lognormal(3, 1), 2)), int(rng.integers(24))
        fraud = (amount > 80 and hour < 6) or rng.random() < 0.05
        fields = {"merchant": MERCHANTS[int(rng.integers(5))], "meta": {"amount": amount, "hour": hour}}
        examples.append(Example(index=i, group=f"card{i}", fields={**fields, "label": "yes" if fraud else "no"}))
    return _task(
        examples,
        lambda e: np.array([np.log1p(e.fields["meta"]["amount"])], "float32"),
        "merchant",
        extra=lambda e: {"hour": torch.tensor([e.fields["meta"]["hour"] / 24.0])},
    )


class BytesBeside(nn.Module):
    def __init__(self, numbers: int):
        super().__init__()
        torch.manual_seed(0)
        self.bytes = nn.EmbeddingBag(256, 16, mode="sum", padding_idx=0)
        self.head = nn.Linear(16 + numbers, 2)

    def forward(self, ids, numbers):
        return self.head(torch.cat([self.bytes(ids), numbers], -1))
