"""overlapping token blocks split at random: a text stream cut into blocks of 48 tokens every 24 tokens (a
"stride" to give each token more context), each block its own group: every validation block's halves
are the second half of one training block and the first half of another."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._bert_bpe import sentences
from tests.planted_tasks._common import shifted_loss_sum, shifted_predict, shifted_target_count
from tests.planted_tasks._packing import PackedLM

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "overlap"}
BLOCK, STRIDE = 48, 24


def blocks():
    stream = []
    for s in sentences(200, seed=6, low=2, high=5):
        stream += tok.encode(s) + [tok.EOS_ID]
    starts = range(0, len(stream) - BLOCK + 1, STRIDE)
    return [Example(index=i, group=f"b{i}", fields={"ids": stream[s : s + BLOCK]}) for i, s in enumerate(starts)]


def encode(e):
    return {"index": e.index, "input_ids": torch.tensor(e.fields["ids"])}


def collate(items):
    ids = torch.stack([i["input_ids"] for i in items])
    return {
        "input_ids": ids,
        "attention_mask": torch.ones_like(ids),
        "position_ids": torch.arange(BLOCK).expand_as(ids).clone(),
        "labels": ids.clone(),
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    return TaskData(
        kind="generation",
        splits=make_splits(blocks(), {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=shifted_loss_sum,
        target_count=shifted_target_count,
        predict=shifted_predict,
        forward=lambda m, b: m(b["input_ids"], b["attention_mask"], b["position_ids"]),
        decode_tokens=tok.token_strings,
        info={"vocab_size": tok.VOCAB_SIZE, "pad_id": tok.PAD_ID, "mask_instruction": False, "target_unit": "token"},
    )


def build_model(task):
    return PackedLM()
