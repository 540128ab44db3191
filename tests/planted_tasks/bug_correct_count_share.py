"""correct_count returns the accuracy (a mean) instead of the number of correct targets."""

from tests.planted_tasks._common import classification_task, mlp

EXPECTED = {"step": "tiny_subset", "verdict": "fail"}
SETTINGS = {"checks": ["inspect", "alignment", "objective", "tiny_subset"], "tiny_overrides": ["optim.lr=3e-3"]}


def make_task():
    return classification_task(correct_count=lambda logits, b: (logits.argmax(-1) == b["labels"]).float().mean())


def build_model(task):
    return mlp(task)
