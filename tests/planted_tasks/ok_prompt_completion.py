"""correct: prompt/completion records (the prompt ends with its separator " =>"), the completion trained."""

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._common import tiny_gpt
from tests.planted_tasks._prompt_completion import prompt_completion_task

EXPECTED = None


def make_task():
    return prompt_completion_task(tok.encode)


def build_model(task):
    return tiny_gpt(task)
