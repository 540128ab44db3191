"""one-shot prompts whose demonstration is filled from the row itself (``rows[i]`` where ``rows[i - 1]`` was
meant): the prompt holds the row's own prompt and completion, and the model learns to copy them."""

from pilot.data import byte_tokenizer as tok
from pilot.models.tiny_gpt import TinyGPT
from tests.planted_tasks._one_shot import one_shot_task

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "the prompt already holds the row's own answer"}


def make_task():
    return one_shot_task(shift=0)  # the bug


def build_model(task):
    return TinyGPT(vocab_size=tok.VOCAB_SIZE, max_len=160, d_model=32, n_layer=1, n_head=2, dropout=0.0)
