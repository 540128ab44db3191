"""shared: premise/hypothesis pairs ("entailed" when every hypothesis word is in the premise), LONG premises
(6-13 words) and short hypotheses; [bos] premise </s></s> hypothesis </s> with token_type_ids, BERT seq-cls,
inputs limited to MAX_LEN tokens."""

import numpy as np

from pilot.data.task import Example
from tests.planted_tasks._bert_bpe import tokenizer
from tests.planted_tasks._common import words
from tests.planted_tasks._ner_and_pairs import PAIR_CLASSES, hf_model, pair_task

MAX_LEN = 44


def examples(count=160, seed=8):
    vocab = words(300, seed=11)
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        a = [str(w) for w in rng.choice(vocab, int(rng.integers(6, 14)), replace=False)]
        y = i % 2
        b = [str(w) for w in rng.choice(a, 2, replace=False)] if y else [str(w) for w in rng.choice(vocab, 2)]
        if not y and set(b) <= set(a):
            b = [vocab[i]]
        out.append(
            Example(i, f"p{i}", {"premise": " ".join(a), "hypothesis": " ".join(b), "label_name": PAIR_CLASSES[y]})
        )
    return out


def encode_with(truncate):
    def encode(e):
        t = tokenizer()
        a = t(e.fields["premise"], add_special_tokens=False)["input_ids"]
        b = t(" " + e.fields["hypothesis"], add_special_tokens=False)["input_ids"]
        ids, tt = truncate(a, b, t.bos_token_id, t.eos_token_id)
        return {
            "index": e.index,
            "input_ids": ids,
            "token_type_ids": tt,
            "label": PAIR_CLASSES.index(e.fields["label_name"]),
        }

    return encode


def task(truncate):
    return pair_task(examples(), encode=encode_with(truncate))


def build():
    return hf_model("Bert", "SequenceClassification", 2, type_vocab_size=2)
