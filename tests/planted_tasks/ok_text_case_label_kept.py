"""correct: the shouting-or-calm task of bug_text_lowercased_erases_label with the text kept as written
(no lower-casing): the case that tells the classes apart reaches the model."""

from tests.planted_tasks.bug_text_lowercased_erases_label import build_model, task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return task(lower=False)
