"""Signals that arrive before a run watches its own (``pilot.engine.preemption``): while a process
starts (imports, Hydra composing the config, writing ``.hydra/``) and between the jobs of a sweep.

- ``python -m pilot`` (and ``pilot.recap``, ``pilot.closing``): until ``pilot.__main__.script()`` starts, SIGINT, SIGTERM and SIGHUP print
  one line and exit with 128 + the signal's number (nothing read or written yet, no import
  traceback); from there on each raises ``SignalStop`` (a ``KeyboardInterrupt`` naming the
  signal), which a run records where it lands and ``pilot.__main__`` turns into one message,
  the recap of a sweep's jobs and the signal's exit code.
- A job of ``hydra/launcher=local_parallel`` (submitit's local executor) starts with SIGINT, SIGTERM
  and SIGHUP blocked (``hold_signals``: held, not lost), then SIGTERM taken by submitit: any of them
  arriving before the run watches them is *noted* (``noted``), and the run stops at its first
  update boundary, recorded as interrupted, instead of training to its end.

No pilot module is imported here: ``pilot/__init__.py`` installs these before anything else loads.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Iterator

STARTUP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
LOCAL_JOB = "submitit.core._submit"  # the module a job of submitit's local executor runs
LAUNCHER_GONE = "PILOT_LAUNCHER_GONE"  # set by a sweep job that stops because its launcher is gone
SENT_BY_NO_ONE = "sent by no one"  # a record's stop cause when what stopped it was no one's signal
_noted: list[str] = []  # signals a local job received before its run watched them


class SignalStop(KeyboardInterrupt):
    """SIGTERM or SIGHUP outside a run's own watch, raised like Ctrl-C's KeyboardInterrupt."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


def signal_name_of(stop: BaseException) -> str:
    """The signal a KeyboardInterrupt stands for: SIGINT unless it is a ``SignalStop``."""
    return getattr(stop, "signal_name", "SIGINT")


def error_chain(error: BaseException | None) -> Iterator[BaseException]:
    """``error``, then what it was raised from or while handling (at most 10 deep)."""
    for _ in range(10):
        if error is None:
            return
        yield error
        error = error.__cause__ or error.__context__


def interrupt_behind(error: BaseException) -> KeyboardInterrupt | None:
    """The signal's stop (a KeyboardInterrupt) that ``error`` was raised while handling, if any: a second
    signal that lands inside a library call whose cleanup then raises an error of its own (torch.save's
    zip writer closing: "unexpected pos") is the interrupt, not that error."""
    return next((e for e in error_chain(error) if isinstance(e, KeyboardInterrupt)), None)


def _exit_while_starting(signum, frame) -> None:
    name = signal.Signals(signum).name
    program = sys.orig_argv[2] if sys.orig_argv[1:2] == ["-m"] and len(sys.orig_argv) > 2 else "pilot"
    sys.stderr.write(f"{program}: interrupted ({name}) while starting; nothing was written\n")
    os._exit(128 + signum)


def _raise_stop(signum, frame) -> None:
    raise SignalStop(signal.Signals(signum).name)


def _note(signum, frame) -> None:
    name = signal.Signals(signum).name
    if name not in _noted:
        _noted.append(name)


def noted() -> str | None:
    """The first signal a local job received before its run watched signals (None: none)."""
    return _noted[0] if _noted else None


def _default(signum: int) -> bool:
    """Whether ``signum`` still has Python's own handling (an ignored one, e.g. nohup's SIGHUP, stays ignored)."""
    return signal.getsignal(signum) in (signal.SIG_DFL, signal.default_int_handler)


def at_import() -> None:
    """``pilot/__init__.py``: ``python -m pilot`` exits in one line while it starts; a local sweep
    job notes what arrives before its run watches it."""
    if sys.orig_argv[1:3] in (["-m", "pilot"], ["-m", "pilot.recap"], ["-m", "pilot.closing"]):
        for signum in STARTUP_SIGNALS:
            if _default(signum):
                signal.signal(signum, _exit_while_starting)
    elif os.environ.get("SUBMITIT_EXECUTOR") == "local" and LOCAL_JOB in sys.orig_argv:  # the job itself, not
        note_in_local_job()  # a process it starts (the closing's child, spawned ranks) that inherits its variables


def _held_signals() -> list[int]:
    """SIGINT, SIGTERM and SIGHUP (a closed terminal), unless SIGHUP is ignored (nohup: it stays so)."""
    return [s for s in STARTUP_SIGNALS if s != signal.SIGHUP or signal.getsignal(s) != signal.SIG_IGN]


def hold_signals(handler) -> None:
    """The launching process of a local sweep (``pilot.sweep_signals``): SIGINT, SIGTERM and SIGHUP
    go to ``handler`` and are blocked on this thread, which starts the jobs. The processes it starts
    inherit the block: submitit's controllers never act on a Ctrl-C or a hangup (they would die, or
    signal their job a second time, which stops it without a checkpoint), and a job takes up one that
    arrived while it started as soon as pilot is imported there (``note_in_local_job``): held, not
    lost (ignoring is inherited too, and drops what arrives)."""
    held = _held_signals()
    for signum in held:
        signal.signal(signum, handler)
    # a thread started before the block takes them for this process (the kernel picks a thread that
    # does not block them; with none, they would stay pending): Python runs ``handler`` on this one
    threading.Thread(target=_receive, name="pilot-signal-receiver", daemon=True).start()
    signal.pthread_sigmask(signal.SIG_BLOCK, set(held))


def _receive() -> None:
    while True:
        time.sleep(3600)


def note_in_local_job() -> None:
    """SIGINT and SIGHUP (held since the launcher) and SIGTERM (submitit's, which would ignore it) are
    noted; called at import and again when Hydra starts the job (after submitit installed its own)."""
    held = _held_signals()
    for signum in held:
        signal.signal(signum, _note)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, set(held))  # one held meanwhile is noted now


def raise_from_now_on() -> None:
    """``pilot.__main__.script()``: from here SIGINT raises KeyboardInterrupt and SIGTERM and SIGHUP
    raise ``SignalStop``, each handled where it lands (an ignored one stays ignored)."""
    for signum in STARTUP_SIGNALS:
        if signal.getsignal(signum) is _exit_while_starting:
            signal.signal(signum, signal.default_int_handler if signum == signal.SIGINT else _raise_stop)
