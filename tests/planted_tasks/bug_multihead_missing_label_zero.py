"""two-head classifier on two merged datasets (half annotated for animal, half for size): the missing head's label
is filled with 0 (labels = df.animal_id.fillna(0).astype(int)) instead of -100: every size-only example trains the
animal head towards 'cat', every animal-only example trains the size head towards 'small'."""

from tests.planted_tasks._multihead import TwoHeads, task

EXPECTED = {"step": "inspect", "verdict": "fail"}


def make_task():
    return task(missing_value=0)


def build_model(task):
    return TwoHeads()
