"""shared: toy CTC 'frames' task (letters held 2-4 frames, optional silence) and a BiGRU; options for the
letter ids, the blank id, a stride-2 downsampling front end and how input lengths are computed."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import IGNORE_INDEX, Example, TaskData

LETTERS = "abcde"
FRAME_VOCAB = 8  # 0 pad, 1..5 letters, 6 silence


def examples(count=140, seed=3):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        n = int(rng.integers(2, 6))
        tgt = []
        while len(tgt) < n:
            c = int(rng.integers(0, 5))
            if not tgt or tgt[-1] != c:
                tgt.append(c)
        frames = []
        for c in tgt:
            frames += [6] * int(rng.integers(0, 2)) * 2 + [c + 1] * int(rng.integers(2, 5))
        out.append(Example(index=i, group=f"u{i}", fields={"frames": frames, "letters": [LETTERS[c] for c in tgt]}))
    return out


def ctc_task(letter_id, blank, class_names, lengths_of, downsample=False):
    def encode(e):
        return {"index": e.index, "frames": e.fields["frames"], "target": [letter_id[c] for c in e.fields["letters"]]}

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
        logp = F.log_softmax(logits.float(), -1).transpose(0, 1)
        keep = b["labels"] != IGNORE_INDEX
        return F.ctc_loss(
            logp,
            b["labels"].clamp(min=0),
            lengths_of(logits, b),
            keep.sum(1),
            blank=blank,
            reduction="sum",
            zero_infinity=True,
        )

    def predict(logits, b):
        best = logits.argmax(-1)
        out = torch.full_like(b["labels"], IGNORE_INDEX)
        lens = lengths_of(logits, b)
        for r in range(best.shape[0]):
            seq, prev = [], blank
            for k in best[r, : int(lens[r])].tolist():
                if k != prev and k != blank:
                    seq.append(k)
                prev = k
            seq = seq[: out.shape[1]]
            out[r, : len(seq)] = torch.tensor(seq, dtype=out.dtype)
        return out

    return TaskData(
        kind="ctc",
        splits=make_splits(examples(), {"by": "group", "val_fraction": 0.25, "test_fraction": 0.0}),
        encode=encode,
        collate=collate,
        loss_sum=loss_sum,
        target_count=lambda b: (b["labels"] != IGNORE_INDEX).sum(),
        predict=predict,
        forward=lambda model, b: model(b["frames"], b["attention_mask"]),
        class_names=class_names,
        info={"num_classes": 6, "target_unit": "token", "pad_id": 0},
    )


class Model(nn.Module):
    def __init__(self, downsample=False, width=32):
        super().__init__()
        torch.manual_seed(0)
        self.downsample = downsample
        self.embed = nn.Embedding(FRAME_VOCAB, width, padding_idx=0)
        self.down = nn.Conv1d(width, width, 2, stride=2) if downsample else None
        self.rnn = nn.GRU(width, width, batch_first=True, bidirectional=True)
        self.head = nn.Linear(2 * width, 6)

    def forward(self, frames, attention_mask):
        h = self.embed(frames)
        lengths = attention_mask.sum(1)
        if self.downsample:
            h = self.down(h.transpose(1, 2)).transpose(1, 2)
            lengths = lengths // 2
        packed = nn.utils.rnn.pack_padded_sequence(h, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=h.shape[1])
        return self.head(out)
