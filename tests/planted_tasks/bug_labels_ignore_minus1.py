"""tagging: labels padded with -1 and loss_sum with ignore_index=-1 (as some older codebases do). The
loss trains correctly, but the contract's value outside the loss is -100: every count of targets and
of correct predictions reads -1 as a target. inspect names the -100 convention."""

import torch.nn.functional as F

from tests.planted_tasks._text_tasks import Tagger, pad_collate_tags, tagging_task

EXPECTED = {"step": "inspect", "verdict": "fail"}


def collate(items):
    b = pad_collate_tags(items)
    b["labels"][b["labels"] == -100] = -1
    return b


def make_task():
    return tagging_task(
        collate=collate,
        loss_sum=lambda lg, b: F.cross_entropy(
            lg.reshape(-1, lg.size(-1)).float(), b["labels"].reshape(-1), ignore_index=-1, reduction="sum"
        ),
        target_count=lambda b: (b["labels"] != -1).sum(),
    )


def build_model(task):
    return Tagger()
