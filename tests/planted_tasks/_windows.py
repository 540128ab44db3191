"""shared: a regression task over windows [B, L, C] (or [B, L]) from any examples, and a GRU over them."""

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from pilot.data.split import make_splits
from pilot.data.task import TaskData


def window_regression(examples, by="group", val=0.2, splits=None):
    return TaskData(
        kind="regression",
        splits=splits
        if splits is not None
        else make_splits(examples, {"by": by, "val_fraction": val, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "x": torch.as_tensor(np.asarray(e.fields["window"], dtype="float32")),
            "y": torch.tensor(float(e.fields["y"])),
        },
        collate=lambda items: {
            "inputs": (lambda x: x.unsqueeze(-1) if x.dim() == 2 else x)(torch.stack([i["x"] for i in items])),
            "labels": torch.stack([i["y"] for i in items]).float(),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda out, b: F.mse_loss(out.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out,
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "example"},
    )


class GRU(nn.Module):
    def __init__(self, channels=1):
        super().__init__()
        torch.manual_seed(0)
        self.gru = nn.GRU(channels, 16, batch_first=True)
        self.head = nn.Linear(16, 1)

    def forward(self, x):
        h, _ = self.gru(x)
        return self.head(h[:, -1]).squeeze(-1)
