"""The task/model contract, checked first: what ``collate`` returns and what ``forward`` gives back.

Before anything is measured, one micro-batch of two training examples is collated and run through
``task.forward`` without gradients. A batch without ``index`` or ``labels``, a ``forward`` that reads
a key the batch lacks, or an output without logits is refused here with one message naming the key
and the README section ("Your own model and data"), instead of a bare ``KeyError`` in every later
step.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from pilot.checks.forward_crash import forward_crash, ids_past_an_embedding, negative_ids
from pilot.checks.inspect_examples import binary_logit
from pilot.checks.label_kinds import ordinal_head, regression
from pilot.checks.loss_calls import binary_targets_outside
from pilot.checks.output_reads import named_tensors, rebuilt
from pilot.checks.position_labels import FIX, describe, positions_past_the_sequence, run_alone
from pilot.checks.result import CheckResult
from pilot.data.task import CONTRACT, ContractError, TaskData, logits_of, move_to, require_batch_keys
from pilot.engine.optim import trained_parameters
from pilot.errors import PilotError

STEP = "contract"
MADE_UP_MOST = 4_000_000  # output values: predict is given made-up outputs only up to this size


def model_settings(cfg: DictConfig) -> dict[str, Any]:
    """The config's ``model`` node as plain values (what the user set, for a refusal to name)."""
    settings = OmegaConf.to_container(cfg.model, resolve=True) if "model" in cfg else {}
    return settings if isinstance(settings, dict) else {}


def contract_batch(task: TaskData) -> dict:
    """Two training examples (or one), collated; refuses a batch without index or labels."""
    items = task.encoded("train")[:2] or task.encoded("val")[:2]
    try:
        batch = task.collate(items)
    except (PilotError, torch.OutOfMemoryError):
        raise
    except Exception as error:  # noqa: BLE001 - the user's collate: every error is named, none is hidden
        raise ContractError(
            f"collate crashed on {len(items)} encoded training example(s): {type(error).__name__}: {error}. Fix: "
            f"collate must take a list of what encode returns and give one micro-batch of tensors ({CONTRACT})."
        ) from error
    require_batch_keys(batch)
    _refuse_nested_batch(batch)
    return batch


def _refuse_nested_batch(batch: dict) -> None:
    """A batch value that is itself a mapping of tensors (``{"user": {"ids": ...}, "item": {...}}``): the engine
    moves the batch's own tensors to the device, so those would stay on the CPU beside a model on a GPU, and the
    checks read the batch's tensors by key (the split audit found identical examples, the tiny subset no
    context, the reload check a KeyError of its control inputs, each a false result)."""
    nested = sorted(key for key, value in batch.items() if isinstance(value, Mapping))
    if nested:
        inner = batch[nested[0]]
        raise ContractError(
            f"collate returns a batch whose {', '.join(repr(k) for k in nested)} holds a mapping "
            f"({nested[0]!r}: keys {sorted(map(str, inner))[:6]}), not a tensor: the engine moves and the checks read "
            "the batch's own tensors by key, so tensors inside it would stay on the CPU and unread. Fix: one "
            f"level of keys, e.g. '{nested[0]}_{sorted(map(str, inner))[0]}', and forward reading them ({CONTRACT})."
        )


def check_contract(task: TaskData, model: torch.nn.Module, settings: Mapping[str, Any] | None = None) -> CheckResult:
    """``pass`` with what was seen, or ``ContractError`` naming what is missing; a forward that crashes is
    refused naming the model's ``settings`` (the config's ``model`` node) that hold a size the error names."""
    batch = contract_batch(task)
    parameter = next(model.parameters(), None)
    batch = move_to(batch, parameter.device) if parameter is not None else batch
    was_training = model.training
    built = {name for name, _ in model.named_parameters()}
    model.eval()
    called: dict[int, torch.nn.Module] = {}  # every module forward calls with gradients on (a module run
    # under task.forward's own torch.no_grad() is a frozen feature extractor: meant to stay as it is)
    watch = torch.nn.modules.module.register_module_forward_pre_hook(
        lambda m, _: called.update({id(m): m}) if torch.is_grad_enabled() else None
    )
    try:
        with torch.enable_grad():  # as training runs it: a module forward keeps out of gradients is seen as such
            output = task.forward(model, batch)
    except KeyError as error:
        key = error.args[0] if error.args else "?"
        raise ContractError(
            f"forward reads batch[{key!r}], which the collated batch lacks (it has {sorted(batch)}). Fix: "
            f"collate must return every key forward reads, or forward must read only those ({CONTRACT})."
        ) from error
    except (PilotError, torch.OutOfMemoryError):
        raise
    except (RuntimeError, IndexError, ValueError, TypeError, AttributeError, AssertionError) as error:
        raise (
            negative_ids(error, batch)
            or ids_past_an_embedding(error, model, batch)
            or forward_crash(error, model, settings, len(batch["index"]))
        ) from error
    finally:
        watch.remove()
        model.train(was_training)
    _refuse_parameters_born_in_forward(model, built)
    _refuse_unregistered_modules(model, list(called.values()))
    logits = logits_of(output)
    trained_parameters(model)  # refuses a model with none
    _refuse_narrow_head(task, logits, output, batch)
    _refuse_unusable_loss(task, output, batch)
    _refuse_positions_past_the_sequence(task, model)
    _refuse_predict_shape(task, output, batch)
    _refuse_predict_ignoring_output(task, output, batch)
    return CheckResult(
        STEP,
        "pass",
        f"batch holds {sorted(batch)}; forward returns {type(output).__name__} with logits of shape "
        f"{tuple(logits.shape)}",
    )


def _refuse_parameters_born_in_forward(model: torch.nn.Module, built: set[str]) -> None:
    """A parameter the first forward creates (a layer built lazily, from the input's width) is not
    in the optimizer, which is built from the model before any forward: it would never be trained,
    and, drawn after the seeded build, it differs from run to run."""
    born = [name for name, _ in model.named_parameters() if name not in built]
    if born:
        shown = ", ".join(born[:5]) + (f" (+{len(born) - 5} more)" if len(born) > 5 else "")
        raise ContractError(
            f"the model's forward created {len(born)} parameter(s) that did not exist when it was built: "
            f"{shown}. The optimizer is built from the model before the first forward, so they would never "
            "be trained (and, drawn after the seeded build, they differ from run to run). Fix: create every "
            "layer in __init__ (its input width from the task), or run one forward in build_model before "
            f"returning the model ({CONTRACT})."
        )


def _refuse_unregistered_modules(model: torch.nn.Module, called: list[torch.nn.Module]) -> None:
    """A module with parameters that forward calls but the model does not hold as a submodule (layers in a
    plain Python list or dict, a layer built inside forward): its parameters are not in
    ``model.parameters()``, so the optimizer never trains them, no checkpoint or export saves them and
    ``.to(device)`` does not move them; the pilot's checks pass on the frozen random features."""
    held = {id(m) for m in model.modules()}
    # trainable ones only: a frozen module kept out of the model on purpose (a distillation teacher in a
    # list, so that it is neither trained nor saved) does what its author meant
    stray = [m for m in called if id(m) not in held and any(p.requires_grad for p in m.parameters(recurse=False))]
    if not stray:
        return
    names = {id(sub): f"{name}" for module in stray for name, sub in module.named_modules() if name}
    shown = [repr(m).splitlines()[0] for m in stray if id(m) not in names][:4]
    count = sum(p.numel() for m in stray for p in m.parameters(recurse=False))
    raise ContractError(
        f"forward calls {len(stray)} module(s) with parameters that are not submodules of the model "
        f"({', '.join(shown)}; {count:,} parameters): the optimizer is built from model.parameters(), so they "
        "are never trained, and no checkpoint or export saves them. Fix: hold layers in nn.ModuleList or "
        "nn.ModuleDict (not a Python list or dict), and build every layer in __init__, not in forward; a module "
        "meant to stay frozen: requires_grad_(False) on it "
        f"({CONTRACT})."
    )


def _refuse_narrow_head(task: TaskData, logits: torch.Tensor, output: Any, batch: dict) -> None:
    """Classification: a head with fewer outputs than classes cannot score the labels past its width,
    so the loss fails on the first such label, in every later step. (A wider head still computes:
    inspect fails it.) Not where the loss scores the last class on this head (``label_kinds.ordinal_head``):
    an ordinal head of K-1 cumulative logits (CORAL: P(y > k)) is as wide as it must be."""
    if task.kind != "classification" or logits.dim() == 0:
        return
    classes = int(task.info.get("num_classes", len(task.names())))
    width = int(logits.shape[-1])
    if 0 < width < classes and not binary_logit(width, classes) and not ordinal_head(task, output, batch):
        raise ContractError(
            f"the model's head has {width} outputs but the task has {classes} classes (labels 0-{classes - 1}): "
            f"the loss cannot score a label >= {width} on its own (cross_entropy raises; a loss that clamps the labels "
            f"to the head gives two classes one loss). Fix: build the model with {classes} outputs (the "
            f"built-in classifier: model.num_classes={classes})."
        )


def _refuse_unusable_loss(task: TaskData, output: Any, batch: dict) -> None:
    """``loss_sum`` on the contract's batch: one number (a vector cannot be backpropagated or summed
    into the update's loss), and no crash (every step would crash the same way)."""
    labels = batch["labels"]
    try:
        with torch.no_grad():
            loss = task.loss_sum(output, batch)
    except (PilotError, torch.OutOfMemoryError):
        raise
    except Exception as error:  # noqa: BLE001 - the user's loss: every error is named, none is hidden
        hint = ""
        if torch.is_tensor(labels) and not labels.is_floating_point() and labels.dtype != torch.long:
            hint = f" batch['labels'] is {labels.dtype}: cross_entropy and nll_loss need int64 class ids. Fix: build them as torch.long."
        outside = binary_targets_outside(task, [(output, batch)])  # binary_cross_entropy refuses them, unexplained
        hint += f" {outside}." if outside else ""
        raise ContractError(
            f"loss_sum crashed on a collated batch of {len(batch['index'])} training example(s): "
            f"{type(error).__name__}: {error}.{hint} ({CONTRACT})"
        ) from error
    if not torch.is_tensor(loss) or loss.numel() != 1:
        shape = tuple(loss.shape) if torch.is_tensor(loss) else type(loss).__name__
        raise ContractError(
            f"loss_sum returned {shape}, not one number: it must return the loss summed over the batch's "
            f"targets (a scalar). Fix: reduction='sum' (not 'none'), or .sum() the per-target losses ({CONTRACT})."
        )


def _refuse_positions_past_the_sequence(task: TaskData, model: torch.nn.Module) -> None:
    """Position labels past their own sequence (``pilot.checks.position_labels``) that ``loss_sum`` cannot
    take: the first such example, alone, crashes it, and so would every step that computes the loss (the
    two examples above may hold none). A loss that takes them (clamped and ignored) is inspect's to judge."""
    items = task.encoded("train")
    try:
        found = positions_past_the_sequence(task, model, items)
    except (PilotError, torch.OutOfMemoryError):
        raise
    except Exception:  # noqa: BLE001 - a model that cannot run one example alone: not judged here (inspect says)
        return
    if found is None:
        return
    try:
        output, batch = run_alone(task, model, items[found.past[0]])
        with torch.no_grad():
            task.loss_sum(output, batch)
    except (PilotError, torch.OutOfMemoryError):
        raise
    except Exception as error:  # noqa: BLE001 - the user's loss on labels it cannot take: the cause is named
        raise ContractError(
            f"{describe(found)}. loss_sum crashed on that example alone ({type(error).__name__}: {error}), as every "
            f"step that computes the loss would. {FIX} ({CONTRACT})"
        ) from error


def _refuse_predict_shape(task: TaskData, output: Any, batch: dict) -> None:
    """Without ``correct_count``, accuracy is ``predict(output, batch) == labels``: a prediction of
    another shape fails at the first evaluation (after the whole training) or, broadcast, counts
    pairs of labels and predictions that do not belong together."""
    if task.correct_count is not None or not torch.is_tensor(batch["labels"]):
        return
    labels = batch["labels"]
    try:
        predicted = task.predict(output, batch)
    except (PilotError, torch.OutOfMemoryError):
        raise
    except Exception as error:  # noqa: BLE001
        raise ContractError(
            f"predict crashed on the contract's batch: {type(error).__name__}: {error} ({CONTRACT})"
        ) from error
    shape = tuple(predicted.shape) if torch.is_tensor(predicted) else type(predicted).__name__
    if shape != tuple(labels.shape):
        raise ContractError(
            f"predict returned {shape} for labels of shape {tuple(labels.shape)}: accuracy compares them "
            "element by element, so it needs one prediction per label, same shape. Fix: the argmax over the "
            f"class dimension of the logits (dim=-1), keeping every other dimension ({CONTRACT})."
        )
    _refuse_fractional_predictions(task, predicted, labels)
    _refuse_predict_over_another_dimension(task, output, batch)


def _refuse_fractional_predictions(task: TaskData, predicted: torch.Tensor, labels: torch.Tensor) -> None:
    """Integer labels (class ids) beside predictions with a fraction: ``predicted == labels`` is never true,
    so accuracy reads 0 whatever the model learns (``torch.max(logits, 1)[0]``, the largest score, where
    ``[1]``, its index, was meant). Not for a declared regression (counts predicted as rates)."""
    if (
        regression(task)
        or labels.is_floating_point()
        or labels.dtype == torch.bool
        or not predicted.is_floating_point()
    ):
        return
    fractional = predicted[torch.isfinite(predicted) & (predicted != predicted.round())]
    if fractional.numel():
        raise ContractError(
            f"predict returns values with a fraction ({float(fractional.flatten()[0]):.4g}, ...) where the labels are "
            "integer class ids: accuracy compares them with ==, so no prediction is ever right. torch.max(logits, "
            "dim) returns (values, indices): [0] is the largest score, [1] its class. Fix: logits.argmax(dim=-1) "
            f"({CONTRACT})"
        )


def _refuse_predict_over_another_dimension(task: TaskData, output: Any, batch: dict) -> None:
    """A predict reducing the batch dimension (``argmax(0)``) gives the labels' shape where the batch and the
    classes are as many (a micro-batch of 2, two classes), then crashes at the first evaluation of another
    batch size. Given the same output with one more class column that is never the largest, a predict over
    the classes keeps the labels' shape; one whose shape follows that column reduces another dimension."""
    labels = batch["labels"]
    if not torch.is_tensor(output) or output.dim() < 2 or output.shape[-1] < 2 or not output.is_floating_point():
        return
    if tuple(labels.shape) != tuple(output.shape[:-1]):  # classes in the last dimension, one label per row
        return
    with torch.no_grad():
        column = output.detach().new_full((*output.shape[:-1], 1), float(output.detach().min()) - 1.0)
        try:
            wider = task.predict(torch.cat([output.detach(), column], dim=-1), batch)
        except Exception:  # noqa: BLE001 - a predict written for a fixed number of classes: not judged here
            return
    if torch.is_tensor(wider) and tuple(wider.shape) != tuple(labels.shape):
        raise ContractError(
            f"predict reduces another dimension than the classes: given this output with one more class column "
            f"({tuple(output.shape)} -> {(*output.shape[:-1], output.shape[-1] + 1)}) it returned "
            f"{tuple(wider.shape)} for labels of shape {tuple(labels.shape)} (the shapes agreed only because the "
            "batch holds as many rows as there are classes: argmax(0) over the batch?); another batch size crashes "
            f"its first evaluation. Fix: the argmax over the class dimension, argmax(dim=-1) ({CONTRACT})."
        )


def _refuse_predict_ignoring_output(task: TaskData, output: Any, batch: dict) -> None:
    """Accuracy is ``predict(output, batch) == labels``: a ``predict`` that gives the same predictions for
    outputs of opposite signs and other sizes scores a constant, not the model (``sigmoid(x) > 0`` is
    true for every x). Judged where every tensor of the output is a float the model computed: one it
    returns as integers (predictions made in ``forward``) cannot be varied here."""
    if task.correct_count is not None or not torch.is_tensor(batch["labels"]):
        return
    named = {"": output} if torch.is_tensor(output) else named_tensors(output)
    held = output.values() if isinstance(output, Mapping) else output if isinstance(output, (tuple, list)) else []
    if not named or any(torch.is_tensor(v) and not v.is_floating_point() for v in held):
        return
    if sum(v.numel() for v in named.values()) > MADE_UP_MOST:  # a language model's logits: four copies would
        return  # cost gigabytes at a real vocabulary and length; its predict is the argmax the checks read
    generator = torch.Generator().manual_seed(0)
    predictions = []
    with torch.no_grad():
        for _ in range(2):
            drawn = {
                k: torch.randn(v.shape, generator=generator).to(v) * 10 * (float(v.abs().max()) + 1)
                for k, v in named.items()
            }
            for sign in (1, -1):
                varied = {k: sign * v for k, v in drawn.items()}
                try:
                    predictions.append(
                        task.predict(varied[""] if torch.is_tensor(output) else rebuilt(output, varied), batch)
                    )
                except Exception:  # noqa: BLE001 - made-up outputs may break a predict that is right on real ones
                    return
    if all(torch.is_tensor(p) and torch.equal(p, predictions[0]) for p in predictions):
        raise ContractError(
            f"predict gives the same predictions whatever the model outputs: four made-up outputs, two with every "
            f"value's sign reversed, all gave {predictions[0].flatten()[:8].tolist()}, so accuracy would score a "
            "constant, not the model. A threshold every value passes does this (sigmoid(x) > 0: a sigmoid is always "
            "above 0), so does a predict reading the batch instead of the output. Fix: predict from the output: "
            f"logit > 0 (or sigmoid > 0.5) for one logit, the argmax over the class dimension for several ({CONTRACT})."
        )
