"""causal LM, labels pre-shifted in collate (declared labels_shifted=True) with labels = input_ids.roll(-1, 1)
then -100 where attention_mask == 0 and on the prompt: roll wraps, so each row's LAST real token (<eos>)
is trained to predict the token after it in the padded row (<pad>), or the row's own <bos> for the longest
row."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import SEPARATOR, generation_task, tiny_gpt

EXPECTED = {"step": "inspect", "verdict": "fail"}


def encode(example):
    prompt = [tok.BOS_ID] + tok.encode(example.fields["instruction"] + SEPARATOR)
    ids = prompt + tok.encode(example.fields["answer"]) + [tok.EOS_ID]
    return {"index": example.index, "input_ids": torch.tensor(ids), "prompt_len": len(prompt)}


def collate(items):
    width = max(len(i["input_ids"]) for i in items)
    ids = torch.full((len(items), width), tok.PAD_ID)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for r, i in enumerate(items):
        ids[r, : len(i["input_ids"])], mask[r, : len(i["input_ids"])] = i["input_ids"], 1
    labels = ids.roll(-1, dims=1)
    labels[mask == 0] = IGNORE_INDEX
    for r, i in enumerate(items):
        labels[r, : i["prompt_len"] - 1] = IGNORE_INDEX
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "labels": labels,
        "index": torch.tensor([i["index"] for i in items]),
    }


def loss_sum(logits, b):
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(), b["labels"].reshape(-1), ignore_index=IGNORE_INDEX, reduction="sum"
    )


def make_task():
    return generation_task(
        encode=encode,
        collate=collate,
        loss_sum=loss_sum,
        labels_shifted=True,
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=lambda logits, b: logits.argmax(-1),
    )


def build_model(task):
    return tiny_gpt(task)
