"""recommendation whose 4 'negatives' are sampled from the whole 12-item catalogue, the positive included: in ~1/3
of examples the positive item also sits in a negative slot, scored identically, so the label slot can never win."""

from tests.planted_tasks._ranking_candidates import Scorer, make_rank_task

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "the target scores exactly like another candidate"}


def make_task():
    return make_rank_task(exclude_positive=False)  # BUG


def build_model(task):
    return Scorer()
