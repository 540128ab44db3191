"""Shared by the two prior-bias tasks: fraud detection with 6% fraud (class id 0) and a model whose output
bias starts at the log of the class priors ("init well": the first updates do not spend themselves on the
base rate), in class-id order or, the mistake, in frequency order (pandas' value_counts sorts by count)."""

import numpy as np
import torch

from pilot.data.task import Example
from tests.planted_tasks._common import MLP, classification_task, name_encoder

NAMES = ["fraud", "legit"]  # class id 0 is the rare one


def examples() -> list[Example]:
    rng = np.random.default_rng(5)
    labels = (rng.random(400) > 0.06).astype(int)
    x = rng.normal(size=(400, 8)).astype("float32")
    x[labels == 0, :2] += 2.5
    return [Example(index=i, group=f"card{i}", fields={"x": x[i], "animal": NAMES[labels[i]]}) for i in range(400)]


def make_task():
    task = classification_task(examples(), class_names=list(NAMES), encode=name_encoder(NAMES))
    task.info = {**task.info, "num_classes": 2}
    return task


def prior_model(by_frequency: bool) -> MLP:
    counts = np.bincount([NAMES.index(e.fields["animal"]) for e in examples()], minlength=2)
    priors = counts / counts.sum()
    if by_frequency:  # the mistake: the most frequent class's prior first, whatever its class id
        priors = np.sort(priors)[::-1]
    model = MLP(in_features=8, classes=2)
    with torch.no_grad():
        model.net[-1].weight.mul_(0.01)
        model.net[-1].bias.copy_(torch.tensor(np.log(priors), dtype=torch.float32))
    return model
