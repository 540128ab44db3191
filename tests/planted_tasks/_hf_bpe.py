"""Instruction tuning with a locally trained byte-level BPE tokenizer and a one-block transformers Llama
built from its config. ``make(encode)`` builds the task; only ``encode`` differs between modules."""

import torch
import transformers

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._bpe_tokenizer import bpe_tokenizer
from tests.planted_tasks._common import generation_task, instruction_examples

PROMPT = "{instruction}### Answer: "


def tokenizer():
    return bpe_tokenizer()


def ids(text):
    return tokenizer()(text, add_special_tokens=False)["input_ids"]


def expected(example):  # what the user means to train: the answer's tokens, then <eos>
    return ids(example.fields["answer"]) + [tokenizer().eos_token_id]


def collate(items):
    t = tokenizer()
    width = max(len(i["input_ids"]) for i in items)
    out_ids = torch.full((len(items), width), t.pad_token_id)
    labels = torch.full((len(items), width), IGNORE_INDEX)
    mask = torch.zeros((len(items), width), dtype=torch.long)
    for r, i in enumerate(items):
        n = len(i["input_ids"])
        out_ids[r, :n], labels[r, :n], mask[r, :n] = i["input_ids"], i["labels"], 1
    return {
        "input_ids": out_ids,
        "labels": labels,
        "attention_mask": mask,
        "index": torch.tensor([i["index"] for i in items]),
    }


def strings(token_ids):
    return [
        s.replace("Ġ", "_").replace("Ċ", "⏎") for s in tokenizer().convert_ids_to_tokens([int(x) for x in token_ids])
    ]


def make(encode):
    t = tokenizer()
    return generation_task(
        examples=instruction_examples(96, seed=0),
        encode=encode,
        collate=collate,
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits,
        expected_targets=expected,
        decode_tokens=strings,
        info={
            "vocab_size": len(t),
            "pad_id": t.pad_token_id,
            "padding_side": "right",
            "mask_instruction": True,
            "target_unit": "token",
        },
    )


def build_model(task):
    torch.manual_seed(0)
    t = tokenizer()
    config = transformers.LlamaConfig(
        vocab_size=len(t),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=t.pad_token_id,
        bos_token_id=t.bos_token_id,
        eos_token_id=t.eos_token_id,
    )
    return transformers.LlamaForCausalLM(config)
