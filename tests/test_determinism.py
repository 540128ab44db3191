"""Same seed -> the same run, bit for bit; another seed -> another data order."""

from pilot.engine.build import build_trainer
from pilot.engine.data_order import update_indices


def losses(cfg, updates=4):
    trainer = build_trainer(cfg)
    return [trainer.train_step().loss for _ in range(updates)], trainer


def test_same_seed_gives_identical_losses(make_cfg):
    first, _ = losses(make_cfg("seed=7"))
    second, _ = losses(make_cfg("seed=7"))
    assert first == second  # exact, not approximate


def test_different_seed_changes_data_order_and_losses(make_cfg):
    first, a = losses(make_cfg("seed=7"))
    second, b = losses(make_cfg("seed=8"))
    assert update_indices(a.plan, 7, 0) != update_indices(b.plan, 8, 0)
    assert first != second


def test_every_epoch_is_a_new_permutation(make_cfg):
    _, trainer = losses(make_cfg("seed=7", "budget=epochs", "budget.value=2"), updates=0)
    plan = trainer.plan
    epoch0 = [i for u in range(plan.updates_per_epoch) for i in update_indices(plan, 7, u)]
    epoch1 = [i for u in range(plan.updates_per_epoch, 2 * plan.updates_per_epoch) for i in update_indices(plan, 7, u)]
    assert sorted(epoch0) == sorted(epoch1) == list(range(plan.train_examples))
    assert epoch0 != epoch1
