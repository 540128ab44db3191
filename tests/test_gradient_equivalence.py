"""An accumulated update equals the full-batch update (DESIGN.md section 4).

The loss of an update is normalised by the targets of the *whole* update, so
micro-batching, accumulation and a partial last window must not change the
gradient, even with variable-length sequences.
"""

import torch
from torch.testing import assert_close

from pilot.engine.build import build_trainer

SGD = ["optim=sgd", "optim.lr=0.5"]


def params_after_one_update(cfg):
    trainer = build_trainer(cfg)
    trainer.train_step()
    return {k: v.detach().clone() for k, v in trainer.raw_model.state_dict().items()}


def test_accumulation_equals_full_batch_on_variable_lengths(make_cfg):
    accumulated = params_after_one_update(make_cfg(*SGD, "batch.micro_batch=2", "batch.accumulation=8"))
    full = params_after_one_update(make_cfg(*SGD, "batch.micro_batch=16", "batch.accumulation=1"))
    assert_close(accumulated, full)


def test_partial_final_window_equals_full_batch(make_cfg):
    # 11 examples: micro-batches of 2,2,2,2,2,1 against one batch of 11
    budget = ["budget=examples", "budget.value=11"]
    accumulated = params_after_one_update(make_cfg(*SGD, *budget, "batch.micro_batch=2", "batch.accumulation=8"))
    full = params_after_one_update(make_cfg(*SGD, *budget, "batch.micro_batch=11", "batch.accumulation=1"))
    assert_close(accumulated, full)


def test_per_micro_batch_mean_would_differ(make_cfg):
    """The check above can fail: averaging per micro-batch gives another gradient."""
    cfg = make_cfg(*SGD, "batch.micro_batch=2", "batch.accumulation=8")
    reference = params_after_one_update(make_cfg(*SGD, "batch.micro_batch=16", "batch.accumulation=1"))
    trainer = build_trainer(cfg)
    pairs = trainer.micro_batches(0)
    for batch, _ in pairs:  # the usual mistake: mean per micro-batch, divided by accumulation
        output = trainer.task.forward(trainer.model, batch)
        loss = trainer.task.loss_sum(output, batch) / trainer.task.target_count(batch) / len(pairs)
        loss.backward()
    trainer.optimizer.step()
    naive = trainer.raw_model.state_dict()
    differs = [not torch.allclose(naive[k], reference[k], rtol=1.3e-6, atol=1e-5) for k in naive]
    assert any(differs)


def test_classification_accumulation_equals_full_batch(make_cfg):
    task = ["data=digits", "model=mlp_classifier", "budget=examples", "budget.value=13"]
    accumulated = params_after_one_update(make_cfg(*SGD, *task, "batch.micro_batch=4", "batch.accumulation=4"))
    full = params_after_one_update(make_cfg(*SGD, *task, "batch.micro_batch=13", "batch.accumulation=1"))
    assert_close(accumulated, full)


def test_left_and_right_padding_give_the_same_update(make_cfg):
    right = params_after_one_update(make_cfg(*SGD, "data.padding_side=right"))
    left = params_after_one_update(make_cfg(*SGD, "data.padding_side=left"))
    assert_close(left, right)


def test_activation_checkpointing_gives_the_same_gradients(make_cfg):
    grads = {}
    for memory in ("none", "checkpointing"):
        trainer = build_trainer(make_cfg(*SGD, f"memory={memory}"))
        assert trainer.raw_model.activation_checkpointing is (memory == "checkpointing")
        trainer.model.train()
        batch, _ = trainer.micro_batches(0)[0]
        output = trainer.task.forward(trainer.model, batch)
        trainer.task.loss_sum(output, batch).backward()
        grads[memory] = {n: p.grad.clone() for n, p in trainer.raw_model.named_parameters()}
    assert_close(grads["checkpointing"], grads["none"])
