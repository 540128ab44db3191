"""masked-token prediction whose collate takes the labels from the inputs AFTER writing the mask into them:
every target is the mask token itself, and the model learns to copy its input."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import ok_masked_lm
from tests.planted_tasks._common import pad_collate, tiny_gpt

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "are the input token at their own position"}
generator = torch.Generator().manual_seed(0)


def collate(items):
    batch = pad_collate(items)
    real = batch["attention_mask"].clone()
    real[:, 0] = False  # never mask <bos>
    chosen = (torch.rand(real.shape, generator=generator) < 0.15) & real
    chosen[torch.arange(len(items)), real.float().argmax(dim=1)] = True
    batch["input_ids"] = torch.where(chosen, torch.full_like(batch["input_ids"], tok.PAD_ID), batch["input_ids"])
    batch["labels"] = torch.where(chosen, batch["input_ids"], torch.full_like(batch["input_ids"], IGNORE_INDEX))
    return batch


def make_task():
    task = ok_masked_lm.make_task()
    task.collate = collate
    return task


def build_model(task):
    return tiny_gpt(task)
