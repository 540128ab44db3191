"""instruction tuning: inputs truncated to MAX_LEN keeping the END (truncation_side='left', to keep the
answer) but labels cut with a plain [:MAX_LEN] slice: on long examples labels and inputs no longer line up."""

from tests.planted_tasks._common import encode_instruction, generation_task, tiny_gpt

EXPECTED = {"step": "alignment", "verdict": "fail"}
MAX_LEN = 20


def encode(example):
    item = encode_instruction(example)
    ids, labels = item["input_ids"], item["labels"]
    return {"index": example.index, "input_ids": ids[-MAX_LEN:], "labels": labels[:MAX_LEN]}  # the bug


def make_task():
    return generation_task(encode=encode)


def build_model(task):
    return tiny_gpt(task)
