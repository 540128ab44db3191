"""12 reviews posted again by another user with other case, spacing and '!!', beside features computed from the raw
text (its length and '!' count differ): the copies are the same text once normalised and must still be found (an
examination's case, 2026-12-06: comparing the whole feature vector beside the text let them through)."""

from tests.planted_tasks._exam109_texts import BytesBeside, reposted_reviews

EXPECTED = {"step": "split_audit", "verdict": "fail", "said": "with the same text as a train example"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return reposted_reviews()


def build_model(task):
    return BytesBeside(18)
