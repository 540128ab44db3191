"""phases.csv of a training run: the pilot's columns, one row per phase the run went through.

Phases: build_model (task, model, optimizer, restored checkpoint), first_step,
steady_steps (every later update; its wall time also holds the periodic
validations and checkpoints, so the detail gives the mean time of the updates
alone), eval (the final validation), checkpoint_save (the final one; ``skipped`` when the last
update's periodic checkpoint was it, with that save's time) and
export (closing: export, reload in a new process, control rerun). A phase that
raises ends as ``fail`` (or ``oom``) with the error. A resumed run appends its
rows to the existing file: nothing a run wrote is replaced. Once the run's record is
open (``keep``), the file is written again as each phase ends, so an attempt killed
outright (SIGKILL, a lost node) leaves the phases it finished and their peaks.

The training loop opens and closes its phases at different places (``begin`` / ``end``), so
each phase is ``PhaseLog.measure`` (``pilot.phases.measure``) held open in between.
"""

from __future__ import annotations

from contextlib import ExitStack, suppress
from pathlib import Path
from typing import Any

import torch

from pilot.checkpoint import Checkpointer, checkpoint_bytes
from pilot.phases.measure import Phase, PhaseLog, peaks_of
from pilot.phases.rows import earlier_attempts, typed_rows, write_attempt


class TrainPhases:
    def __init__(self, device: torch.device, rank: int, inputs: dict[str, Any]):
        self.log = PhaseLog(device, rank, inputs)
        self._open: tuple[Phase, ExitStack] | None = None
        self._kept: tuple[Path, list[dict[str, Any]], int] | None = None  # run dir, earlier attempts' rows, attempt

    @property
    def rows(self) -> list[dict[str, Any]]:
        return self.log.rows

    def begin(self, phase: str, **inputs: Any) -> None:
        """Start measuring ``phase`` (ending the open one first, as passed)."""
        if self._open is not None:
            self.end()
        stack = ExitStack()
        self._open = (stack.enter_context(self.log.measure(phase, **inputs)), stack)

    def end(self, verdict: str = "pass", detail: str = "", **inputs: Any) -> None:
        """End the open phase with this verdict and detail (``inputs``: columns known only now)."""
        if self._open is None:
            return
        phase, stack = self._open
        self._open = None
        phase.finish(verdict, detail, **inputs)
        stack.close()
        if self._kept is not None:
            with suppress(OSError):  # a full disk: the write at the run's end (``write``) says it, once
                self._write()

    def saved_before(self, checkpointer: Checkpointer, update: int) -> None:
        """The final update's checkpoint already written (a periodic one, or an earlier attempt's): its
        ``checkpoint_save`` row says so, with that save's own time when this process made it, not saved again."""
        path, seconds = checkpointer.path(update), checkpointer.seconds.get(update)
        why = "as the periodic checkpoint" if checkpointer.due(update) else "when training stopped"  # a preemption's
        when = (
            f"saved after update {update} {why}, in {seconds:.3g} s (its memory within steady_steps)"
            if seconds is not None
            else "saved by an earlier attempt of this run"
        )
        self.log.skip("checkpoint_save", f"{path.name}, {checkpoint_bytes(path):,} bytes: {when}; not saved again")
        if self._kept is not None:
            with suppress(OSError):  # a full disk: the write at the run's end (``write``) says it, once
                self._write()

    def keep(self, run_dir: Path, attempt: int) -> None:
        """From now on phases.csv holds each phase as it ends: the rows of the run's earlier attempts (read
        once, now), then this one's (``attempt``: its number by the run's record, ``earlier_attempts``)."""
        earlier, attempt = earlier_attempts(run_dir, attempt)
        self._kept = (Path(run_dir), earlier, attempt)

    def _write(self) -> Path:
        run_dir, earlier, attempt = self._kept
        return write_attempt(run_dir, earlier, self.log.rows, attempt)

    def peaks(self) -> dict[str, Any]:
        """The run's peaks over its phases (``PhaseLog.peaks``): this attempt's and, once ``keep`` read
        them, those of the earlier attempts phases.csv holds (one killed before it wrote run.json too)."""
        earlier = typed_rows(self._kept[1]) if self._kept is not None else []
        return peaks_of([*earlier, *self.log.rows])

    @property
    def open_phase(self) -> str | None:
        return self._open[0].name if self._open else None

    def write(self, run_dir: Path, attempt: int = 1) -> Path:
        """phases.csv, after the rows of earlier runs of this directory (a resumed run; ``attempt``: this
        one's number by the run's record); ``DiskFull`` when it does not fit."""
        if self._kept is None:
            self.keep(run_dir, attempt)
        return self._write()

    def end_training(self, stop_cause: str, diverged: bool, seconds: list[float], examples_per_update: int) -> None:
        """Close ``steady_steps`` (``seconds``: each later update's) and, when the run ended at its first
        update, ``first_step``: fail when the run diverged."""
        if self.open_phase == "steady_steps":
            self.end(
                "fail" if diverged else "pass",
                f"{_steady_detail(seconds)}; stop: {stop_cause}",
                examples=len(seconds) * examples_per_update,
            )
        self.end("fail" if diverged else "pass", f"stop: {stop_cause}")  # a first step that ended the run


def _steady_detail(seconds: list) -> str:
    if not seconds:
        return "no update after the first"
    return (
        f"{len(seconds)} updates, {sum(seconds) / len(seconds):.3g} s/update (updates alone; the phase's "
        "wall time also holds validations and checkpoints)"
    )
