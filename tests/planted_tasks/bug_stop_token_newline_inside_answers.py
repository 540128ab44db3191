"""A real character chosen as the stop token: every answer ends with '\\n' (EOS_ID = ord('\\n')), but the
answers are two-line addresses that hold '\\n' inside, so the model is trained to emit its stop token in
the middle of every answer and generation stops after the first line (an outside examination, 2026-12-05)."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX, Example, TaskData
from tests.planted_tasks._common import generation_task, tiny_gpt, words

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "the stop token is also inside the answers"}
STOP = tok.encode("\n")[0]  # the bug: a character the answers use


def _answer(example: Example) -> list[int]:
    return tok.encode(example.fields["answer"]) + [STOP]


def _encode(example: Example) -> dict:
    prompt = [tok.BOS_ID, *tok.encode(example.fields["instruction"] + " ")]
    answer = _answer(example)
    return {
        "index": example.index,
        "input_ids": torch.tensor(prompt + answer),
        "labels": torch.tensor([IGNORE_INDEX] * len(prompt) + answer),
    }


def make_task() -> TaskData:
    pool = words(400, 9)
    examples = [
        Example(
            index=i,
            group=f"g{i}",
            fields={
                "instruction": f"address of {pool[2 * i].title()}:",
                "answer": f"{i} {pool[2 * i + 1].title()} St\n{pool[(7 * i) % 400].title()}",
            },
        )
        for i in range(150)
    ]
    return generation_task(examples, encode=_encode, expected_targets=_answer)


def build_model(task: TaskData) -> torch.nn.Module:
    return tiny_gpt(task)
