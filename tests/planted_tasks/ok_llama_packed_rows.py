"""correct: HF padding-free packing per row: each example packs 3 short documents (<bos> text <eos>),
position_ids restart at 0 for each document, NO attention_mask (right padding continues the last
document's positions, labels -100 there); LlamaForCausalLM (sdpa) derives the block-diagonal causal mask
from the position_ids itself (use_cache=False: with a cache it does not) (transformers' find_packed_sequence_indices), so documents never read each other."""

import torch
import transformers

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData
from tests.planted_tasks._bert_bpe import sentences
from tests.planted_tasks._common import shifted_loss_sum, shifted_predict, shifted_target_count

EXPECTED = None


def packs():
    docs = sentences(240, seed=7, low=1, high=3)
    return [Example(index=i, group=f"p{i}", fields={"docs": docs[3 * i : 3 * i + 3]}) for i in range(80)]


def encode(e):
    ids, labels, pos = [], [], []
    for text in e.fields["docs"]:
        piece = [tok.BOS_ID] + tok.encode(text) + [tok.EOS_ID]
        ids += piece
        labels += [IGNORE_INDEX] + piece[1:]
        pos += list(range(len(piece)))
    return {"index": e.index, "input_ids": ids, "labels": labels, "position_ids": pos}


def collate(items):
    width = max(len(i["input_ids"]) for i in items)
    ids = torch.full((len(items), width), tok.PAD_ID)
    labels = torch.full((len(items), width), IGNORE_INDEX)
    pos = torch.zeros((len(items), width), dtype=torch.long)
    for r, i in enumerate(items):
        n = len(i["input_ids"])
        ids[r, :n], labels[r, :n] = torch.tensor(i["input_ids"]), torch.tensor(i["labels"])
        pos[r, :n] = torch.tensor(i["position_ids"])
        pos[r, n:] = torch.arange(pos[r, n - 1] + 1, pos[r, n - 1] + 1 + width - n)
    return {"input_ids": ids, "labels": labels, "position_ids": pos, "index": torch.tensor([i["index"] for i in items])}


def expected(e):
    out = []
    for text in e.fields["docs"]:
        out += tok.encode(text) + [tok.EOS_ID]
    return out


def make_task():
    return TaskData(
        kind="generation",
        splits=make_splits(packs(), {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=shifted_loss_sum,
        target_count=shifted_target_count,
        predict=shifted_predict,
        forward=lambda m, b: m(input_ids=b["input_ids"], position_ids=b["position_ids"], use_cache=False).logits,
        expected_targets=expected,
        decode_tokens=tok.token_strings,
        info={
            "vocab_size": tok.VOCAB_SIZE,
            "pad_id": tok.PAD_ID,
            "padding_side": "right",
            "mask_instruction": False,
            "target_unit": "token",
        },
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
