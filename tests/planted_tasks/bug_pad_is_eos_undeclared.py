"""The GPT-2 habit of bug_pad_is_eos (pad = eos, padding masked by value, every real <eos> target masked
too) in a task that does not declare its pad id (info holds no 'pad_id', as a user's own task writes
'pad_token_id' or nothing): the cause is named from the value the batch holds at its padding."""

from tests.planted_tasks import bug_pad_is_eos
from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "the pad id (the value at every padding position)"}


def make_task():
    task = generation_task(encode=bug_pad_is_eos.encode, collate=bug_pad_is_eos.collate)
    task.info.pop("pad_id", None)
    return task


def build_model(task):
    return tiny_gpt(task)
