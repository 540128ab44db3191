"""correct: grammar/spelling correction with a config-built T5ForConditionalGeneration over byte tokens:
input_ids = the noisy sentence, labels = the clean sentence + </s>, decoder_input_ids = labels shifted right
behind the decoder start token (pad, as T5 does); the source mostly equals the target by design."""

import numpy as np
import torch
import transformers

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData
from tests.planted_tasks._bert_bpe import pad2, sentences, token_ce_sum

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def corrupt(text, seed):
    """Each letter replaced by another at random, 10% of them: the grammar-correction source."""
    rng = np.random.default_rng(seed)
    chars = list(text)
    for k, c in enumerate(chars):
        if c != " " and rng.random() < 0.1:
            chars[k] = str(rng.choice([x for x in LETTERS if x != c]))
    return "".join(chars)


EXPECTED = None


def target(e):
    return tok.encode(e.fields["text"]) + [tok.EOS_ID]


def encode(e):
    y = target(e)
    return {
        "index": e.index,
        "src": tok.encode(e.fields["noisy"]) + [tok.EOS_ID],
        "dec": [tok.PAD_ID] + y[:-1],
        "labels": y,
    }


def collate(items):
    src, dec = pad2([i["src"] for i in items], tok.PAD_ID), pad2([i["dec"] for i in items], tok.PAD_ID)
    dmask = torch.zeros_like(dec)
    for r, i in enumerate(items):
        dmask[r, : len(i["dec"])] = 1
    return {
        "input_ids": src,
        "attention_mask": (src != tok.PAD_ID).long(),
        "decoder_input_ids": dec,
        "decoder_attention_mask": dmask,
        "labels": pad2([i["labels"] for i in items], IGNORE_INDEX),
        "index": torch.tensor([i["index"] for i in items]),
    }


def make_task():
    ex = [
        Example(index=i, group=f"s{i}", fields={"text": s, "noisy": corrupt(s, i)})
        for i, s in enumerate(sentences(100, seed=14, low=2, high=4))
    ]
    return TaskData(
        kind="seq2seq",
        splits=make_splits(ex, {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=token_ce_sum,
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda m, b: (
            m(
                input_ids=b["input_ids"],
                attention_mask=b["attention_mask"],
                decoder_input_ids=b["decoder_input_ids"],
                decoder_attention_mask=b["decoder_attention_mask"],
            ).logits
        ),
        expected_targets=target,
        decode_tokens=tok.token_strings,
        target_position="same_position",
        info={"vocab_size": tok.VOCAB_SIZE, "pad_id": tok.PAD_ID, "padding_side": "right", "target_unit": "token"},
    )


def build_model(task):
    torch.manual_seed(0)
    config = transformers.T5Config(
        vocab_size=tok.VOCAB_SIZE,
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=2,
        dropout_rate=0.0,
        pad_token_id=tok.PAD_ID,
        eos_token_id=tok.EOS_ID,
        decoder_start_token_id=tok.PAD_ID,
    )
    return transformers.T5ForConditionalGeneration(config)
