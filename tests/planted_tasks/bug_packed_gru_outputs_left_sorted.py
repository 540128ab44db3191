"""A GRU that sorts its rows by length for ``pack_padded_sequence`` and returns the logits in the sorted order:
each loss term compares one row's output with another row's label. It was failed as 'the model reads the
padding' (an outside examination): its outputs are another row's, which is now what the check says."""

from tests.planted_tasks._packed_gru import SortedGRU, make_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "come back in another order than the batch's rows"}
__all__ = ["make_task", "build_model"]


def build_model(task):
    return SortedGRU(restore=False)
