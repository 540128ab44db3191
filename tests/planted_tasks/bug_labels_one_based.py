"""ids counted from 1 (as in the source CSV) while class_names is indexed from 0."""

import torch

from tests.planted_tasks._common import CLASS_NAMES, MLP, classification_task

EXPECTED = {"step": "inspect", "verdict": "fail"}


def encode(example):
    return {
        "index": example.index,
        "inputs": torch.from_numpy(example.fields["x"]),
        "label": CLASS_NAMES.index(example.fields["animal"]) + 1,
    }  # the bug


def make_task():
    return classification_task(encode=encode, info={"num_classes": 4, "target_unit": "example"})


def build_model(task):
    return MLP(classes=4)  # sized to the ids seen, so nothing crashes
