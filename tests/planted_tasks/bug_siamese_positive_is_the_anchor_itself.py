"""siamese pair verification: a 'same' pair is built from the anchor capture itself (its vector paired with
itself, meant: another capture of the same item), so 'same' means 'identical' and the model learns equality,
not similarity; every check passed it (an outside examination)."""

from pilot.data.task import Example
from tests.planted_tasks._siamese import Siamese, pairs, task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "same input"}


def make_task():
    examples = [
        Example(e.index, e.group, {**e.fields, "b": e.fields["a"]}) if e.fields["label_name"] == "same" else e
        for e in pairs()
    ]
    return task(examples)


def build_model(task):
    return Siamese()
