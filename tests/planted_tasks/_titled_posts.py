"""shared: posts of a title and a body (byte tokens of title + " | " + body), the class told by the title's
first word (one of 20 per class); the validation rows' titles as ``val_title`` gives them (a second export)."""

import numpy as np
import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._common import words
from tests.planted_tasks._text_tasks import SENTIMENT, MeanPoolClassifier, seqcls_task


def posts_task(val_title):
    rng = np.random.default_rng(8)
    vocab, topics = words(200, seed=5), words(40, seed=6)  # a title's first word: one of 20 per class
    examples = []
    for i in range(200):
        label = int(rng.integers(2))
        title = str(rng.choice(topics[20 * label : 20 * label + 20])) + " " + str(rng.choice(vocab))
        body = " ".join(str(w) for w in rng.choice(vocab, 3))
        fields = {"title": title, "body": body, "sentiment": SENTIMENT[label]}
        examples.append(Example(index=i, group=f"post{i}", fields=fields))
    splits = make_splits(examples, {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0})
    for e in splits["val"]:
        e.fields["title"] = val_title(e.fields["title"])

    def encode(e):
        ids = tok.encode(e.fields["title"] + " | " + e.fields["body"])
        return {"index": e.index, "input_ids": torch.tensor(ids), "label": SENTIMENT.index(e.fields["sentiment"])}

    return seqcls_task(splits=splits, encode=encode)


def build_model(task):
    return MeanPoolClassifier()
