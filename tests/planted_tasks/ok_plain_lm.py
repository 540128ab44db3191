"""correct: plain language modelling, every token a target (sentences that start alike).

The tiny-subset check runs here: eight sentences share contexts whose next token differs
("the cat sat" / "the cat ran"), so it must score only the positions the subset determines.
"""

from tests.planted_tasks._common import EVERY_CHECK, lm_task, tiny_gpt

EXPECTED = None
SETTINGS = {
    "micro_batch": 4,
    **EVERY_CHECK,
    "tiny_overrides": ["optim.lr=3e-3", "optim.warmup_updates=0", "pilot.tiny.max_updates=200"],
}


def make_task():
    return lm_task()


def build_model(task):
    return tiny_gpt(task)
