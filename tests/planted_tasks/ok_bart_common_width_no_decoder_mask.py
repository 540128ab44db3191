"""correct: the same common-width batch, no decoder_attention_mask passed: BART builds its causal mask and
the padded targets are -100, left out of the loss."""

from tests.planted_tasks._doubled_words import build_model, doubled_task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return doubled_task(lambda b: None)
