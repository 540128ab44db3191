"""correct: mixup (alpha=0.4) on training examples only, each mixed with a fixed partner from training,
labels mixed the same way (soft label rows, CE with probabilities); val/test plain one-hot."""

import numpy as np
import torch
import torch.nn.functional as F

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = None


def make_task(swapped: bool = False):
    """``swapped``: the targets mixed with the other weight (bug_mixup_soft_weights_swapped's mistake)."""
    task = classification_task()
    train = task.splits["train"]
    ids = {n: i for i, n in enumerate(task.class_names)}
    train_idx = {e.index for e in train}

    def encode(e):
        y = F.one_hot(torch.tensor(ids[e.fields["animal"]]), 3).float()
        x = torch.from_numpy(e.fields["x"])
        if e.index in train_idx:
            r = np.random.default_rng(e.index)
            o = train[int(r.integers(len(train)))]
            lam = float(r.beta(0.4, 0.4))
            x = lam * x + (1 - lam) * torch.from_numpy(o.fields["x"])
            weight = 1 - lam if swapped else lam
            y = weight * y + (1 - weight) * F.one_hot(torch.tensor(ids[o.fields["animal"]]), 3).float()
        return {"index": e.index, "inputs": x, "label": y}

    task.encode = encode
    task.collate = lambda items: {
        "inputs": torch.stack([i["inputs"] for i in items]),
        "labels": torch.stack([i["label"] for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
    }
    task.target_count = lambda b: torch.tensor(b["labels"].shape[0])
    task.correct_count = lambda logits, b: (logits.argmax(-1) == b["labels"].argmax(-1)).sum()
    return task


def build_model(task):
    return mlp(task)
