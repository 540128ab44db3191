"""Leave a finished process without tearing its modules down.

A Python process that has imported torch spends 0.6 s at exit finalizing modules, 1.0 s with
``torch._dynamo``, 1.4 s with pandas and matplotlib as well (measured on the 2-core machine:
the time from the last line printed to the process's end). Nothing pilot writes depends on that
teardown: files are closed where they are written. ``exit_now`` does what the interpreter does
first — waits for nothing (it declines when a non-daemon thread still runs, and exits the normal
way), runs the ``atexit`` callbacks (logging's flush, multiprocessing's and concurrent.futures'
joins), flushes stdout and stderr — and then ends the process with ``os._exit``. A signal while the
callbacks run (a second Ctrl-C) ends it there, with the same exit code: the work is recorded.

Only the entry points call it (``python -m pilot``, the ``pilot`` script, the check child), after
their work: never a library function, so a test calling ``cli()`` in-process is not ended.

A sweep job launched through submitit (``hydra/launcher=local_parallel``, SLURM) runs in submitit's
own process, whose end pilot does not call: submitit writes the job's result after pilot's task
returns, and the local launcher waits for each job's process to *exit* (``LocalJob.done`` polls it)
before the sweep goes on. ``leave_submitit_job_without_teardown``, called when pilot's task returns
(an exit code it raises never gets there), ends that process the same way at its exit, once submitit
has written the result and no exception is ending the process (submitit re-raises one that failed
the job: its traceback and exit status are Python's, as is any other end).
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from contextlib import suppress
from typing import NoReturn


def exit_code_of(stop: SystemExit) -> int:
    """The status ``sys.exit(code)`` gives the shell: a message is printed and means 1."""
    if stop.code is None or isinstance(stop.code, int):
        return int(stop.code or 0)
    print(stop.code, file=sys.stderr)
    return 1


def exit_now(code: int) -> NoReturn:
    others = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
    if others:  # the normal exit waits for them
        sys.exit(code)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # the record is written: a signal now (a
        with suppress(ValueError, OSError):  # second Ctrl-C) ends the process at once, not a traceback
            if signal.getsignal(signum) != signal.SIG_IGN:  # out of an atexit callback (torch._dynamo's)
                signal.signal(signum, lambda *_: _leave(code))
    atexit._run_exitfuncs()  # noqa: SLF001 - what the interpreter runs at exit, in its order
    _leave(code)


SUBMITIT_MAIN = "submitit.core._submit"  # ``python -m`` of submitit's job process


def leave_submitit_job_without_teardown() -> None:
    """In submitit's job process, when pilot's task has returned: at exit, once submitit has written the
    result, end the process without module teardown (``_after_the_result``). Anywhere else: nothing."""
    main = sys.modules.get("__main__")
    if getattr(getattr(main, "__spec__", None), "name", None) == SUBMITIT_MAIN:
        atexit.unregister(_after_the_result)  # once, however many jobs asked
        atexit.register(_after_the_result)


def _after_the_result() -> None:
    """At exit: when submitit's result file exists and no uncaught exception is ending the process
    (``sys.last_value``: what submitit re-raises when the job failed, or its result could not be
    written), the other ``atexit`` callbacks, then ``os._exit(0)``; otherwise nothing."""
    if hasattr(sys, "last_value"):
        return
    try:
        from submitit import JobEnvironment

        written = JobEnvironment().paths.result_pickle.is_file()
    except Exception:  # noqa: BLE001 - no job environment to read: the process ends as Python ends it
        return
    if not written:
        return
    atexit.unregister(_after_the_result)
    atexit._run_exitfuncs()  # noqa: SLF001 - the callbacks registered before this one, in their order
    _leave(0)


def _leave(code: int) -> NoReturn:
    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):
            stream.flush()
    os._exit(code)


def signal_of_exit_code(exit_code: int) -> str:
    """The signal an exit code of 128 + N stands for (SIGTERM for 143), or the code itself."""
    try:
        return signal.Signals(exit_code - 128).name
    except ValueError:
        return f"exit {exit_code}"
