"""correct: NER, HF label_all_tokens recipe: every piece tagged, a word's first piece keeps its tag and its later
pieces get the I- form (B-PER -> I-PER); so a two-piece B-LOC word reads B-LOC I-LOC."""

from tests.planted_tasks import _ner_pieces as _ner5

EXPECTED = None


def piece_tag(tag, first):
    return tag if first else _ner5.inside(tag)


def make_task():
    return _ner5.ner_task(piece_tag)


def build_model(task):
    return _ner5.build()
