"""Frozen tensors the loss's gradient would reach (pilot.checks.frozen_tensors), a reason of a tiny subset not
learnt: named with the fix, the tensors left frozen after the probe; not named where forward runs them without
gradient or where nothing is frozen."""

import torch

from pilot.checks.frozen_tensors import frozen_on_the_path
from tests.planted_tasks import _word_bags
from tests.planted_tasks.ok_frozen_backbone import FrozenBackbone
from tests.planted_tasks.ok_frozen_backbone import make_task as backbone_task

CPU = torch.device("cpu")


def _batch(task):
    return task.collate([task.encode(e) for e in task.splits["train"][:4]])


def test_a_frozen_embedding_on_the_path_is_named_and_stays_frozen() -> None:
    task = _word_bags.make_task()
    model = _word_bags.Model(_word_bags.random_table())  # from_pretrained: freeze=True by default
    said = frozen_on_the_path(task, model, _batch(task), CPU)
    assert "1 frozen tensor(s)" in said and "(emb.weight)" in said and "freeze=False" in said, said
    assert not model.emb.weight.requires_grad and model.emb.weight.grad is None
    assert all(p.grad is None for p in model.parameters())


def test_trainable_tables_and_backbones_without_gradient_are_not_named() -> None:
    task = _word_bags.make_task()
    assert frozen_on_the_path(task, _word_bags.Model(_word_bags.random_table(), freeze=False), _batch(task), CPU) == ""
    task = backbone_task()  # frozen under torch.no_grad(): no gradient would reach it
    assert frozen_on_the_path(task, FrozenBackbone(), _batch(task), CPU) == ""
