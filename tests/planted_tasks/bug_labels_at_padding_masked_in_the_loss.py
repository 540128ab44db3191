"""Labels keep <pad> (cloned from the padded input_ids) while loss_sum leaves padding out itself, through
the attention mask: the loss is right, but every count of targets and correct predictions that reads the
labels (accuracy, predictions.jsonl) counts the padding as targets. A warning naming the cause, never a
"padding counted in the loss" failure: the loss's own gradient says what it trains."""

import torch
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import lm_task, tiny_gpt

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "that loss_sum does not train"}


def collate(items):
    width = max(len(item["input_ids"]) for item in items)
    input_ids = torch.full((len(items), width), tok.PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.bool)
    for row, item in enumerate(items):
        input_ids[row, : len(item["input_ids"])] = item["input_ids"]
        mask[row, : len(item["input_ids"])] = True
    labels = input_ids.clone()  # <pad> stays a label: the loss below leaves it out by the mask
    labels[:, 0] = IGNORE_INDEX
    return {
        "input_ids": input_ids,
        "labels": labels,
        "attention_mask": mask,
        "index": torch.tensor([item["index"] for item in items]),
    }


def loss_sum(logits, batch):
    per_token = F.cross_entropy(
        logits[:, :-1].transpose(1, 2).float(), batch["labels"][:, 1:].clamp(min=0), reduction="none"
    )
    keep = batch["attention_mask"][:, 1:] & (batch["labels"][:, 1:] != IGNORE_INDEX)
    return (per_token * keep).sum()


def target_count(batch):
    return (batch["attention_mask"][:, 1:] & (batch["labels"][:, 1:] != IGNORE_INDEX)).sum()


def make_task():
    return lm_task(collate=collate, loss_sum=loss_sum, target_count=target_count)


def build_model(task):
    return tiny_gpt(task)
