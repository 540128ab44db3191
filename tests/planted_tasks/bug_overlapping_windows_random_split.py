"""overlapping windows split at random: next-day forecasting over the last 12 days, one window per day
(stride 1), each window its own group and no time stamp, so the split scatters them: every validation
window shares 11 of its 12 days with a training window on each side."""

import torch
import torch.nn.functional as F

from pilot.data.split import make_splits
from pilot.data.task import Example, TaskData
from tests.planted_tasks._series import GRUForecaster, L, series

EXPECTED = {"step": "split_audit", "verdict": "warn", "said": "overlap"}


def make_task():
    s = series(240)
    examples = []
    for t in range(L, len(s) - 1):
        window = ((s[t + 1 - L : t + 1] - 50.0) / 10.0).astype("float32")
        examples.append(
            Example(index=len(examples), group=f"w{t}", fields={"window": window, "y": float((s[t + 1] - 50.0) / 10.0)})
        )
    return TaskData(
        kind="regression",
        splits=make_splits(examples, {"by": "group", "val_fraction": 0.2, "test_fraction": 0.0}),
        encode=lambda e: {
            "index": e.index,
            "x": torch.from_numpy(e.fields["window"]),
            "y": torch.tensor(e.fields["y"]),
        },
        collate=lambda items: {
            "inputs": torch.stack([i["x"] for i in items]).unsqueeze(-1),
            "labels": torch.stack([i["y"] for i in items]).float(),
            "index": torch.tensor([i["index"] for i in items]),
        },
        loss_sum=lambda out, b: F.mse_loss(out.float(), b["labels"], reduction="sum"),
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out,
        forward=lambda m, b: m(b["inputs"]),
        info={"target_unit": "example"},
    )


def build_model(task):
    return GRUForecaster()
