"""correct: token classification (tagging), right padding, labels -100 on padding, bidirectional encoder."""

from tests.planted_tasks._text_tasks import Tagger, tagging_task

EXPECTED = None
SETTINGS = {
    "checks": [
        "inspect",
        "split_audit",
        "alignment",
        "objective",
        "smallest_micro_batch",
        "eval_determinism",
        "tiny_subset",
    ],
    "tiny_overrides": ["optim.lr=3e-3"],
}


def make_task():
    return tagging_task()


def build_model(task):
    return Tagger()
