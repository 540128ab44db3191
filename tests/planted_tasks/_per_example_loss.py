"""shared: instruction generation whose target_count counts examples, one per row, and whose loss_sum gives
each example one term: its answer tokens' mean (``MEAN``, a sequence-level objective several SFT recipes
choose: every example weighs the same however long its answer) or, the mistake, their sum."""

import torch
import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, tiny_gpt


def per_example_task(mean: bool):
    def loss_sum(logits, batch):
        labels = batch["labels"][:, 1:]
        losses = F.cross_entropy(
            logits[:, :-1].float().transpose(1, 2), labels, ignore_index=IGNORE_INDEX, reduction="none"
        )
        per_example = losses.sum(1)
        return (per_example / (labels != IGNORE_INDEX).sum(1).clamp(min=1) if mean else per_example).sum()

    return generation_task(loss_sum=loss_sum, target_count=lambda batch: torch.tensor(batch["labels"].shape[0]))


def build_model(task):
    return tiny_gpt(task)
