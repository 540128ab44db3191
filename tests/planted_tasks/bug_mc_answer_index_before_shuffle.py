"""multiple choice ('which of the 4 numbers is the largest?'): the answer letter is computed from
[correct] + distractors (always 'A') and only then are the options shuffled (per example, seeded): the label
no longer points at the correct option, so every split is trained/evaluated towards 'A' while the correct
option moves around."""

import numpy as np
import torch
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._multiple_choice import LETTERS, Model, records  # noqa: F401

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "class(es) ['B', 'C', 'D'] missing"}


def make_task():
    ex = [Example(index=r["id"], group=f"q{r['id']}", fields=dict(r)) for r in records()]
    splits = make_splits(ex, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0})
    for part in splits.values():
        for e in part:
            options = [e.fields["correct"], *e.fields["distractors"]]
            e.fields["answer"] = LETTERS[options.index(e.fields["correct"])]  # computed here ...
            np.random.default_rng(1000 + e.index).shuffle(options)  # ... and then shuffled
            e.fields["options"] = options
    return TaskData(
        kind="multiple_choice",
        splits=splits,
        encode=lambda e: {
            "index": e.index,
            "inputs": torch.tensor([v / 100.0 for v in e.fields["options"]], dtype=torch.float32),
            "label": LETTERS.index(e.fields["answer"]),
        },
        collate=lambda items: {
            "inputs": torch.stack([i["inputs"] for i in items]),
            "labels": torch.tensor([i["label"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda logits, b: logits.argmax(-1),
        forward=lambda m, b: m(b["inputs"]),
        class_names=LETTERS,
        raw_label=lambda e: e.fields["answer"],
        info={"num_classes": 4, "target_unit": "example"},
    )
