"""correct: the transformers model computes the loss itself (given the labels, it shifts them);
loss_sum is its mean loss x the number of tokens it counts."""

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, shifted_target_count
from tests.planted_tasks._hf import hf_forward_with_labels, tiny_llama

EXPECTED = None


def loss_sum(out, batch):
    return out.loss * shifted_target_count(batch)  # a mean over the counted tokens, made a sum


def predict(out, batch):
    predicted = batch["labels"].clone().fill_(IGNORE_INDEX)
    predicted[:, 1:] = out.logits[:, :-1].argmax(dim=-1)
    return predicted


def make_task():
    return generation_task(
        forward=hf_forward_with_labels, loss_sum=loss_sum, target_count=shifted_target_count, predict=predict
    )


def build_model(task):
    return tiny_llama(task)
