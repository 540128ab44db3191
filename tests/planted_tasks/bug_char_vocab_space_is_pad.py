"""A character vocabulary built as {c: i for i, c in enumerate(sorted(chars))} with PAD_ID = 0 too: the
space sorts first, so every space gets the pad id; the mask (ids != PAD) hides the spaces and the
embedding's padding row zeroes them. The label is the number of words (1, 2 or 3): told by the spaces."""

import numpy as np
import torch

from pilot.data.task import Example, TaskData
from tests.planted_tasks._char_encoder import PooledEncoder, batch_of, pad_ids, pooled_classification, words

EXPECTED = {"step": "inspect", "verdict": "warn", "said": "is also a real token inside the text"}
CLASSES = ["one_word", "two_words", "three_words"]
PAD_ID = 0


def make_task() -> TaskData:
    rng = np.random.default_rng(3)
    pool = words(900, 3)
    examples, seen = [], set()
    for i in range(300):
        n = int(rng.integers(1, 4))
        text = " ".join(pool[3 * i : 3 * i + n])
        if text not in seen:
            seen.add(text)
            examples.append(Example(index=len(examples), group=f"s{len(examples)}", fields={"text": text, "n": n}))
    vocab = {c: i for i, c in enumerate(sorted({c for e in examples for c in e.fields["text"]}))}  # the bug
    chars = {i: c for c, i in vocab.items()}

    def encode(e: Example) -> dict:
        return {"index": e.index, "input_ids": [vocab[c] for c in e.fields["text"]], "label": e.fields["n"] - 1}

    def collate(items: list[dict]) -> dict:
        ids, _ = pad_ids([it["input_ids"] for it in items], PAD_ID)
        return batch_of(items, ids, (ids != PAD_ID).long())  # the mask by value hides the spaces too

    return pooled_classification(
        examples,
        encode,
        collate,
        CLASSES,
        lambda e: CLASSES[e.fields["n"] - 1],
        lambda ids: [chars.get(int(i), "?") for i in ids],
        {"pad_id": PAD_ID, "vocab_size": len(vocab)},
    )


def build_model(task: TaskData) -> torch.nn.Module:
    return PooledEncoder(int(task.info["vocab_size"]), 3, padding_idx=PAD_ID)
