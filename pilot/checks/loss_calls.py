"""What reaches the loss: the torch loss functions ``loss_sum`` calls, each with the tensors it is given.

The other checks read ``loss_sum`` as a black box (its value, its gradient on the output). Some mistakes are
only visible one level down, in the arguments a torch loss receives: a binary cross-entropy given targets
outside [0, 1] (a multi-hot row summed from one-hots, where a tag listed twice becomes 2) computes without a
word (``binary_cross_entropy_with_logits`` checks no range) and has no floor there; a loss that returns NaN
from finite inputs (``poisson_nll_loss(log_input=False)`` reading a raw output as a rate, its log taken of a
negative number) is said to be NaN, not which function made it. ``loss_calls`` runs ``loss_sum`` once under a
``TorchFunctionMode`` that records every call of a torch loss function (``torch.nn.functional``'s, the
``nn.*Loss`` modules, which call them, and ``torch.*``'s own), its input, target, keyword options and result.
Each call's input is given to it as a leaf: the gradient of ``loss_sum`` on it says which of its elements
reach the loss (a target masked out afterwards, ``reduction='none'`` then ``* mask``, or ``weight=0``, is not
counted).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from pilot.data.task import Batch, TaskData

LOSS_NAMES = frozenset(
    name
    for name in dir(torch.nn.functional)
    if name.endswith("_loss")
    or name in ("binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "kl_div")
)
BINARY = ("binary_cross_entropy", "binary_cross_entropy_with_logits")  # their target: a probability, in [0, 1]
SLACK = 1e-6  # a target this far past 0 or 1 is float arithmetic (smoothing), not another value


@dataclass
class LossCall:
    """One call of a torch loss function: its name, tensors (detached), keyword options and result."""

    name: str
    input: torch.Tensor | None
    target: torch.Tensor | None
    options: dict[str, Any]
    counted: torch.Tensor | None = None  # input elements whose loss reaches loss_sum; None: not measured
    result: torch.Tensor | None = None  # None: the call raised

    def said(self) -> str:
        """``poisson_nll_loss(log_input=False)``: the name and the options that are not the defaults."""
        shown = ", ".join(f"{key}={value!r}" for key, value in self.options.items())
        return f"{self.name}({shown})"


class _Recorder(TorchFunctionMode):
    def __init__(self, measured: tuple[str, ...]) -> None:
        super().__init__()
        self.measured = measured  # the loss functions whose input is given as a leaf
        self.calls: list[tuple[LossCall, torch.Tensor | None]] = []  # (call, the leaf given as its input)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        if name not in LOSS_NAMES:
            return func(*args, **kwargs)
        given = _arguments(func, args, kwargs)
        first = given.get("input")
        leaf = first.detach().requires_grad_(True) if _floating(first) and name in self.measured else None
        target = given.get("target")
        call = LossCall(
            name,
            first.detach() if torch.is_tensor(first) else None,
            target.detach() if torch.is_tensor(target) else None,
            _options(func, given),
        )
        self.calls.append((call, leaf))
        if leaf is not None:
            args, kwargs = ((leaf, *args[1:]), kwargs) if args else (args, {**kwargs, "input": leaf})
        result = func(*args, **kwargs)
        call.result = result.detach() if torch.is_tensor(result) else None
        return result


def _floating(value: Any) -> bool:
    return torch.is_tensor(value) and value.is_floating_point()


def _arguments(func: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The call's arguments by name (``input``, ``target``, options); a torch builtin without a signature:
    the first two positional ones as input and target."""
    try:
        return dict(inspect.signature(func).bind(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        named = dict(zip(("input", "target"), args))
        return {**named, **kwargs}


def _options(func: Any, given: dict[str, Any]) -> dict[str, Any]:
    """The options given that differ from the function's defaults (not tensors)."""
    try:
        defaults = {k: p.default for k, p in inspect.signature(func).parameters.items()}
    except (TypeError, ValueError):
        defaults = {}
    return {
        key: value
        for key, value in given.items()
        if key not in ("input", "target")
        and not torch.is_tensor(value)
        and _differs(value, defaults.get(key, object()))
    }


def _differs(value: Any, default: Any) -> bool:
    """Whether an option is not its default (an array, whose comparison has no single truth value: it is)."""
    try:
        return bool(value != default)
    except (TypeError, ValueError, RuntimeError):
        return True


def loss_calls(task: TaskData, output: Any, batch: Batch, measured: tuple[str, ...] = ()) -> list[LossCall]:
    """The torch loss calls of one ``loss_sum(output, batch)``, the input elements counted measured for the
    functions named in ``measured`` (one backward); the calls up to a crash where ``loss_sum`` raises (the
    one that raised has no result)."""
    recorder = _Recorder(measured)
    loss = None
    try:
        with torch.enable_grad() if measured else torch.no_grad(), recorder:
            loss = task.loss_sum(output, batch)
    except Exception:  # noqa: BLE001 - the user's loss: the calls before the crash are what it received
        pass
    leaves = [(call, leaf) for call, leaf in recorder.calls if leaf is not None]
    if torch.is_tensor(loss) and loss.requires_grad and leaves:
        try:
            grads = torch.autograd.grad(loss.float().sum(), [leaf for _, leaf in leaves], allow_unused=True)
        except RuntimeError:  # a graph that cannot be differentiated: the elements counted stay unmeasured
            grads = [None] * len(leaves)
            leaves = []
        for (call, leaf), grad in zip(leaves, grads):
            call.counted = torch.zeros_like(leaf, dtype=torch.bool) if grad is None else grad != 0
    return [call for call, _ in recorder.calls]


# ----------------------------------------------------------------------------- binary targets outside [0, 1]
def binary_targets_outside(task: TaskData, outputs: list[tuple[Any, Batch]]) -> str:
    """A binary cross-entropy's targets outside [0, 1] that reach the loss, said with how many, their values,
    the likely cause and the fix; "" when every such target is in range (soft targets in [0, 1] included)."""
    name, outside, total, rows, values = "", 0, 0, 0, set()
    for output, batch in outputs:
        for call in loss_calls(task, output, batch, measured=BINARY):
            target = call.target
            if call.name not in BINARY or not _floating(target) or target.numel() == 0:
                continue
            counted = call.counted if call.counted is not None and call.counted.shape == target.shape else None
            bad = (target < -SLACK) | (target > 1 + SLACK)
            bad = bad & counted if counted is not None else bad
            total += int(counted.sum()) if counted is not None else target.numel()
            if bool(bad.any()):
                name = name or call.said()
                outside += int(bad.sum())
                rows += int(bad.reshape(len(bad), -1).any(-1).sum()) if bad.dim() else 1
                values |= {round(float(v), 4) for v in torch.unique(target[bad])[:6]}
    if not outside:
        return ""
    return (
        f"{name} receives {outside} target(s) outside [0, 1] (of the {total} it counts, in {rows} row(s); values "
        f"{sorted(values)}): binary cross-entropy takes the probability of the positive class as its target, and "
        "with a target above 1 (or below 0) its loss has no floor: it falls without end as the logit grows (or "
        "shrinks), so training pushes those logits for ever instead of towards the label. " + _outside_cause(values)
    )


def _outside_cause(values: set[float]) -> str:
    if values and all(v > 1 and float(v).is_integer() for v in values):
        return (
            "Whole numbers above 1 are counts: a multi-hot row built by summing one-hots (or += 1) over a tag "
            "list in which a tag appears twice. Fix: set each tag's entry to 1 (.clamp(max=1), or build the row "
            "from set(tags))"
        )
    if values and all(v < 0 for v in values):
        return "Negative targets: -1/+1 labels (a margin loss's). Fix: (labels + 1) / 2, targets of 0 and 1"
    return "Fix: targets in [0, 1] (0/1 labels, or probabilities: smoothed labels, a teacher's sigmoid)"


# ----------------------------------------------------------------------------- a non-finite loss: which call
def labels_not_finite(labels: Any) -> str:
    """Float labels holding inf or NaN, said with how they arise ("" when every label is finite)."""
    if not torch.is_tensor(labels) or not labels.is_floating_point() or bool(torch.isfinite(labels).all()):
        return ""
    infinite, missing = int(torch.isinf(labels).sum()), int(torch.isnan(labels).sum())
    return (
        f"the labels are not finite: {infinite} inf and {missing} NaN of the batch's {labels.numel()} (a value cast "
        "to float16 past 65504, or to bfloat16 past 3.4e38, becomes inf; a missing value read as NaN). Fix: keep "
        "the labels in float32 and scaled, and drop or fill the examples whose value is missing"
    )


def non_finite_cause(task: TaskData, output: Any, batch: Batch) -> str:
    """Why ``loss_sum`` is not finite, where it can be told: labels that are not, or the first torch loss
    call that returned inf or NaN, named with what it received; "" when neither tells."""
    said = labels_not_finite(batch.get("labels"))
    if said:
        return said
    for call in loss_calls(task, output, batch):
        if call.result is None or bool(torch.isfinite(call.result).all()):
            continue
        given = [t for t in (call.input, call.target) if _floating(t)]
        broken = sum(int((~torch.isfinite(t)).sum()) for t in given)
        if broken:
            return (
                f"{call.said()} returned {_kind(call.result)} because what it was given already holds {broken} "
                "value(s) that are not finite: the model's output, or what loss_sum made of it (a log of 0, a mask "
                "filled with -inf over a whole row), is not finite before the loss"
            )
        return _finite_in_not_out(call)
    return ""


def _kind(result: torch.Tensor) -> str:
    return "NaN" if bool(torch.isnan(result).any()) else "inf"


def _range(tensor: torch.Tensor | None) -> str:
    if not _floating(tensor) or tensor.numel() == 0:
        return "none"
    return f"{float(tensor.min()):.3g} to {float(tensor.max()):.3g}"


def _finite_in_not_out(call: LossCall) -> str:
    """A loss that returned inf or NaN from finite inputs: values outside the domain it takes."""
    head = (
        f"{call.said()} returned {_kind(call.result)} from finite inputs (input {_range(call.input)}, target "
        f"{_range(call.target)}): it was given values outside the domain it takes"
    )
    inputs = call.input if _floating(call.input) else None
    if call.name == "poisson_nll_loss" and call.options.get("log_input") is False and inputs is not None:
        negative = int((inputs < 0).sum())
        return (
            f"{head}; with log_input=False it reads its input as the rate itself and takes its log, and {negative} "
            f"of {inputs.numel()} inputs are negative (a layer's raw output is any real number: a log-rate, not a "
            "rate). Fix: log_input=True (the output is a log-rate), or a positive rate from forward "
            "(softplus or exp of the output)"
        )
    target = call.target if _floating(call.target) else None
    if call.name == "kl_div" and not call.options.get("log_target") and target is not None:
        return (
            f"{head}; with log_target=False its target is a probability whose log it takes, and "
            f"{int((target < 0).sum())} target(s) are negative. Fix: probabilities as targets (softmax), or "
            "log_target=True for log-probabilities"
        )
    return head + " (its documentation says which inputs it takes)"
