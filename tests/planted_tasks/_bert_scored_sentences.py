"""Shared parts of the 2026-12-03 outside examination's tasks: a tiny BERT sequence classifier / regressor
built from its config over the local BPE tokenizer, sentence data with a float score, and a padded collate."""

from __future__ import annotations

import numpy as np
import torch
import transformers

from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks import _bert_bpe as bb

SPLIT = {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}


def tok():
    return bb.tokenizer()


def bert_seqcls(num_labels=1, **kw):
    torch.manual_seed(0)
    t = tok()
    cfg = transformers.BertConfig(
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
        **kw,
    )
    return transformers.BertForSequenceClassification(cfg)


def scored_examples(count=140, seed=7):
    """Sentences of 2-8 made-up words; 'score' = a readability-like float (mean word length / 4, plus words / 8)."""
    rng = np.random.default_rng(seed)
    out = []
    for i, s in enumerate(bb.sentences(count, seed=seed, low=2, high=9)):
        w = s.split()
        score = float(np.mean([len(x) for x in w]) / 4 + len(w) / 8 + 0.02 * rng.normal())
        out.append(Example(index=i, group=f"d{i}", fields={"text": s, "score": score, "n_words": len(w)}))
    return out


def encode_text(e, **extra):
    t = tok()
    return {
        "index": e.index,
        "input_ids": bb.with_specials(t(e.fields["text"], add_special_tokens=False)["input_ids"]),
        **extra,
    }


def pad_rows(items, key="input_ids", value=None):
    value = tok().pad_token_id if value is None else value
    return bb.pad2([i[key] for i in items], value)


def splits(examples):
    return make_splits(examples, SPLIT)
