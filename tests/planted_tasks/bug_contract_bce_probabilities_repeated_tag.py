"""multi-hot tag rows summed from one-hots (a tag listed twice gets 2.0) under BCELoss on sigmoid outputs:
binary_cross_entropy refuses targets above 1, and the refusal names how many and why (an outside examination)."""

import torch
import torch.nn as nn

from tests.planted_tasks._repeated_tags import Model, summed_one_hots, task

EXPECTED = {"step": "contract", "verdict": "fail", "said": "summing one-hots"}
__all__ = ["Model", "make_task"]

BCE = nn.BCELoss(reduction="sum")


def make_task():
    return task(summed_one_hots, lambda out, b: BCE(torch.sigmoid(out.float()), b["labels"]))
