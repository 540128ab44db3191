"""label smoothing applied twice: the dataset already stores smoothed one-hot targets (0.1 spread over the
classes, from a recipe that smooths in the data pipeline), and loss_sum adds CrossEntropy(label_smoothing=0.1)
on top, copied from another recipe: the effective smoothing is ~0.19, not the 0.1 the config says."""

import torch
import torch.nn.functional as F

from tests.planted_tasks._common import CLASS_NAMES, EVERY_CHECK, classification_task, mlp

EXPECTED = {"step": "objective", "verdict": "warn"}
SETTINGS = EVERY_CHECK
EPS = 0.1
ids = {n: i for i, n in enumerate(CLASS_NAMES)}


def encode(e):
    onehot = F.one_hot(torch.tensor(ids[e.fields["animal"]]), len(CLASS_NAMES)).float()
    return {
        "index": e.index,
        "inputs": torch.from_numpy(e.fields["x"]),
        "soft": onehot * (1 - EPS) + EPS / len(CLASS_NAMES),
    }


def collate(items):
    soft = torch.stack([i["soft"] for i in items])
    return {
        "inputs": torch.stack([i["inputs"] for i in items]),
        "soft": soft,
        "labels": soft.argmax(-1),
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    return classification_task(
        encode=encode,
        collate=collate,
        loss_sum=lambda logits, b: F.cross_entropy(logits.float(), b["soft"], label_smoothing=EPS, reduction="sum"),
    )


def build_model(task):
    return mlp(task)
