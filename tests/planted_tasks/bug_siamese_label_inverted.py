"""([B, 1] distance output variant) siamese pair verification: the labels come from a dataset column 'is_different' (1 = different) while the
margin loss, copied from the Hadsell et al. formula, treats 1 as SIMILAR (y * d^2): duplicates are pushed apart
and different pairs pulled together; predict (distance < 1 -> 'same') is consistent with class_names."""

from tests.planted_tasks._common import EVERY_CHECK
from tests.planted_tasks._siamese import Siamese, task

EXPECTED = {"step": "inspect", "verdict": "fail"}
SETTINGS = {**EVERY_CHECK, "tiny_overrides": ["optim.lr=3e-3"]}


def make_task():
    return task(encode_label=lambda e: int(e.fields["label_name"] == "different"))  # the bug: 1 = different


def build_model(task):
    return Siamese(keepdim=True)
