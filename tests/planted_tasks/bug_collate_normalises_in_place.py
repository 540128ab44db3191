"""collate standardises each example's own encoded tensor in place (``x.sub_(MEAN).div_(STD)``): encodings
are computed once and kept, so the second epoch sees ((x - m) / s - m) / s, the third again, and so on. Two
calls on the same examples differ, which once read as a random collate (augmentation), naming no cause."""

from tests.planted_tasks._small_tasks import MLP, blobs, cls_task, vec_collate

EXPECTED = {"step": "inspect", "verdict": "fail"}
MEAN, STD = 0.5, 2.0


def collate(items):
    for item in items:
        item["inputs"].sub_(MEAN).div_(STD)  # the bug: the example's own tensor, every call again
    return vec_collate(items)


def make_task():
    return cls_task(blobs(), ("low", "mid", "high"), collate=collate)


def build_model(task):
    return MLP()
