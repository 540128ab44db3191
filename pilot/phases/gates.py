"""Step 4: run every operation of the campaign once, each in its own measured phase.

Phases, in order: build the model (and optimizer), the *first* update (it
allocates the optimizer state), steady updates, one forward/backward at the
*smallest* micro-batch the run will see (the partial last window, the last
evaluation batch: BatchNorm with one example fails here, not 69 updates into
training), evaluation on the *longest* validation sequences at the evaluation
micro-batch (often the largest peak), evaluation run twice on the same batch
(different outputs name the random layer left active), checkpoint save, export,
reload check, resume check. Each is measured by ``PhaseLog.measure``
(``pilot.phases.measure``): one row per device/rank with its inputs, duration
after synchronisation, memory counters, verdict and detail. An out-of-memory
error in a phase becomes an ``oom`` row naming the phase and its inputs; memory
is released and the pilot goes on.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from pilot.checkpoint import Checkpointer, checkpoint_bytes
from pilot.checks.augmented_inputs import augmented_inputs
from pilot.checks.batch_edges import (
    batch_mixing,
    eval_forward_at,
    eval_twice,
    forward_backward_at,
    smallest_eval_micro_batch,
    smallest_train_micro_batch,
)
from pilot.child_process import JobRunner
from pilot.closing import check_in_new_process, control_count, export_with_controls
from pilot.config.values import enum_value
from pilot.data.task import TaskData, batch_seq_len, longest_items, move_to
from pilot.engine.build import build_model as build_fresh_model
from pilot.engine.build import whole_model
from pilot.engine.distributed import DistContext
from pilot.engine.forward import forward_loss
from pilot.engine.rounded_updates import ROUNDED_AWAY_WARN, RoundedUpdates
from pilot.engine.sharding import local_values
from pilot.engine.trainer import Trainer
from pilot.errors import no_space_left
from pilot.models.adapter import describe_parameters
from pilot.phases.measure import PhaseLog
from pilot.phases.resume_check import run_resume_check
from pilot.phases.rows import COLUMNS

PHASES = (
    "build_model",
    "first_step",
    "steady_steps",
    "smallest_micro_batch",
    "eval_longest",
    "eval_determinism",
    "checkpoint_save",
    "export",
    "reload_check",
    "resume_check",
)


class InjectedOOM(torch.OutOfMemoryError):
    """Raised inside a phase by ``pilot.oom_in_phase`` to test the out-of-memory path."""


def _items_seq_len(items: list[dict]) -> int | None:
    return max((len(i["input_ids"]) for i in items if "input_ids" in i), default=None)


class PhaseRunner:
    def __init__(
        self,
        cfg: DictConfig,
        task: TaskData,
        device: torch.device,
        run_dir: Path,
        ctx: DistContext = DistContext(),
        oom_in_phase: str | None = None,
        runner: JobRunner | None = None,
    ):
        self.cfg, self.task, self.device, self.ctx = cfg, task, device, ctx
        self.run_dir, self.oom_in_phase = Path(run_dir), oom_in_phase
        self.runner = runner  # the new process the reload and resume checks run in (None: one each)
        self.log = PhaseLog(device, ctx.rank, self.base_inputs(), error_dir=self.run_dir)
        self.trainer: Trainer | None = None

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.log.rows

    def base_inputs(self) -> dict[str, Any]:
        cfg = self.cfg
        return {
            "micro_batch": int(cfg.batch.micro_batch),
            "accumulation": int(cfg.batch.accumulation),
            "replicas": self.ctx.world_size,
            "precision": enum_value(cfg.precision.dtype),
            "activation_checkpointing": bool(cfg.memory.activation_checkpointing),
        }

    def run_phase(
        self, phase: str, inputs: dict[str, Any], work: Callable[[], str | tuple[str, str]], needs: str | None = None
    ) -> None:
        """Measure ``work`` as ``phase``: it returns a detail (pass; "non-finite ..." fails) or
        (verdict, detail). Skipped when the phase it ``needs`` did not pass."""
        if needs is not None and self.log.verdict(needs) != "pass":
            self.log.skip(phase, f"needs {needs}, which did not pass", **inputs)
            return
        with self.log.measure(phase, **inputs) as measured:
            try:
                outcome = work()
            except OSError as error:  # no space, where the error names no file (a write's flush): the step's files
                full = no_space_left(error, writing=f"the {phase} step's files in {self.run_dir}")
                if full is None:
                    raise
                raise full from error
            finally:  # the first update's loss, whatever ends the phase
                if phase == "first_step":
                    measured.record(loss=getattr(self, "last_loss", None))
            verdict, detail = outcome if isinstance(outcome, tuple) else ("pass", outcome)
            if self.oom_in_phase == phase:
                raise InjectedOOM(f"injected by pilot.oom_in_phase={phase}")
            if verdict == "pass" and detail.startswith("non-finite"):
                verdict = "fail"
            measured.finish(verdict, detail)

    # ------------------------------------------------------------------ phases
    def build_model(self) -> str:
        model = build_fresh_model(self.cfg)
        self.trainer = Trainer(self.cfg, self.task, model, self.device, self.ctx)
        return describe_parameters(model)

    def _update(self) -> str:
        record = self.trainer.train_step()
        self.last_loss = record.loss  # full precision, phases.csv's loss column (env_check --smoke compares it)
        self.last_lr = record.lr  # the update's own (warmup's), what the rounded updates are said at
        if not (math.isfinite(record.loss) and math.isfinite(record.grad_norm)):
            return f"non-finite loss {record.loss} or gradient norm {record.grad_norm}"
        return f"loss {record.loss:.4g}, {record.seconds:.3g} s"

    def _update_seq_len(self) -> int | None:
        pairs = self.trainer.micro_batches(self.trainer.updates_done) if self.trainer else []
        lengths = [batch_seq_len(batch) for batch, _ in pairs]
        lengths = [n for n in lengths if n is not None]
        return max(lengths) if lengths else None

    def _optimizer_state_bytes(self) -> int:
        """This rank's optimizer state (FSDP: its shards)."""
        return sum(
            t.numel() * t.element_size()
            for state in self.trainer.optimizer.state.values()
            for t in local_values(state).values()
            if torch.is_tensor(t)
        )

    def first_step(self) -> str | tuple[str, str]:
        rounding = RoundedUpdates(self.trainer.raw_model, self.trainer.optimizer)  # half-precision weights
        try:
            result = self._update()
        finally:
            rounding.close()
        detail = f"{result}; optimizer state {self._optimizer_state_bytes():,} bytes allocated"
        if not (said := rounding.said(self.last_lr)):
            return detail
        if result.startswith("non-finite") or rounding.share < ROUNDED_AWAY_WARN:
            return f"{detail}; {said}"
        return "warn", f"{detail}; {said}"

    def steady_steps(self, count: int) -> str:
        seconds, losses, examples = [], [], 0
        for _ in range(count):
            record = self.trainer.train_step()
            if not math.isfinite(record.loss):
                return f"non-finite loss {record.loss} at update {record.update}"
            seconds.append(record.seconds)
            losses.append(record.loss)
            examples += record.examples  # what the updates drew (a split smaller than one update: all of it)
        return (
            f"{count} updates, {sum(seconds) / count:.3g} s/update, "
            f"{examples / sum(seconds):.4g} examples/s, "
            f"last loss {losses[-1]:.4g}"
        )

    def smallest_micro_batch(self, size: int, where: str, eval_items: list[dict], eval_where: str) -> tuple[str, str]:
        """One forward/backward at the smallest training micro-batch, one eval at the smallest eval batch."""
        trainer = self.trainer  # FSDP: every rank runs it, the gradients reduced as usual and then discarded
        no_sync = trainer.model.no_sync if self.ctx.is_distributed and not trainer.sharded else nullcontext
        verdict, detail = forward_backward_at(
            self.task, trainer.model, trainer.train_items[-size:], where, self.device, trainer.autocast, no_sync
        )
        if verdict != "pass" or not eval_items:
            return verdict, detail
        eval_verdict, eval_detail = eval_forward_at(
            self.task, trainer.raw_model, eval_items, eval_where, self.device, trainer.autocast
        )
        return eval_verdict, f"{detail}; {eval_detail}"

    def eval_determinism(self, items: list[dict]) -> tuple[str, str]:
        collated = self.task.collate(items)
        verdict, detail = eval_twice(
            self.task, self.trainer.raw_model, move_to(collated, self.device), self.trainer.autocast
        )
        if verdict != "pass":
            return verdict, detail
        if mixed := batch_mixing(self.task, self.trainer.raw_model, items, self.device, self.trainer.autocast):
            return "fail", mixed
        if augmented := augmented_inputs(self.task, items, collated):
            return "warn", augmented
        return verdict, detail

    @torch.no_grad()
    def eval_longest(self, items: list[dict]) -> str:
        model = self.trainer.raw_model
        model.eval()
        batch, _, loss_sum = forward_loss(
            self.task, model, self.task.collate(items), self.device, self.trainer.autocast
        )
        loss = float(loss_sum) / max(1, int(self.task.target_count(batch)))
        if not math.isfinite(loss):
            return f"non-finite evaluation loss {loss}"
        return f"{len(items)} longest validation examples, loss {loss:.4g}"

    def checkpoint_save(self) -> str:
        """Every rank saves its own checkpoint (DDP: the same state); FSDP: one, each rank writing its shards."""
        sharded = self.trainer.sharded
        directory = self.run_dir / "checkpoints" / ("pilot" if sharded else f"pilot-rank{self.ctx.rank}")
        path = Checkpointer(directory, self.cfg, keep_last=1).save(self.trainer, writes=self.ctx.is_main or not sharded)
        mine = f"; this rank wrote {path.name}/__{self.ctx.rank}_0.distcp" if sharded else ""
        size = checkpoint_bytes(path) if path.exists() else 0
        return f"{path.relative_to(self.run_dir)}, {size:,} bytes{mine}"

    def _export_dir(self) -> Path:
        return self.run_dir / "export" / ("rank0" if self.trainer.sharded else f"rank{self.ctx.rank}")

    def export(self) -> str:
        """Every rank exports its model; FSDP: the whole model gathered onto rank 0 (a collective), which exports."""
        model = whole_model(self.trainer)
        if model is None:
            return "rank 0 exports the model gathered from every rank"
        weights = export_with_controls(model, self.task, self.cfg, self._export_dir())
        return f"{weights.relative_to(self.run_dir)}, {weights.stat().st_size:,} bytes"

    def reload_check(self) -> tuple[str, str]:
        if self.trainer.sharded and not self.ctx.is_main:
            return "skipped", "rank 0 reloads the export of the gathered model"
        result = check_in_new_process(self._export_dir(), self.cfg, runner=self.runner)
        return result["verdict"], result["reason"] + " (in a child process; memory columns are this process's)"

    def resume_check(self) -> tuple[str, str]:
        if self.ctx.rank > 0 and not self.trainer.sharded:
            return "skipped", "rank 0 runs it (single-process); every rank saves the same format"
        verdict, reason = run_resume_check(
            self.cfg,
            self.device,
            self.run_dir / "resume_check",
            runner=self.runner,
            ctx=self.ctx if self.trainer.sharded else DistContext(),  # DDP: rank 0 alone, unreplicated
        )
        where = (
            f"as {self.ctx.world_size} ranks of a new process group" if self.trainer.sharded else "in a child process"
        )
        return verdict, f"{reason} (resumed {where})"

    def _measure_smallest(self) -> None:
        """The smallest training micro-batch (partial last window) and evaluation batch, as one row."""
        if self.trainer is None:
            self.run_phase("smallest_micro_batch", {}, lambda: "", needs="build_model")
            return
        size, where = smallest_train_micro_batch(self.trainer.plan)
        val = self.task.encoded("val")
        eval_count = min(len(val), int(self.cfg.loop.eval_examples))  # what mode=train evaluates
        eval_items: list[dict] = []
        eval_where = ""
        for count in sorted({eval_count, len(val)}):  # the pilot's own evaluation uses all of val
            eval_size, where_here = smallest_eval_micro_batch(
                count, int(self.cfg.batch.eval_micro_batch), self.ctx.world_size
            )
            if not eval_items or eval_size < len(eval_items):
                eval_items, eval_where = val[count - eval_size : count], where_here
        inputs = {
            "micro_batch": size,
            "accumulation": 1,
            "examples": size,
            "seq_len": _items_seq_len(self.trainer.train_items[-size:]),
        }
        self.run_phase(
            "smallest_micro_batch",
            inputs,
            lambda: self.smallest_micro_batch(size, where, eval_items, eval_where),
            needs="build_model",
        )

    # ------------------------------------------------------------------ all of them
    def run(self) -> list[dict[str, Any]]:
        steady = int(self.cfg.pilot.steady_steps)
        self.run_phase("build_model", {}, self.build_model)
        self.run_phase(
            "first_step",
            {
                "seq_len": self._update_seq_len(),
                "examples": self.trainer.plan.largest_update if self.trainer else None,  # a split smaller than
            },  # one update: what an update holds, not the declared micro-batch x accumulation
            self.first_step,
            needs="build_model",
        )
        self.run_phase(
            "steady_steps",
            {
                "seq_len": self._update_seq_len(),
                "examples": steady * self.trainer.plan.largest_update if self.trainer else None,
            },
            lambda: self.steady_steps(steady),
            needs="build_model",
        )
        self._measure_smallest()
        items = longest_items(self.task, "val", int(self.cfg.batch.eval_micro_batch))
        eval_inputs = {
            "micro_batch": len(items),
            "accumulation": 1,
            "examples": len(items),
            "seq_len": _items_seq_len(items),
        }
        self.run_phase("eval_longest", eval_inputs, lambda: self.eval_longest(items), needs="build_model")
        self.run_phase("eval_determinism", eval_inputs, lambda: self.eval_determinism(items), needs="build_model")
        self.run_phase("checkpoint_save", {}, self.checkpoint_save, needs="build_model")
        self.run_phase("export", {}, self.export, needs="build_model")
        self.run_phase(
            "reload_check", {"examples": control_count(self.task, self.cfg)}, self.reload_check, needs="export"
        )
        settings = self.cfg.pilot.resume_check
        self.run_phase(
            "resume_check",
            {"examples": int(settings.updates_total) * self.trainer.plan.examples_per_update if self.trainer else None},
            self.resume_check,
            needs="build_model",
        )
        return [{column: row.get(column) for column in COLUMNS} for row in self.rows]
