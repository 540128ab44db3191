"""bug: prompt ids sliced [:-2] (meant to drop "<eos> and a newline" the tokenizer never added): every answer
trained after "reverse nigebaba " instead of "reverse nigebaba =>"."""

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._common import tiny_gpt
from tests.planted_tasks._prompt_completion import prompt_completion_task

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "without its end"}


def make_task():
    return prompt_completion_task(lambda text: tok.encode(text)[:-2])


def build_model(task):
    return tiny_gpt(task)
