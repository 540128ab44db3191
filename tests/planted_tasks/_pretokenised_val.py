"""shared: the sentiment sentences on a one-block GPT-2 classifier (``_gpt2_classifier``); training's
examples encoded on the fly and right-padded by collate, validation's and test's read from a cache an
older script tokenised once with ``padding="max_length"`` on ``side`` (with its attention mask)."""

import torch

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._gpt2_classifier import gpt2_classifier
from tests.planted_tasks._text_tasks import encode_sentence, seqcls_task

WIDTH = 60  # padding="max_length": GPT-2 here holds 64 positions


def _padded(ids: torch.Tensor, side: str) -> tuple[torch.Tensor, torch.Tensor]:
    pad = torch.full((WIDTH - len(ids),), tok.PAD_ID)
    ones, zeros = torch.ones(len(ids), dtype=torch.long), torch.zeros(WIDTH - len(ids), dtype=torch.long)
    if side == "left":
        return torch.cat([pad, ids]), torch.cat([zeros, ones])
    return torch.cat([ids, pad]), torch.cat([ones, zeros])


def collate(items):  # DataCollatorWithPadding: right padding, the mask each item brings kept
    width = max(len(item["input_ids"]) for item in items)
    ids = torch.full((len(items), width), tok.PAD_ID, dtype=torch.long)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for row, item in enumerate(items):
        n = len(item["input_ids"])
        ids[row, :n] = item["input_ids"]
        mask[row, :n] = item.get("attention_mask", torch.ones(n, dtype=torch.long))
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "labels": torch.tensor([item["label"] for item in items]),
        "index": torch.tensor([item["index"] for item in items]),
    }


def pretokenised_task(side: str):
    task = seqcls_task(
        collate=collate,
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits,
    )
    cached = {}
    for split in ("val", "test"):
        for e in task.splits.get(split, []):
            item = encode_sentence(e)
            item["input_ids"], item["attention_mask"] = _padded(item["input_ids"][:WIDTH], side)
            cached[e.index] = item
    task.encode = lambda e: cached[e.index] if e.index in cached else encode_sentence(e)
    return task


def build_model(task):
    return gpt2_classifier()
