"""a prompt cut by its last token: prompt/completion records, the prompt's ids sliced [:-1] to drop an end
token the tokenizer never added, so every answer is trained after "reverse nigebaba =" instead of
"reverse nigebaba =>" (what the model will be given)."""

from pilot.data import byte_tokenizer as tok
from tests.planted_tasks._common import tiny_gpt
from tests.planted_tasks._prompt_completion import prompt_completion_task

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "without its end"}


def make_task():
    return prompt_completion_task(lambda text: tok.encode(text)[:-1])  # "drop the eos"


def build_model(task):
    return tiny_gpt(task)
