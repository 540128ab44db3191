"""NER with tags per whitespace word ("Paris," one word): the sentence is encoded as one string and the tags
aligned with the encoding's word_ids, which count the comma as a word of its own. After each comma every tag is
read from one word further on (the guard ``tags[w] if w < len(tags) else O`` hides the IndexError): no single
offset fits a row, its labels drift one position per comma (an outside examination, 2026-12-06)."""

from tests.planted_tasks._ner_commas import build_model, first_pieces, ner_task

EXPECTED = {"step": "inspect", "verdict": "warn"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def ids_and_labels(t, words, tags):
    encoding = t(" ".join(words), add_special_tokens=False)
    return encoding["input_ids"], first_pieces(encoding.word_ids(), tags)


def make_task():
    return ner_task(ids_and_labels)
