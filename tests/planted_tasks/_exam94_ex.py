"""Shared helpers for the exam92 tasks (plain user code)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from pilot.data.task import IGNORE_INDEX

NAMES = "alice bob carol dave erin frank grace heidi ivan judy mallory oscar peggy trent victor walter".split()
CITIES = "paris london berlin rome madrid vienna prague oslo dublin lisbon athens warsaw".split()
COLORS = "red green blue black white yellow purple orange grey brown".split()
NOUNS = "cat dog car house tree river book phone chair table lamp door window garden city road".split()
VERBS = "likes sees finds buys paints moves opens closes wants needs".split()
ADJS = "big small old new quick slow bright dark happy sad".split()


def pad_rows(rows, value, side="right", width=None):
    width = width or max(len(r) for r in rows)
    out = torch.full((len(rows), width), value, dtype=torch.long)
    for i, r in enumerate(rows):
        r = torch.as_tensor(r, dtype=torch.long)
        if side == "left":
            out[i, width - len(r) :] = r
        else:
            out[i, : len(r)] = r
    return out


def mask_rows(rows, side="right", width=None):
    width = width or max(len(r) for r in rows)
    m = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if side == "left":
            m[i, width - len(r) :] = 1
        else:
            m[i, : len(r)] = 1
    return m


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


TOPICS = {
    "sports": "match goal team coach league season striker referee stadium score".split(),
    "food": "recipe soup bread cheese oven spicy dinner salad flavour bakery".split(),
    "tech": "laptop software update battery screen chip network server app code".split(),
}
FILLER = "the a this that really quite very and but so then today yesterday was is looks felt".split()


def topic_sentence(rng, topic):
    words = [FILLER[rng.integers(len(FILLER))] for _ in range(rng.integers(3, 7))]
    for _ in range(rng.integers(2, 4)):
        words.insert(int(rng.integers(len(words) + 1)), TOPICS[topic][rng.integers(10)])
    name = NAMES[rng.integers(len(NAMES))].capitalize()
    city = CITIES[rng.integers(len(CITIES))].capitalize()
    words.insert(int(rng.integers(len(words) + 1)), name)
    if rng.random() < 0.5:
        words += ["in", city]
    s = " ".join(words)
    return s[0].upper() + s[1:] + "."


def tiny_bert_config(vocab_size, pad_id, **kw):
    import transformers

    return transformers.BertConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=pad_id,
        **kw,
    )


def wordpiece_tokenizer(texts, lowercase=True):
    """A deterministic WordPiece tokenizer (vocab: specials, sorted words, sorted ##chars) built with the
    tokenizers library -- the trainer itself is not deterministic across processes."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    norm = normalizers.BertNormalizer(lowercase=lowercase)
    pre = pre_tokenizers.BertPreTokenizer()
    words = set()
    for t in texts:
        for w, _ in pre.pre_tokenize_str(norm.normalize_str(t)):
            words.add(w)
    chars = sorted({c for w in words for c in w})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(words) + chars + ["##" + c for c in chars]
    tk = Tokenizer(models.WordPiece({w: i for i, w in enumerate(dict.fromkeys(vocab))}, unk_token="[UNK]"))
    tk.normalizer = norm
    tk.pre_tokenizer = pre
    return tk
