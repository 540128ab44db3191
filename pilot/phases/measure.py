"""Where a phase is measured: ``PhaseLog.measure(name, **inputs)``, the one way to time a phase.

The pilot's phases (``pilot.phases.gates``) and a training run's (``pilot.phases.train_phases``)
both go through it::

    log = PhaseLog(device, rank, {"micro_batch": 4, ...})  # columns every row of this log shares
    with log.measure("first_step", examples=16) as phase:
        ...  # the work
        phase.finish("pass", "loss 2.3", loss=2.3)  # verdict, detail, late columns

The body is measured between two synchronisations of the device (``pilot.phases.probe``): its
duration and memory counters join the phase's inputs, verdict and detail in one row of
phases.csv's columns (``pilot.phases.rows``). An out-of-memory error in the body becomes an
``oom`` row naming the phase and its inputs (memory is released), any other error a ``fail``
row with the error; neither goes further, so the next phase still runs.
"""

from __future__ import annotations

import gc
import traceback
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import torch

from pilot.errors import DISK_FULL, error_line, first_line, no_space_left, out_of_memory
from pilot.phases.probe import MemoryProbe
from pilot.phases.rows import INPUT_COLUMNS

# run.json's peak_memory keys for the phase columns they are the maximum of
PEAK_KEYS = (
    ("rss_peak_bytes", "rss_peak_bytes"),
    ("mem_peak_allocated_bytes", "cuda_peak_allocated_bytes"),
    ("mem_peak_reserved_bytes", "cuda_peak_reserved_bytes"),
)


def release_memory(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


class Phase:
    """The phase being measured: its row so far, and the verdict and detail the body gives it."""

    def __init__(self, name: str, row: dict[str, Any]):
        self.name, self.row = name, row
        self.verdict, self.detail = "pass", ""

    def record(self, **columns: Any) -> None:
        """Columns known only once the phase has run (the first update's loss)."""
        self.row.update(columns)

    def finish(self, verdict: str = "pass", detail: str = "", **columns: Any) -> None:
        """The phase's verdict and detail (and late columns, as ``record``)."""
        self.verdict, self.detail = verdict, detail
        self.record(**columns)

    def out_of_memory(self, error: BaseException) -> None:
        shown = {k: v for k, v in self.row.items() if k in INPUT_COLUMNS and v is not None}
        self.finish("oom", f"out of memory in {self.name} with {shown}: {first_line(error, 200)}")

    def failed(self, error: BaseException, error_file: Path | None = None) -> None:
        """A crashed phase: its first line here, its whole traceback in ``error_file`` when given; no
        space left is not the phase's fault: "disk full: " and the message naming the file, no traceback."""
        if (full := no_space_left(error)) is not None:
            self.finish("fail", f"{DISK_FULL}{full}")  # whole: the pilot ends with this message
            return
        detail = error_line(error, 300)
        if error_file is not None:
            with suppress(OSError):
                error_file.write_text("".join(traceback.format_exception(error)))
                detail += f" (whole error: {error_file.name})"
        self.finish("fail", detail)


class PhaseLog:
    """The phase rows of one process (one device and rank), in the order they ran."""

    def __init__(self, device: torch.device, rank: int, inputs: dict[str, Any], error_dir: Path | None = None):
        self.device, self.rank, self.inputs = device, rank, inputs
        self.error_dir = error_dir  # a crashed phase's whole traceback: <error_dir>/<phase>[.rank<r>].error.txt
        self.probe = MemoryProbe(device)
        self.rows: list[dict[str, Any]] = []

    def _error_file(self, name: str) -> Path | None:
        if self.error_dir is None:
            return None
        return Path(self.error_dir) / (f"{name}.error.txt" if self.rank == 0 else f"{name}.rank{self.rank}.error.txt")

    def _row(self, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"phase": name, "device": str(self.device), "rank": self.rank, **self.inputs, **inputs}

    @contextmanager
    def measure(self, name: str, **inputs: Any) -> Iterator[Phase]:
        """Measure the body as phase ``name`` (``inputs``: columns this phase runs with)."""
        phase = Phase(name, self._row(name, inputs))
        start = self.probe.start()
        try:
            yield phase
        except Exception as error:  # a phase that crashes is a failed phase, not a crashed run
            if out_of_memory(error):  # CUDA's, Python's or the CPU allocator's refusal (a RuntimeError)
                phase.out_of_memory(error)
                release_memory(self.device)
            elif no_space_left(error) is not None:  # the disk, not the phase: the pilot stops at the first file
                raise
            else:
                phase.failed(error, self._error_file(name))
        measured = self.probe.stop(start)
        self.rows.append(
            {
                **phase.row,
                "duration_s": measured.duration_s,
                "verdict": phase.verdict,
                "detail": phase.detail,
                **measured.memory,
            }
        )

    def skip(self, name: str, detail: str, **inputs: Any) -> None:
        """A row for a phase that did not run (nothing measured)."""
        self.rows.append({**self._row(name, inputs), "verdict": "skipped", "detail": detail})

    def verdict(self, name: str) -> str:
        return next((r["verdict"] for r in self.rows if r["phase"] == name), "missing")

    def peaks(self) -> dict[str, Any]:
        """The peaks over these phases (each phase resets the counters, so the process-wide
        high-water mark would only cover the last phase — or an earlier job of the same process)."""
        return peaks_of(self.rows)


def peaks_of(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """run.json's ``peak_memory``: the highest of each peak column over ``rows`` (typed phase rows)."""
    out: dict[str, Any] = {}
    for column, key in PEAK_KEYS:
        values = [row[column] for row in rows if row.get(column) is not None]
        if values:
            out[key] = max(values)
    return out
