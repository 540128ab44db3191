"""collate masks the prompt with the *first* row's prompt length for every row of the micro-batch."""

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, pad_collate, tiny_gpt

EXPECTED = {"step": "inspect", "verdict": "fail"}
SEPARATOR_END = tok.encode("=> ")[-1]


def encode(example):
    from tests.planted_tasks._common import encode_instruction

    item = encode_instruction(example, mask_instruction=False)
    prompt = len(tok.encode(example.fields["instruction"] + "=> ")) + 1
    return {**item, "prompt_length": prompt}


def collate(items):
    batch = pad_collate(items)
    prompt = items[0]["prompt_length"]  # the bug: one prompt length for the whole batch
    batch["labels"][:, :prompt] = IGNORE_INDEX
    return batch


def make_task():
    return generation_task(encode=encode, collate=collate)


def build_model(task):
    return tiny_gpt(task)
