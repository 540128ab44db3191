"""phases.csv of a training run: the pilot's columns, one row per phase the run went through.

Phases: build_model (task, model, optimizer, restored checkpoint), first_step,
steady_steps (every later update; its wall time also holds the periodic
validations and checkpoints, so the detail gives the mean time of the updates
alone), eval (the final validation), checkpoint_save (the final one) and
export (closing: export, reload in a new process, control rerun). A phase that
raises ends as ``fail`` (or ``oom``) with the error. A resumed run appends its
rows to the existing file: nothing a run wrote is replaced.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import torch

from pilot.errors import disk_full_guard
from pilot.phases.memory import MemoryProbe


class TrainPhases:
    def __init__(self, device: torch.device, rank: int, inputs: dict[str, Any]):
        self.device, self.rank, self.inputs = device, rank, inputs
        self.probe = MemoryProbe(device)
        self.rows: list[dict[str, Any]] = []
        self.current: tuple | None = None

    def begin(self, phase: str, **inputs: Any) -> None:
        if self.current is not None:
            self.end()
        self.current = (phase, inputs, self.probe.start())

    def end(self, verdict: str = "pass", detail: str = "", **inputs: Any) -> None:
        if self.current is None:
            return
        phase, started_inputs, start = self.current
        self.current = None
        measured = self.probe.stop(start)
        self.rows.append(
            {
                "phase": phase,
                "device": str(self.device),
                "rank": self.rank,
                **self.inputs,
                **started_inputs,
                **inputs,
                "duration_s": measured.duration_s,
                "verdict": verdict,
                "detail": detail,
                **measured.memory,
            }
        )

    def peaks(self) -> dict[str, Any]:
        """This run's peaks over its phases (each phase resets the counters, so the process-wide
        high-water mark would only cover the last phase — or an earlier job of the same process)."""
        out: dict[str, Any] = {}
        for column, key in (
            ("rss_peak_bytes", "rss_peak_bytes"),
            ("mem_peak_allocated_bytes", "cuda_peak_allocated_bytes"),
            ("mem_peak_reserved_bytes", "cuda_peak_reserved_bytes"),
        ):
            values = [row[column] for row in self.rows if row.get(column) is not None]
            if values:
                out[key] = max(values)
        return out

    @property
    def open_phase(self) -> str | None:
        return self.current[0] if self.current else None

    def write(self, run_dir: Path) -> Path:
        path = Path(run_dir) / "phases.csv"
        from pilot.report import phases_frame

        frame = phases_frame(self.rows)
        if path.exists():  # a resumed run: keep the earlier rows
            try:
                frame = phases_frame(pd.concat([pd.read_csv(path), frame], ignore_index=True).to_dict("records"))
            except (OSError, ValueError, pd.errors.ParserError):
                path.rename(path.with_name("phases.unreadable.csv"))
        tmp = path.with_name(".phases.csv.tmp")
        with disk_full_guard(path, tmp, needed_bytes=64 * 1024):
            frame.to_csv(tmp, index=False)
            tmp.replace(path)
        return path
