"""collate truncates every row to MAX_LEN=20 tokens keeping the START (tokenizer default truncation_side
='right'): long prompts push the answer, or all of it, out of the window; labels cut with the inputs."""

from tests.planted_tasks._common import generation_task, pad_collate

EXPECTED = {"step": "inspect", "verdict": "fail", "said": "collate truncated the row"}
MAX_LEN = 20


def collate(items):
    cut = [{**it, "input_ids": it["input_ids"][:MAX_LEN], "labels": it["labels"][:MAX_LEN]} for it in items]
    return pad_collate(cut)


def make_task():
    return generation_task(collate=collate)


def build_model(task):
    from tests.planted_tasks._common import tiny_gpt

    return tiny_gpt(task)
