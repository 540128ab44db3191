"""shared: 8x8 RGB bar images (``_bar_images``: the bar's colour channel is part of the class), decoded
HWC, normalised with ImageNet's statistics; the validation split's images as ``decode_val`` gives them."""

import numpy as np
import torch

from tests.planted_tasks._bar_images import NAMES, SmallCNN, images
from tests.planted_tasks._vector_tasks import image_task

MEAN, STD = np.array([0.485, 0.456, 0.406], "float32"), np.array([0.229, 0.224, 0.225], "float32")


def decoded_task(decode_val):
    examples = images(count=240, seed=6)

    def encode(e):
        hwc = e.fields["hwc"] if e.index in train else decode_val(e.fields["hwc"])
        chw = torch.from_numpy(np.ascontiguousarray(((hwc - MEAN) / STD).transpose(2, 0, 1)))
        return {"index": e.index, "inputs": chw, "label": torch.tensor(e.fields["y"])}

    task, train = image_task(examples, 4, NAMES, encode=encode, field="hwc")
    return task


def build_model(task):
    return SmallCNN()
