"""What reaches a torch loss (pilot.checks.loss_calls): binary cross-entropy targets outside [0, 1] that the
loss counts, and which loss call turned finite inputs into a NaN."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from pilot.checks.loss_calls import binary_targets_outside, loss_calls, non_finite_cause
from pilot.data.task import TaskData

TARGETS = torch.tensor([[1.0, 0.0, 2.0], [0.0, 1.0, 0.0]])  # one tag counted twice
LOGITS = torch.zeros(2, 3)


def _task(loss_sum) -> TaskData:
    return TaskData(
        kind="multilabel",
        splits={"train": []},
        encode=lambda e: e,
        collate=lambda items: items,
        loss_sum=loss_sum,
        target_count=lambda b: torch.tensor(b["labels"].numel()),
        predict=lambda out, b: out > 0,
        forward=lambda m, b: m(b),
    )


def _said(loss_sum, labels=TARGETS) -> str:
    return binary_targets_outside(_task(loss_sum), [(LOGITS, {"labels": labels, "index": torch.arange(2)})])


def test_every_binary_cross_entropy_form_is_read() -> None:
    forms = {
        "F.binary_cross_entropy_with_logits": lambda o, b: F.binary_cross_entropy_with_logits(o, b["labels"]),
        "nn.BCEWithLogitsLoss": lambda o, b: nn.BCEWithLogitsLoss(reduction="sum")(o, b["labels"]),
        "torch.binary_cross_entropy_with_logits": lambda o, b: torch.binary_cross_entropy_with_logits(o, b["labels"]),
        "F.binary_cross_entropy (raises)": lambda o, b: F.binary_cross_entropy(torch.sigmoid(o), target=b["labels"]),
    }
    for form, loss_sum in forms.items():
        said = _said(loss_sum)
        assert "1 target(s) outside [0, 1]" in said and "[2.0]" in said and "set(tags)" in said, form


def test_soft_targets_and_masked_values_pass() -> None:
    soft = torch.tensor([[0.95, 0.05, 0.3], [0.05, 0.95, 0.7]])
    assert _said(lambda o, b: F.binary_cross_entropy_with_logits(o, b["labels"], reduction="sum"), soft) == ""
    padded = torch.tensor([[1.0, 0.0, -100.0], [0.0, 1.0, 0.0]])  # -100: not a target, masked out of the sum

    def masked(o, b):
        kept = b["labels"] != -100
        return (F.binary_cross_entropy_with_logits(o, b["labels"], reduction="none") * kept).sum()

    assert _said(masked, padded) == ""
    weighted = lambda o, b: F.binary_cross_entropy_with_logits(o, b["labels"], weight=(b["labels"] != -100).float())  # noqa: E731
    assert _said(weighted, padded) == ""
    unmasked = lambda o, b: F.binary_cross_entropy_with_logits(o, b["labels"], reduction="sum")  # noqa: E731
    assert "-1/+1" in _said(unmasked, padded * 0.01)  # -1 reaches the loss: negative targets named


def test_the_loss_call_that_made_a_nan_is_named() -> None:
    rates = torch.tensor([[-0.5], [0.2]])
    batch = {"labels": torch.tensor([3.0, 1.0]), "index": torch.arange(2)}
    poisson = _task(lambda o, b: F.poisson_nll_loss(o.squeeze(-1), b["labels"], log_input=False, reduction="sum"))
    said = non_finite_cause(poisson, rates, batch)
    assert "poisson_nll_loss(log_input=False" in said and "1 of 2 inputs are negative" in said
    assert "log_input=True" in said
    kl = _task(lambda o, b: F.kl_div(o, b["labels"], reduction="sum"))
    assert "1 target(s) are negative" in non_finite_cause(
        kl, torch.zeros(2), {**batch, "labels": torch.tensor([-0.5, 1.5])}
    )
    log_of_zero = _task(lambda o, b: F.nll_loss(torch.log(o * 0), b["labels"].long(), reduction="sum"))
    assert "not finite before the loss" in non_finite_cause(
        log_of_zero, torch.ones(2, 4), {**batch, "labels": torch.tensor([1, 2])}
    )
    fine = _task(lambda o, b: F.poisson_nll_loss(o.squeeze(-1), b["labels"], reduction="sum"))
    assert non_finite_cause(fine, rates, batch) == ""
    (call,) = loss_calls(fine, rates, batch)
    assert call.said() == "poisson_nll_loss(reduction='sum')" and call.counted is None  # not measured: no backward
    (call,) = loss_calls(fine, rates, batch, measured=("poisson_nll_loss",))
    assert call.counted.tolist() == [True, True]  # the squeezed rates poisson_nll_loss was given
