"""How a training run ends and what its record then says: preempted (requeued), interrupted by a
signal, failed (a full disk, out of memory, an exception), and the closing every run goes through
(phase rows, run.json, the lock and the signal handlers released). ``TrainingRun`` (``pilot.train``)
inherits these; they read and set its state (record, trainer, status, stop cause)."""

from __future__ import annotations

import itertools
import logging
import traceback
from contextlib import suppress
from typing import Any

from pilot.checkpoint import list_checkpoints, looks_complete
from pilot.engine.distributed import launcher_gone
from pilot.errors import DiskFull, RunFinished, first_line, in_the_way, no_space_left, out_of_memory
from pilot.faults import fault_point
from pilot.phases.probe import peak_memory
from pilot.resume import attempt_stopped_before_it_began
from pilot.run_record import resume_hint
from pilot.startup_signals import SENT_BY_NO_ONE
from pilot.stopping import record_preemption, signal_entry

ERROR_FILE = "error.txt"  # a failed run's whole traceback
log = logging.getLogger("pilot")


class RunEnding:
    def standing_update(self) -> int:
        """The update the run stands at: the trainer's once it is restored; before that, the update its
        resume continues from (the newest complete checkpoint while the resume is not yet read)."""
        if self.trainer is not None and self.restored:
            return self.trainer.updates_done
        if self.resumed_at:
            return self.resumed_at
        return self.newest_checkpoint() or 0

    def standing_position(self) -> dict:
        """Where the run stands, for its record: the trainer's once it is restored; before that, the checkpoint's
        a resume continues from once it reopened the record (which set the earlier attempt's position aside);
        nothing when the record was not reopened (its position stands as recorded)."""
        if self.trainer is not None and self.restored:
            return self.trainer.position()
        return dict(self.resumed_position) if self.reopened and self.resumed_position else {}

    def newest_checkpoint(self) -> int | None:
        """The update of the newest complete checkpoint in the run's directory; None: none."""
        return next(
            (update for update, path in list_checkpoints(self.checkpointer.directory) if looks_complete(path)), None
        )

    def _preempted(self) -> None:
        """SIGUSR2: rank 0 saves a complete checkpoint and records the preemption; the job is
        handed over for requeueing unless requeues are used up (other ranks hand over at once)."""
        self.checkpointer.save(self.trainer, writes=self.record is not None)  # FSDP: every rank writes its shards
        if self.record is None:  # non-zero ranks: rank 0 publishes and decides
            self.status, self.hand_over = "preempted", True
            return
        requeue = record_preemption(self.record, self.trainer.updates_done, self.cfg.checkpoint.max_requeues)
        self.status, self.hand_over = "preempted", requeue

    def _interrupted(self, signal_name: str, how: str, events: list[str] | None = None) -> None:
        """``events``: every signal that acted, in order (a first one, then a second that stopped at once);
        each gets its entry in ``interrupted_by``."""
        if self.record is None and self.ctx.is_main and self.unfinished and (self.run_path / "run.json").exists():
            # a resume stopped before it reopened its record: the record it continues says so, this attempt one
            # more entry under resumes (the run's measurements are still its earlier attempts')
            self.record = attempt_stopped_before_it_began(self.run_path, self.overrides)
        updates = self.standing_update()
        if (gone := launcher_gone()) is not None:  # torch's SIGINT to the ranks of a launcher that died, or
            # a sweep job's own SIGTERM when its launcher or controller is gone (sweep_signals.watch_launcher)
            how += f"; {SENT_BY_NO_ONE}: {gone} ended, killed or crashed"
        events = events or [signal_name]
        self.signal_name = events[-1]  # the one that stopped it
        self.status = "interrupted"
        named = (
            events[0]
            if len(events) == 1
            else (f"{events[0]} twice" if len(set(events)) == 1 else ", then ".join(events))
        )
        self.stop_cause = f"interrupted: {named} at update {updates} ({how})"
        if self.record is not None:  # kept across resumes: every signal that stopped this run
            earlier = self.record.data.get("interrupted_by", [])
            times = self.interrupts.event_times if events == self.interrupts.events else []  # when each arrived
            entries = [
                signal_entry(name, updates, at) for name, at in itertools.zip_longest(events, times[: len(events)])
            ]
            if gone is not None:
                entries[-1]["sent_by"] = f"no one: {gone} ended"
            self.extra["interrupted_by"] = earlier + entries
        self.phases.end("fail", self.stop_cause[:300])
        if not self.ctx.is_main:  # rank 0 says it, with the command that resumes every rank (no record here)
            return
        hint = (  # before any record and any checkpoint there is nothing to resume
            resume_hint(self.overrides, self.run_path, self.sweep_dir)
            if self.record is not None or updates
            else "nothing to resume"
        )  # a resume stopped before it reopened its record still has its checkpoint ("that checkpoint is kept")
        log.warning("%s; %s", self.stop_cause, hint)

    def fail(self, error: Exception) -> None:
        """Record why the run failed (``run`` re-raises it: the failure stays visible)."""
        if (full := no_space_left(error)) is not None:  # any write of the run: checkpoint, export, metrics
            self.status, self.stop_cause, self.error = "failed", "disk_full", str(full)
            self.phases.end("fail", f"disk full: {full}"[:300])
        elif (blocked := in_the_way(error)) is not None:  # a file where the export or a checkpoint goes
            self.status, self.stop_cause, self.error = "failed", "file_in_the_way", str(blocked)
            self.phases.end("fail", str(blocked)[:300])
        elif out_of_memory(error):  # the CPU allocator's refusal too (a RuntimeError): recorded failed before
            updates = self.standing_update()
            self.status, self.stop_cause = "oom", f"out of memory at update {updates + 1}"
            self.error = f"{type(error).__name__}: {first_line(error, 300)}"
            self.phases.end("oom", f"out of memory in {self.phases.open_phase}: {self.error}")
        elif isinstance(error, RunFinished):
            self.status = None  # nothing was started: nothing is recorded
        else:
            self.status, self.stop_cause, self.error = "failed", "exception", f"{type(error).__name__}: {error}"
            self.phases.end("fail", self.error[:300])
            if self.record is not None:  # a sweep job's traceback was printed nowhere: kept beside its record
                # (no record: the line was refused before it ran, and a directory it refused is not touched)
                with suppress(OSError):
                    (self.run_path / ERROR_FILE).write_text("".join(traceback.format_exception(error)))
                    self.extra["error_file"] = ERROR_FILE

    def _note_signal_while_recording(self) -> None:
        """A signal that arrived while the record was written stops the process once it is (exit 128 +
        the signal): a complete run's record says so, as for a signal after the last update; any other run's
        ``interrupted_by`` keeps it (the exit code is that signal's)."""
        noted, updates = self.interrupts.noted, self.standing_update()
        if not noted:
            return
        entry = signal_entry(noted, updates, self.interrupts.noted_at)
        if self.status == "ok" and not self.record.data.get("signal_after_budget"):
            self.record.update(signal_after_budget=entry)
        elif self.status != "ok":
            entry["arrived"] = f"while the record of the run ({self.status}) was written"
            if (gone := launcher_gone()) is not None:
                entry["sent_by"] = f"no one: {gone} ended"
            self.record.update(interrupted_by=[*(self.record.data.get("interrupted_by") or []), entry])

    def _finish_record(self, seconds: list[float]) -> None:
        """run.json's ending; a refusal to write it after the run failed of another one (the same directory
        made read-only) leaves that first refusal the cause (``run`` raises it again; the record still says
        running, which the message adds)."""
        try:
            self.record.finish(
                self.status,
                self.stop_cause,
                error=self.error,
                peak_memory=_over_attempts(self.phases.peaks() or peak_memory(), self.record.data),
                seconds_per_update=(sum(seconds) / len(seconds)) if seconds else None,
                **self.extra,
                **self.standing_position(),
            )
        except OSError as exc:
            self._after_its_failure(exc, "run.json")

    def _after_its_failure(self, error: OSError, name: str) -> None:
        """A write refused while a run's failure of another error is recorded (the same directory made
        read-only): that first error stays the cause (``run`` raises it again), this one a warning; any other
        is raised."""
        if self.status != "failed" or self.stop_cause != "exception" or isinstance(error, DiskFull):
            raise error
        log.warning("%s could not record the failure either: %s", name, first_line(error, 300))

    def close(self) -> None:
        """Record what happened (rank 0), release the signal handlers and the lock. A signal while
        the record is written is only noted (``InterruptWatch.defer``): the record is finished first."""
        if not self.hand_over:
            self.preemption.uninstall()
        self.interrupts.defer()
        fault_point("record")  # tests: a signal while the record is written
        try:
            if self.record is not None and self.status is not None:
                self.phases.end("fail" if self.status != "ok" else "pass", f"run ended: {self.status}")
                try:
                    self.phases.write(self.run_path, attempt=1 + len(self.record.data.get("resumes") or []))
                except DiskFull as exc:  # the first file that did not fit stays the cause
                    self.error = self.error if self.stop_cause == "disk_full" else str(exc)
                    self.status, self.stop_cause, self.extra["disk_full"] = "failed", "disk_full", self.error
                except OSError as exc:  # refused too, after the run failed (a directory made read-only)
                    self._after_its_failure(exc, "phases.csv")
                if not self.hand_over:
                    seconds = _timed_updates(self.record) if self.record.data.get("resumes") else self.update_seconds
                    self._finish_record(seconds)
                    self._note_signal_while_recording()
        finally:
            if self.lock is not None:
                self.lock.release()
            self.interrupts.uninstall()
        if self.hand_over:
            self.preemption.hand_over()  # submitit requeues the job and exits this process
        if "disk_full" in self.extra:
            raise DiskFull(self.extra["disk_full"])
        self.interrupts.stop_if_noted()  # the record says how the run ended; the signal still stops us


def _timed_updates(record: Any) -> list[float]:
    """The seconds of every update of every attempt (metrics.jsonl), less each attempt's first (its warm-up):
    a resumed run's time per update was its last attempt's alone, null when that one trained a single update."""
    firsts = {1} | {int(entry.get("from_update") or 0) + 1 for entry in record.data.get("resumes") or []}
    return [
        float(row["seconds"])
        for row in record.rows("train")
        if row.get("update") not in firsts and isinstance(row.get("seconds"), (int, float)) and row["seconds"] >= 0
    ]


def _over_attempts(peaks: dict[str, Any], recorded: dict[str, Any]) -> dict[str, Any]:
    """This attempt's peaks, each raised to the one run.json holds from an earlier attempt of the run
    (a resume): the run's peak is the highest of its attempts, not the last one's."""
    earlier = recorded.get("peak_memory") if isinstance(recorded.get("peak_memory"), dict) else {}
    out = dict(peaks)
    for key, value in earlier.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[key] = max(value, out[key]) if isinstance(out.get(key), (int, float)) else value
    return out


def train_exit_code(record: dict) -> int:
    """0 for ``ok``; 128 + the signal's number for ``interrupted`` (the shell's convention);
    1 for any other ending (diverged, oom, failed, preempted), so a script can gate on it."""
    status = record.get("status", "ok")  # {} on ranks > 0: rank 0 reports
    if status == "ok":
        return 0
    if status == "interrupted":
        signals = record.get("interrupted_by") or [{}]
        return int(signals[-1].get("exit_code", 130))
    return 1
