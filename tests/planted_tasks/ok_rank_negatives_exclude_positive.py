"""correct: recommendation with 4 negatives sampled from the catalogue minus the positive, candidates shuffled."""

from tests.planted_tasks._ranking_candidates import Scorer, make_rank_task

EXPECTED = None


def make_task():
    return make_rank_task(exclude_positive=True)


def build_model(task):
    return Scorer()
