"""pad = eos, labels keep the padding, and loss_sum leaves out labels equal to the pad id (instead of
setting them -100): every real <eos> is left out too, and the model never learns to stop. No
expected_targets declared (as most users' tasks): the loss's own gradient shows the real token it skips."""

import torch
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import bug_pad_is_eos
from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = {
    "step": "inspect",
    "verdict": "fail",
    "said": "real token(s) labelled as targets that loss_sum does not train",
}
PAD = tok.EOS_ID


def collate(items):
    width = max(len(item["input_ids"]) for item in items)
    ids = torch.full((len(items), width), PAD, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for row, item in enumerate(items):
        ids[row, : len(item["input_ids"])], mask[row, : len(item["input_ids"])] = item["input_ids"], 1
    labels = ids.clone()
    for row, item in enumerate(items):
        labels[row, : item["prompt_len"]] = IGNORE_INDEX
    return {
        "input_ids": ids,
        "labels": labels,
        "attention_mask": mask,
        "index": torch.tensor([i["index"] for i in items]),
    }


def _kept(batch):
    labels = batch["labels"][:, 1:]
    return (labels != IGNORE_INDEX) & (labels != PAD)  # the bug: the real <eos> is the pad id too


def loss_sum(logits, batch):
    per_token = F.cross_entropy(
        logits[:, :-1].transpose(1, 2).float(), batch["labels"][:, 1:].clamp(min=0), reduction="none"
    )
    return (per_token * _kept(batch)).sum()


def target_count(batch):
    return _kept(batch).sum()


def make_task():
    task = generation_task(encode=bug_pad_is_eos.encode, collate=collate, loss_sum=loss_sum, target_count=target_count)
    task.expected_targets = None
    return task


def build_model(task):
    return tiny_gpt(task)
