"""classification: the validation file was written by another export whose class column uses another list of
names (what train calls one animal, it calls the next): every validation label is consistently another
class's. Training is intact; validation accuracy is near 0, which the split audit once called labels
shuffled apart from their inputs (the fix: keep each label with its row), naming no code."""

from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._common import CLASS_NAMES, SPLIT, classification_task, mlp, vector_examples

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "labels are train's under another code"}
OTHER = dict(zip(CLASS_NAMES, CLASS_NAMES[1:] + CLASS_NAMES[:1]))


def make_task():
    splits = make_splits(vector_examples(240), SPLIT)
    splits["val"] = [
        Example(index=e.index, group=e.group, fields={**e.fields, "animal": OTHER[e.fields["animal"]]})
        for e in splits["val"]
    ]
    return classification_task(splits=splits)


build_model = mlp
