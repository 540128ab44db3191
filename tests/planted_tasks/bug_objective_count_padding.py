"""target_count counts every position of the padded batch, ignored labels and padding included."""

import torch

from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = {"step": "objective", "verdict": "fail"}


def make_task():
    return generation_task(target_count=lambda batch: torch.tensor(batch["labels"][:, 1:].numel()))


def build_model(task):
    return tiny_gpt(task)
