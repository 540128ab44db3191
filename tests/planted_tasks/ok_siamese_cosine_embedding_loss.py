"""correct: siamese pair verification trained with torch's CosineEmbeddingLoss on the two embeddings (targets
2 * label - 1: 1 = same, -1 = different), the model returning {"logits": cosine, "ea", "eb"}; predict =
cosine > 0.5. The loss reads two 8-wide embeddings, not a score per class: alignment read their columns as
classes and failed it, and the tiny subset's hint said predict's cosine was "never trained" though it is
computed from them (an outside examination's twin)."""

import torch.nn as nn
import torch.nn.functional as F

from tests.planted_tasks._common import EVERY_CHECK
from tests.planted_tasks._siamese import Siamese, task

EXPECTED = None
SETTINGS = {**EVERY_CHECK, "tiny_overrides": ["optim.lr=3e-3"]}


def cosine_embedding(out, b):
    target = b["labels"].float() * 2 - 1
    return F.cosine_embedding_loss(out["ea"].float(), out["eb"].float(), target, margin=0.0, reduction="sum")


def make_task():
    made = task(loss=cosine_embedding)
    made.predict = lambda out, b: (out["logits"] > 0.5).long()
    return made


class Embeddings(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = Siamese().enc

    def forward(self, a, b):
        ea, eb = self.enc(a), self.enc(b)
        return {"logits": F.cosine_similarity(ea, eb, dim=-1), "ea": ea, "eb": eb}


def build_model(task):
    return Embeddings()
