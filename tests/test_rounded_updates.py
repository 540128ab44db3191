"""Updates that round away in half-precision weights (pilot/engine/rounded_updates.py), measured at one
optimizer step: bf16 weights at lr 2e-5 keep almost none, at lr 0.1 almost all; fp32 weights are not
measured."""

from __future__ import annotations

import torch

from pilot.engine.rounded_updates import ROUNDED_AWAY_WARN, RoundedUpdates


def _one_step(dtype: torch.dtype, lr: float) -> RoundedUpdates:
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 64).to(dtype)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    rounding = RoundedUpdates(model, optimizer)
    model(torch.randn(8, 64, dtype=dtype)).float().pow(2).sum().backward()
    optimizer.step()
    optimizer.step()  # the hooks are gone after the first: only it is measured
    return rounding


def test_bf16_weights_at_a_small_lr_lose_their_updates_and_say_the_fix():
    rounding = _one_step(torch.bfloat16, 2e-5)
    assert rounding.share is not None and rounding.share > 0.9 and rounding.moved > 4000
    said = rounding.said(2e-5)
    assert said.startswith(f"{rounding.share:.0%} of the bf16 weights' updates") and "model.dtype=fp32" in said


def test_bf16_weights_at_a_large_lr_keep_their_updates_and_fp32_is_not_measured():
    rounding = _one_step(torch.bfloat16, 1e-1)
    assert rounding.share is not None and rounding.share < ROUNDED_AWAY_WARN
    assert "Fix" not in rounding.said(1e-1)
    full = _one_step(torch.float32, 2e-5)
    assert full.share is None and full.said(2e-5) == "" and not full._hooks


def test_a_subset_not_learnt_on_half_precision_weights_names_them_and_fp32_does_not():
    from pilot.engine.rounded_updates import half_weights_hint

    model = torch.nn.Linear(4, 4).to(torch.bfloat16)
    assert "trained weights are bf16" in half_weights_hint(model) and "model.dtype=fp32" in half_weights_hint(model)
    assert half_weights_hint(torch.nn.Linear(4, 4)) == ""
    frozen = torch.nn.Linear(4, 4).to(torch.bfloat16).requires_grad_(False)  # a frozen base trains nothing half
    assert half_weights_hint(frozen) == ""
