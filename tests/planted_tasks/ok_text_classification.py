"""correct: sequence classification, masked mean pooling, right padding."""

from tests.planted_tasks._text_tasks import MeanPoolClassifier, seqcls_task

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
    return seqcls_task()


def build_model(task):
    return MeanPoolClassifier()
