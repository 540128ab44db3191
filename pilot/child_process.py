"""A new Python process, started early, that later runs ``python -m <module> <args>`` jobs.

The reload check and the resume check must run in a process that shares no state with the run
(nothing in memory: everything comes from disk). Starting that process when the check is due
costs its imports on the critical path (torch alone ~1.6 s on a 2-core machine, and the first
optimizer a process builds imports ``torch._dynamo``, ~1.9 s more). ``ChildProcess`` starts the
process early — while the run or pilot still does other work — imports what the jobs need, and
waits. Each job is then ``runpy.run_module(module, run_name="__main__")`` with ``sys.argv`` set,
exactly what ``python -m module args`` runs, and its exit code and stderr come back as from
``subprocess.run``.

The guarantee is kept: the process is started with ``subprocess.Popen`` (a new interpreter, not a
fork), so it holds none of the run's memory; it receives only a module name and command-line
arguments. One child serves the jobs of one run in order (the pilot: the reload, then the
resume); each job reads what it needs from disk and sets its own threads and random state. A
child that died before a job (killed) is replaced by a new process for it; one that dies during
a job fails it with its exit code, as a new process would.

``NewProcess`` is the plain alternative (a process per job); both answer ``run(module, args,
timeout_s) -> Finished``. Protocol: one JSON line per request on the child's stdin; during a job
the child's stdout and stderr (file descriptors 1 and 2, so C-level output too) go to a file the
parent reads back; one JSON line per answer on the child's real stdout.
"""

from __future__ import annotations

import atexit
import ctypes
import importlib
import json
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pilot.process_exit import exit_now


@dataclass(frozen=True)
class Finished:
    returncode: int
    stderr: str  # the job's stdout and stderr, in order (a failure's message)


class JobRunner(Protocol):
    def run(self, module: str, args: list[str], timeout_s: int) -> Finished: ...


class NewProcess:
    """One new process per job (``subprocess.run``)."""

    def run(self, module: str, args: list[str], timeout_s: int) -> Finished:
        completed = subprocess.run(
            [sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=timeout_s
        )
        return Finished(completed.returncode, completed.stdout + completed.stderr)


class ChildProcess:
    """A process started now, which imports ``warm`` modules (and builds a throw-away optimizer
    with ``optimizer=True``) and then runs the jobs it is sent. Use as a context manager (the
    child is stopped on the way out)."""

    def __init__(self, warm: tuple[str, ...] = (), optimizer: bool = False, nice: int = 0) -> None:
        settings = {"warm": warm, "optimizer": optimizer, "parent": os.getpid(), "nice": nice}
        command = [sys.executable, "-m", "pilot.child_process", json.dumps(settings)]
        # its own session: a Ctrl-C in the terminal (sent to the whole process group) reaches the
        # run, which records it, not the child mid-check (a killed check would read as a failed one);
        # it still dies with its parent (``die_with_parent``)
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        self._lock = threading.Lock()
        self._background: ThreadPoolExecutor | None = None
        self._abandoned = False  # a job whose caller stopped waiting (a Ctrl-C): killed by ``stop``

    def __enter__(self) -> ChildProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def run(self, module: str, args: list[str], timeout_s: int) -> Finished:
        with self._lock, tempfile.TemporaryDirectory(prefix="pilot-child-") as private:
            output = Path(private) / "output.txt"
            if not self._send({"module": module, "args": args, "output": str(output)}):
                return NewProcess().run(module, args, timeout_s)  # it had died (killed): a new one
            try:
                returncode = self._answer(module, timeout_s)
            except BaseException:  # a Ctrl-C or a timeout while it runs: its answer will never be read
                self._abandoned = True
                raise
            return Finished(returncode, output.read_text(errors="replace") if output.exists() else "")

    def submit(self, module: str, args: list[str], timeout_s: int) -> Future[Finished]:
        """``run`` in the background (a thread that waits on the child): the caller goes on with
        other work and reads ``.result()`` when it needs the job done."""
        if self._background is None:
            self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pilot-child")
        return self._background.submit(self.run, module, args, timeout_s)

    def _send(self, request: dict[str, Any]) -> bool:
        process = self._process
        if process.poll() is not None or process.stdin is None:
            return False
        try:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
        except OSError:
            return False
        return True

    def _answer(self, module: str, timeout_s: int) -> int:
        """The job's exit code; the child's own when it died during the job (as a new process would)."""
        process = self._process
        expired = threading.Event()
        timer = threading.Timer(timeout_s, lambda: (expired.set(), process.kill()))
        timer.start()
        try:
            line = _answer_line(process.stdout)
        finally:
            timer.cancel()
        if expired.is_set():
            raise subprocess.TimeoutExpired(module, timeout_s)
        return int(json.loads(line)["returncode"]) if line else process.wait()

    def alive(self) -> bool:
        return self._process.poll() is None

    def stop(self) -> None:
        """After the jobs sent so far: the child ends (it holds nothing worth waiting for). A job whose
        caller stopped waiting is killed at once: let to finish, it would write its verdict
        (``reload_check.json``) after the run recorded that it was interrupted."""
        if self._abandoned:
            with suppress(OSError):
                self._process.kill()
        if self._background is not None:
            self._background.shutdown(wait=True, cancel_futures=True)
        process = self._process
        with suppress(OSError):
            if process.stdin is not None:
                process.stdin.close()  # end of requests: an idle child exits
        try:
            process.wait(timeout=2)
        except subprocess.TimeoutExpired:  # still importing: no need to let it finish
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


_shared: dict[tuple, ChildProcess] = {}
SET_BY_TORCH = {"TORCHINDUCTOR_CACHE_DIR"}  # torch sets it in its own process once used: not the user's


def shared_child(warm: tuple[str, ...] = (), nice: int = 0) -> ChildProcess:
    """One child for the jobs a process runs one after another (a sweep's jobs in one launcher
    process): the first job pays its start, the next find it ready. A child serves only jobs started
    with the environment and working directory it was started with (another one — a job with
    ``PILOT_FAULT`` set, a launcher that changes directory — gets a new child, and the old one is
    stopped); a dead child is replaced. Stopped when this process exits. Each job still reads
    everything from disk in a process that holds none of its run's memory."""
    environment = tuple(sorted((k, v) for k, v in os.environ.items() if k not in SET_BY_TORCH))
    key = (tuple(warm), int(nice), os.getcwd(), environment)
    child = _shared.get(key)
    if child is not None and child.alive():
        return child
    stop_shared_children()
    atexit.unregister(stop_shared_children)  # registered once: stopped when this process exits
    atexit.register(stop_shared_children)
    _shared[key] = child = ChildProcess(warm=warm, nice=nice)
    return child


def stop_shared_children() -> None:
    for child in _shared.values():
        child.stop()
    _shared.clear()


def _answer_line(stream: Any) -> str:
    """The next answer (a JSON object) from the child; "" when it exited."""
    while True:
        line = stream.readline()
        if not line or line.startswith("{"):
            return line


def _run_job(request: dict[str, Any]) -> int:
    """One ``python -m module args`` in this process; its exit code."""
    saved_argv = sys.argv
    sys.argv = [request["module"], *request["args"]]
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        return 0
    except KeyboardInterrupt:  # a SIGINT sent to this process itself (its own session: not a terminal's Ctrl-C)
        raise
    except SystemExit as stop:
        code = stop.code
        if code is None or isinstance(code, int):
            return int(code or 0)
        print(code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001 - reported as a failed job, as an uncaught exception ends python -m
        traceback.print_exc()
        return 1
    finally:
        sys.argv = saved_argv


def _serve(answers: Any) -> None:
    """Read requests until stdin closes; each job's fds 1 and 2 go to its output file."""
    for line in sys.stdin:
        request = json.loads(line)
        with open(request["output"], "w") as output:
            sys.stdout.flush()
            sys.stderr.flush()
            saved = os.dup(1), os.dup(2)
            os.dup2(output.fileno(), 1)
            os.dup2(output.fileno(), 2)
            try:
                returncode = _run_job(request)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                for fd in saved:
                    os.close(fd)
        answers.write(json.dumps({"returncode": returncode}) + "\n")
        answers.flush()


def die_with_parent(parent: int) -> None:
    """Linux: the kernel kills this process when its parent dies (a parent killed with -9 leaves no
    child importing torch beside the next run, whose thread count reads the machine's load)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before that was set
        os._exit(0)


def _warm_up(settings: dict[str, Any]) -> None:
    import torch  # here, after die_with_parent: the import is most of a child's start

    for name in settings.get("warm", ()):
        importlib.import_module(name)
    if settings.get("optimizer"):  # the first optimizer of a process imports torch._dynamo
        torch.optim.AdamW([torch.zeros(1, requires_grad=True)])


if __name__ == "__main__":
    answers = os.fdopen(os.dup(1), "w")  # the protocol's channel, apart from what jobs print
    settings = json.loads(sys.argv[1])
    die_with_parent(int(settings["parent"]))
    os.nice(int(settings.get("nice", 0)))
    try:
        _warm_up(settings)
        _serve(answers)
    except KeyboardInterrupt:  # a SIGINT sent to this process itself: the parent reports what it lacks
        sys.exit(130)
    answers.close()
    exit_now(0)  # the parent waits for this exit: no module teardown (~1 s with torch)
