"""shared: 8x8 RGB images stored HWC (as PIL/numpy give them); classes: which colour channel carries a
bright bar, and bar orientation (horizontal/vertical) -> 4 classes."""

import numpy as np
import torch
import torch.nn as nn

from pilot.data.task import Example
from tests.planted_tasks._small_tasks import cls_task

NAMES = ["red-horizontal", "red-vertical", "blue-horizontal", "blue-vertical"]


def images(count=200, seed=0):
    rng = np.random.default_rng(seed)
    ex = []
    for i in range(count):
        y = i % 4
        img = rng.uniform(0, 0.3, size=(8, 8, 3)).astype("float32")
        ch = 0 if y < 2 else 2
        k = int(rng.integers(1, 7))
        if y % 2 == 0:
            img[k, :, ch] += 0.7
        else:
            img[:, k, ch] += 0.7
        ex.append(Example(index=i, group=f"img{i}", fields={"hwc": img, "name": NAMES[y], "y": y}))
    return ex


def image_task(to_chw):
    ex = images()
    for e in ex:
        e.fields["x"] = to_chw(torch.from_numpy(e.fields["hwc"])).numpy()
    return cls_task(ex, NAMES)


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.head = nn.Linear(8 * 8 * 8, 4)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x)).flatten(1))


class TinyCNN4(nn.Module):
    def __init__(self, side=4):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.head = nn.Linear(8 * side * side, 4)

    def forward(self, x):
        return self.head(torch.relu(self.conv(x)).flatten(1))
