"""instruction tuning: hand-written label smoothing; the NLL term ignores -100, but the smoothing term
(-mean log p over the vocabulary) is summed over EVERY position, prompt and padding included."""

import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = {"step": "alignment", "verdict": "fail"}
EPS = 0.1


def loss_sum(logits, batch):
    logp = F.log_softmax(logits[:, :-1].float(), dim=-1)
    labels = batch["labels"][:, 1:]
    nll = F.nll_loss(logp.reshape(-1, logp.size(-1)), labels.reshape(-1), ignore_index=IGNORE_INDEX, reduction="sum")
    smooth = -logp.mean(dim=-1).sum()  # the bug: not masked with labels != -100
    return (1 - EPS) * nll + EPS * smooth


def make_task():
    return generation_task(loss_sum=loss_sum)


def build_model(task):
    return tiny_gpt(task)
