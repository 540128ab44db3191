"""correct: crowd-labelled blobs where a tie among the annotators keeps an arbitrary label with weight 0 (about
1 in 4 examples), the others their agreement (0.5-1.0); loss sum(w CE), target_count sum(w). The tiny subset
judged the weight-0 examples, which nothing trains, and failed a correct task (an outside examination's);
an example whose own target_count is 0 is now not judged."""

import numpy as np
import torch
import torch.nn.functional as F

from tests.planted_tasks._common import EVERY_CHECK
from tests.planted_tasks._small_tasks import MLP, blobs, cls_task

EXPECTED = None
SETTINGS = EVERY_CHECK
NAMES = ("low", "mid", "high")


def make_task():
    examples = blobs(240, NAMES, seed=6)
    rng = np.random.default_rng(3)
    tie = np.arange(len(examples)) % 4 == 1  # two of the tiny subset's eight examples among them
    weight = torch.tensor(np.where(tie, 0.0, rng.uniform(0.5, 1.0, len(examples))), dtype=torch.float32)
    for example, tied in zip(examples, tie):
        if tied:  # the majority vote was a tie: an arbitrary one of the labels, weighed 0
            shown = (example.fields["y"] + 1) % len(NAMES)  # a label its features do not show
            example.fields.update(y=shown, name=NAMES[shown])

    def loss(logits, b):
        return (F.cross_entropy(logits.float(), b["labels"], reduction="none") * weight[b["index"]]).sum()

    return cls_task(examples, NAMES, loss_sum=loss, target_count=lambda b: weight[b["index"]].sum())


def build_model(task):
    return MLP(8, 3)
