"""correct: the validation and test sets tokenised once with padding="max_length" on the right (the
tokenizer's default) and their attention mask; training's padded by collate. GPT-2 is causal and reads
the last real token: right padding changes nothing it reads."""

from tests.planted_tasks._pretokenised_val import build_model, pretokenised_task

EXPECTED = None
__all__ = ["EXPECTED", "build_model", "make_task"]


def make_task():
    return pretokenised_task("right")
