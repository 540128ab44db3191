"""GPT-2 habit: no pad token, so pad_id = eos_id; collate pads with <eos>, builds labels from input_ids and
masks padding BY VALUE (labels[input_ids == pad_id] = -100): every real <eos> target is masked too, so the
model never learns to stop."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import SEPARATOR, generation_task, tiny_gpt

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "the pad id"}
PAD = tok.EOS_ID  # "tokenizer.pad_token = tokenizer.eos_token"


def encode(example):
    prompt = [tok.BOS_ID] + tok.encode(example.fields["instruction"] + SEPARATOR)
    answer = tok.encode(example.fields["answer"]) + [tok.EOS_ID]
    return {"index": example.index, "input_ids": torch.tensor(prompt + answer), "prompt_len": len(prompt)}


def collate(items):
    width = max(len(i["input_ids"]) for i in items)
    ids = torch.full((len(items), width), PAD, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for r, it in enumerate(items):
        n = len(it["input_ids"])
        ids[r, :n], mask[r, :n] = it["input_ids"], 1
    labels = ids.clone()
    labels[ids == PAD] = IGNORE_INDEX  # the bug: also hits the real <eos>
    for r, it in enumerate(items):
        labels[r, : it["prompt_len"]] = IGNORE_INDEX
    return {
        "input_ids": ids,
        "labels": labels,
        "attention_mask": mask,
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    task = generation_task(encode=encode, collate=collate)
    task.info["pad_id"] = PAD
    return task


def build_model(task):
    return tiny_gpt(task)
