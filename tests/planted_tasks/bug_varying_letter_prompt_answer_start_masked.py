"""generation whose prompt ends on a token of its own that varies ("<bos>step 2 after k" -> "ll<eos>"), the prompt
mask one token too long: every answer trains from its second token (the twin of
ok_prompt_ends_on_its_varying_letter, whose answers are trained whole)."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX
from tests.planted_tasks._common import generation_task, tiny_gpt
from tests.planted_tasks.ok_prompt_ends_on_its_varying_letter import examples

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "answer's first token is masked"}


def encode(e):
    prompt = [tok.BOS_ID] + tok.encode(e.fields["question"])
    answer = tok.encode(e.fields["answer"]) + [tok.EOS_ID]
    masked = len(prompt) + 1  # the bug: one past the prompt
    return {
        "index": e.index,
        "input_ids": torch.tensor(prompt + answer),
        "labels": torch.tensor([IGNORE_INDEX] * masked + answer[1:]),
    }


def make_task():
    return generation_task(examples(), encode=encode, expected_targets=None)


def build_model(task):
    return tiny_gpt(task)
