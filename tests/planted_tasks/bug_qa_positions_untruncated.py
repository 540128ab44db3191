"""extractive QA (BertForQuestionAnswering, own loss): start/end token positions computed on the UNTRUNCATED
sequence; the context is then cut to MAX_LEN=40 tokens, so answers past the cut get positions beyond the row:
HF clamps them to seq_len and ignores them, so those questions silently train nothing (and are still counted)
instead of being labelled no-answer."""

from tests.planted_tasks import _qa_spans as _qa

EXPECTED = {"step": "objective", "verdict": "fail"}


def positions(prefix, spans, k, kept):
    s, e = spans[k]
    return prefix + s, prefix + e - 1  # the bug: never checked against the truncation


def make_task():
    return _qa.qa_task(positions)


def build_model(task):
    return _qa.build()
