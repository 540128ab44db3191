"""FSDP2 (``distributed=fsdp``) trains what one process trains: 2 gloo ranks x accumulation 4 ==
1 process x accumulation 8 (fp32), on variable-length sequences, with a partial last window and an
idle rank; with activation checkpointing too."""

import pytest
from test_ddp_equivalence import run
from torch.testing import assert_close


@pytest.fixture(autouse=True)
def _no_launcher_variables(monkeypatch):
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize(
    "budget, updates",
    [
        (["budget=updates", "budget.value=3"], 3),  # full updates, AdamW with warm-up and clipping
        (["budget=examples", "budget.value=11"], 1),  # partial window: shares of 6 and 5 examples
        (["budget=examples", "budget.value=1"], 1),  # one rank idles: a dummy forward with zero weight
    ],
)
def test_two_fsdp_ranks_equal_one_process(make_cfg, tmp_path, budget, updates):
    sharded = run(
        make_cfg(*budget, "distributed=fsdp", "batch.micro_batch=2", "batch.accumulation=4"),
        tmp_path / "fsdp.pt",
        updates,
        replicas=2,
    )
    single = run(
        make_cfg(*budget, "batch.micro_batch=2", "batch.accumulation=8"), tmp_path / "single.pt", updates, replicas=1
    )
    assert sharded["sharded"] and not single["sharded"]  # the ranks really ran FSDP
    assert sharded["examples_seen"] == single["examples_seen"]
    assert_close(sharded["losses"], single["losses"])
    assert_close(sharded["params"], single["params"])


def test_fsdp_with_activation_checkpointing_equals_without(make_cfg, tmp_path):
    common = ("distributed=fsdp", "budget=updates", "budget.value=2", "batch.micro_batch=2", "batch.accumulation=2")
    plain = run(make_cfg(*common), tmp_path / "plain.pt", 2, replicas=2)
    recomputed = run(make_cfg(*common, "memory=checkpointing"), tmp_path / "ckpt.pt", 2, replicas=2)
    assert_close(recomputed["losses"], plain["losses"])
    assert_close(recomputed["params"], plain["params"])
