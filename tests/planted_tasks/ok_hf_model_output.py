"""correct: a transformers causal LM whose ModelOutput loss_sum reads as ``out.logits`` (attribute access)."""

import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, shifted_target_count
from tests.planted_tasks._hf import hf_forward, tiny_llama

EXPECTED = None


def loss_sum(out, batch):
    logits = out.logits  # transformers' usual idiom: the checks must hand loss_sum a ModelOutput
    return F.cross_entropy(
        logits[:, :-1].reshape(-1, logits.size(-1)).float(),
        batch["labels"][:, 1:].reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    )


def predict(out, batch):
    predicted = batch["labels"].clone().fill_(IGNORE_INDEX)
    predicted[:, 1:] = out.logits[:, :-1].argmax(dim=-1)
    return predicted


def make_task():
    return generation_task(forward=hf_forward, loss_sum=loss_sum, target_count=shifted_target_count, predict=predict)


def build_model(task):
    return tiny_llama(task)
