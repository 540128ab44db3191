"""phases.csv of a training run: the pilot's columns, one row per phase the run went through.

Phases: build_model (task, model, optimizer, restored checkpoint), first_step,
steady_steps (every later update; its wall time also holds the periodic
validations and checkpoints, so the detail gives the mean time of the updates
alone), eval (the final validation), checkpoint_save (the final one) and
export (closing: export, reload in a new process, control rerun). A phase that
raises ends as ``fail`` (or ``oom``) with the error. A resumed run appends its
rows to the existing file: nothing a run wrote is replaced.

The training loop opens and closes its phases at different places (``begin`` / ``end``), so
each phase is ``PhaseLog.measure`` (``pilot.phases.measure``) held open in between.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

import torch

from pilot.phases.measure import Phase, PhaseLog
from pilot.phases.rows import write_phases_csv


class TrainPhases:
    def __init__(self, device: torch.device, rank: int, inputs: dict[str, Any]):
        self.log = PhaseLog(device, rank, inputs)
        self._open: tuple[Phase, ExitStack] | None = None

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

    def peaks(self) -> dict[str, Any]:
        """This run's peaks over its phases (``PhaseLog.peaks``)."""
        return self.log.peaks()

    @property
    def open_phase(self) -> str | None:
        return self._open[0].name if self._open else None

    def write(self, run_dir: Path, attempt: int = 1) -> Path:
        """phases.csv, after the rows of earlier runs of this directory (a resumed run; ``attempt``: this
        one's number by the run's record)."""
        return write_phases_csv(run_dir, self.log.rows, keep_earlier=True, attempt=attempt)

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
