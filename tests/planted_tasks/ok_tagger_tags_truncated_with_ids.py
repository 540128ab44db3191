"""correct: rows truncated to their last 12 tokens, and their tags with them (tags[-12:])."""

from tests.planted_tasks._truncated_tags import MAX, build_model, truncated_task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return truncated_task(lambda tags: tags[-MAX:])
