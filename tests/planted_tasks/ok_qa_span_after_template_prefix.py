"""correct: the answer's token positions count everything before it: the question, its two markers and
the template's "context: " prefix (byte tokens: one token per character)."""

from tests.planted_tasks._context_spans import PREFIX, build_model, qa_task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return qa_task(lambda before_context, offset: before_context + len(PREFIX) + offset)
