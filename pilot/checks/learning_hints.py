"""Why the tiny subset was not learnt, when it was not: what one forward/backward of the trained
model on the subset shows about the model itself (``pilot.checks.tiny_subset`` adds it to its
``fail`` or ``warn``; a check that passes needs no reason).

- an output of several tensors whose one ``loss_sum`` trains and another ``predict`` reads
  (``pilot.checks.output_reads``);
- trainable tensors the loss's gradient never reaches (``grad`` stays ``None``): ``forward`` cuts
  them off (``.detach()``, ``torch.no_grad()``, a tensor rebuilt from ``.data`` or values) or
  never uses them, so they cannot learn;
- an output that is the same for every example of a batch whose inputs differ: ``forward`` does
  not read its input, so only a prior can be learnt;
- output rows that are probabilities (non-negative, each summing to 1) fed to a loss: cross-entropy
  applies its own softmax, so a softmax in ``forward`` squashes the gradient (softmax twice);
- outputs that all lie in [0, 1] (a sigmoid at the end of ``forward``) read by a loss as logits,
  which then cannot go below what [0, 1] allows (``loss_floor`` over bounded and free logits);
- an output layer (the last layer with parameters whose output has the logits' width) that is frozen
  while layers before it train: a head initialised at random and then frozen (peft without the task
  type that keeps a sequence classifier's ``score`` trainable) caps what the rest can learn;
- frozen tensors the loss's gradient would reach (``pilot.checks.frozen_tensors``): an embedding built by
  ``nn.Embedding.from_pretrained`` on a random matrix stays random (it freezes by default);
- dropout layers with p >= 0.5 (a keep probability written where torch takes the drop probability);
- float targets (a regression) at a magnitude the trained outputs are far from (raw prices, counts):
  an update moves an output by about the learning rate's scale, so they take thousands of updates;
- where every example is predicted right but the loss stays high (``learnt``): logits that barely
  differ between classes after training, which a scale on the output makes (a temperature left in
  ``forward``, a division, transformers' ``logit_scale``): the softmax stays nearly flat.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.frozen_tensors import frozen_on_the_path
from pilot.checks.label_kinds import regression
from pilot.checks.loss_floor import loss_floor
from pilot.checks.output_reads import output_hint
from pilot.checks.subset_scorer import TOLERANCE
from pilot.data.task import Batch, ContractError, TaskData, logits_of
from pilot.engine.forward import forward_loss
from pilot.models.adapter import frozen_head_hint

SHOWN = 4  # tensor names shown
FROZEN_OUTPUT = "is frozen while layers before it train"  # the frozen output layer's hint: the cause, said alone


MARGIN = 1.0  # a trained row's logits spanning less than this: its softmax stays within e (2.7x) of flat


def learning_hints(
    task: TaskData, model: torch.nn.Module, batch: Batch, device: torch.device, learnt: bool = False
) -> str:
    """The findings above, each as a sentence with its fix ("" when there is none); ``learnt``: every
    example of the subset is predicted right (the margin finding applies)."""
    model.train()
    model.zero_grad(set_to_none=True)
    called: list[tuple[torch.nn.Module, Any]] = []  # modules with parameters, in the order forward ran them
    watch = torch.nn.modules.module.register_module_forward_hook(
        lambda m, _, out: called.append((m, out)) if next(m.parameters(recurse=False), None) is not None else None
    )
    try:
        try:
            batch, output, loss_sum = forward_loss(task, model, batch, device)
        finally:
            watch.remove()
        if torch.is_tensor(loss_sum) and loss_sum.requires_grad:
            loss_sum.backward()
        found = [output_hint(task, output, batch), _unreached(model), _same_for_every_example(output, batch)]
        found += [_frozen_output_layer(model, output, called)]
        found += [_probabilities(output)]
        found += [_bounded(task, output, batch)] if not any(found) else []
        found += [_held_above_zero(task, output, batch)] if not any(found) else []
        found += [_target_scale(output, batch)] if not any(found) else []
        found += [_heavy_dropout(model)] if not any(found) else []
        found += [_small_margins(output)] if learnt and not any(found) else []
        found += [frozen_on_the_path(task, model, batch, device)] if FROZEN_OUTPUT not in "".join(found) else []
    except Exception:  # noqa: BLE001 - a hint is a courtesy: the check's own verdict already stands
        return ""
    finally:
        model.zero_grad(set_to_none=True)
    return "".join(f" {text}" for text in found if text)


def weights_fingerprint(model: torch.nn.Module) -> list[tuple[float, float]]:
    """Per trainable tensor, its sum and the sum of every 7th element, accumulated in float64 (no copy of
    the tensor): an update that moves weights moves them (equal before and after training means no step
    changed anything)."""
    try:
        with torch.no_grad():
            return [
                (float(p.sum(dtype=torch.float64)), float(p.flatten()[::7].sum(dtype=torch.float64)))
                for p in model.parameters()
                if p.requires_grad
            ]
    except Exception:  # noqa: BLE001 - a tensor subclass without these reductions: no finding, never a crash
        return []


def untrained_tensors(before: list[tuple[float, float]], model: torch.nn.Module, unreached: set[str]) -> str:
    """The trainable tensors a training that moved others left exactly as built and that autograd never reaches
    (``unreached``: no gradient at all after a backward of the loss, not a gradient of zeros — a bias that
    cancels in a difference of two encodings gets one), said with their names; "" when there are none. They
    are cut off by no_grad or .detach(), or never used: a subset learnt without them leaves them as built."""
    after = weights_fingerprint(model)
    names = [name for name, p in model.named_parameters() if p.requires_grad]
    if not before or len(after) != len(before) or len(names) != len(before):
        return ""
    still = [name for name, b, a in zip(names, before, after, strict=True) if a == b and name in unreached]
    if not still or len(still) == len(names):
        return ""
    return (
        f"; but {len(still)} of {len(names)} trainable tensors never changed ({_listed(still)}): no gradient reaches them "
        "(forward cuts them off with no_grad or .detach(), or never uses them), so they stay as built. Fix: let "
        "the loss depend on them, or freeze them (requires_grad=False) if they are not meant to train"
    )


def unreached_tensors(task: Any, model: torch.nn.Module, batch: Any) -> set[str]:
    """The trainable tensors that get no gradient at all (None, not zeros) from one backward of ``loss_sum``
    on ``batch`` (on the model's device); none said when the probe cannot run. Gradients are cleared after."""
    model.zero_grad(set_to_none=True)
    try:
        task.loss_sum(task.forward(model, batch), batch).backward()
    except Exception:  # noqa: BLE001 - a probe, never a claim: nothing is said
        return set()
    finally:
        unreached = {name for name, p in model.named_parameters() if p.requires_grad and p.grad is None}
        model.zero_grad(set_to_none=True)
    return unreached


def unmoved_hint(before: list[tuple[float, float]], model: torch.nn.Module, lr: float, updates: int) -> str:
    """Why nothing was learnt when training changed no weight at all; "" when some weight moved."""
    if not before or weights_fingerprint(model) != before:
        return ""
    if lr == 0:
        return (
            f" No trainable weight changed in {updates} updates: optim.lr=0 scales every step to nothing. "
            "Fix: a positive optim.lr (e.g. 1e-3 for AdamW)."
        )
    return (
        f" No trainable weight changed in {updates} updates (optim.lr={lr:g}): every gradient reaching them is "
        "zero, or the optimizer steps tensors the model does not use. Fix: make loss_sum depend on the "
        "trainable weights the forward uses."
    )


def _listed(names: list[str]) -> str:
    """The first ``SHOWN`` names, and how many more."""
    return ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _unreached(model: torch.nn.Module) -> str:
    trainable = [(name, p) for name, p in model.named_parameters() if p.requires_grad]
    cut = [name for name, p in trainable if p.grad is None]
    if not cut:
        return ""
    return (
        f"{len(cut)} of {len(trainable)} trainable tensors get no gradient from the loss ({_listed(cut)}): forward "
        "cuts them off (.detach(), torch.no_grad(), a tensor rebuilt from .data or .item()) or never uses "
        "them, so they cannot learn. Fix: let the output depend on them through autograd."
    )


def _frozen_output_layer(model: torch.nn.Module, output: Any, called: list[tuple[torch.nn.Module, Any]]) -> str:
    """The last layer with parameters forward ran whose output has the logits' width: frozen while other
    tensors train, it stays as built (random, for a head added on a pretrained body)."""
    logits = logits_of(output)
    width = int(logits.shape[-1]) if torch.is_tensor(logits) and logits.dim() else None
    layer = next(  # a leaf layer (hooks fire as a module finishes: the model itself, holding a frozen tensor, last)
        (
            m
            for m, out in reversed(called)
            if m is not model
            and next(m.children(), None) is None
            and torch.is_tensor(out)
            and out.dim()
            and int(out.shape[-1]) == width
        ),
        None,
    )
    if layer is None or any(p.requires_grad for p in layer.parameters(recurse=False)) or frozen_head_hint(model):
        return ""  # trained, or an adapter's frozen language-model head (tiny_subset says that one itself)
    if not any(p.requires_grad for p in model.parameters()):
        return ""
    name = next((n for n, m in model.named_modules() if m is layer), "") or type(layer).__name__
    own = name.rsplit(".", 1)[-1]  # the name peft matches: `classifier` of base_model.model.classifier
    return (
        f"The output layer `{name}` ({type(layer).__name__}, {width} outputs) {FROZEN_OUTPUT}: "
        "its weights stay as built, so when it was initialised at random (a head added on a pretrained body, as "
        "AutoModelForSequenceClassification's) the rest learns towards fixed random outputs. Fix: train it: "
        f"adapter.modules_to_save=[{own}] (where your own code applies peft: modules_to_save=['{own}'], or "
        "LoraConfig(task_type='SEQ_CLS'))."
    )


def _main_output(output: Any) -> torch.Tensor | None:
    """The output's logits (``logits_of``), or None where it has none."""
    try:
        return logits_of(output)
    except ContractError:  # an output without logits: nothing to say about it
        return None


def _inputs_differ(batch: Batch, rows: int) -> bool:
    for key, value in batch.items():
        if key in ("labels", "index") or not torch.is_tensor(value) or value.dim() == 0 or value.shape[0] != rows:
            continue
        if any(not torch.equal(value[0], value[row]) for row in range(1, rows)):
            return True
    return False


def _same_for_every_example(output: Any, batch: Batch) -> str:
    out = _main_output(output)
    if out is None or out.dim() < 2 or out.shape[0] < 2 or not _inputs_differ(batch, out.shape[0]):
        return ""
    out = out.detach()
    if any(not torch.equal(out[0], out[row]) for row in range(1, out.shape[0])):
        return ""
    return (
        f"The model's output is the same for all {out.shape[0]} examples of a batch whose inputs differ: "
        "forward does not read its input (it returns a parameter or a constant), so only the label prior "
        "can be learnt. Fix: return what forward computes from its inputs."
    )


def _probabilities(output: Any) -> str:
    out = _main_output(output)
    if out is None or not out.is_floating_point() or out.dim() < 2 or out.shape[-1] < 2:
        return ""
    out = out.detach().float()
    if bool((out < 0).any()) or not torch.allclose(out.sum(-1), torch.ones(()), atol=1e-3):
        return ""
    return (
        "The model's output rows are probabilities (non-negative, each summing to 1): a loss such as "
        "cross_entropy applies its own softmax, so a softmax in forward squashes the gradient (softmax twice). "
        "Fix: return logits from forward and apply softmax only where probabilities are read (predict)."
    )


BOUND_COST = 0.1  # nats per target that outputs held in [0, 1] keep the loss above its floor


def _bounded(task: TaskData, output: Any, batch: Batch) -> str:
    out = _main_output(output)
    if out is None or not out.is_floating_point() or out.numel() < 2:
        return ""
    low, high = float(out.detach().min()), float(out.detach().max())
    if low < 0 or high > 1 or low == high:
        return ""
    free, bounded = loss_floor(task, [(output, batch)]), loss_floor(task, [(output, batch)], bounded=True)
    if free is None or bounded is None or bounded - free < BOUND_COST:
        return ""
    labels = batch.get("labels")
    if regression(task, [batch]) and torch.is_tensor(labels) and labels.is_floating_point() and labels.numel():
        lowest, highest = float(labels.min()), float(labels.max())
        return (
            f"Every output of the model lies in [0, 1] ({low:.3g} to {high:.3g}) while the targets run from "
            f"{lowest:.3g} to {highest:.3g}: held in [0, 1] the outputs bring the loss no lower than {bounded:.3g} "
            f"per target, free outputs to {free:.3g}. A sigmoid at the end of forward bounds a regression's "
            "predictions. Fix: drop the sigmoid, or scale the targets into [0, 1] (training's minimum and maximum)."
        )
    return (
        f"Every output of the model lies in [0, 1] ({low:.3g} to {high:.3g}), and loss_sum reads them as "
        f"logits: held in [0, 1] they bring it no lower than {bounded:.3g} per target, free logits to "
        f"{free:.3g}. A sigmoid (or softmax) at the end of forward feeds probabilities to a loss that applies "
        "its own (binary_cross_entropy_with_logits, cross_entropy). Fix: return logits from forward and apply "
        "the sigmoid only where probabilities are read (predict)."
    )


def _held_above_zero(task: TaskData, output: Any, batch: Batch) -> str:
    """A regression whose outputs are all >= 0 (a ReLU, softplus, exp or abs ends forward) while some of
    its targets are below 0: those it can never predict."""
    out, labels = _main_output(output), batch.get("labels")
    if out is None or not out.is_floating_point() or out.numel() < 2 or float(out.detach().min()) < 0:
        return ""
    if not (regression(task, [batch]) and torch.is_tensor(labels) and labels.is_floating_point()):
        return ""
    # out of reach: a target further below 0 than the tiny subset's tolerance for a recovered prediction
    below = labels < -TOLERANCE * float(labels.float().pow(2).mean().sqrt())
    if not bool(below.any()):
        return ""
    free, bounded = loss_floor(task, [(output, batch)]), loss_floor(task, [(output, batch)], bounded="nonnegative")
    if free is None or bounded is None or bounded <= free:  # the loss does not read them as predictions
        return ""
    kind = "A ReLU" if bool((out.detach() == 0).any()) else "A ReLU, softplus, exp or abs"
    return (
        f"Every output of the model is 0 or above ({float(out.detach().min()):.3g} to {float(out.detach().max()):.3g}) "
        "while "
        f"{int(below.sum())} of {labels.numel()} targets lie below 0 (down to {float(labels.min()):.3g}), beyond "
        f"reach: held at 0 or above, the outputs bring the loss no lower than {bounded:.3g} per target, free "
        f"outputs to {free:.3g}. "
        f"{kind} at the end of forward bounds a regression's predictions from below. Fix: end forward with the "
        "linear layer (no activation after it), or shift the targets to be non-negative."
    )


HEAVY_DROPOUT = 0.5  # a dropout probability at or above this zeroes most of what passes through


def _heavy_dropout(model: torch.nn.Module) -> str:
    """Dropout layers that drop most of their input at every training update (``p=0.9`` where a keep
    probability was meant): the subset's examples look different at every update."""
    heavy = [
        (name or type(model).__name__, float(module.p))
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.modules.dropout._DropoutNd) and float(module.p) >= HEAVY_DROPOUT
    ]
    if not heavy:
        return ""
    shown = ", ".join(f"{name} (p={p:g})" for name, p in heavy[:SHOWN])
    return (
        f"Dropout drops most of its input at every training update: {shown}{' ...' if len(heavy) > SHOWN else ''}. "
        f"With p={heavy[0][1]:g}, {heavy[0][1]:.0%} of the activations are zeroed each time (p is the probability of "
        "dropping, not of keeping). Fix: p around 0.1 (torch.nn.Dropout(p) drops with probability p)."
    )


SCALE_GAP = 10.0  # float targets this many times the trained outputs (and above this magnitude): out of reach


def _target_scale(output: Any, batch: Batch) -> str:
    """Float targets far larger than what the trained model outputs: raw prices, counts or units that an
    update, moving an output by about the learning rate's scale, needs thousands of steps to reach."""
    out, labels = _main_output(output), batch.get("labels")
    if out is None or not torch.is_tensor(labels) or not labels.is_floating_point() or out.numel() != labels.numel():
        return ""
    targets = float(labels.detach().double().square().mean().sqrt())
    outputs = float(out.detach().double().square().mean().sqrt())
    if targets < SCALE_GAP or targets < SCALE_GAP * max(outputs, 1e-12):
        return ""
    return (
        f"The float targets' typical magnitude (root mean square {targets:.3g}) is {targets / max(outputs, 1e-12):.3g}x "
        f"the trained model's outputs ({outputs:.3g}): each update moves an output by about the learning rate's "
        "scale, so targets at their raw scale (prices, counts, units) take thousands of updates to reach. Fix: "
        "standardize the targets (subtract their mean, divide by their standard deviation) and undo it where "
        "predictions are read, or start the output layer's bias at the targets' mean."
    )


def _small_margins(output: Any) -> str:
    out = _main_output(output)
    if out is None or not out.is_floating_point() or out.dim() < 2 or out.shape[-1] < 2:
        return ""
    spans = out.detach().float().flatten(0, -2)
    span = float((spans.max(-1).values - spans.min(-1).values).median())
    if span >= MARGIN:
        return ""
    return (
        f"Every example is predicted right, yet the logits barely differ between classes: a row spans {span:.3g} "
        "(median), so the softmax stays nearly flat and the loss high. A scale on the output makes that (a "
        "temperature left in forward, a division of the logits, a logit_scale below 1); each gradient is scaled "
        "down with it. Fix: return the unscaled logits from forward (or a learning rate that makes up for it)."
    )


def warmup_hint(warmup_updates: int, updates_done: int, lr: float) -> str:
    """A warm-up longer than the updates the subset ran: the learning rate never reached optim.lr."""
    if warmup_updates <= updates_done or updates_done <= 0 or lr <= 0:
        return ""
    return (
        f" optim.warmup_updates={warmup_updates} is longer than the {updates_done} updates the subset ran: its "
        f"learning rate reached {updates_done / warmup_updates:.0%} of optim.lr={lr:g} (the run's own warm-up ends "
        "where its budget says). Fix: a warm-up of a small share of the run's updates (optim.warmup_updates)"
    )
