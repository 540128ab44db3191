"""3-class task fine-tuned from a 2-class (sentiment) Roberta checkpoint: num_labels is not passed, so the config's
num_labels=2 is kept; class 'long' (id 2) has no logit. Loss over out.logits."""

from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "contract", "verdict": "fail"}


def make_task():
    return h.cls_task()


def build_model(task):
    return h.roberta_cls(2)
