"""Updates that round away in half-precision weights (pilot/engine/rounded_updates.py), measured at one
optimizer step: bf16 weights at lr 2e-5 keep almost none, at lr 0.1 almost all; fp32 weights are not
measured."""

from __future__ import annotations

import json

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


def test_a_train_run_on_bf16_weights_records_what_its_first_update_kept(tmp_path):
    """run.json's ``rounded_updates``, as a user's run writes it: the default Llama-style model in bf16 at
    lr 2e-5 (warmup's 2e-6 at update 1) keeps almost none of its first update, said in the log too."""
    from conftest import run_pilot

    run = tmp_path / "bf16"
    done = run_pilot(run, "mode=train", "model=hf_causal_lm", "model.dtype=bf16", "optim.lr=2e-5", "budget.value=2")
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads((run / "run.json").read_text())
    rounded = record["rounded_updates"]
    assert rounded["update"] == 1 and rounded["share"] >= ROUNDED_AWAY_WARN and "model.dtype=fp32" in rounded["said"]
    assert f"update 1: {rounded['said']}" in done.stdout + done.stderr  # the warning says what the record holds
