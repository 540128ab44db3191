"""single-label 3-class task, but the config says problem_type='multi_label_classification' (copied from a
multi-label recipe) while labels are int class ids: the model's own loss is BCE between [B,3] logits and [B] ints."""

from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "contract", "verdict": "fail"}


def make_task():
    return h.cls_task(
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"]),
        loss_sum=lambda out, b: out.loss * b["labels"].numel(),
    )


def build_model(task):
    return h.roberta_cls(3, problem_type="multi_label_classification")
