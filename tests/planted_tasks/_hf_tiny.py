"""Shared parts of the tasks on real transformers classes built tiny from configs (locally trained BPE
tokenizers, chat-style instruction data, 3-class sentence data, and a reversal seq2seq task."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
import transformers

from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData
from tests.planted_tasks import _bert_bpe as bb
from tests.planted_tasks._bpe_tokenizer import bpe_tokenizer
from tests.planted_tasks._common import instruction_examples

SPLIT = {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}
USER, ASSISTANT = "<|user|>\n", "\n<|assistant|>\n"  # a chat template written as plain text


# ----------------------------------------------------------------------------- causal LM (chat)
def lm_tok():
    return bpe_tokenizer()


def ids(text):
    return lm_tok()(text, add_special_tokens=False)["input_ids"]


def chat_prompt(e):
    return [lm_tok().bos_token_id] + ids(USER + e.fields["instruction"].strip() + ASSISTANT)


def chat_answer(e):
    return ids(e.fields["answer"]) + [lm_tok().eos_token_id]


def chat_encode(e):
    p, a = chat_prompt(e), chat_answer(e)
    return {"index": e.index, "input_ids": p + a, "labels": [IGNORE_INDEX] * len(p) + a}


def right_pad(items, pad_id, side="right"):
    width = max(len(i["input_ids"]) for i in items)
    n_rows = len(items)
    x = torch.full((n_rows, width), pad_id, dtype=torch.long)
    y = torch.full((n_rows, width), IGNORE_INDEX, dtype=torch.long)
    m = torch.zeros((n_rows, width), dtype=torch.long)
    for r, i in enumerate(items):
        n = len(i["input_ids"])
        cols = slice(width - n, width) if side == "left" else slice(0, n)
        x[r, cols] = torch.tensor(i["input_ids"])
        y[r, cols] = torch.tensor(i["labels"])
        m[r, cols] = 1
    return {"input_ids": x, "labels": y, "attention_mask": m, "index": torch.tensor([i["index"] for i in items])}


def strings(token_ids):
    return [s.replace("Ġ", "_").replace("Ċ", "⏎") for s in lm_tok().convert_ids_to_tokens([int(t) for t in token_ids])]


def shifted_ce_sum(out, b):
    logits = out.logits if hasattr(out, "logits") else out
    return F.cross_entropy(
        logits[:, :-1].reshape(-1, logits.size(-1)).float(),
        b["labels"][:, 1:].reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="sum",
    )


def shifted_count(b):
    return (b["labels"][:, 1:] != IGNORE_INDEX).sum()


def shifted_predict(out, b):
    logits = out.logits if hasattr(out, "logits") else out
    p = torch.full_like(b["labels"], IGNORE_INDEX)
    p[:, 1:] = logits[:, :-1].argmax(-1)
    return p


def chat_task(encode=chat_encode, collate=None, pad_id=None, padding_side="right", **overrides):
    t = lm_tok()
    pad_id = t.pad_token_id if pad_id is None else pad_id
    parts = dict(
        kind="generation",
        splits=make_splits(instruction_examples(96, seed=3), SPLIT),
        encode=encode,
        collate=collate or (lambda items: right_pad(items, pad_id, padding_side)),
        loss_sum=shifted_ce_sum,
        target_count=shifted_count,
        predict=shifted_predict,
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"]),
        expected_targets=chat_answer,
        decode_tokens=strings,
        info={
            "vocab_size": len(t),
            "pad_id": pad_id,
            "padding_side": padding_side,
            "mask_instruction": True,
            "target_unit": "token",
        },
    )
    parts.update(overrides)
    return TaskData(**parts)


def causal_config(cls_name, pad_id=None, **kw):
    t = lm_tok()
    cfg_cls = getattr(transformers, cls_name)
    return cfg_cls(
        vocab_size=len(t),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=128,
        pad_token_id=t.pad_token_id if pad_id is None else pad_id,
        bos_token_id=t.bos_token_id,
        eos_token_id=t.eos_token_id,
        **kw,
    )


def causal_lm(kind="Qwen2", pad_id=None):
    torch.manual_seed(0)
    cfg = causal_config(f"{kind}Config", pad_id)
    return getattr(transformers, f"{kind}ForCausalLM")(cfg)


# ----------------------------------------------------------------------------- 3-class sentences (encoder)
CLASSES = ["short", "medium", "long"]  # by number of words: 2-3, 4-5, 6-7


def sentence_class_examples(count=150, seed=5):
    rng = np.random.default_rng(seed)
    out = []
    vocab = bb.words(300, seed=11)
    for i in range(count):
        c = i % 3
        n = int(rng.integers(2 + 2 * c, 4 + 2 * c))
        text = " ".join(rng.choice(vocab, n))
        out.append(Example(index=i, group=f"s{i}", fields={"text": text, "size": CLASSES[c]}))
    return out


def cls_tok():
    return bb.tokenizer()


def cls_encode(e):
    t = cls_tok()
    return {
        "index": e.index,
        "input_ids": bb.with_specials(t(e.fields["text"], add_special_tokens=False)["input_ids"]),
        "label": CLASSES.index(e.fields["size"]),
    }


def cls_collate(items, pad_id=None, side="right"):
    pad_id = cls_tok().pad_token_id if pad_id is None else pad_id
    width = max(len(i["input_ids"]) for i in items)
    x = torch.full((len(items), width), pad_id, dtype=torch.long)
    m = torch.zeros((len(items), width), dtype=torch.long)
    for r, i in enumerate(items):
        n = len(i["input_ids"])
        cols = slice(width - n, width) if side == "left" else slice(0, n)
        x[r, cols], m[r, cols] = torch.tensor(i["input_ids"]), 1
    return {
        "input_ids": x,
        "attention_mask": m,
        "labels": torch.tensor([i["label"] for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
    }


def logits_of(out):
    return out.logits if hasattr(out, "logits") else out


def cls_task(**overrides):
    t = cls_tok()
    parts = dict(
        kind="classification",
        splits=make_splits(sentence_class_examples(), SPLIT),
        encode=cls_encode,
        collate=cls_collate,
        loss_sum=lambda out, b: F.cross_entropy(logits_of(out).float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: logits_of(out).argmax(-1),
        forward=lambda m, b: m(input_ids=b["input_ids"], attention_mask=b["attention_mask"]),
        class_names=list(CLASSES),
        raw_label=lambda e: e.fields["size"],
        info={"num_classes": 3, "target_unit": "example", "pad_id": t.pad_token_id, "vocab_size": len(t)},
    )
    parts.update(overrides)
    return TaskData(**parts)


def roberta_cls(num_labels=3, **kw):
    torch.manual_seed(0)
    t = cls_tok()
    cfg = transformers.RobertaConfig(
        vocab_size=len(t),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        max_position_embeddings=130,
        type_vocab_size=1,
        pad_token_id=t.pad_token_id,
        bos_token_id=t.bos_token_id,
        eos_token_id=t.eos_token_id,
        num_labels=num_labels,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        **kw,
    )
    return transformers.RobertaForSequenceClassification(cfg)


def gpt2_cls(pad_id, num_labels=3):
    torch.manual_seed(0)
    t = cls_tok()
    cfg = transformers.GPT2Config(
        vocab_size=len(t),
        n_positions=64,
        n_embd=32,
        n_layer=1,
        n_head=2,
        num_labels=num_labels,
        pad_token_id=pad_id,
        bos_token_id=t.bos_token_id,
        eos_token_id=t.eos_token_id,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
    )
    return transformers.GPT2ForSequenceClassification(cfg)


# ----------------------------------------------------------------------------- seq2seq: reverse the words
def s2s_examples(count=100, seed=21):
    return [
        Example(index=i, group=f"r{i}", fields={"src": s, "tgt": " ".join(s.split()[::-1])})
        for i, s in enumerate(bb.sentences(count, seed=seed, low=2, high=5))
    ]


def s2s_target(e):
    t = cls_tok()
    return t(e.fields["tgt"], add_special_tokens=False)["input_ids"] + [t.eos_token_id]


def s2s_source(e):
    t = cls_tok()
    return t(e.fields["src"], add_special_tokens=False)["input_ids"] + [t.eos_token_id]


def s2s_task(encode, collate, forward, **overrides):
    t = cls_tok()
    parts = dict(
        kind="seq2seq",
        splits=make_splits(s2s_examples(), {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=lambda out, b: bb.token_ce_sum(logits_of(out), b),
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=lambda out, b: logits_of(out).argmax(-1),
        forward=forward,
        expected_targets=s2s_target,
        decode_tokens=lambda x: cls_tok().convert_ids_to_tokens([int(i) for i in x]),
        target_position="same_position",
        info={"vocab_size": len(t), "pad_id": t.pad_token_id, "padding_side": "right", "target_unit": "token"},
    )
    parts.update(overrides)
    return TaskData(**parts)


def t5():
    torch.manual_seed(0)
    t = cls_tok()
    cfg = transformers.T5Config(
        vocab_size=len(t),
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=2,
        dropout_rate=0.0,
        pad_token_id=t.pad_token_id,
        eos_token_id=t.eos_token_id,
        decoder_start_token_id=t.pad_token_id,
    )
    return transformers.T5ForConditionalGeneration(cfg)


def bart():
    torch.manual_seed(0)
    t = cls_tok()
    cfg = transformers.BartConfig(
        vocab_size=len(t),
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
        dropout=0.0,
        attention_dropout=0.0,
        activation_dropout=0.0,
        pad_token_id=t.pad_token_id,
        bos_token_id=t.bos_token_id,
        eos_token_id=t.eos_token_id,
        decoder_start_token_id=t.eos_token_id,
        forced_eos_token_id=None,
    )
    return transformers.BartForConditionalGeneration(cfg)
