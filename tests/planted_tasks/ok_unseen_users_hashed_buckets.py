"""correct: examples split by user, each user's index its number modulo 40 (the hashing trick): unseen
validation users spread over the same buckets training's users fill."""

from tests.planted_tasks._user_clicks import build_model, click_task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return click_task(hashed=True)
