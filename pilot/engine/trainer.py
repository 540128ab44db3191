"""The training engine: one optimizer update from several micro-batches and replicas.

One update (``train_step``), in order:
1. take this update's examples from the deterministic stream and this
   replica's share, cut into micro-batches;
2. count the targets of the *whole update* (all micro-batches, all replicas);
3. forward/backward each micro-batch with loss = summed loss x replicas /
   update targets (DDP and FSDP average over replicas), syncing gradients only
   on the last micro-batch;
4. at the boundary: unscale (fp16), clip the global norm, step the optimizer
   (through the scaler), update the scaler, step the LR schedule, zero grads.
Because of 2-3 the gradient equals that of one big batch, whatever the
micro-batch, accumulation, replica count or partial last window.

Replicas are DistributedDataParallel (``distributed.strategy=ddp``: each holds the whole model) or
FSDP2 (``fsdp``: each holds a shard of every state; ``pilot.engine.sharding``). Under FSDP every
rank runs the same number of forwards (a rank with fewer examples, or none, zero-weight dummy ones after
its own), since each gathers parameters from all ranks.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from typing import Any

import torch
from torch.nn.parallel import DistributedDataParallel

from pilot.config.values import enum_value
from pilot.data.task import TaskData
from pilot.engine.batch_plan import BatchPlan, plan_from_config
from pilot.engine.checkpointing import enable_checkpointing
from pilot.engine.data_order import data_position, rank_micro_batches, update_indices
from pilot.engine.distributed import DistContext, all_reduce_sum
from pilot.engine.forward import forward_loss
from pilot.engine.optim import build_optimizer, build_scheduler
from pilot.engine.progress import Progress
from pilot.engine.sharding import device_mesh, full_value, is_sharded, shard_model

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass
class UpdateRecord:
    """What one update did; one line of metrics.jsonl."""

    update: int  # updates done after this one (1-based)
    loss: float  # mean loss per target over the whole update
    lr: float  # learning rate used by this update
    grad_norm: float  # global gradient norm before clipping
    examples: int  # examples in this update, all replicas
    targets: int  # targets (tokens or labels) in this update, all replicas
    examples_seen: int  # cumulative
    targets_seen: int  # cumulative
    loss_scale: float | None  # fp16 gradient scaler's scale after the update
    step_skipped: bool  # fp16 overflow: the scaler skipped the optimizer step
    seconds: float  # wall time of the update


class Trainer:
    def __init__(
        self,
        cfg,
        task: TaskData,
        model: torch.nn.Module,
        device: torch.device,
        ctx: DistContext = DistContext(),
        train_items: list[dict] | None = None,
        optimizer_foreach: bool | None = None,
        mesh: Any = None,
    ):
        self.cfg, self.task, self.device, self.ctx = cfg, task, device, ctx
        self.files_read: dict | None = None  # build.files_read, set by build_trainer
        self.seed = int(cfg.seed)
        self.train_items = task.encoded("train") if train_items is None else train_items
        self.plan: BatchPlan = plan_from_config(cfg, len(self.train_items))
        on_device = all(t.device == device for t in (*model.parameters(), *model.buffers()))
        self.raw_model = model if on_device else model.to(device)  # fake tensors cannot be moved
        if cfg.memory.activation_checkpointing:
            enable_checkpointing(self.raw_model)
        # FSDP needs a process group; ``mesh``: the estimator's (a fake one of any size)
        self.sharded = is_sharded(cfg) and (ctx.is_distributed or mesh is not None)
        if self.sharded:  # in place: raw_model becomes the sharded module
            shard_model(self.raw_model, cfg, mesh if mesh is not None else device_mesh(device, ctx.world_size))
            self.model = self.raw_model
            self.sync_every_micro_batch = bool(cfg.distributed.fsdp.sync_every_micro_batch)
        else:
            self.model = DistributedDataParallel(self.raw_model) if ctx.is_distributed else self.raw_model
        self.optimizer = build_optimizer(cfg.optim, self.raw_model, foreach=optimizer_foreach)
        self.clip_foreach = optimizer_foreach  # the clipping's kernels: the optimizer's (CUDA's default: foreach)
        self.scheduler = build_scheduler(cfg.optim, self.optimizer, self.plan.total_updates)
        precision = enum_value(cfg.precision.dtype)
        # FSDP computes in bf16 through its MixedPrecisionPolicy (gathered parameters in bf16), not autocast
        self.autocast_dtype = None if self.sharded else AUTOCAST_DTYPES.get(precision)
        self.scaler = torch.amp.GradScaler(
            device.type, init_scale=cfg.precision.init_scale, enabled=bool(cfg.precision.grad_scaler)
        )
        self.grad_clip = float(cfg.optim.grad_clip)
        self.updates_done = 0
        self.examples_seen = 0
        self.targets_seen = 0
        self.last_example_ids: list[int] = []  # data set indices this replica used in the last update

    # ------------------------------------------------------------------ pieces
    def autocast(self):
        if self.autocast_dtype is None:
            return nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)

    def micro_batches(self, update: int) -> list[tuple]:
        """(batch, weight) pairs of this replica for update ``update``."""
        indices = update_indices(self.plan, self.seed, update)
        shards = rank_micro_batches(
            indices, self.plan.micro_batch, self.ctx.world_size, self.ctx.rank, same_count=self.sharded
        )
        pairs = []
        for shard in shards:
            if shard:
                pairs.append((self.task.collate([self.train_items[i] for i in shard]), 1.0))
            else:  # an idle replica still joins the all-reduce, contributing nothing
                pairs.append((self.task.collate([self.train_items[indices[0]]]), 0.0))
        return pairs

    def current_lr(self) -> float:
        return float(self.optimizer.param_groups[0]["lr"])

    # ------------------------------------------------------------------ one update
    def forward_backward(self, batch: dict, weight: float, update_targets: int, last: bool = True) -> torch.Tensor:
        """One micro-batch: forward, summed loss / targets of the whole update, backward.

        Returns the (weighted) summed loss, detached. Gradients of replicas sync on ``last``.
        Reads no value back from the device, so it also runs on fake tensors (the estimator).
        """
        if self.sharded:  # sync_every_micro_batch: the gradients stay sharded between micro-batches
            self.model.set_requires_gradient_sync(last or self.sync_every_micro_batch)
        sync = nullcontext() if last or self.sharded or not self.ctx.is_distributed else self.model.no_sync()
        with sync:
            batch, output, summed = forward_loss(self.task, self.model, batch, self.device, self.autocast)
            summed = summed * weight  # output and batch stay referenced through backward (estimated so)
            loss = summed * (self.ctx.world_size / update_targets)
            self.scaler.scale(loss).backward()
        return summed.detach().double()

    def apply_update(self) -> torch.Tensor:
        """The update boundary: unscale (fp16), clip, optimizer and scaler step, LR step, zero grads.

        Returns the global gradient norm before clipping (a tensor, not read back).
        """
        self.scaler.unscale_(self.optimizer)
        max_norm = self.grad_clip if self.grad_clip > 0 else math.inf
        grad_norm = self.clip_gradients(max_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return grad_norm

    def clip_gradients(self, max_norm: float) -> torch.Tensor:
        """Clip the gradients to ``max_norm`` (inf: none); the global norm before clipping."""
        params = self.raw_model.parameters()
        return full_value(torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=self.clip_foreach))

    def train_step(self) -> UpdateRecord:
        started = time.perf_counter()
        update = self.updates_done
        pairs = self.micro_batches(update)
        local = torch.zeros(2, dtype=torch.float64)  # examples, targets of this replica
        for batch, weight in pairs:
            if weight:
                local[0] += len(batch["index"])
                local[1] += float(self.task.target_count(batch))
        totals = all_reduce_sum(local.to(self.device), self.ctx).cpu()
        update_examples, update_targets = int(totals[0]), int(totals[1])
        if update_targets == 0:
            raise ValueError(
                f"update {update + 1} has no target in the loss (every label is "
                "ignored): check the data's labels and truncation."
            )
        lr = self.current_lr()
        self.last_example_ids = [int(i) for batch, weight in pairs if weight for i in batch["index"]]
        self.model.train()
        loss_sum = torch.zeros((), dtype=torch.float64, device=self.device)
        for position, (batch, weight) in enumerate(pairs):
            loss_sum += self.forward_backward(batch, weight, update_targets, last=position == len(pairs) - 1)
        scale_before = self.scaler.get_scale() if self.scaler.is_enabled() else None
        grad_norm = self.apply_update()
        scale_after = self.scaler.get_scale() if self.scaler.is_enabled() else None
        loss_value = float(all_reduce_sum(loss_sum, self.ctx)) / update_targets
        self.updates_done += 1
        self.examples_seen += update_examples
        self.targets_seen += update_targets
        return UpdateRecord(
            update=self.updates_done,
            loss=loss_value,
            lr=lr,
            grad_norm=float(grad_norm),
            examples=update_examples,
            targets=update_targets,
            examples_seen=self.examples_seen,
            targets_seen=self.targets_seen,
            loss_scale=scale_after,
            step_skipped=scale_before is not None and scale_after < scale_before,
            seconds=time.perf_counter() - started,
        )

    # ------------------------------------------------------------------ the loop
    def train(self, on_update: Callable[[UpdateRecord], str | None] | None = None, progress: bool = True) -> str:
        """Run updates until the budget is spent; returns the stop cause.

        ``on_update`` runs after every update and may return a stop cause
        (a string) to end training early.
        """
        bar = Progress(
            self.plan.total_updates,
            "train",
            int(self.cfg.run.log_every),
            enabled=progress and self.ctx.is_main,
            initial=self.updates_done,
        )
        try:
            while self.updates_done < self.plan.total_updates:
                record = self.train_step()
                bar.advance(loss=record.loss, lr=record.lr)
                if on_update is not None:
                    cause = on_update(record)
                    if cause:
                        return cause
                if not math.isfinite(record.loss) and not self.scaler.is_enabled():
                    return "non_finite_loss"
            return "budget_reached"
        finally:
            bar.close()

    # ------------------------------------------------------------------ evaluation
    @torch.no_grad()
    def evaluate(self, split: str = "val", items: list[dict] | None = None) -> dict[str, float]:
        """Mean loss per target and share of the compared labels predicted exactly on ``split``
        (``TaskData.count_compared``; None where labels are values: no accuracy)."""
        items = self.task.encoded(split) if items is None else items
        share = -(-len(items) // self.ctx.world_size)
        mine = items[self.ctx.rank * share : (self.ctx.rank + 1) * share]
        step = int(self.cfg.batch.eval_micro_batch)
        totals = torch.zeros(4, dtype=torch.float64, device=self.device)  # loss, targets, correct, compared
        self.raw_model.eval()
        for start in range(0, share if self.sharded else len(mine), step):
            chunk = mine[start : start + step]
            if not chunk:  # FSDP: this rank has no item left but must join the others' gathers
                forward_loss(self.task, self.raw_model, self.task.collate(items[:1]), self.device, self.autocast)
                continue
            collated = self.task.collate(chunk)
            batch, output, loss_sum = forward_loss(self.task, self.raw_model, collated, self.device, self.autocast)
            totals[0] += float(loss_sum)
            totals[1] += float(self.task.target_count(batch))
            totals[2] += float(self.task.count_correct(output, batch))
            totals[3] += float(self.task.count_compared(batch))
        totals = all_reduce_sum(totals, self.ctx)
        targets, compared = float(totals[1]), float(totals[3])
        return {
            "loss": float(totals[0]) / targets if targets else float("nan"),
            "accuracy": float(totals[2]) / compared if compared else None,
            "targets": targets,
            "examples": len(items),
        }

    def planned_targets(self, limit: int = 2_000_000) -> int | None:
        """Targets (tokens or labels) the whole budget will train on, counted from the stream.

        None when the budget draws more than ``limit`` examples (too long to count up front).
        """
        if self.plan.examples_seen > limit:
            return None
        per_example = [int(self.task.target_count(self.task.collate([item]))) for item in self.train_items]
        return sum(
            per_example[i]
            for update in range(self.plan.total_updates)
            for i in update_indices(self.plan, self.seed, update)
        )

    def position(self) -> dict:
        return {
            "updates_done": self.updates_done,
            **data_position(self.plan, self.updates_done),
            "examples_seen": self.examples_seen,
            "targets_seen": self.targets_seen,
        }


def record_dict(record: UpdateRecord) -> dict:
    return asdict(record)
