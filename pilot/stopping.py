"""Why a training run stops before its budget, and what each stop records.

The stop rules declared in ``cfg.loop`` before the run (divergence, early stopping), and the
signals: SIGINT/SIGTERM interrupt the run (``interrupted_by`` in run.json), SIGUSR2 preempts it
(``interruptions``; the job is requeued until ``checkpoint.max_requeues`` is used up).
"""

from __future__ import annotations

import logging
import math
import signal

from omegaconf import DictConfig

from pilot.run_record import RunRecord, now_text

log = logging.getLogger("pilot")


def is_diverged(stop_cause: str | None) -> bool:
    return bool(stop_cause) and (stop_cause == "non_finite_loss" or stop_cause.startswith("diverged"))


class StopRules:
    """The stop causes declared in ``cfg.loop`` before the run: divergence and early stopping."""

    def __init__(self, cfg: DictConfig):
        self.factor = float(cfg.loop.divergence_factor)
        self.patience = int(cfg.loop.early_stop_patience)
        self.first_loss: float | None = None
        self.best = math.inf
        self.since_best = 0

    def replay(self, rows: list) -> StopRules:
        """A resumed run's rules continue from its recorded rows (first loss, validation history)."""
        for row in rows:
            loss = row.get("loss")
            if not isinstance(loss, (int, float)):
                continue
            if row.get("kind") == "train" and self.first_loss is None:
                self.first_loss = float(loss)
            elif row.get("kind") == "val":
                self.after_validation(float(loss), int(row.get("update", 0)))
        return self

    def after_update(self, loss: float, update: int) -> str | None:
        if self.first_loss is None:
            self.first_loss = loss
        if not math.isfinite(loss):
            return f"diverged: non-finite loss {loss} at update {update}"
        if self.factor > 0 and loss > self.factor * self.first_loss:
            return f"diverged: loss {loss:.4g} > {self.factor:g} x first loss {self.first_loss:.4g} at update {update}"
        return None

    def after_validation(self, loss: float, update: int) -> str | None:
        if loss < self.best:
            self.best, self.since_best = loss, 0
            return None
        self.since_best += 1
        if self.patience and self.since_best >= self.patience:
            return (
                f"early_stop: no validation improvement for {self.since_best} points "
                f"(best {self.best:.4g}) at update {update}"
            )
        return None


def signal_entry(signal_name: str, updates: int, at: float | None = None) -> dict:
    """One entry of run.json's ``interrupted_by``: the signal, when it arrived (``at``: seconds since the
    epoch, else now), and the exit code it gives."""
    return {
        "signal": signal_name,
        "at_update": updates,
        "at": now_text(at),
        "exit_code": 128 + int(getattr(signal, signal_name, signal.SIGINT)),
    }


def record_preemption(record: RunRecord, updates: int, max_requeues) -> bool:
    """Record a preemption (its checkpoint saved); whether the job is requeued (not when
    ``max_requeues`` is used up)."""
    interruptions = record.data.setdefault("interruptions", [])
    interruptions.append({"at_update": updates, "at": now_text(), "signal": "USR2"})
    requeue = len(interruptions) <= int(max_requeues)
    record.update(interruptions=interruptions, status="requeued" if requeue else "preempted")
    log.warning(
        "preempted at update %d: checkpoint saved; %s",
        updates,
        "requeueing" if requeue else f"max_requeues={max_requeues} used up, ending",
    )
    if requeue:
        record.metrics.close()
    return requeue
