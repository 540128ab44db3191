"""correct: masked-token prediction, masks drawn at random in collate (same_position targets)."""

import torch
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import encode_text, lm_task, pad_collate, tiny_gpt

EXPECTED = None
MASK_ID = tok.PAD_ID  # the byte tokenizer has no <mask>; a masked token reads as <pad> (attended)
generator = torch.Generator().manual_seed(0)


def encode(example):
    item = encode_text(example)
    return {**item, "labels": item["input_ids"].clone()}


def collate(items):
    batch = pad_collate(items)
    real = batch["attention_mask"].clone()
    real[:, 0] = False  # never mask <bos>
    chosen = (torch.rand(real.shape, generator=generator) < 0.15) & real
    first = real.float().argmax(dim=1)  # at least one masked token per row
    chosen[torch.arange(len(items)), first] = True
    batch["labels"] = torch.where(chosen, batch["input_ids"], torch.full_like(batch["input_ids"], IGNORE_INDEX))
    batch["input_ids"] = torch.where(chosen, torch.full_like(batch["input_ids"], MASK_ID), batch["input_ids"])
    return batch


def loss_sum(logits, batch):  # output t predicts the original token at t
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(),
        batch["labels"].reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    )


def make_task():
    return lm_task(
        encode=encode,
        collate=collate,
        loss_sum=loss_sum,
        target_position="same_position",
        target_count=lambda batch: (batch["labels"] != IGNORE_INDEX).sum(),
        predict=lambda logits, batch: logits.argmax(dim=-1),
        expected_targets=None,
        info={"vocab_size": tok.VOCAB_SIZE, "target_unit": "token"},
    )


def build_model(task):
    return tiny_gpt(task)
