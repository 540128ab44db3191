"""Mixed precision on the CPU: bf16 autocast, fp16 with a gradient scaler stepped once per update."""

import math

import pytest

from pilot.engine.build import build_trainer


def test_fp16_scaler_unscales_before_clipping_and_steps_once_per_update(make_cfg, monkeypatch):
    fp32 = build_trainer(make_cfg("batch.accumulation=4", "optim.grad_clip=0"))
    reference_norm = fp32.train_step().grad_norm
    trainer = build_trainer(make_cfg("precision=fp16", "batch.accumulation=4", "optim.grad_clip=0"))
    calls = {"step": 0, "update": 0}
    for name in calls:
        original = getattr(trainer.scaler, name)

        def counted(*args, _name=name, _original=original, **kwargs):
            calls[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(trainer.scaler, name, counted)
    record = trainer.train_step()
    assert calls == {"step": 1, "update": 1}  # not once per micro-batch
    # the norm is measured on unscaled gradients: close to fp32, not 65536 times larger
    assert record.grad_norm == pytest.approx(reference_norm, rel=0.05)
    assert record.loss_scale is not None


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_reduced_precision_trains_with_finite_values(make_cfg, precision):
    trainer = build_trainer(make_cfg(f"precision={precision}", "budget.value=6"))
    fp32 = build_trainer(make_cfg("budget.value=6"))
    records = [trainer.train_step() for _ in range(6)]
    reference = [fp32.train_step() for _ in range(6)]
    assert all(math.isfinite(r.loss) and math.isfinite(r.grad_norm) for r in records)
    # same data and init: the loss stays within a few percent of fp32
    assert records[-1].loss == pytest.approx(reference[-1].loss, rel=0.05)
