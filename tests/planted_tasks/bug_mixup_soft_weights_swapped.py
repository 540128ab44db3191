"""Mixup with soft targets whose weights are swapped: the input lam * x + (1 - lam) * x_partner is trained
towards (1 - lam) * y + lam * y_partner, so the class that dominates the input gets the smaller share of the
target (ok_mixup_soft_labels_blobs mixes both with lam). An outside examination's miss: the mixup check
returned at soft labels."""

from tests.planted_tasks import ok_mixup_soft_labels_blobs as mixup

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "weights are the other way round"}


def make_task():
    return mixup.make_task(swapped=True)


def build_model(task):
    return mixup.build_model(task)
