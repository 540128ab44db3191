"""regression of house prices (tens of thousands to 200,000) whose labels are stored in float16 to save memory:
every price past 65504 becomes inf, and the loss of any batch holding one is inf. It was said as "look at the
mask and the loss's inputs", never naming the labels (an outside examination)."""

import dataclasses

import numpy as np
import torch

from pilot.data.task import Example
from tests.planted_tasks._vector_tasks import mlp, vector_task

EXPECTED = {"step": "objective", "verdict": "fail", "said": "the labels are not finite"}


def make_task():
    rng = np.random.default_rng(4)
    w = rng.normal(size=10)
    examples = [
        Example(index=i, group=f"g{i}", fields={"x": (x := rng.normal(size=10)).tolist(), "y": float(60000 + 20000 * x @ w + 3000 * rng.normal())})
        for i in range(200)
    ]  # fmt: skip
    task = vector_task(examples, "group", val=0.2, test=0.0)
    encode = task.encode

    def in_float16(e):  # the bug
        item = encode(e)
        return {**item, "label": item["label"].to(torch.float16)}

    return dataclasses.replace(task, encode=in_float16)


def build_model(task):
    return mlp(10, 1)
