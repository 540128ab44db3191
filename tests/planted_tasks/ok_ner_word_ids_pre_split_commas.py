"""correct: NER with tags per whitespace word ("Paris," one word), encoded pre-split
(``is_split_into_words=True``): word_ids count the whitespace words, so the comma is a later piece of its word
and every tag sits on its word's first piece."""

from tests.planted_tasks._ner_commas import build_model, first_pieces, ner_task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def ids_and_labels(t, words, tags):
    encoding = t(words, is_split_into_words=True, add_special_tokens=False)
    return encoding["input_ids"], first_pieces(encoding.word_ids(), tags)


def make_task():
    return ner_task(ids_and_labels)
