"""class ids off by one in validation only: train reads the 0-based 'label' column of train.csv, validation is
read from the dev file of the original release whose ids start at 1 (short=1, medium=2, long=3); encode uses the
file's id as is. RoBERTa 3-class classifier on out.logits."""

from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "inspect", "verdict": "fail"}


def encode(e):
    enc = h.cls_encode(e)
    enc["label"] = e.fields["label_id"]
    return enc


def make_task():
    task = h.cls_task(encode=encode)
    for split, examples in task.splits.items():
        base = 1 if split != "train" else 0  # the dev/test release counts from 1
        for e in examples:
            e.fields["label_id"] = h.CLASSES.index(e.fields["size"]) + base
    return task


def build_model(task):
    return h.roberta_cls(3)
