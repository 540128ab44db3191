"""shared: click prediction from a user-id embedding and 8 item features, examples split by user; the
user index from a lookup built on the training split (``user2idx.get(u, 0)``), or ``hashed``: the user's
number modulo ``BUCKETS`` (the hashing trick, shared by seen and unseen users alike)."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData

USERS, FEATURES, BUCKETS = 120, 8, 40
CLASSES = ["skipped", "clicked"]


def click_task(hashed=False):
    rng = np.random.default_rng(21)
    taste = rng.normal(size=(USERS, FEATURES))
    examples = []
    for i in range(720):
        user, item = int(rng.integers(USERS)), rng.normal(size=FEATURES)
        clicked = rng.random() < 1 / (1 + np.exp(-(taste[user] @ item)))
        fields = {"user_id": f"user{user:03d}", "item": item.astype("float32"), "label": CLASSES[int(clicked)]}
        examples.append(Example(index=i, group=f"user{user:03d}", fields=fields))
    splits = make_splits(examples, {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0})
    user2idx: dict[str, int] = {}
    for e in splits["train"]:
        user2idx.setdefault(e.fields["user_id"], len(user2idx))

    def encode(e):
        number = int(e.fields["user_id"][4:])
        user = number % BUCKETS if hashed else user2idx.get(e.fields["user_id"], 0)  # unseen: 0, a training user
        return {
            "index": e.index,
            "user": user,
            "item": torch.from_numpy(e.fields["item"]),
            "label": CLASSES.index(e.fields["label"]),
        }

    return TaskData(
        kind="classification",
        splits=splits,
        encode=encode,
        collate=lambda items: {
            "user": torch.tensor([i["user"] for i in items]),
            "item": torch.stack([i["item"] for i in items]),
            "labels": torch.tensor([i["label"] for i in items]),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda out, b: F.cross_entropy(out.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out.argmax(-1),
        forward=lambda m, b: m(b["user"], b["item"]),
        class_names=CLASSES,
        raw_label=lambda e: e.fields["label"],
        info={"num_classes": 2, "target_unit": "example"},
    )


class UserItem(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.users = nn.Embedding(USERS, FEATURES)
        self.head = nn.Linear(2 * FEATURES, 2)

    def forward(self, user, item):
        return self.head(torch.cat([self.users(user), item], -1))


def build_model(task):
    return UserItem()
