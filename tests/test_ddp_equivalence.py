"""2 gloo replicas x micro-batch 2 x accumulation 4 == 1 process x micro-batch 2 x accumulation 8, for
DDP (each replica holds the whole model) and FSDP (``distributed=fsdp``: each rank a shard), fp32, on
variable-length sequences."""

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


BUDGETS = [  # (budget overrides, updates)
    (["budget=updates", "budget.value=3"], 3),  # full updates, AdamW with warm-up and clipping
    (["budget=examples", "budget.value=11"], 1),  # partial window: shares of 6 and 5 examples
    (["budget=examples", "budget.value=1"], 1),  # one replica idles and joins with zero weight (FSDP: a dummy forward)
]


CASES = [(*case, "ddp2") for case in BUDGETS] + [
    (*BUDGETS[0], "fsdp"),
    pytest.param(*BUDGETS[1], "fsdp", marks=pytest.mark.slow),  # the same normalisation as DDP's partial window
    (*BUDGETS[2], "fsdp"),  # FSDP's own: the idle rank's dummy forward
]


@pytest.mark.usefixtures("no_launcher_variables")
@pytest.mark.parametrize("budget, updates, strategy", CASES)
def test_two_replicas_equal_one_process(make_cfg, tmp_path, budget, updates, strategy):
    replicas = run(
        make_cfg(*budget, f"distributed={strategy}", "batch.micro_batch=2", "batch.accumulation=4"),
        tmp_path / "replicas.pt",
        updates,
        replicas=2,
    )
    single = run(
        make_cfg(*budget, "batch.micro_batch=2", "batch.accumulation=8"), tmp_path / "single.pt", updates, replicas=1
    )
    assert replicas["sharded"] == (strategy == "fsdp") and not single["sharded"]  # FSDP really sharded
    assert replicas["examples_seen"] == single["examples_seen"]
    assert_close(replicas["losses"], single["losses"])
    assert_close(replicas["params"], single["params"])


@pytest.mark.usefixtures("no_launcher_variables")
def test_fsdp_with_activation_checkpointing_equals_without(make_cfg, tmp_path):
    common = ("distributed=fsdp", "budget=updates", "budget.value=2", "batch.micro_batch=2", "batch.accumulation=2")
    plain = run(make_cfg(*common), tmp_path / "plain.pt", 2, replicas=2)
    recomputed = run(make_cfg(*common, "memory=checkpointing"), tmp_path / "ckpt.pt", 2, replicas=2)
    assert_close(recomputed["losses"], plain["losses"])
    assert_close(recomputed["params"], plain["params"])
