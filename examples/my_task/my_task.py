"""Template to copy: your own model and data, plugged into pilot through Hydra ``_target_``.

Task: is the majority of a noisy bit sequence 1? Each example comes from a "sensor"
(its group) with its own bias, so the group split keeps a sensor's sequences in one
split. Built from a seeded numpy generator: no download. Configs: ``conf/data/my_data.yaml``
(-> ``make_task``) and ``conf/model/my_net.yaml`` (-> ``MajorityNet``). Run from the repo root:
    PYTHONPATH=examples/my_task python -m pilot hydra.searchpath=[file://examples/my_task/conf] \
        model=my_net data=my_data
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Batch, Example, TaskData


def make_task(
    n_examples: int = 512,  # sequences generated in total (before the split)
    length: int = 15,  # bits per sequence = model input width; odd, so no ties
    n_groups: int = 64,  # sensors; a sensor's sequences never straddle two splits
    label_noise: float = 0.05,  # share of labels flipped: the accuracy ceiling is ~0.95
    seed: int = 1234,  # data seed; pilot's `seed` only drives init and data order
    split=None,
) -> TaskData:  # data.split from the config (by, val_fraction, ...)
    if length < 1 or n_examples > 2**length // 2:  # distinct sequences only: the loop below would never end
        raise ValueError(
            f"data.length={length}: {n_examples} distinct sequences (data.n_examples) need at least "
            f"{max(1, (2 * n_examples - 1).bit_length())} bits. Fix: a longer data.length or fewer data.n_examples"
        )
    if n_groups < 1:
        raise ValueError(f"data.n_groups={n_groups}: the sensors the sequences come from, at least 1. Fix: e.g. 64")
    if not 0 <= label_noise <= 1:
        raise ValueError(f"data.label_noise={label_noise}: a share of labels, in [0, 1]. Fix: e.g. 0.05")
    rng = np.random.default_rng(seed)
    bias = rng.uniform(0.3, 0.7, size=n_groups)  # each sensor's chance of emitting a 1
    examples, seen = [], set()
    while len(examples) < n_examples:
        group = int(rng.integers(n_groups))
        bits = (rng.random(length) < bias[group]).astype("float32")
        if bits.tobytes() in seen:  # the same sequence twice could land in two splits: a leak
            continue  # that the pilot's split audit would (rightly) fail
        seen.add(bits.tobytes())
        label = int(bits.sum() > length / 2) ^ int(rng.random() < label_noise)
        examples.append(
            Example(index=len(examples), group=f"sensor-{group}", fields={"bits": bits * 2 - 1, "label": label})
        )  # bits as -1/+1

    def encode(example: Example) -> dict[str, Any]:
        return {
            "index": example.index,
            "inputs": torch.from_numpy(example.fields["bits"]),
            "label": example.fields["label"],
        }

    def collate(items: list[dict[str, Any]]) -> Batch:  # the engine needs "index" and "labels"
        return {
            "inputs": torch.stack([item["inputs"] for item in items]),
            "labels": torch.tensor([item["label"] for item in items], dtype=torch.long),
            "index": torch.tensor([item["index"] for item in items]),
        }

    return TaskData(
        kind="classification",
        splits=make_splits(examples, split),
        encode=encode,
        collate=collate,
        # a SUM over targets, never a mean: the engine divides by the whole update's target count
        loss_sum=lambda logits, batch: F.cross_entropy(logits.float(), batch["labels"], reduction="sum"),
        target_count=lambda batch: torch.tensor(batch["labels"].numel()),  # one target per example
        predict=lambda logits, batch: logits.argmax(dim=-1),  # compared with batch["labels"]
        forward=lambda model, batch: model(batch["inputs"]),
        info={
            "class_names": ["minority", "majority"],
            "num_classes": 2,
            "in_features": length,
            "target_unit": "example",
        },
    )


class MajorityNet(nn.Module):
    """One hidden layer; logits for the two classes."""

    supports_activation_checkpointing = False  # memory=checkpointing is refused for this model

    def __init__(self, in_features: int, hidden: int = 128, num_classes: int = 2):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_features, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.net(inputs)
