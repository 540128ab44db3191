"""correct: CTC (speech-recognition style) on a toy 'frames' sequence: each target letter is held for 1-3 frames,
with optional blank frames between; a BiGRU emits blank + 5 letters per frame, F.ctc_loss(reduction='sum') against
the shorter label sequence (padded with -100), target_count = label tokens, predict = greedy CTC decode padded
to the labels' width."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData

EXPECTED = None
LETTERS = "abcde"  # class ids 1..5; 0 = CTC blank
FRAME_VOCAB = 8  # 0 pad, 1..5 letters, 6 silence


def examples(count=140, seed=3):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(2, 6))
        tgt = []
        while len(tgt) < n:
            c = int(rng.integers(1, 6))
            if not tgt or tgt[-1] != c:
                tgt.append(c)
        frames = []
        for c in tgt:
            frames += [6] * int(rng.integers(0, 2)) + [c] * int(rng.integers(1, 4))
        out.append(Example(index=i, group=f"u{i}", fields={"frames": frames, "target": tgt}))
    return out


def encode(e):
    return {"index": e.index, "frames": e.fields["frames"], "target": e.fields["target"]}


def collate(items):
    t = max(len(i["frames"]) for i in items)
    n = max(len(i["target"]) for i in items)
    x = torch.zeros((len(items), t), dtype=torch.long)
    m = torch.zeros((len(items), t), dtype=torch.long)
    y = torch.full((len(items), n), IGNORE_INDEX, dtype=torch.long)
    for r, i in enumerate(items):
        x[r, : len(i["frames"])], m[r, : len(i["frames"])] = torch.tensor(i["frames"]), 1
        y[r, : len(i["target"])] = torch.tensor(i["target"])
    return {"frames": x, "attention_mask": m, "labels": y, "index": torch.tensor([i["index"] for i in items])}


def loss_sum(logits, b):
    logp = F.log_softmax(logits.float(), -1).transpose(0, 1)  # [T, B, C]
    keep = b["labels"] != IGNORE_INDEX
    return F.ctc_loss(
        logp,
        b["labels"].clamp(min=0),
        b["attention_mask"].sum(1),
        keep.sum(1),
        blank=0,
        reduction="sum",
        zero_infinity=True,
    )


def predict(logits, b):
    best = logits.argmax(-1)
    out = torch.full_like(b["labels"], IGNORE_INDEX)
    for r in range(best.shape[0]):
        seq, prev = [], 0
        for k in best[r, : int(b["attention_mask"][r].sum())].tolist():
            if k != prev and k != 0:
                seq.append(k)
            prev = k
        seq = seq[: out.shape[1]]
        out[r, : len(seq)] = torch.tensor(seq, dtype=out.dtype)
    return out


def make_task():
    return TaskData(
        kind="ctc",
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=loss_sum,
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=predict,
        forward=lambda model, b: model(b["frames"], b["attention_mask"]),
        class_names=["<blank>", *LETTERS],
        info={"num_classes": 6, "target_unit": "token", "pad_id": 0},
    )


class Model(nn.Module):
    def __init__(self, width=32):
        super().__init__()
        torch.manual_seed(0)
        self.embed = nn.Embedding(FRAME_VOCAB, width)
        self.rnn = nn.GRU(width, width, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * width, 6)

    def forward(self, frames, attention_mask):
        lengths = attention_mask.sum(1).cpu()
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(frames), lengths, batch_first=True, enforce_sorted=False)
        h, _ = self.rnn(packed)
        h, _ = nn.utils.rnn.pad_packed_sequence(h, batch_first=True, total_length=frames.shape[1])
        return self.head(h)
