"""correct: one-shot prompts whose demonstration is another row (the one before)."""

from pilot.data import byte_tokenizer as tok
from pilot.models.tiny_gpt import TinyGPT
from tests.planted_tasks._one_shot import one_shot_task

EXPECTED = None


def make_task():
    return one_shot_task(shift=1)


def build_model(task):
    return TinyGPT(vocab_size=tok.VOCAB_SIZE, max_len=160, d_model=32, n_layer=1, n_head=2, dropout=0.0)
