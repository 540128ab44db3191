"""label map taken from a config that spells one class 'birds' while the data says 'bird'; encode uses
label2id.get(name, 0) 'to be safe': every bird silently becomes class 0 (cat), class 2 never occurs."""

import torch

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = {"step": "inspect", "verdict": "fail"}
CONFIG_LABELS = ["cat", "dog", "birds"]
LABEL2ID = {name: i for i, name in enumerate(CONFIG_LABELS)}


def encode(e):
    return {"index": e.index, "inputs": torch.from_numpy(e.fields["x"]), "label": LABEL2ID.get(e.fields["animal"], 0)}


def make_task():
    return classification_task(encode=encode, class_names=list(CONFIG_LABELS))


build_model = mlp
