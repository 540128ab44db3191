"""masked LM: collate masks 15% of tokens but keeps labels = the original ids at EVERY position (forgot
labels[~chosen] = -100): 85% of the loss is copying an input token that the model can see."""

import torch

from tests.planted_tasks import ok_masked_lm as ok

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "A masked LM labels only"}
generator = torch.Generator().manual_seed(0)


def collate(items):
    batch = ok.pad_collate(items)
    real = batch["attention_mask"].clone()
    real[:, 0] = False
    chosen = (torch.rand(real.shape, generator=generator) < 0.15) & real
    batch["labels"] = torch.where(real, batch["input_ids"], torch.full_like(batch["input_ids"], -100))  # the bug
    batch["input_ids"] = torch.where(chosen, torch.full_like(batch["input_ids"], ok.MASK_ID), batch["input_ids"])
    return batch


def make_task():
    task = ok.make_task()
    task.collate = collate
    return task


build_model = ok.build_model
