"""instruction tuning with hand-written label smoothing: the NLL term is summed over the counted tokens, but the
smoothing term is written as eps * (-logp.mean(-1))[keep].mean() -- a mean over the batch's counted tokens --
so loss_sum is no longer a sum: the smoothing's weight per token shrinks as batches hold more tokens."""

import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = {"step": "objective", "verdict": "fail"}
EPS = 0.1


def loss_sum(logits, batch):
    logp = F.log_softmax(logits[:, :-1].float(), dim=-1)
    labels = batch["labels"][:, 1:]
    keep = labels != IGNORE_INDEX
    nll = -logp.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    smooth = -logp.mean(dim=-1)
    return (1 - EPS) * nll[keep].sum() + EPS * smooth[keep].mean()


def make_task():
    return generation_task(loss_sum=loss_sum)


def build_model(task):
    return tiny_gpt(task)
