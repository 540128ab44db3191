"""correct: card payments named by a short, repeated merchant name, with amount and hour in a dict field (the hour
a float tensor of its own): two purchases at one merchant are two examples (an examination's false alarm,
2026-12-06: the split audit failed every repeated name as a duplicate text)."""

from tests.planted_tasks._exam109_texts import BytesBeside, card_payments

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return card_payments()


def build_model(task):
    return BytesBeside(2)
