"""seq2seq (BART): source and labels padded to one common width, and forward passes
decoder_attention_mask=b["attention_mask"], the SOURCE's padding (same width, no shape error). The target
is twice as long as the source: every target position past the source's length is masked from the
decoder's attention, which spells the tail nearly blind."""

from tests.planted_tasks._doubled_words import build_model, doubled_task

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "as its decoder_attention_mask"}
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return doubled_task(lambda b: b["attention_mask"])
