"""3-class RoBERTa classifier: make_task shuffles the data frame 'before splitting' (df.sample(frac=1)) and
encodes the label column of the SHUFFLED frame, then zips those ids with the texts of the original, unshuffled
frame: each text gets another row's class id. raw_label reads the example's own (correct) class name."""

import numpy as np

from pilot.data.split import make_splits
from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "inspect", "verdict": "fail"}


def encode(e):
    enc = h.cls_encode(e)
    enc["label"] = e.fields["label_id"]
    return enc


def make_task():
    examples = h.sentence_class_examples()
    shuffled = [examples[i] for i in np.random.default_rng(0).permutation(len(examples))]  # df.sample(frac=1)
    label_ids = [h.CLASSES.index(e.fields["size"]) for e in shuffled]  # LabelEncoder on the shuffled column
    for e, y in zip(examples, label_ids):  # texts from the original frame
        e.fields["label_id"] = y
    return h.cls_task(encode=encode, splits=make_splits(examples, h.SPLIT))


def build_model(task):
    return h.roberta_cls(3)
