"""shared: extractive QA on made-up words. question "after W", answer = the word that follows W in the
context; [bos] question </s></s> context </s>, context truncated to MAX_LEN (only_second); BertForQuestionAnswering
from a config, its own loss (start_positions/end_positions) x rows."""

import numpy as np
import torch

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._bert_bpe import pad2, tokenizer
from tests.planted_tasks._common import words
from tests.planted_tasks._ner_and_pairs import hf_model

MAX_LEN = 40


def examples(count=160, seed=4):
    vocab = words(300, seed=11)
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(6, 16))
        k = int(rng.integers(0, n - 1))
        others = [str(w) for w in rng.choice(vocab[:i] + vocab[i + 1 :], n - 1, replace=False)]
        ctx = others[:k] + [vocab[i]] + others[k:]
        out.append(Example(i, f"q{i}", {"context": ctx, "question": "after " + ctx[k], "answer_word": k + 1}))
    return out


def pieces(e):
    t = tokenizer()
    q = t(e.fields["question"], add_special_tokens=False)["input_ids"]
    ctx, spans = [], []
    for j, w in enumerate(e.fields["context"]):
        p = t((" " if j else "") + w, add_special_tokens=False)["input_ids"]
        spans.append((len(ctx), len(ctx) + len(p)))
        ctx += p
    return q, ctx, spans


def encode_with(positions):
    """positions(prefix_len, spans, answer_word, kept_ctx_len) -> (start, end)"""

    def encode(e):
        t = tokenizer()
        q, ctx, spans = pieces(e)
        prefix = [t.bos_token_id] + q + [t.eos_token_id, t.eos_token_id]
        room = MAX_LEN - len(prefix) - 1
        kept = ctx[:room]
        ids = prefix + kept + [t.eos_token_id]
        s, en = positions(len(prefix), spans, e.fields["answer_word"], len(kept))
        return {"index": e.index, "input_ids": ids, "tt": [0] * len(prefix) + [1] * (len(kept) + 1), "pos": [s, en]}

    return encode


def collate(items):
    t = tokenizer()
    ids = pad2([i["input_ids"] for i in items], t.pad_token_id)
    return {
        "input_ids": ids,
        "token_type_ids": pad2([i["tt"] for i in items], 0),
        "attention_mask": (ids != t.pad_token_id).long(),
        "labels": torch.tensor([i["pos"] for i in items]),
        "index": torch.tensor([i["index"] for i in items]),
    }


def qa_ce_sum(out, b):
    """HF's QA loss, summed: positions outside the row are clamped to its length and ignored."""
    logits = out["logits"]
    length = logits.size(-1)
    pos = b["labels"].clamp(0, length)
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, length).float(), pos.reshape(-1), ignore_index=length, reduction="sum"
    )


def forward(m, b):
    out = m(
        input_ids=b["input_ids"],
        token_type_ids=b["token_type_ids"],
        attention_mask=b["attention_mask"],
    )
    return {
        "logits": torch.stack([out.start_logits, out.end_logits], 1),
    }  # (rows, 2, length)


def qa_task(positions):
    t = tokenizer()
    return TaskData(
        kind="extractive_qa",
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=encode_with(positions),
        collate=collate,
        loss_sum=qa_ce_sum,
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out["logits"].argmax(-1),
        forward=forward,
        info={"target_unit": "example", "pad_id": t.pad_token_id, "vocab_size": len(t)},
    )


def build():
    return hf_model("Bert", "QuestionAnswering", 2, type_vocab_size=2)
