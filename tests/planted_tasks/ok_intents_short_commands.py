"""correct: intent classification of short voice commands from a few templates with slot values ("set timer
36", "set timer 3", "play song 12"), each command its own group: two commands of one template share most of
their 5-character shingles, and that is the template, not a copy."""

import numpy as np
import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._text_tasks import SPLIT, MeanPoolClassifier, seqcls_task

EXPECTED = None
INTENTS = ["timer", "music"]
TEMPLATES = {
    "timer": ["set timer {}", "timer for {} minutes", "wake me in {} hours", "alarm at {}"],
    "music": ["play song {}", "put on track {}", "start album {}", "music number {}"],
}


def examples(count=160, seed=7):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        intent = INTENTS[i % 2]
        template = TEMPLATES[intent][int(rng.integers(4))]
        out.append(Example(i, f"c{i}", {"text": template.format(i), "intent": intent}))
    return out


def encode(e):
    return {
        "index": e.index,
        "input_ids": torch.tensor(tok.encode(e.fields["text"])),
        "label": INTENTS.index(e.fields["intent"]),
    }


def make_task():
    return seqcls_task(
        splits=make_splits(examples(), SPLIT),
        encode=encode,
        class_names=list(INTENTS),
        raw_label=lambda e: e.fields["intent"],
        decode_tokens=tok.token_strings,
    )


def build_model(task):
    return MeanPoolClassifier(2)
