"""ranking with a distance head: predict takes argmax, the FARTHEST candidate, while the loss trains the
relevant one nearest (validation accuracy falls as the model improves)."""

from tests.planted_tasks._distance_ranking import DistanceHead, ranking_task

EXPECTED = {"step": "alignment", "verdict": "fail", "said": "predict picks the lowest score at only"}
Model = DistanceHead


def make_task():
    return ranking_task(predict=lambda distances, b: distances.argmax(-1))
