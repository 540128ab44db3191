"""recommendation: examples split by user, the user index looked up with user2idx.get(u, 0) from a
vocabulary built on training: every validation user is unseen and silently becomes index 0, a real
training user (no <unk> row). Validation scores every user as that one user."""

from tests.planted_tasks._user_clicks import build_model, click_task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "a lookup's default"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return click_task()
