"""Shared parts of the exam6a tasks: NER word data (tokens + BIO tags), pair data, tiny HF models built from
configs over the locally trained byte-level BPE tokenizer of _bert_bpe."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
import transformers

from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData
from tests.planted_tasks._bert_bpe import pad2, tokenizer
from tests.planted_tasks._common import words
from tests.planted_tasks.ok_ner_first_subword import TAGS
from tests.planted_tasks.ok_ner_first_subword import examples as ner_examples

SPLIT = {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}


def cfg_kw(num_labels):
    t = tokenizer()
    return dict(
        vocab_size=len(t),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        max_position_embeddings=130,
        pad_token_id=t.pad_token_id,
        num_labels=num_labels,
    )


def hf_model(kind: str, head: str, num_labels: int, **kw):
    """kind: Bert, Roberta, DistilBert, Electra, DebertaV2; head: SequenceClassification / TokenClassification."""
    torch.manual_seed(0)
    t = tokenizer()
    base = cfg_kw(num_labels)
    if kind == "DistilBert":
        base = dict(
            vocab_size=len(t),
            dim=32,
            hidden_dim=64,
            n_layers=1,
            n_heads=2,
            max_position_embeddings=130,
            pad_token_id=t.pad_token_id,
            num_labels=num_labels,
            dropout=0.0,
            attention_dropout=0.0,
            seq_classif_dropout=0.0,
        )
    elif kind == "Electra":
        base.update(embedding_size=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    elif kind == "DebertaV2":
        base.update(
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
            pooler_hidden_size=32,
            pooler_dropout=0.0,
            type_vocab_size=0,
        )
    else:
        base.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    base.update(kw)
    cfg = getattr(transformers, f"{kind}Config")(**base)
    return getattr(transformers, f"{kind}For{head}")(cfg)


def gpt2_base():
    torch.manual_seed(0)
    t = tokenizer()
    cfg = transformers.GPT2Config(
        vocab_size=len(t),
        n_positions=64,
        n_embd=32,
        n_layer=1,
        n_head=2,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        pad_token_id=t.pad_token_id,
        bos_token_id=t.bos_token_id,
        eos_token_id=t.eos_token_id,
    )
    return cfg


def ner_task(encode, collate, forward=None, loss_sum=None, **overrides):
    t = tokenizer()
    parts = dict(
        kind="token_classification",
        splits=make_splits(ner_examples(), SPLIT),
        encode=encode,
        collate=collate,
        loss_sum=loss_sum
        or (
            lambda out, b: F.cross_entropy(
                out.logits.reshape(-1, out.logits.size(-1)).float(),
                b["labels"].reshape(-1),
                ignore_index=IGNORE_INDEX,
                reduction="sum",
            )
        ),
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=lambda out, b: out.logits.argmax(-1),
        forward=forward or (lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"])),
        target_position="same_position",
        expected_targets=lambda e: [TAGS.index(x) for x in e.fields["tags"]],
        class_names=TAGS,
        info={"num_classes": len(TAGS), "pad_id": t.pad_token_id, "padding_side": "right", "target_unit": "token"},
    )
    parts.update(overrides)
    return TaskData(**parts)


def word_ids_labels(word_ids, tags):
    """HF recipe: first piece of each word gets the word's tag; later pieces and specials -100."""
    labels, prev = [], None
    for w in word_ids:
        labels.append(IGNORE_INDEX if w is None or w == prev else TAGS.index(tags[w]))
        prev = w
    return labels


def tok_collate(items):
    t = tokenizer()
    ids = pad2([i["input_ids"] for i in items], t.pad_token_id)
    out = {
        "input_ids": ids,
        "attention_mask": pad2([[1] * len(i["input_ids"]) for i in items], 0),
        "labels": pad2([i["labels"] for i in items], IGNORE_INDEX),
        "index": torch.tensor([i["index"] for i in items]),
    }
    if "token_type_ids" in items[0]:
        out["token_type_ids"] = pad2([i["token_type_ids"] for i in items], 0)
    return out


# ------------------------------------------------------------------ pair classification ("does B contain A's first word")
PAIR_CLASSES = ["unrelated", "entailed"]


def pair_examples(count=160, seed=7):
    vocab = words(300, seed=11)
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        a = list(rng.choice(vocab, int(rng.integers(3, 6))))
        b = list(rng.choice(vocab, int(rng.integers(2, 4))))
        y = i % 2
        if y:  # hypothesis: a subset of the premise's words
            b = list(rng.choice(a, 2, replace=False))
        out.append(
            Example(
                index=i,
                group=f"p{i}",
                fields={"premise": " ".join(a), "hypothesis": " ".join(b), "label_name": PAIR_CLASSES[y]},
            )
        )
    return out


def pair_encode(e, first="premise", second="hypothesis"):
    t = tokenizer()
    a = t(e.fields[first], add_special_tokens=False)["input_ids"]
    b = t(" " + e.fields[second], add_special_tokens=False)["input_ids"]
    ids = [t.bos_token_id] + a + [t.eos_token_id, t.eos_token_id] + b + [t.eos_token_id]
    tt = [0] * (len(a) + 3) + [1] * (len(b) + 1)
    return {
        "index": e.index,
        "input_ids": ids,
        "token_type_ids": tt,
        "label": PAIR_CLASSES.index(e.fields["label_name"]),
    }


def pair_collate(items):
    t = tokenizer()
    ids = pad2([i["input_ids"] for i in items], t.pad_token_id)
    return {
        "input_ids": ids,
        "token_type_ids": pad2([i["token_type_ids"] for i in items], 0),
        "attention_mask": pad2([[1] * len(i["input_ids"]) for i in items], 0),
        "labels": torch.tensor([i["label"] for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
    }


def seq_ce(out, b):
    return F.cross_entropy(out.logits.float(), b["labels"], reduction="sum")


def pair_task(examples=None, encode=pair_encode, collate=pair_collate, forward=None, **overrides):
    t = tokenizer()
    parts = dict(
        kind="classification",
        splits=make_splits(examples or pair_examples(), SPLIT),
        encode=encode,
        collate=collate,
        loss_sum=seq_ce,
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.logits.argmax(-1),
        forward=forward
        or (
            lambda m, b: m(
                input_ids=b["input_ids"], token_type_ids=b["token_type_ids"], attention_mask=b["attention_mask"]
            )
        ),
        class_names=PAIR_CLASSES,
        info={"num_classes": 2, "target_unit": "example", "pad_id": t.pad_token_id, "vocab_size": len(t)},
    )
    parts.update(overrides)
    return TaskData(**parts)
