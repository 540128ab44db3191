"""tabular: the sales frame merged with a store table that holds two rows per store (one per manager),
so every sale is repeated with another staff count and floor area; split by merged row, the two copies
of a sale land in training and validation. No copy is identical, and the changed floor area keeps them
apart by distance."""

from tests.planted_tasks._merged_sales import build_model, sales_task

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "partial copies of training examples"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return sales_task(rows_per_store=2)
