"""Shared parts of the BERT-style correct tasks (ok_electra_rtd, ok_ner_first_subword, ok_t5_grammar): a locally trained byte-level BPE tokenizer with
<mask>, sentences of made-up words, a tiny transformers BERT built from its config, and helpers."""

from __future__ import annotations

import functools

import numpy as np
import torch
import transformers

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import words

SPECIALS = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "mask_token": "<mask>", "unk_token": "<unk>"}


def sentences(count: int, seed: int = 0, low: int = 4, high: int = 9) -> list[str]:
    vocab = words(300, seed=11)
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(vocab, int(rng.integers(low, high)))) for _ in range(count)]


@functools.cache
def tokenizer():
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        sentences(600, seed=99) * 2,
        vocab_size=350,
        min_frequency=2,
        show_progress=False,
        special_tokens=["<pad>", "<s>", "</s>", "<mask>", "<unk>"],
    )
    t = transformers.PreTrainedTokenizerFast(tokenizer_object=bpe._tokenizer, **SPECIALS)
    return t


def with_specials(ids: list[int]) -> list[int]:
    t = tokenizer()
    return [t.bos_token_id] + ids + [t.eos_token_id]


def tiny_bert(head: str, num_labels: int = 2) -> torch.nn.Module:
    torch.manual_seed(0)
    t = tokenizer()
    config = transformers.BertConfig(
        vocab_size=len(t),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        max_position_embeddings=128,
        type_vocab_size=2,
        pad_token_id=t.pad_token_id,
        num_labels=num_labels,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    cls = {"mlm": transformers.BertForMaskedLM, "token": transformers.BertForTokenClassification}[head]
    return cls(config)


def pad2(rows: list[list[int]], value: int) -> torch.Tensor:
    out = torch.full((len(rows), max(len(r) for r in rows)), value, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.as_tensor(r)
    return out


def token_ce_sum(logits, batch):
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.size(-1)).float(),
        batch["labels"].reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    )
