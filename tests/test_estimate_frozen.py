"""A frozen backbone (``requires_grad=False``) is estimated, not refused; every refusal names its cause.

The stock MemTracker hooks every parameter's gradient and ``register_hook`` raises on a frozen
one; before the fix that error was reported as "avoid reading tensor values (.item())".
Gradients and optimizer state must count the trainable parameters only, to the byte.
"""

import pytest
import torch

from pilot.estimate.fake_tensor import EstimateRefused, estimate_memory
from pilot.estimate_run import compare
from pilot.models.mlp_classifier import MLPClassifier
from pilot.models.tiny_gpt import TinyGPT


class FrozenBackboneClassifier(MLPClassifier):
    """The MLP with every layer but the head frozen: a linear probe on a fixed backbone."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        for layer in list(self.net)[:-1]:
            for param in layer.parameters():
                param.requires_grad_(False)


class FrozenBodyGPT(TinyGPT):
    """TinyGPT fine-tuning only its blocks' layer norms and the head (embeddings, attention, MLPs frozen)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        for name, param in self.named_parameters():
            keep = "ln" in name or "norm" in name or name.startswith("head")
            param.requires_grad_(keep)


class FailsForAnotherReason(MLPClassifier):
    """forward raises an error that has nothing to do with reading tensor values."""

    def forward(self, inputs):
        return self.net(inputs.reshape(inputs.shape[0], 2, -1))  # wrong shape for the first Linear


def _counts(model: torch.nn.Module):
    trainable = [p for p in model.parameters() if p.requires_grad]
    return (sum(p.numel() for p in model.parameters()), sum(p.numel() for p in trainable), len(trainable))


def _model(cfg):
    from hydra.utils import instantiate

    return instantiate(cfg.model, _convert_="all")


@pytest.mark.parametrize("optim", [["optim=adamw"], ["optim=sgd", "optim.momentum=0.9"]], ids=["adamw", "sgd"])
def test_a_frozen_backbone_is_estimated_and_only_trainable_parameters_count(make_cfg, optim):
    cfg = make_cfg("+experiment=classification", f"model._target_={__name__}.FrozenBackboneClassifier", *optim)
    total, trainable, tensors = _counts(_model(cfg))
    assert 0 < trainable < total  # the head only
    estimate = estimate_memory(cfg)
    assert estimate.parameters == total
    assert estimate.state_bytes["parameters"] == 4 * total  # frozen weights are still held
    expected_state = 2 * 4 * trainable + 4 * tensors if optim == ["optim=adamw"] else 4 * trainable
    assert estimate.state_bytes["optimizer_state"] == expected_state  # moments of trainable tensors only
    assert estimate.closed_form == {**estimate.state_bytes, "gradients": 4 * trainable}
    assert estimate.trainable_parameters == trainable
    for phase in ("first_step", "steady_steps"):
        for part in estimate.phase(phase).moments.values():
            assert part["gradients"] == 4 * trainable  # no gradient for a frozen weight
    assert estimate.phase("eval_longest").breakdown["gradients"] == 0


def test_a_frozen_backbone_estimate_agrees_with_the_tracker_on_real_tensors(make_cfg):
    cfg = make_cfg("+experiment=classification", f"model._target_={__name__}.FrozenBackboneClassifier")
    estimate, measured = estimate_memory(cfg), estimate_memory(cfg, fake=False)
    ok, worst, lines = compare(estimate, measured, 0.10)
    assert ok, lines
    assert measured.state_bytes == estimate.state_bytes


def test_a_partly_frozen_language_model_is_estimated_in_closed_form(make_cfg):
    cfg = make_cfg(f"model._target_={__name__}.FrozenBodyGPT", "model.d_model=32", "model.n_layer=2", "model.n_head=2")
    total, trainable, tensors = _counts(_model(cfg))
    assert 0 < trainable < total
    estimate = estimate_memory(cfg)
    assert estimate.state_bytes["parameters"] == 4 * total
    assert estimate.state_bytes["optimizer_state"] == 2 * 4 * trainable + 4 * tensors
    steady = estimate.phase("steady_steps").moments
    assert steady["optimizer step"]["gradients"] == 4 * trainable


def test_a_refusal_names_the_real_cause_not_a_value_read(make_cfg):
    cfg = make_cfg("+experiment=classification", f"model._target_={__name__}.FailsForAnotherReason")
    with pytest.raises(EstimateRefused) as refused:
        estimate_memory(cfg)
    message = str(refused.value)
    assert ".item()" not in message and "not a value read" in message
    assert "RuntimeError" in message and "test_estimate_frozen.py" in message and "in forward" in message
