"""correct: yes/no questions as generation with a long fixed system prompt shared by every row; the answer is
'yes' or 'no' then <eos>; prompt masked, split by question. (Prompts differ only in a short field.)"""

import numpy as np

from pilot.data import byte_tokenizer as tok
from pilot.data.task import Example
from pilot.models.tiny_gpt import TinyGPT
from tests.planted_tasks._common import generation_task, words

EXPECTED = None
SYSTEM = "You are a careful checker. Answer yes or no.\n"


def examples(count=120, seed=6):
    ws = words(count, seed)
    rng = np.random.default_rng(seed)
    out = []
    for i, w in enumerate(ws):
        letter = "aeiou"[int(rng.integers(5))]
        out.append(
            Example(
                i,
                f"q{i}",
                {"instruction": f"{SYSTEM}has '{w}' an {letter}?\n", "answer": "yes" if letter in w else "no"},
            )
        )
    return out


def make_task():
    return generation_task(examples())


def build_model(task):
    return TinyGPT(vocab_size=tok.VOCAB_SIZE, max_len=128, d_model=32, n_layer=1, n_head=2, dropout=0.0)
