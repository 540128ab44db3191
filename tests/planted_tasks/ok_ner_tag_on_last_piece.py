"""correct: NER with RobertaForTokenClassification where each word's tag sits on its LAST piece (a documented
alternative to first-piece labelling: the last piece has seen the whole word in a left-to-right reading), other pieces
and specials -100; encode returns tensors."""

import torch

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _ner_and_pairs as c
from tests.planted_tasks._bert_bpe import tokenizer

EXPECTED = None


def encode(e):
    t = tokenizer()
    enc = t(e.fields["tokens"], is_split_into_words=True, add_special_tokens=False)
    w = enc.word_ids()
    labels = [
        c.TAGS.index(e.fields["tags"][x]) if x is not None and (k + 1 == len(w) or w[k + 1] != x) else IGNORE_INDEX
        for k, x in enumerate(w)
    ]
    return {
        "index": e.index,
        "input_ids": torch.tensor([t.bos_token_id] + enc["input_ids"] + [t.eos_token_id]),
        "labels": torch.tensor([IGNORE_INDEX] + labels + [IGNORE_INDEX]),
    }


def collate(items):
    return c.tok_collate([{k: (v.tolist() if torch.is_tensor(v) else v) for k, v in i.items()} for i in items])


def make_task():
    return c.ner_task(encode, collate)


def build_model(task):
    return c.hf_model("Roberta", "TokenClassification", len(c.TAGS), type_vocab_size=1, max_position_embeddings=132)
