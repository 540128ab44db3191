"""correct: read a value out of a record by its key ("size=m color=red city=rome\\nget color=" -> "red"):
the answer is in the prompt after its key by design, the task itself. Warned as a demonstration filled from
the row (an outside examination): the key's few tokens recur, the question does not."""

import numpy as np
import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.task import IGNORE_INDEX, Example
from tests.planted_tasks._common import generation_task, tiny_gpt

EXPECTED = None
VALUES = {
    "size": ["xs", "s", "m", "l", "xl"],
    "color": ["red", "blue", "green", "black", "white", "amber"],
    "city": ["rome", "oslo", "lima", "kyiv", "baku", "riga"],
}


def examples() -> list[Example]:
    rng, rows, seen = np.random.default_rng(9), [], set()
    while len(rows) < 160:
        record = {key: values[rng.integers(len(values))] for key, values in VALUES.items()}
        keys = list(record)
        rng.shuffle(keys)
        key = keys[rng.integers(len(keys))]
        text = " ".join(f"{k}={record[k]}" for k in keys)
        if (text, key) not in seen:
            seen.add((text, key))
            fields = {"instruction": f"{text}\nget {key}=", "answer": record[key]}
            rows.append(Example(index=len(rows), group=f"r{len(rows)}", fields=fields))
    return rows


def encode(e):  # the question ends where the answer starts: "get color=" then "red"
    prompt = [tok.BOS_ID] + tok.encode(e.fields["instruction"])
    answer = tok.encode(e.fields["answer"]) + [tok.EOS_ID]
    return {
        "index": e.index,
        "input_ids": torch.tensor(prompt + answer),
        "labels": torch.tensor([IGNORE_INDEX] * len(prompt) + answer),
    }


def make_task():
    return generation_task(examples(), encode=encode)


def build_model(task):
    return tiny_gpt(task)
