"""correct: GPT-style pre-training packing ("group_texts"): all documents joined with <eos> and cut into
blocks of 48 tokens, attention across document boundaries ON PURPOSE, position ids 0..47 per block (not
reset at documents, passed explicitly); every token after the first is a target."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._bert_bpe import sentences
from tests.planted_tasks._common import shifted_loss_sum, shifted_predict, shifted_target_count
from tests.planted_tasks._packing import PackedLM

EXPECTED = None
BLOCK = 48


def blocks():
    stream = []
    for s in sentences(400, seed=6, low=2, high=5):
        stream += tok.encode(s) + [tok.EOS_ID]
    n = len(stream) // BLOCK
    return [Example(index=i, group=f"b{i // 4}", fields={"ids": stream[i * BLOCK : (i + 1) * BLOCK]}) for i in range(n)]


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
        expected_targets=lambda e: e.fields["ids"][1:],
        decode_tokens=tok.token_strings,
        info={"vocab_size": tok.VOCAB_SIZE, "pad_id": tok.PAD_ID, "mask_instruction": False, "target_unit": "token"},
    )


def build_model(task):
    return PackedLM()
