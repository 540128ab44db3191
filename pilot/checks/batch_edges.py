"""The edges of batching a model must survive: the smallest micro-batch, and evaluation run twice.

- ``smallest_micro_batches``: the smallest micro-batch training and evaluation will hand the model
  (the partial last window of an epoch, the last evaluation batch; it can be 1), with where it
  comes from in words;
- ``forward_backward_at``: one forward/backward of a micro-batch that size, train mode (BatchNorm
  with one example per batch fails here, in the pilot, instead of many updates into training);
- ``eval_twice``: two evaluation forwards on the same batch must agree; when they do not, the
  likely cause is named (a random layer active in eval mode, or state changed by ``forward``);
- ``batch_mixing``: with a BatchNorm layer that keeps no running statistics (it normalises by the
  batch in eval mode too), an example's evaluation output must not depend on the other examples of its
  batch: validation numbers would move with the evaluation micro-batch and the order. Other layers that
  mix rows (in-batch negatives) may mean to, and are not judged.

``pilot.phases.gates`` runs both as phase rows (``smallest_micro_batch``, ``eval_determinism``);
the ``*_check`` functions run them on a task and a model directly (tests, planted tasks).
Each restores the model's buffers, gradients and the RNG state, so later phases see no trace.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import torch

from pilot.checks.augmented_inputs import augmented_inputs
from pilot.checks.result import CheckResult
from pilot.data.task import TaskData, logits_of, move_to
from pilot.engine.batch_plan import BatchPlan, ceil_div
from pilot.engine.data_order import rank_micro_batches
from pilot.engine.forward import forward_loss
from pilot.errors import error_line

STEP_SMALLEST = "smallest_micro_batch"
STEP_EVAL = "eval_determinism"


# ----------------------------------------------------------------------------- the smallest micro-batch
def smallest_train_micro_batch(plan: BatchPlan) -> tuple[int, str]:
    """(size, where it comes from) of the smallest micro-batch any replica trains on."""
    updates = [(size, "full") for size in plan.update_sizes_in_epoch()]
    if plan.fixed == "examples" and plan.total_updates:
        updates.append((plan.examples_in_update(plan.total_updates - 1), "budget"))
    candidates: list[tuple[int, str]] = []
    for size, kind in updates:
        if not size:
            continue
        smallest = min(
            len(m)
            for rank in range(plan.replicas)
            for m in rank_micro_batches(list(range(size)), plan.micro_batch, plan.replicas, rank)
            if m
        )
        if kind == "budget":
            where = f"the last update, cut to {size} examples by the budget of {plan.value} examples"
        elif size < plan.examples_per_update:
            where = (
                f"the partial last window of each epoch ({plan.train_examples} training examples = "
                f"{plan.full_updates_per_epoch} update(s) of {plan.examples_per_update} + {size})"
            )
        else:
            where = f"a full update of {size} examples"
        candidates.append((smallest, where))
    if not candidates:
        return plan.micro_batch, "no update trains anything"
    size, where = min(candidates, key=lambda c: c[0])
    return size, f"{where}: its smallest micro-batch holds {size} example(s) (micro-batch {plan.micro_batch})"


def smallest_eval_micro_batch(examples: int, eval_micro_batch: int, replicas: int = 1) -> tuple[int, str]:
    """(size, where) of the smallest evaluation batch (``Trainer.evaluate`` shards, then batches)."""
    share = ceil_div(examples, replicas) if examples else 0
    sizes = []
    for rank in range(replicas):
        mine = max(0, min(share, examples - rank * share))
        if mine:
            sizes.append(mine % eval_micro_batch or min(mine, eval_micro_batch))
    size = min(sizes) if sizes else eval_micro_batch
    return size, (
        f"the last evaluation batch ({examples} validation examples in batches of "
        f"{eval_micro_batch}{f' over {replicas} replicas' if replicas > 1 else ''}) holds {size}"
    )


@contextmanager
def untouched(model: torch.nn.Module) -> Iterator[None]:
    """Run a probe, then restore the model's buffers, mode, gradients and the RNG state."""
    buffers = {name: b.detach().clone() for name, b in model.named_buffers()}
    grads = {name: (p.grad.detach().clone() if p.grad is not None else None) for name, p in model.named_parameters()}
    training = model.training
    cpu_rng = torch.get_rng_state()
    cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        yield
    finally:
        with torch.no_grad():
            for name, b in model.named_buffers():
                if name in buffers:  # a buffer the probe created has no earlier value
                    b.copy_(buffers[name])
        for name, p in model.named_parameters():
            p.grad = grads.get(name)  # a parameter the probe created had no gradient
        model.train(training)
        torch.set_rng_state(cpu_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state_all(cuda_rng)


def forward_backward_at(
    task: TaskData,
    model: torch.nn.Module,
    items: list[dict],
    where: str,
    device: torch.device = torch.device("cpu"),
    autocast: Callable[[], Any] = nullcontext,
    no_sync: Callable[[], Any] = nullcontext,
) -> tuple[str, str]:
    """(verdict, detail) of one train-mode forward/backward on these items as one micro-batch.

    ``no_sync``: a DDP model's ``no_sync`` (the probe's gradients stay local and are discarded).
    """
    collated = task.collate(items)
    with untouched(model), no_sync():
        model.train()
        try:
            batch, _, loss = forward_loss(task, model, collated, device, autocast)
            count = max(1.0, float(task.target_count(batch)))
            (loss / count).backward()
        except (torch.OutOfMemoryError, MemoryError):
            raise
        except Exception as error:
            return "fail", f"the model cannot take a micro-batch of {len(items)}: {error_line(error, 200)} — {where}"
        value = float(loss.detach()) / count
    if not torch.isfinite(torch.tensor(value)):
        return "fail", f"non-finite loss {value} at a micro-batch of {len(items)} — {where}"
    return "pass", f"forward/backward at micro-batch {len(items)}, loss {value:.4g} — {where}"


def eval_forward_at(
    task: TaskData,
    model: torch.nn.Module,
    items: list[dict],
    where: str,
    device: torch.device = torch.device("cpu"),
    autocast: Callable[[], Any] = nullcontext,
) -> tuple[str, str]:
    """(verdict, detail) of one evaluation forward on these items."""
    collated = task.collate(items)
    with untouched(model), torch.no_grad():
        model.eval()
        try:
            batch, _, loss_sum = forward_loss(task, model, collated, device, autocast)
            loss = float(loss_sum) / max(1.0, float(task.target_count(batch)))
        except (torch.OutOfMemoryError, MemoryError):
            raise
        except Exception as error:
            return "fail", f"evaluation cannot take a batch of {len(items)}: {error_line(error, 200)} — {where}"
    if not torch.isfinite(torch.tensor(loss)):
        return "fail", f"non-finite evaluation loss {loss} at a batch of {len(items)} — {where}"
    return "pass", f"evaluation at batch {len(items)}, loss {loss:.4g}"


def smallest_micro_batch_check(
    task: TaskData,
    model: torch.nn.Module,
    micro_batch: int,
    accumulation: int = 1,
    eval_micro_batch: int | None = None,
    replicas: int = 1,
    drop_last: bool = False,
) -> CheckResult:
    """The smallest micro-batch of one epoch and of the validation split, each run once."""
    plan = BatchPlan(
        micro_batch=int(micro_batch),
        accumulation=int(accumulation),
        replicas=int(replicas),
        train_examples=len(task.splits["train"]),
        drop_last=bool(drop_last),
        fixed="epochs",
        value=1,
    )
    size, where = smallest_train_micro_batch(plan)
    train_items = [task.encode(e) for e in task.splits["train"][-size:]]
    verdict, detail = forward_backward_at(task, model, train_items, where)
    details = {"train_micro_batch": size, "train_where": where}
    if verdict == "pass" and task.splits.get("val"):
        eval_size, eval_where = smallest_eval_micro_batch(
            len(task.splits["val"]), int(eval_micro_batch or micro_batch), int(replicas)
        )
        eval_items = [task.encode(e) for e in task.splits["val"][-eval_size:]]
        verdict, eval_detail = eval_forward_at(task, model, eval_items, eval_where)
        details.update(eval_micro_batch=eval_size, eval_where=eval_where)
        detail = f"{detail}; {eval_detail}"
    return CheckResult(STEP_SMALLEST, verdict, detail, [], details)


# ----------------------------------------------------------------------------- evaluation twice
def _tensors(output: Any) -> list[torch.Tensor]:
    if torch.is_tensor(output):
        return [output.detach()]
    if isinstance(output, (tuple, list)):
        return [t for o in output for t in _tensors(o)]
    if isinstance(output, dict):
        return [t for o in output.values() for t in _tensors(o)]
    return []


def _largest_difference(first: Any, second: Any) -> float:
    worst = 0.0
    for a, b in zip(_tensors(first), _tensors(second)):
        if a.shape != b.shape:
            return float("inf")
        if a.is_floating_point():
            scale = float(a.abs().max()) if a.numel() else 0.0
            difference = float((a.float() - b.float()).abs().max()) if a.numel() else 0.0
            worst = max(worst, difference / max(scale, 1e-6))
        elif not torch.equal(a, b):
            worst = float("inf")
    return worst


def eval_twice(
    task: TaskData,
    model: torch.nn.Module,
    batch: dict[str, Any],
    autocast: Callable[[], Any] = nullcontext,
    rtol: float = 1e-5,
) -> tuple[str, str]:
    """(verdict, detail): two evaluation forwards on the same batch, and the likely cause if they differ."""
    with untouched(model), torch.no_grad():
        model.eval()
        before = {name: b.detach().clone() for name, b in model.named_buffers()}
        with autocast():
            first = task.forward(model, batch)
            held = _tensor_attributes(model)  # after a first call: a cache it made is not a state it moves
            second = task.forward(model, batch)
        difference = _largest_difference(first, second)
        if difference <= rtol:
            return "pass", f"two evaluation forwards on the same batch of {len(batch['index'])} agree"
        changed = [name for name, b in model.named_buffers() if not torch.equal(b, before[name])]
        changed += [name for name, value in _tensor_attributes(model).items() if not _same(value, held.get(name))]
        still_training = [name or type(model).__name__ for name, m in model.named_modules() if m.training]
        with autocast():
            torch.manual_seed(0)
            third = task.forward(model, batch)
            torch.manual_seed(0)
            fourth = task.forward(model, batch)
        seeded = _largest_difference(third, fourth)
    random_layers = [
        name
        for name, m in model.named_modules()
        if any(word in type(m).__name__.lower() for word in ("dropout", "noise"))
    ]
    if still_training:  # forward itself put modules back in training mode
        cause = f"modules in training mode after forward, though the model was put in eval mode: {still_training[:4]}"
    elif changed:
        cause = (
            f"forward changes the model's state in eval mode ({changed[:4]} changed between calls: a state kept "
            "from one call to the next makes every output depend on the batches before it)"
        )
    elif seeded <= rtol:
        cause = "dropout or another random layer active in eval mode" + (
            f" (random layers: {random_layers[:4]}; does forward pass training=True?)"
            if random_layers
            else " (forward draws random numbers in eval mode)"
        )
    else:
        cause = "forward is not deterministic, and not because of the random number generator"
    return "fail", (
        f"two evaluation forwards on the same batch differ (largest difference {difference:.3g} "
        f"of the output's scale): {cause}"
    )


def _tensor_attributes(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Tensors the model's modules hold as plain attributes (not parameters, not buffers), by name."""
    return {
        f"{name}.{key}" if name else key: value.detach().clone()
        for name, module in model.named_modules()
        for key, value in vars(module).items()
        if torch.is_tensor(value) and not isinstance(value, torch.nn.Parameter)
    }


def _same(now: torch.Tensor, before: torch.Tensor | None) -> bool:
    return before is not None and now.shape == before.shape and torch.equal(now, before)


def batch_mixing(
    task: TaskData, model: torch.nn.Module, items: list[dict[str, Any]], device: Any = None, autocast=nullcontext
) -> str | None:
    """Why evaluation numbers depend on the batch, when one row of the batch replaced by a copy of another
    changes the evaluation output of a row whose tensors stayed exactly as they were; None when none moves
    (or no such row exists: fewer than 2 examples, rows that change width)."""
    norms = [f"{n or type(model).__name__} ({type(m).__name__})" for n, m in model.named_modules() if _batch_stats(m)]
    if len(items) < 2 or not norms:
        return None  # other layers that mix rows (in-batch negatives, capacity-limited experts) may mean to
    lengths = [max((v.numel() for v in i.values() if torch.is_tensor(v)), default=0) for i in items]
    longest = max(range(len(items)), key=lambda i: lengths[i])
    swap = next((j for j in range(len(items) - 1, 0, -1) if j != longest), None)
    if swap is None:
        swap, copied = 0, 1  # two rows, the first the longest: the first becomes a copy of the second
    else:
        copied = 0
    other_items = [items[copied] if i == swap else item for i, item in enumerate(items)]
    batches = [task.collate(items), task.collate(other_items)]
    if device is not None:
        batches = [move_to(b, device) for b in batches]
    kept = [r for r in range(len(items)) if r != swap and _same_row(batches[0], batches[1], r)]
    if not kept:
        return None
    with untouched(model), torch.no_grad():
        model.eval()
        with autocast():
            first, second = (task.forward(model, b) for b in batches)
    for r in kept:
        a, b = (logits_of(o).detach().float() for o in (first, second))
        if a.dim() == 0 or a.shape != b.shape or a.shape[0] != len(items):
            return None
        scale = float(a[r].abs().max()) if a[r].numel() else 0.0
        moved = float((a[r] - b[r]).abs().max()) / max(scale, 1e-6) if a[r].numel() else 0.0
        if moved > 1e-5:
            cause = f"normalisation by the batch in eval mode: {', '.join(norms[:3])}"
            return (
                f"an example's evaluation output depends on the other examples of its batch: replacing another row "
                f"of an evaluation batch of {len(items)} moves this row's output by {moved:.3g} of its scale ({cause}). "
                "Validation numbers then move with the evaluation micro-batch and the order. Fix: BatchNorm with "
                "track_running_stats=True (the default), or a per-example normalisation (LayerNorm)"
            )
    return None


def _same_row(a: dict[str, Any], b: dict[str, Any], row: int) -> bool:
    """Whether row ``row`` holds exactly the same tensors (shape and values) in both batches."""
    for key, value in a.items():
        other = b.get(key)
        if torch.is_tensor(value) and value.dim() >= 1:
            if not torch.is_tensor(other) or value.shape != other.shape or not torch.equal(value[row], other[row]):
                return False
    return True


def _batch_stats(module: torch.nn.Module) -> bool:
    """A batch-norm layer that normalises by the batch in eval mode (no running statistics)."""
    return isinstance(module, torch.nn.modules.batchnorm._BatchNorm) and not module.track_running_stats


def eval_determinism_check(
    task: TaskData, model: torch.nn.Module, eval_micro_batch: int, split: str = "val"
) -> CheckResult:
    examples = task.splits.get(split) or task.splits["train"]
    items = [task.encode(e) for e in examples[: max(1, int(eval_micro_batch))]]
    batch = task.collate(items)
    verdict, detail = eval_twice(task, model, batch)
    if verdict == "pass" and (mixed := batch_mixing(task, model, items)):
        verdict, detail = "fail", mixed
    elif verdict == "pass" and (augmented := augmented_inputs(task, items, batch)):
        verdict, detail = "warn", augmented
    return CheckResult(STEP_EVAL, verdict, detail, [], {"examples": len(items)})
