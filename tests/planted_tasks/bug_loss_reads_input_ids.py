"""instruction -> answer: loss_sum and target_count read batch["input_ids"] where they should read batch["labels"]
(a key renamed in one place), so the instruction and the padding are trained too, while the labels, the counts
and examples.txt still show the answer alone."""

import torch
import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "towards the input's own next token"}


def loss_sum(logits, batch):
    return F.cross_entropy(
        logits[:, :-1].reshape(-1, logits.size(-1)).float(),
        batch["input_ids"][:, 1:].reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    )


def make_task():
    return generation_task(
        loss_sum=loss_sum, target_count=lambda batch: torch.tensor(batch["input_ids"][:, 1:].numel())
    )


def build_model(task):
    return tiny_gpt(task)
