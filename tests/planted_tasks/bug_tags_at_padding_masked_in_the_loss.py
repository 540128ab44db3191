"""A tagger whose labels are padded with tag 0 (not -100) while loss_sum multiplies its per-token loss by
the attention mask: the loss is right, but pilot's counts of targets and correct tags read the padding as
tags. A warning naming the cause (the loss's own gradient), never a 'padding counted in the loss' failure."""

import torch.nn.functional as F

from tests.planted_tasks._text_tasks import Tagger, pad_collate_tags, tagging_task

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "that loss_sum does not train"}


def collate(items):
    batch = pad_collate_tags(items)
    batch["labels"] = batch["labels"].clamp(min=0)  # padding tagged 0 ("O"), not -100
    return batch


def loss_sum(logits, batch):
    per_token = F.cross_entropy(logits.transpose(1, 2).float(), batch["labels"], reduction="none")
    return (per_token * batch["attention_mask"]).sum()


def target_count(batch):
    return batch["attention_mask"].sum()


def make_task():
    return tagging_task(collate=collate, loss_sum=loss_sum, target_count=target_count)


def build_model(task):
    return Tagger()
