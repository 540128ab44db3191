"""shared: leaf photos (1x16x16, 4 classes, each photo its own texture around its class's pattern), the data
set 'enlarged' offline: every photo saved again mirrored and turned a quarter, each copy a file of its own.
``same_group``: the copies keep their original's group (split together), else each file is its own."""

import numpy as np
import torch

from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._small_tasks import cls_task

NAMES = ["healthy", "rust", "scab", "blight"]


def task(same_group: bool):
    rng = np.random.default_rng(11)
    patterns = rng.normal(0, 1, size=(4, 16, 16))
    rows = []
    for photo in range(80):
        y = photo % 4
        image = 0.6 * patterns[y] + rng.normal(0, 1, size=(16, 16))
        for copy in (image, image[:, ::-1], np.rot90(image)):
            rows.append((np.ascontiguousarray(copy[None], dtype="float32"), y, f"photo{photo}"))
    examples = [
        Example(index=i, group=original if same_group else f"file{i}", fields={"x": x, "y": y, "name": NAMES[y]})
        for i, (x, y, original) in enumerate(rows[k] for k in rng.permutation(len(rows)))
    ]
    return cls_task(
        examples, NAMES, splits=make_splits(examples, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0})
    )


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.net = torch.nn.Sequential(
            torch.nn.Flatten(), torch.nn.Linear(256, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
        )

    def forward(self, x):
        return self.net(x)
