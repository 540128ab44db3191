"""correct: every split exported with its title column."""

from tests.planted_tasks._titled_posts import build_model, posts_task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return posts_task(lambda title: title)
