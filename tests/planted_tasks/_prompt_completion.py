"""shared: prompt/completion records (the OpenAI fine-tuning layout): each prompt ends with its separator
``" =>"``, each completion starts with a space."""

import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX, Example
from tests.planted_tasks._common import generation_task, instruction_examples


def records() -> list[Example]:
    return [
        Example(
            index=e.index,
            group=e.group,
            fields={"prompt": e.fields["instruction"].strip() + " =>", "completion": " " + e.fields["answer"]},
        )
        for e in instruction_examples()
    ]


def encode_with(prompt_ids):
    """An encode that builds the prompt's ids with ``prompt_ids(text)``; the completion is trained."""

    def encode(example):
        prompt = [tok.BOS_ID] + prompt_ids(example.fields["prompt"])
        answer = tok.encode(example.fields["completion"]) + [tok.EOS_ID]
        return {
            "index": example.index,
            "input_ids": torch.tensor(prompt + answer),
            "labels": torch.tensor([IGNORE_INDEX] * len(prompt) + answer),
        }

    return encode


def prompt_completion_task(prompt_ids):
    return generation_task(
        records(),
        encode=encode_with(prompt_ids),
        expected_targets=lambda e: tok.encode(e.fields["completion"]) + [tok.EOS_ID],
    )
