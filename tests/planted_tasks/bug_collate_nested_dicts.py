"""classification: collate groups its tensors by source, {"features": {"inputs": ...}}: the engine moves only
the batch's own tensors to the device (a GPU run's model would be given CPU tensors) and every check reads the
batch by key; accepted, it got a false split audit, tiny subset and reload check (an outside examination)."""

from tests.planted_tasks._common import classification_task, mlp, stack_collate

EXPECTED = {"step": "contract", "verdict": "fail", "said": "holds a mapping"}


def nested_collate(items):
    batch = stack_collate(items)
    return {"features": {"inputs": batch["inputs"]}, "labels": batch["labels"], "index": batch["index"]}


def make_task():
    return classification_task(collate=nested_collate, forward=lambda model, batch: model(batch["features"]["inputs"]))


build_model = mlp
