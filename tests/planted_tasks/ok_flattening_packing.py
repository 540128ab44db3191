"""correct: padding-free packing as transformers' DataCollatorWithFlattening does it: the micro-batch's
examples concatenated into ONE row [1, N], position_ids restarting at 0 for each example, the first label
of each example -100, no attention_mask; a config-built LlamaForCausalLM (sdpa), which detects the packed
sequences from position_ids and masks block-diagonally."""

import torch
import transformers

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData
from tests.planted_tasks._bert_bpe import sentences
from tests.planted_tasks._common import shifted_loss_sum, shifted_predict, shifted_target_count

EXPECTED = None


def encode(e):
    ids = [tok.BOS_ID] + tok.encode(e.fields["text"]) + [tok.EOS_ID]
    return {"index": e.index, "input_ids": ids}


def collate(items):  # DataCollatorWithFlattening(return_position_ids=True)
    ids, labels, pos = [], [], []
    for i in items:
        ids += i["input_ids"]
        labels += [IGNORE_INDEX] + i["input_ids"][1:]
        pos += list(range(len(i["input_ids"])))
    return {
        "input_ids": torch.tensor([ids]),
        "labels": torch.tensor([labels]),
        "position_ids": torch.tensor([pos]),
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    ex = [
        Example(index=i, group=f"d{i}", fields={"text": s}) for i, s in enumerate(sentences(100, seed=5, low=2, high=4))
    ]
    return TaskData(
        kind="generation",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=shifted_loss_sum,
        target_count=shifted_target_count,
        predict=shifted_predict,
        forward=lambda m, b: m(input_ids=b["input_ids"], position_ids=b["position_ids"], use_cache=False).logits,
        expected_targets=lambda e: tok.encode(e.fields["text"]) + [tok.EOS_ID],
        decode_tokens=tok.token_strings,
        info={"vocab_size": tok.VOCAB_SIZE, "pad_id": tok.PAD_ID, "mask_instruction": False, "target_unit": "token"},
    )


def build_model(task):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=tok.VOCAB_SIZE,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=256,
        pad_token_id=tok.PAD_ID,
        attn_implementation="sdpa",
    )
    return transformers.LlamaForCausalLM(config)
