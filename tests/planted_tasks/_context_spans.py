"""shared: extractive QA over byte tokens on a config-built BertForQuestionAnswering: [bos] question [eos]
"context: " + context [eos], the answer a word of the context (a name of a made-up town), its start and end
token positions computed from the answer's character offset in the context by ``positions``."""

import numpy as np
import torch
import torch.nn.functional as F
import transformers

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._common import words

PREFIX = "context: "
QUESTIONS = [
    "where does {person} keep the {thing}?",
    "in which town is the {thing} of {person}?",
    "{person} has a {thing}: where?",
    "tell me where {person} keeps that {thing} of theirs",
]


def examples(count=200, seed=6):
    rng = np.random.default_rng(seed)
    people, towns, things = words(30, seed=1), words(40, seed=2), words(30, seed=3)
    out = []
    for i in range(count):
        person, town, thing = (str(rng.choice(pool)) for pool in (people, towns, things))
        context = f"{person} keeps a {thing} in {town} and visits it often."
        asked = QUESTIONS[int(rng.integers(len(QUESTIONS)))].format(person=person, thing=thing)
        fields = {"question": asked, "context": context, "answer": town}
        out.append(Example(index=i, group=f"doc{i}", fields={**fields, "answer_start": context.index(f" {town}") + 1}))
    return out


def qa_task(positions):
    def encode(e):
        question = tok.encode(e.fields["question"])
        ids = [tok.BOS_ID, *question, tok.EOS_ID, *tok.encode(PREFIX + e.fields["context"]), tok.EOS_ID]
        start = positions(len(question) + 2, e.fields["answer_start"])
        return {"index": e.index, "input_ids": ids, "span": [start, start + len(e.fields["answer"]) - 1]}

    def collate(items):
        width = max(len(i["input_ids"]) for i in items)
        ids = torch.full((len(items), width), tok.PAD_ID)
        for row, item in enumerate(items):
            ids[row, : len(item["input_ids"])] = torch.tensor(item["input_ids"])
        return {
            "input_ids": ids,
            "attention_mask": (ids != tok.PAD_ID).long(),
            "labels": torch.tensor([i["span"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        }

    def forward(model, batch):
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        return torch.stack([out.start_logits, out.end_logits], 1).masked_fill(
            batch["attention_mask"][:, None] == 0, -1e4
        )

    return TaskData(
        kind="extractive_qa",
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=lambda logits, b: F.cross_entropy(
            logits.flatten(0, 1).float(), b["labels"].flatten(), reduction="sum"
        ),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda logits, b: logits.argmax(-1),
        forward=forward,
        decode_tokens=tok.token_strings,
        initial_loss_tolerance=None,
        info={"target_unit": "example", "pad_id": tok.PAD_ID, "vocab_size": tok.VOCAB_SIZE},
    )


def build_model(task):
    torch.manual_seed(0)
    config = transformers.BertConfig(
        vocab_size=tok.VOCAB_SIZE,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
        pad_token_id=tok.PAD_ID,
    )
    return transformers.BertForQuestionAnswering(config)
