"""tagger: predict argmaxes over dim=1 (the positions) instead of dim=-1 (the tags)."""

from tests.planted_tasks._text_tasks import Tagger, tagging_task

EXPECTED = {"step": "contract", "verdict": "fail"}
SETTINGS = {"checks": ["inspect", "alignment", "objective", "tiny_subset"], "tiny_overrides": ["optim.lr=3e-3"]}


def make_task():
    return tagging_task(predict=lambda logits, batch: logits.argmax(dim=1))  # the bug


def build_model(task):
    return Tagger()
