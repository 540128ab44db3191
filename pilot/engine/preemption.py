"""Preemption and time limits on a cluster: checkpoint at the next update boundary, then requeue.

submitit sends USR2 before a preemption or the time limit and, in its own
handler, requeues the job (Hydra's submitit launcher makes the job
checkpointable). Saving inside a signal handler could catch an update half
done, so ``PreemptionWatch`` replaces the handler by one that only raises a
flag; the training loop checks the flag after every update, saves a complete
checkpoint, records the interruption, and then hands over to submitit's
handler (requeue and exit). Once ``max_requeues`` interruptions are used up
the run ends cleanly with status ``preempted`` instead, so it is still a row
in the recap. submitit itself only counts time-outs, not preemptions.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from pilot.startup_signals import noted

LAUNCHER_PID = "PILOT_LAUNCHER_PID"  # set in a replica pilot spawned (pilot.engine.distributed)
ONE_EVENT_S = 0.5  # in such a replica, the same signal again within this is the same event
# in a local sweep's job (local_parallel): a Ctrl-C or hangup of the terminal reaches it, and its launcher,
# which cannot tell whether it did (sent to the launcher alone, it did not), passes it on too
LOCAL_JOB_ONE_EVENT_S = 2.0

log = logging.getLogger("pilot")
_PREEMPTED = False  # USR2 arrived: SLURM's SIGTERM that may follow (the requeue, the end of a grace time) is its


class PreemptionWatch:
    def __init__(self, signum: int = signal.SIGUSR2):
        self.signum = signum
        self.requested = False
        self.previous: Callable[..., Any] | None = None
        self.installed = False

    def install(self) -> PreemptionWatch:
        """Watch only inside a submitit job: elsewhere USR2 keeps its default meaning."""
        if "SUBMITIT_EXECUTOR" not in os.environ and "SLURM_JOB_ID" not in os.environ:
            return self
        self.previous = signal.getsignal(self.signum)
        signal.signal(self.signum, self._flag)
        self.installed = True
        return self

    def _flag(self, signum: int, frame: Any) -> None:
        global _PREEMPTED  # noqa: PLW0603 - read by the interrupt watch's handler, in the same process
        self.requested = _PREEMPTED = True

    def hand_over(self) -> None:
        """Let submitit requeue the job (it exits the process)."""
        signal.signal(self.signum, self.previous if callable(self.previous) else signal.SIG_DFL)
        if callable(self.previous):
            self.previous(self.signum, None)
        else:
            os.kill(os.getpid(), self.signum)

    def uninstall(self) -> None:
        if self.installed:
            signal.signal(self.signum, self.previous if self.previous is not None else signal.SIG_DFL)
            self.installed = False


class InterruptWatch:
    """Ctrl-C (SIGINT), SIGTERM and SIGHUP (``watched_signals``): finish the current update, save, record ``interrupted``.

    The first signal only raises a flag, read at the next update boundary (like USR2 above),
    so the checkpoint holds a complete update; the run then ends with status ``interrupted``
    naming the signal and the update, and the process exits with 128 + the signal's number.
    A second signal stops at once (KeyboardInterrupt), still recorded as ``interrupted``.
    In a SLURM job too (``scancel``, a time limit reached without its USR2): submitit's own handler
    ignored SIGTERM, so the job trained on until SLURM's SIGKILL, recorded as nothing; a SIGTERM after
    USR2 belongs to the preemption (its checkpoint and requeue go on). A handler can only be installed
    from the main thread: elsewhere the watch stays inactive.
    """

    def __init__(self) -> None:
        self.received: str | None = None  # "SIGINT" / "SIGTERM" / "SIGHUP" once one arrived
        self.received_at = 0.0  # time.monotonic() then
        self.events: list[str] = []  # every signal that acted: the first, and a second that stopped at once
        self.event_times: list[float] = []  # time.time() when each of ``events`` arrived
        self.previous: dict = {}
        self.deferred = False  # the record is being written: a signal is noted, never raised
        self.noted: str | None = None  # the signal that arrived while deferred (``stop_if_noted``)
        self.noted_at: float | None = None  # time.time() then
        self.training_over = False  # the last update is done: the final validation and closing run on

    def install(self) -> InterruptWatch:
        if threading.current_thread() is not threading.main_thread():
            return self
        for signum in watched_signals():
            self.previous[signum] = signal.getsignal(signum)
            signal.signal(signum, self._flag)
        if (early := noted()) is not None:  # a local job: arrived while it started (pilot.startup_signals)
            self.received, self.received_at = early, time.monotonic()
            self._event(early)
            log.warning("%s received while this job started: stopping after its first update, with a checkpoint", early)
        return self

    def _event(self, name: str) -> None:
        self.events.append(name)
        self.event_times.append(time.time())

    def defer(self) -> None:
        """From now on a signal is only noted: the run's record is being written, and a second
        Ctrl-C there would leave run.json saying ``running`` (``uninstall`` ends it)."""
        self.deferred = True

    def _flag(self, signum: int, frame: Any) -> None:
        if self.deferred:
            name = signal.Signals(signum).name
            if name == self.received and time.monotonic() - self.received_at < _one_event_s():
                return  # the same signal delivered twice (torch's SIGINT to a replica): the event being recorded
            self.noted = self.noted or name
            self.noted_at = self.noted_at or time.time()
            log.warning(
                "%s received while the run's record is written: the record is finished first, then this process stops",
                self.noted,
            )
            return
        name = signal.Signals(signum).name
        if signum == signal.SIGTERM and _PREEMPTED:
            log.warning("SIGTERM after the preemption signal: the preemption's checkpoint and requeue go on")
            return
        if self.received is not None:
            if name == self.received and time.monotonic() - self.received_at < _one_event_s():
                return  # the same signal delivered twice (see ``_one_event_s``): one event
            self._event(name)
            raise KeyboardInterrupt(f"second {name}: stopping at once")
        self.received, self.received_at = name, time.monotonic()
        self._event(name)
        if self.training_over:
            log.warning(
                "%s received after the last update: the final validation and the closing run to their end, then "
                "this process stops (send it again to stop at once)",
                self.received,
            )
            return
        log.warning(
            "%s received: finishing this update, then saving a checkpoint and stopping (send it again to stop at once)",
            self.received,
        )

    def uninstall(self) -> None:
        for signum, previous in self.previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        self.previous = {}
        self.deferred = False

    def stop_if_noted(self) -> None:
        """Once the record is written: a signal noted meanwhile still stops this process (exit 128 +
        its number), so a sweep does not go on to its next job after a scheduler's SIGTERM."""
        if self.noted:
            raise SystemExit(128 + int(getattr(signal, self.noted)))


def _one_event_s() -> float:
    """How long the same signal again is the same event, not a second one (which stops at once): a
    spawned replica whose launcher died gets torch's SIGINT twice, 20 ms apart; a local sweep's job
    gets the terminal's and its launcher's. Elsewhere a signal arrives once: 0."""
    if os.environ.get(LAUNCHER_PID):
        return ONE_EVENT_S
    return LOCAL_JOB_ONE_EVENT_S if os.environ.get("SUBMITIT_EXECUTOR") == "local" else 0.0


def watched_signals() -> list[int]:
    """SIGINT and SIGTERM, and SIGHUP (a closed terminal or ssh session) unless it is ignored (nohup); and
    SIGUSR1 and SIGUSR2 where nothing else handles them (a scheduler's warning before a stop, `sbatch
    --signal=USR1@60`, a user's `kill -USR1`): their default action ended the process at once, its run.json
    left saying running. In a submitit or SLURM job SIGUSR2 is the preemption's (``PreemptionWatch``)."""
    hangup = [signal.SIGHUP] if signal.getsignal(signal.SIGHUP) != signal.SIG_IGN else []
    in_a_job = "SUBMITIT_EXECUTOR" in os.environ or "SLURM_JOB_ID" in os.environ
    warnings = [
        signum
        for signum in (signal.SIGUSR1, signal.SIGUSR2)
        if signal.getsignal(signum) == signal.SIG_DFL and not (signum == signal.SIGUSR2 and in_a_job)
    ]
    return [signal.SIGINT, signal.SIGTERM, *hangup, *warnings]


class SignalsStopAtOnce:
    """For work that cannot stop at a boundary (the pilot): SIGTERM and SIGHUP, like Ctrl-C, raise
    KeyboardInterrupt at once so the caller records ``interrupted``; ``received`` names it."""

    def __init__(self) -> None:
        self.received: str | None = None
        self.previous: dict = {}
        self.deferred = False  # the verdicts are final: a signal is noted until the report and record are written
        self.noted: str | None = None

    def defer(self) -> None:
        """From now on a signal is only noted: the verdicts are final, and the report and record that
        say them are being written (stopped there, the record said "no verdict" beside a report that
        gave one); ``stop_if_deferred`` ends the process once they are."""
        self.deferred = True

    def stop_if_deferred(self, record: Any) -> None:
        """A signal noted while the verdicts were written: said in the record, then this process stops
        (exit 128 + its number), as it would have."""
        if self.noted is None:
            return
        record.update(signal_after_verdicts={"signal": self.noted, "note": "received once the verdicts were final"})
        raise SystemExit(128 + int(getattr(signal, self.noted)))

    def __enter__(self) -> SignalsStopAtOnce:
        if threading.current_thread() is threading.main_thread():
            for signum in watched_signals():
                self.previous[signum] = signal.getsignal(signum)
                signal.signal(signum, self._raise)
        return self

    def _raise(self, signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.deferred:
            self.noted = self.noted or name
            log.warning(
                "%s received while the verdicts are written: they are finished first, then this process stops", name
            )
            return
        self.received = self.received or name
        raise KeyboardInterrupt(name)

    def stop_if_noted(self) -> None:
        """Once the record is started: a signal a local sweep job received while it started
        (``pilot.startup_signals``) stops it now, as if it had come now."""
        if (early := noted()) is not None:
            self.received = self.received or early
            raise KeyboardInterrupt(early)

    def __exit__(self, *exc: Any) -> None:
        for signum, previous in self.previous.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
