"""sequence classification with attention pooling whose softmax runs over dim 0, the batch, instead of the
positions: each example's pooled vector depends on the other examples of its micro-batch (the padding
probe saw only that a padded row changed, and blamed the padding)."""

import torch

from tests.planted_tasks._text_tasks import MeanPoolClassifier, seqcls_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "depends on the other rows of its micro-batch"}


class Model(MeanPoolClassifier):
    def __init__(self):
        super().__init__()
        self.score = torch.nn.Linear(32, 1)

    def pool(self, hidden, attention_mask):
        scores = self.score(hidden).squeeze(-1).masked_fill(attention_mask == 0, -1e9)
        weights = scores.softmax(dim=0)  # the bug: over the batch, not the positions (dim=1)
        return (weights.unsqueeze(-1) * hidden).sum(1)


def make_task():
    return seqcls_task()


def build_model(task):
    return Model()
