"""correct: the store table deduplicated to one row per store before the merge: each sale once."""

from tests.planted_tasks._merged_sales import build_model, sales_task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return sales_task(rows_per_store=1)
