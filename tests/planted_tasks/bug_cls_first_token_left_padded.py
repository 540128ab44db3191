"""sentence classification (BERT encoder + linear head on the FIRST position, '[CLS] pooling'), but batches are
LEFT-padded: in every row shorter than the batch, position 0 is a <pad> (the <s> sits further right), so the
head reads a padding position whose content depends on how much padding the batch has."""

from tests.planted_tasks import _left_padded_cls as _leftcls

EXPECTED = {"step": "inspect", "verdict": "warn"}


def make_task():
    return _leftcls.task()


def build_model(task):
    return _leftcls.Pooled(lambda hidden, mask: hidden[:, 0])  # the bug: column 0 is padding when left-padded
