"""extractive QA: the input is question + "context: " + context, but the answer's token positions are
computed as question length + 2 + the answer's character offset in the context, leaving out the 9
characters of the "context: " prefix the template adds: every span points 9 tokens left of its answer.
The model learns consistent, wrong spans; the loss falls as it should."""

from tests.planted_tasks._context_spans import build_model, qa_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "spans point 9 token(s) left"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return qa_task(lambda before_context, offset: before_context + offset)  # the prefix forgotten
