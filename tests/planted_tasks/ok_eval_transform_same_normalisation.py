"""correct: ImageNet's mean and standard deviation in the training and the evaluation transform; only
training flips images (augmentation moves pixels, not their values)."""

from tests.planted_tasks._eval_normalisation import MEAN, STD, build_model, normalised_images

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return normalised_images(MEAN, STD)
