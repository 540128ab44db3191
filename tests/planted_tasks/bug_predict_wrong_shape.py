"""classification: predict argmaxes over the batch dimension (dim=0) instead of the classes."""

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = {"step": "contract", "verdict": "fail"}
SETTINGS = {"checks": ["inspect", "alignment", "objective", "tiny_subset"], "tiny_overrides": ["optim.lr=3e-3"]}


def make_task():
    return classification_task(predict=lambda logits, batch: logits.argmax(dim=0))  # the bug


def build_model(task):
    return mlp(task)
