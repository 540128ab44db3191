"""Batch arithmetic: examples per update, updates per budget, and agreement with the data stream."""

import pytest

from pilot.engine.batch_plan import BatchPlan
from pilot.engine.data_order import rank_micro_batches, update_indices


def plan(fixed="epochs", value=1, n=3200, micro=2, accum=8, replicas=1, drop_last=False):
    return BatchPlan(
        micro_batch=micro,
        accumulation=accum,
        replicas=replicas,
        train_examples=n,
        drop_last=drop_last,
        fixed=fixed,
        value=value,
    )


def test_design_brief_example():
    # 1 GPU, micro-batch 2, accumulation 8, 3,200 examples once -> 16 per update, 200 updates
    p = plan(fixed="epochs", value=1)
    assert p.examples_per_update == 16
    assert p.total_updates == 200
    assert p.examples_seen == 3200
    assert p.epochs == 1.0
    assert "2 (micro-batch) x 8 (accumulation) x 1 (replicas) = 16" in p.describe()[0]


def test_replicas_multiply_examples_per_update():
    assert plan(replicas=4).examples_per_update == 64
    assert plan(replicas=4).total_updates == 50


@pytest.mark.parametrize(
    "drop_last, updates_per_epoch, examples_per_epoch",
    [
        (False, 201, 3210),  # 200 full updates + one of 10 examples
        (True, 200, 3200),  # the 10 left over are dropped
    ],
)
def test_incomplete_last_update(drop_last, updates_per_epoch, examples_per_epoch):
    p = plan(n=3210, drop_last=drop_last)
    assert p.updates_per_epoch == updates_per_epoch
    assert p.examples_per_epoch == examples_per_epoch
    assert p.total_updates == updates_per_epoch


def test_updates_fixed_derives_examples_and_epochs():
    p = plan(fixed="updates", value=300)
    assert p.total_updates == 300
    assert p.examples_seen == 300 * 16
    assert p.epochs == 1.5


def test_epochs_fixed_changes_updates_with_the_batch():
    assert plan(fixed="epochs", value=2, micro=2).total_updates == 400
    assert plan(fixed="epochs", value=2, micro=4).total_updates == 200
    assert plan(fixed="epochs", value=2, micro=4).examples_seen == 6400


def test_examples_fixed_clips_the_last_update():
    p = plan(fixed="examples", value=100)
    assert p.total_updates == 7  # 6 x 16 + one update of 4
    assert p.examples_in_update(6) == 4
    assert p.examples_seen == 100
    dropped = plan(fixed="examples", value=100, drop_last=True)
    assert dropped.total_updates == 6 and dropped.examples_seen == 96


@pytest.mark.parametrize(
    "p",
    [
        plan(fixed="updates", value=25, n=37, micro=3, accum=2),
        plan(fixed="epochs", value=3, n=37, micro=3, accum=2, drop_last=True),
        plan(fixed="examples", value=50, n=37, micro=2, accum=3, replicas=2),
    ],
)
def test_arithmetic_matches_the_stream(p):
    """The numbers logged up front are the numbers the stream actually delivers."""
    drawn = [update_indices(p, seed=3, update=u) for u in range(p.total_updates)]
    assert sum(len(d) for d in drawn) == p.examples_seen
    for epoch_start in range(0, p.total_updates, p.updates_per_epoch):
        epoch = [i for d in drawn[epoch_start : epoch_start + p.updates_per_epoch] for i in d]
        assert len(epoch) == len(set(epoch)), "an example repeated inside one epoch"


def test_replica_shares_cover_the_update_once():
    indices = list(range(13))
    shares = [rank_micro_batches(indices, micro_batch=2, replicas=3, rank=r) for r in range(3)]
    flat = [i for share in shares for mb in share for i in mb]
    assert sorted(flat) == indices
    assert all(len(mb) <= 2 for share in shares for mb in share)
    # a replica with nothing to do still gets one (empty) micro-batch to join the all-reduce
    assert rank_micro_batches([0], micro_batch=2, replicas=2, rank=1) == [[]]


def test_a_split_smaller_than_one_update_is_recorded_as_what_the_updates_hold():
    small = BatchPlan(8, 100, 1, 573, False, "updates", 3)
    summary = small.summary()
    assert summary["examples_per_update"] == 573 and summary["declared_examples_per_update"] == 800
    assert summary["examples_seen"] == 3 * 573
    assert "the training split holds 573, so no update holds more than 573" in small.describe()[-1]
    short = BatchPlan(2, 8, 1, 573, False, "examples", 10)  # a budget of fewer examples than one update
    assert (short.summary()["examples_per_update"], short.summary()["declared_examples_per_update"]) == (10, 16)
    assert "the budget buys 10" in short.describe()[-1]
    assert "declared_examples_per_update" not in plan().summary()  # a split of many updates: the product


@pytest.mark.parametrize("examples", [1, 2, 3, 13, 15, 29, 31, 32])
@pytest.mark.parametrize("replicas", [2, 3, 4])
def test_fsdp_ranks_run_as_many_micro_batches_each_and_keep_every_example_once(examples, replicas):
    """FSDP on 2 ranks hung at an epoch's partial last update (13 examples: 4 micro-batches on rank 0, 3 on
    rank 1): every forward gathers parameters from all ranks."""
    indices = list(range(100, 100 + examples))
    shards = [rank_micro_batches(indices, 2, replicas, r, same_count=True) for r in range(replicas)]
    assert len({len(s) for s in shards}) == 1, [len(s) for s in shards]
    assert sorted(i for s in shards for batch in s for i in batch) == indices
    plain = [rank_micro_batches(indices, 2, replicas, r) for r in range(replicas)]
    assert [[b for b in s if b] for s in shards] == [[b for b in s if b] for s in plain]  # the same real batches


def test_an_update_larger_than_the_training_split_is_a_warning_in_the_log(tmp_path):
    """batch.micro_batch=100000 over 573 training examples trained 573 per update with an INFO line only: a sweep
    over batch sizes past the split compares updates that are all the same (an examination)."""
    from conftest import run_pilot

    done = run_pilot(tmp_path / "run", "mode=train", "batch.micro_batch=100000", "budget.value=1", "run.threads=1",
                     "loop.eval_every=0", "closing.control_examples=0")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    said = [line for line in (done.stdout + done.stderr).splitlines() if "no update reaches 800000" in line]
    assert said and "WARNING" in said[0], said
