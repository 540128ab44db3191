"""correct: 3-class sentence classification with a config-built RobertaForSequenceClassification (num_labels=3,
problem_type='single_label_classification', id2label set), labels passed to the model, loss_sum = out.loss x rows."""

from tests.planted_tasks import _hf_tiny as h

EXPECTED = None


def make_task():
    return h.cls_task(
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"], labels=b["labels"]),
        loss_sum=lambda out, b: out.loss * b["labels"].numel(),
    )


def build_model(task):
    return h.roberta_cls(
        3,
        problem_type="single_label_classification",
        id2label=dict(enumerate(h.CLASSES)),
        label2id={c: i for i, c in enumerate(h.CLASSES)},
    )
