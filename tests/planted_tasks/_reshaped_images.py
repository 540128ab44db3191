"""shared: 8x8 RGB bar images (``_bar_images``) decoded HWC and turned into the model's CHW tensor by
``to_chw``."""

import numpy as np
import torch

from tests.planted_tasks._bar_images import NAMES, SmallCNN, images
from tests.planted_tasks._vector_tasks import image_task


def reshaped_task(to_chw):
    examples = images(count=240, seed=8)

    def encode(e):
        chw = to_chw(torch.from_numpy(np.ascontiguousarray(e.fields["hwc"])))
        return {"index": e.index, "inputs": chw.contiguous(), "label": torch.tensor(e.fields["y"])}

    task, _ = image_task(examples, 4, NAMES, encode=encode, field="hwc")
    return task


def build_model(task):
    return SmallCNN()
