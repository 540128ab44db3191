"""correct: imbalanced defects (ok 80% / scratch 15% / crack 5%) with inverse-frequency class weights from the
training split AND label smoothing 0.1: cross_entropy(weight=w, label_smoothing=0.1). PyTorch weighs the
smoothing term by class too, so at a fresh model's even outputs the loss pushes the rare class's score up
first, while its minimum still ranks each label first; alignment failed it as "trained towards crack" (an
outside examination's correct task; here with its output bias at the log prior, as one starts an
imbalanced classifier)."""

import numpy as np
import torch
import torch.nn.functional as F

from pilot.data.task import Example
from tests.planted_tasks._small_tasks import MLP, cls_task

EXPECTED = None
NAMES = ("ok", "scratch", "crack")


def make_task():
    rng = np.random.default_rng(89)
    centres = rng.normal(0, 1.5, (3, 12))
    examples = []
    for index in range(600):
        y = int(rng.choice(3, p=[0.8, 0.15, 0.05]))
        x = (centres[y] + rng.normal(0, 1, 12)).astype("float32")
        examples.append(Example(index=index, group=f"part{index}", fields={"x": x, "y": y, "name": NAMES[y]}))
    task = cls_task(examples, NAMES)
    counts = np.bincount([e.fields["y"] for e in task.splits["train"]], minlength=3)
    weight = torch.tensor(counts.sum() / (3 * counts), dtype=torch.float32)
    task.loss_sum = lambda logits, b: F.cross_entropy(
        logits.float(), b["labels"], weight=weight, label_smoothing=0.1, reduction="sum"
    )
    task.initial_loss_tolerance = None  # weighted, from a biased start: not ln(3) (objective says why otherwise)
    return task


def build_model(task):
    model = MLP(12, 3)
    with torch.no_grad():  # the output bias at the log of the class prior, a common start for imbalanced classes
        model.net[-1].bias.copy_(torch.tensor([0.8, 0.15, 0.05]).log())
    return model
