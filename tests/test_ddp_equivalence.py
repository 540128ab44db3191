"""2 gloo replicas x micro-batch 2 x accumulation 4 == 1 process x micro-batch 2 x accumulation 8."""

import pytest
import torch
from _ddp_helpers import train_and_save
from torch.testing import assert_close

from pilot.engine.distributed import spawn


def run(cfg, path, updates, replicas):
    if replicas > 1:
        spawn(train_and_save, (cfg, str(path), updates), replicas)
    else:
        train_and_save(cfg, str(path), updates)
    return torch.load(path, weights_only=True)


@pytest.mark.parametrize(
    "budget, updates",
    [
        (["budget=updates", "budget.value=3"], 3),  # full updates, AdamW with warm-up and clipping
        (["budget=examples", "budget.value=11"], 1),  # partial window: shares of 6 and 5 examples
        (["budget=examples", "budget.value=1"], 1),  # one replica idles and joins with zero weight
    ],
)
def test_two_replicas_equal_one_process(make_cfg, tmp_path, monkeypatch, budget, updates):
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)
    ddp = run(
        make_cfg(*budget, "distributed=ddp2", "batch.micro_batch=2", "batch.accumulation=4"),
        tmp_path / "ddp.pt",
        updates,
        replicas=2,
    )
    single = run(
        make_cfg(*budget, "batch.micro_batch=2", "batch.accumulation=8"), tmp_path / "single.pt", updates, replicas=1
    )
    assert ddp["examples_seen"] == single["examples_seen"]
    assert_close(ddp["losses"], single["losses"])
    assert_close(ddp["params"], single["params"])
