"""two-tower retrieval (a query encoder and a document encoder) whose forward scores the queries against
themselves (q @ q.T, a copy-paste slip): the loss still falls, but the document tower never trains."""

import torch.nn.functional as F
from torch import nn

from tests.planted_tasks import ok_contrastive_in_batch
from tests.planted_tasks._common import EVERY_CHECK

EXPECTED = {"step": "tiny_subset", "verdict": "warn", "said": "trainable tensors never changed"}
SETTINGS = EVERY_CHECK


class TwoTower(nn.Module):
    def __init__(self):
        super().__init__()
        self.query = ok_contrastive_in_batch.DualEncoder()
        self.document = ok_contrastive_in_batch.DualEncoder()

    def forward(self, q, qm, d, dm):
        queries = self.query.encode(q, qm)
        return queries @ F.normalize(queries, dim=-1).T / 0.1  # the documents' tower is never called


make_task = ok_contrastive_in_batch.make_task


def build_model(task):
    return TwoTower()
