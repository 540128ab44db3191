"""Topic classification whose examples are tokenised once, for every split alike, with
padding='max_length' (max_length=32), as a preprocessing script that caches tensors does; collate just
stacks them. Shared by the ok_prepadded_* tasks."""

import numpy as np
import torch
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._exam94_ex import TOPICS, topic_sentence
from tests.planted_tasks._exam94_hftok import bert_fast

CLASSES = list(TOPICS)
MAXLEN = 32
_T = {}


def texts(n=300, seed=13):
    rng = np.random.default_rng(seed)
    return [
        Example(index=i, group=f"t{i}", fields={"text": topic_sentence(rng, CLASSES[i % 3]), "topic": CLASSES[i % 3]})
        for i in range(n)
    ]


def prepadded_task(split, side="right", position_ids=False, specials=True, forward=None):
    exs = texts()
    tk = bert_fast([e.fields["text"] for e in exs])
    tk.padding_side = side
    _T["tk"] = tk

    def encode(e):
        enc = tk(
            e.fields["text"], padding="max_length", max_length=MAXLEN, truncation=True, add_special_tokens=specials
        )
        out = {
            "index": e.index,
            "input_ids": torch.tensor(enc["input_ids"]),
            "attention_mask": torch.tensor(enc["attention_mask"]),
            "label": CLASSES.index(e.fields["topic"]),
        }
        if position_ids:
            out["position_ids"] = (out["attention_mask"].cumsum(-1) - 1).clamp(min=0)
        return out

    def collate(items):
        b = {k: torch.stack([i[k] for i in items]) for k in ("input_ids", "attention_mask")}
        if position_ids:
            b["position_ids"] = torch.stack([i["position_ids"] for i in items])
        b["labels"] = torch.tensor([i["label"] for i in items])
        b["index"] = torch.tensor([i["index"] for i in items])
        return b

    return TaskData(
        kind="classification",
        splits=make_splits(exs, split),
        encode=encode,
        collate=collate,
        loss_sum=lambda out, b: F.cross_entropy(getattr(out, "logits", out).float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: getattr(out, "logits", out).argmax(-1),
        forward=forward,
        class_names=CLASSES,
        raw_label=lambda e: e.fields["topic"],
        info={"num_classes": 3, "target_unit": "example", "pad_id": 0, "padding_side": side},
    )
