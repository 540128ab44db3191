"""bug: siamese pair verification trained with CosineEmbeddingLoss given the 0/1 labels as they are; the loss
takes 1 (pull together) and -1 (push apart), and a 0 is neither: the 'different' pairs get no loss and no
gradient, nothing pushes them apart. Its correct twin is ok_siamese_cosine_embedding_loss (2 * label - 1).
Found by an outside examination; the tiny subset's loss falls to zero with pairs still wrong."""

import torch.nn.functional as F

from tests.planted_tasks._common import EVERY_CHECK
from tests.planted_tasks._siamese import task
from tests.planted_tasks.ok_siamese_cosine_embedding_loss import Embeddings

EXPECTED = {"step": "tiny_subset", "verdict": "fail", "said": "a 0 trains nothing"}
SETTINGS = {**EVERY_CHECK, "tiny_overrides": ["optim.lr=3e-3"]}


def cosine_embedding_zero_one(out, b):
    return F.cosine_embedding_loss(out["ea"].float(), out["eb"].float(), b["labels"].float(), reduction="sum")


def make_task():
    made = task(loss=cosine_embedding_zero_one)
    made.predict = lambda out, b: (out["logits"] > 0.5).long()
    return made


def build_model(task):
    return Embeddings()
