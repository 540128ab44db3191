"""multi-hot tag rows built by summing one-hots of the record's tag list: a tag the export lists twice gets the
target 2.0, and BCEWithLogitsLoss takes it without a word (its loss has no floor there) (an outside
examination)."""

import torch.nn as nn

from tests.planted_tasks._repeated_tags import Model, summed_one_hots, task

EXPECTED = {"step": "objective", "verdict": "fail", "said": "outside [0, 1]"}
__all__ = ["Model", "make_task"]

BCE = nn.BCEWithLogitsLoss(reduction="sum")


def make_task():
    return task(summed_one_hots, lambda out, b: BCE(out.float(), b["labels"]))  # the bug: sum, not a set
