"""chat SFT on a config-built Llama with LEFT padding (padding_side='left', kept from the generation script) and
position_ids from the mask; collate masks each row's prompt as labels[r, :prompt_len] = -100, i.e. by COLUMN from
the left edge of the padded row: in every row shorter than the batch's longest, the first columns masked are padding
and the tail of the prompt ('<|assistant|>' ...) is counted as a target."""

import torch

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _hf_tiny as h

EXPECTED = {"step": "inspect", "verdict": "fail"}


def encode(e):
    p, a = h.chat_prompt(e), h.chat_answer(e)
    return {"index": e.index, "input_ids": p + a, "prompt_len": len(p)}


def collate(items):
    pad = h.lm_tok().pad_token_id
    width = max(len(i["input_ids"]) for i in items)
    x = torch.full((len(items), width), pad, dtype=torch.long)
    m = torch.zeros((len(items), width), dtype=torch.long)
    for r, i in enumerate(items):
        n = len(i["input_ids"])
        x[r, width - n :], m[r, width - n :] = torch.tensor(i["input_ids"]), 1
    labels = x.masked_fill(m == 0, IGNORE_INDEX)
    for r, i in enumerate(items):
        labels[r, : i["prompt_len"]] = IGNORE_INDEX
    return {
        "input_ids": x,
        "attention_mask": m,
        "position_ids": (m.cumsum(-1) - 1).clamp(min=0),
        "labels": labels,
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    task = h.chat_task(
        encode=encode,
        collate=collate,
        forward=lambda mdl, b: mdl(
            input_ids=b["input_ids"], attention_mask=b["attention_mask"], position_ids=b["position_ids"]
        ),
    )
    task.info["padding_side"] = "left"
    return task


def build_model(task):
    return h.causal_lm("Llama")
