"""correct twin of bug_collate_normalises_in_place: collate standardises the stacked batch (a new tensor),
leaving each example's encoded tensor as it is; it also adds a key of its own to each item (read by nothing
again), which changes nothing a later collate reads."""

from tests.planted_tasks._small_tasks import MLP, blobs, cls_task, vec_collate

EXPECTED = None
MEAN, STD = 0.5, 2.0


def collate(items):
    for item in items:
        item.setdefault("seen", True)  # a key added, not a value changed
    batch = vec_collate([{k: v for k, v in item.items() if k != "seen"} for item in items])
    batch["inputs"] = (batch["inputs"] - MEAN) / STD
    return batch


def make_task():
    return cls_task(blobs(), ("low", "mid", "high"), collate=collate)


def build_model(task):
    return MLP()
