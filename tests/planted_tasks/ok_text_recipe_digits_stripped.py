"""correct: recipe lines classified ingredient / instruction; ingredient lines start with a quantity
('2 cups flour'), and `encode` strips digits (quantities vary endlessly and do not matter) — the unit
and food words ('cups', 'tbsp', 'flour' vs 'stir', 'bake', 'until') carry the class."""

import re

import numpy as np
import torch

from pilot.data import byte_tokenizer as tok
from pilot.data.split import make_splits
from pilot.data.task import Example
from tests.planted_tasks._text_tasks import MeanPoolClassifier, seqcls_task

EXPECTED = None
CLASSES = ["ingredient", "instruction"]
UNITS = ["cups", "tbsp", "tsp", "g", "oz"]
FOODS = ["flour", "sugar", "butter", "milk", "salt", "rice", "eggs", "oats", "honey", "cream", "beans", "onion"]
ADJ = ["sifted", "soft", "cold", "brown", "whole", "chopped", "fresh", "dried", "melted", "ground"]
VERBS = ["stir", "bake", "whisk", "fold", "simmer", "chill"]
TAIL = ["until smooth", "gently", "in the pan", "until golden", "well"]


def line(y, rng):
    if y == 0:
        return f"{rng.integers(1, 500)} {rng.choice(UNITS)} {rng.choice(ADJ)} {rng.choice(FOODS)}"
    text = f"{rng.choice(VERBS)} the {rng.choice(ADJ)} {rng.choice(FOODS)} {rng.choice(TAIL)}"
    if rng.random() < 0.1:
        text += f" for {rng.integers(5, 60)} min"
    return text


def examples():
    rng = np.random.default_rng(10)
    out, seen = [], set()
    while len(out) < 200:  # a deduplicated corpus (on the normalised text)
        y = len(out) % 2
        text = line(y, rng)
        key = re.sub(r"\d+", "", text)
        if key not in seen:
            seen.add(key)
            out.append(Example(index=len(out), group=f"line{len(out)}", fields={"text": text, "kind": CLASSES[y]}))
    return out


def encode(e):
    text = re.sub(r"\d+", "", e.fields["text"]).strip()
    return {"index": e.index, "input_ids": torch.tensor(tok.encode(text)), "label": CLASSES.index(e.fields["kind"])}


def make_task():
    return seqcls_task(
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encode,
        class_names=list(CLASSES),
        raw_label=lambda e: e.fields["kind"],
        decode_tokens=tok.token_strings,
    )


def build_model(task):
    return MeanPoolClassifier()
