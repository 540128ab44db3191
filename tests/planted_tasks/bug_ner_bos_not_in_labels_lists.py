"""NER with RobertaForTokenClassification: input_ids come from the tokenizer WITH <s> ... </s> added by hand,
but labels are aligned with word_ids() of the encoding WITHOUT specials and then only padded at the end: every tag
sits one position before its word's first piece."""

from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks import _ner_and_pairs as c
from tests.planted_tasks._bert_bpe import tokenizer

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "one position off"}


def encode(e):
    t = tokenizer()
    enc = t(e.fields["tokens"], is_split_into_words=True, add_special_tokens=False)
    labels = c.word_ids_labels(enc.word_ids(), e.fields["tags"])
    return {
        "index": e.index,
        "input_ids": [t.bos_token_id] + enc["input_ids"] + [t.eos_token_id],
        "labels": labels + [IGNORE_INDEX, IGNORE_INDEX],
    }  # the bug: should be [-100] + labels + [-100]


def make_task():
    return c.ner_task(encode, c.tok_collate)


def build_model(task):
    return c.hf_model("Roberta", "TokenClassification", len(c.TAGS), type_vocab_size=1, max_position_embeddings=132)
