"""correct: the rows sorted by length for ``pack_padded_sequence``, the outputs put back in the batch's order."""

from tests.planted_tasks._packed_gru import SortedGRU, make_task

EXPECTED = None
__all__ = ["make_task", "build_model"]


def build_model(task):
    return SortedGRU(restore=True)
