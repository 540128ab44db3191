"""3-class sentence classification with a config-built RobertaForSequenceClassification whose forward passes
input_ids and labels but not attention_mask (dropped in a refactor that switched to keyword arguments): every
padded row attends to its padding. A fresh RoBERTa's logits barely depend on their input (0.1-0.5% of their
scale between examples), so the padding it reads moves them by less than a fixed share of their scale."""

from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "inspect", "verdict": "fail"}


def make_task():
    return h.cls_task(
        forward=lambda m, b: m(input_ids=b["input_ids"], labels=b["labels"]),
        loss_sum=lambda out, b: out.loss * b["labels"].numel(),
    )


def build_model(task):
    return h.roberta_cls(3, problem_type="single_label_classification")
