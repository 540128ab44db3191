"""shared: 8x8 RGB bar images (``_bar_images``), normalised by the training transform with ImageNet's
mean and standard deviation, and by the evaluation transform with ``eval_mean`` and ``eval_std``;
the training transform also flips half the images left to right (augmentation)."""

import numpy as np
import torch

from tests.planted_tasks._bar_images import NAMES, SmallCNN, images
from tests.planted_tasks._vector_tasks import image_task

MEAN, STD = np.array([0.485, 0.456, 0.406], "float32"), np.array([0.229, 0.224, 0.225], "float32")


def normalised_images(eval_mean, eval_std):
    examples = images(count=240, seed=4)
    flips = np.random.default_rng(0)

    def encode(e):
        hwc = e.fields["hwc"]
        if e.index in train:  # the training transform: flip, then ImageNet's statistics
            hwc = hwc[:, ::-1] if flips.random() < 0.5 else hwc
            pixels = (hwc - MEAN) / STD
        else:  # the evaluation transform
            pixels = (hwc - np.asarray(eval_mean, "float32")) / np.asarray(eval_std, "float32")
        chw = torch.tensor(np.ascontiguousarray(pixels.transpose(2, 0, 1)), dtype=torch.float32)
        return {"index": e.index, "inputs": chw, "label": torch.tensor(e.fields["y"])}

    task, train = image_task(examples, 4, NAMES, encode=encode, field="hwc")
    return task


def build_model(task):
    return SmallCNN()
