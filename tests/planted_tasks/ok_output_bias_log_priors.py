"""correct: the output bias initialised to the log of each class's prior, in class-id order: the fresh model
starts at the labels' entropy, below ln(2)."""

from tests.planted_tasks._rare_class_priors import make_task, prior_model

EXPECTED = None
__all__ = ["make_task", "build_model"]


def build_model(task):
    return prior_model(by_frequency=False)
