"""images: the training transform normalises with ImageNet's mean and standard deviation; the
evaluation transform, copied from another repository, uses (x - 0.5) / 0.5. Every validation pixel
sits on another scale (about 0.45x as wide) than anything the model trained on."""

from tests.planted_tasks._eval_normalisation import build_model, normalised_images

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "under one map"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return normalised_images((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))
