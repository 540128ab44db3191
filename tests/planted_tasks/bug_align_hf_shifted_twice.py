"""bug: collate shifts the labels (declared) and the transformers model, given them, shifts them again."""

import torch

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, pad_collate
from tests.planted_tasks._hf import hf_forward_with_labels, tiny_llama

EXPECTED = {"step": "alignment", "verdict": "fail"}


def collate(items):
    batch = pad_collate(items)
    labels = torch.full_like(batch["labels"], IGNORE_INDEX)
    labels[:, :-1] = batch["labels"][:, 1:]  # labels[t] = token t+1 ...
    batch["labels"] = labels  # ... and the model shifts once more: output t is trained towards t+2
    return batch


def target_count(batch):
    return (batch["labels"] != IGNORE_INDEX).sum()


def make_task():
    return generation_task(
        collate=collate,
        forward=hf_forward_with_labels,
        loss_sum=lambda out, batch: out.loss * (batch["labels"][:, 1:] != IGNORE_INDEX).sum(),
        labels_shifted=True,
        target_count=target_count,
        predict=lambda out, batch: out.logits.argmax(dim=-1),
    )


def build_model(task):
    return tiny_llama(task)
