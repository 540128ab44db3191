"""dropout set to 0.9 in the model config, meant as TF's keep_prob (keep 90%): PyTorch's p is the DROP
probability, so 90% of activations are zeroed in every training forward of the tiny GPT."""

from pilot.data import byte_tokenizer as tok
from pilot.models.tiny_gpt import TinyGPT
from tests.planted_tasks._common import EVERY_CHECK, generation_task

EXPECTED = {"step": "tiny_subset", "verdict": "warn", "said": "Dropout drops most of its input"}
SETTINGS = EVERY_CHECK
KEEP_PROB = 0.9


def make_task():
    return generation_task()


def build_model(task):
    return TinyGPT(vocab_size=tok.VOCAB_SIZE, max_len=64, d_model=32, n_layer=1, n_head=2, dropout=KEEP_PROB)
