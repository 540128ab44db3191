"""correct: causal LM whose encode pre-shifts (input_ids = ids[:-1], labels = ids[1:], the HF-free way many
write it), with no <eos> appended: the text's last character is a target and never needs to be an input."""

import torch
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX, Example
from tests.planted_tasks._common import generation_task, instruction_examples, pad_collate, tiny_gpt

EXPECTED = None


def examples():
    return [
        Example(
            index=e.index,
            group=e.group,
            fields={"text": e.fields["instruction"].strip() + " gives " + e.fields["answer"]},
        )
        for e in instruction_examples()
    ]


def encode(e):
    ids = [tok.BOS_ID] + tok.encode(e.fields["text"])
    return {"index": e.index, "input_ids": torch.tensor(ids[:-1]), "labels": torch.tensor(ids[1:])}


def loss_sum(logits, b):
    return F.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(), b["labels"].reshape(-1), ignore_index=IGNORE_INDEX, reduction="sum"
    )


def make_task():
    return generation_task(
        examples(),
        encode=encode,
        collate=pad_collate,
        loss_sum=loss_sum,
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=lambda logits, b: logits.argmax(-1),
        expected_targets=lambda e: tok.encode(e.fields["text"]),
        target_position="same_position",
        info={
            "vocab_size": tok.VOCAB_SIZE,
            "pad_id": tok.PAD_ID,
            "padding_side": "right",
            "mask_instruction": False,
            "target_unit": "token",
        },
    )


def build_model(task):
    return tiny_gpt(task)
