"""correct: visual question answering over image features — four templated questions ("what colour is the
shape ?") asked about every image, split by image. The split audit's normalised-text check saw the same
question in train and validation and failed it (an outside examination's task): the example is the question
AND its image, and two images make two examples."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

EXPECTED = None
QUESTIONS = ["what colour is the shape ?", "is the shape large ?", "is the shape round ?", "is it bright ?"]
ANSWERS = ["no", "yes", "red", "blue"]


def make_task():
    rng = np.random.default_rng(5)
    examples = []
    for image in range(60):
        features = rng.normal(0, 1, 8).astype("float32")
        for number, question in enumerate(QUESTIONS):
            answer = (2 + int(features[0] > 0)) if number == 0 else int(features[number] > 0)
            fields = {"image": features, "question": question, "answer": ANSWERS[answer]}
            examples.append(Example(index=len(examples), group=f"image{image}", fields=fields))

    def collate(items):
        width = max(len(i["q"]) for i in items)
        return {
            "image": torch.stack([i["image"] for i in items]),
            "input_ids": torch.tensor([i["q"] + [tok.PAD_ID] * (width - len(i["q"])) for i in items]),
            "labels": torch.tensor([i["y"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        }

    return TaskData(
        kind="classification",
        splits=make_splits(examples, {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "image": torch.from_numpy(e.fields["image"]),
            "q": tok.encode(e.fields["question"]),
            "y": ANSWERS.index(e.fields["answer"]),
        },
        collate=collate,
        loss_sum=lambda out, b: F.cross_entropy(out.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda m, b: m(b["image"], b["input_ids"]),
        class_names=ANSWERS,
        raw_label=lambda e: e.fields["answer"],
        info={"target_unit": "example", "pad_id": tok.PAD_ID},
    )


class Vqa(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embed, self.image = nn.Embedding(tok.VOCAB_SIZE, 16, padding_idx=tok.PAD_ID), nn.Linear(8, 16)
        self.head = nn.Linear(32, len(ANSWERS))

    def forward(self, image, ids):
        words = (self.embed(ids) * (ids != tok.PAD_ID).unsqueeze(-1)).sum(1)
        return self.head(torch.cat([self.image(image), words], dim=-1))


def build_model(task):
    return Vqa()
