"""Building blocks of the leak tasks (undeclared groups, copies behind ids, near-duplicates, time,
target leakage): tabular rows and short support tickets, classified the way a user would write it.

- ``patient_rows``: visits of patients (``patient_id``, ``age``, ``hospital``, 6 measurements, an
  outcome *name* per patient); ``tabular_task`` classifies the measurement vector;
- ``tickets``: short support tickets routed to a team; ``text_task`` classifies their bytes;
- models: ``TabularNet`` (an MLP) and ``BagOfBytes`` (mean of byte embeddings, masked).
Small (<= ~300 examples), seeded, no download. Each planted module changes one thing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Batch, Example, TaskData

OUTCOMES = ["stable", "worse", "better"]
MEASUREMENTS = ["heart_rate", "systolic_bp", "temperature", "oxygen", "glucose", "lactate"]
SPLIT = {"by": "group", "val_fraction": 0.2, "test_fraction": 0.2, "salt": "leaks"}
HOSPITALS = ["north", "south", "east", "west"]


# ----------------------------------------------------------------------------- tabular rows
def patient_rows(patients: int = 60, visits: int = 4, seed: int = 0, spread: float = 0.6) -> list[dict[str, Any]]:
    """One row per visit: the patient's outcome sets the centre, each visit adds noise."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 1.0, size=(len(OUTCOMES), len(MEASUREMENTS)))
    rows = []
    for patient in range(patients):
        outcome = int(rng.integers(len(OUTCOMES)))
        base = centres[outcome] + rng.normal(0.0, 0.8, size=len(MEASUREMENTS))
        age, hospital = int(rng.integers(20, 90)), HOSPITALS[int(rng.integers(len(HOSPITALS)))]
        for visit in range(visits):
            x = (base + rng.normal(0.0, spread, size=len(MEASUREMENTS))).astype("float32")
            rows.append(
                {
                    "patient_id": f"P{patient:04d}",
                    "visit": visit,
                    "age": age,
                    "hospital": hospital,
                    "x": x,
                    "outcome": OUTCOMES[outcome],
                    "day": float(patient * 7 + visit * 30),
                }
            )
    return rows


def tabular_task(
    examples: Sequence[Example], feature_names: Sequence[str] = MEASUREMENTS, split: dict[str, Any] | None = None
) -> TaskData:
    ids = {name: i for i, name in enumerate(OUTCOMES)}
    return TaskData(
        kind="classification",
        splits=make_splits(examples, split or SPLIT),
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.from_numpy(e.fields["x"]),
            "label": ids[e.fields["outcome"]],
        },
        collate=lambda items: {
            "inputs": torch.stack([i["inputs"] for i in items]),
            "labels": torch.tensor([i["label"] for i in items], dtype=torch.long),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda logits, batch: F.cross_entropy(logits.float(), batch["labels"], reduction="sum"),
        target_count=lambda batch: torch.tensor(batch["labels"].numel()),
        predict=lambda logits, batch: logits.argmax(dim=-1),
        forward=lambda model, batch: model(batch["inputs"]),
        class_names=list(OUTCOMES),
        raw_label=lambda e: e.fields["outcome"],
        info={"num_classes": len(OUTCOMES), "target_unit": "example", "feature_names": list(feature_names)},
    )


class TabularNet(nn.Module):
    def __init__(self, in_features: int = len(MEASUREMENTS), classes: int = len(OUTCOMES), hidden: int = 32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.net(inputs)


def tabular_model(task: TaskData) -> nn.Module:
    return TabularNet(in_features=len(task.info["feature_names"]))


# ----------------------------------------------------------------------------- support tickets
TEAMS = ["hardware", "network", "billing"]
TOPICS = {
    "hardware": ["printer", "laptop", "monitor", "keyboard", "docking station", "scanner"],
    "network": ["wifi", "vpn", "router", "proxy", "firewall", "dns"],
    "billing": ["invoice", "refund", "payment", "receipt", "subscription", "credit note"],
}
PROBLEMS = [
    "stopped working",
    "is very slow",
    "shows an error",
    "keeps restarting",
    "was charged twice",
    "cannot connect",
    "needs a replacement",
    "is missing",
    "looks wrong",
    "times out",
]
PLACES = [
    "on floor two",
    "in the london office",
    "since monday",
    "after the update",
    "for the whole team",
    "in meeting room b",
    "at the front desk",
    "since last night",
    "for one customer",
    "in the lab",
]
ASKS = [
    "please help",
    "can someone call me",
    "this is urgent",
    "no rush",
    "please advise",
    "thanks in advance",
    "any idea why",
    "we tried rebooting",
]


def tickets(count: int = 180, seed: int = 0) -> list[dict[str, Any]]:
    """Distinct tickets: a team's topic, a problem, one or two places, a request."""
    rng = np.random.default_rng(seed)
    rows, seen = [], set()
    while len(rows) < count:
        team = TEAMS[len(rows) % len(TEAMS)]
        pick = lambda words: words[int(rng.integers(len(words)))]  # noqa: E731
        places = " and ".join(sorted({pick(PLACES) for _ in range(int(rng.integers(1, 3)))}))
        text = f"the {pick(TOPICS[team])} {pick(PROBLEMS)} {places}, {pick(ASKS)}"
        if text not in seen:
            seen.add(text)
            rows.append({"ticket_id": f"T-{10000 + len(rows)}", "text": text, "team": team})
    return rows


def text_task(examples: Sequence[Example], split: dict[str, Any] | None = None) -> TaskData:
    ids = {name: i for i, name in enumerate(TEAMS)}

    def collate(items: list[dict[str, Any]]) -> Batch:
        width = max(len(i["input_ids"]) for i in items)
        input_ids = torch.full((len(items), width), tok.PAD_ID, dtype=torch.long)
        mask = torch.zeros((len(items), width), dtype=torch.bool)
        for row, item in enumerate(items):
            input_ids[row, : len(item["input_ids"])] = item["input_ids"]
            mask[row, : len(item["input_ids"])] = True
        return {
            "input_ids": input_ids,
            "attention_mask": mask,
            "labels": torch.tensor([i["label"] for i in items], dtype=torch.long),
            "index": torch.tensor([i["index"] for i in items]),
        }

    return TaskData(
        kind="classification",
        splits=make_splits(examples, split or SPLIT),
        encode=lambda e: {
            "index": e.index,
            "input_ids": torch.tensor(tok.encode(e.fields["text"])),
            "label": ids[e.fields["team"]],
        },
        collate=collate,
        loss_sum=lambda logits, batch: F.cross_entropy(logits.float(), batch["labels"], reduction="sum"),
        target_count=lambda batch: torch.tensor(batch["labels"].numel()),
        predict=lambda logits, batch: logits.argmax(dim=-1),
        forward=lambda model, batch: model(batch["input_ids"], batch["attention_mask"]),
        class_names=list(TEAMS),
        raw_label=lambda e: e.fields["team"],
        info={"num_classes": len(TEAMS), "target_unit": "example", "pad_id": tok.PAD_ID},
    )


class BagOfBytes(nn.Module):
    """Mean of the byte embeddings of the real tokens, then a linear head."""

    def __init__(self, classes: int = len(TEAMS), width: int = 16):
        super().__init__()
        self.embed = nn.Embedding(tok.VOCAB_SIZE, width)
        self.head = nn.Linear(width, classes)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        mask = attention_mask.unsqueeze(-1).float()
        pooled = (self.embed(input_ids) * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(pooled)


def text_model(task: TaskData) -> nn.Module:
    return BagOfBytes()
