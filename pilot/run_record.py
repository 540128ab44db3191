"""The run directory's identity files: ``run.json`` and ``metrics.jsonl`` (DESIGN.md, output contract)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shlex
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from pilot import run_index
from pilot.config.values import override_argument
from pilot.errors import DiskFull, ResumeRefused, RunDirectoryBusy, disk_full_guard, first_line
from pilot.metrics_file import MetricsFile
from pilot.metrics_reading import METRICS_LEADING_KEYS, metrics_stamp
from pilot.record_room import give_back, keep_room, write_in_room
from pilot.variant import variant_key

STAMP = "metrics_file"  # run.json's key: metrics.jsonl's size, time and summary when the run ended
NO_PROCESS = "no process holds it"  # a running record whose lock is free: killed before it recorded its end


def now_text(at: float | None = None) -> str:
    """A record's time (``at``: seconds since the epoch, else now), local, to the millisecond, with its
    offset: 2026-11-30T01:00:00.250+0100. The recap subtracts two of them (wall_time_s): whole seconds made
    a job of 0.4 s last 0 or 1."""
    at = time.time() if at is None else at
    local = time.localtime(at)
    return f"{time.strftime('%Y-%m-%dT%H:%M:%S', local)}.{int(at % 1 * 1000):03d}{time.strftime('%z', local)}"


def new_run_id() -> str:
    """Time-sortable and unique: the second plus 48 random bits (never reused)."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:12]}"


def sweep_identity(sweep_dir: Path | None) -> str | None:
    """One id for every job of one multirun launch (None for a single run).

    ``PILOT_SWEEP_ID`` is set by the recap callback when a multirun starts and reaches every job
    (same process, submitit's local processes and SLURM jobs inherit it); without it, the sweep
    directory stands for the launch.
    """
    if sweep_dir is None:
        return None
    return os.environ.get("PILOT_SWEEP_ID") or str(Path(sweep_dir).resolve())


def metrics_line(row: dict[str, Any]) -> str:
    """One metrics.jsonl line: the leading keys first (absent ones left out), then the rest."""
    ordered = {key: row[key] for key in METRICS_LEADING_KEYS if key in row}
    ordered.update((key, value) for key, value in row.items() if key not in ordered)
    return json.dumps(ordered)


def parse_row(line: str) -> dict[str, Any] | None:
    """One line of metrics.jsonl as a dict, or None (a line cut by a kill, or not a row)."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError:
        return None
    return row if isinstance(row, dict) else None


def read_run_json(run_dir: Path) -> dict[str, Any]:
    """The run.json of an existing run directory; unreadable is refused, never overwritten."""
    path = Path(run_dir) / "run.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        problem = first_line(error, limit=1000)
    else:
        if isinstance(data, dict) and isinstance(data.get("run_id"), str):
            return data
        problem = "not a pilot run record (no run_id)"
    raise ResumeRefused(
        f"{path} is unreadable ({problem}); pilot will not continue or overwrite that run's record. "
        "Fix: restore the file, move the directory aside, or start this run in a new hydra.run.dir."
    )


def config_hash(cfg: DictConfig) -> str:
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    blob = json.dumps(container, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def code_revision() -> dict[str, Any]:
    """The git commit of the pilot checkout and whether its tree had uncommitted changes."""
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return {"commit": commit, "dirty": bool(status.strip())}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None, "note": "not a git checkout"}


def write_json_atomic(path: Path, data: dict[str, Any], room: Path | None = None) -> None:
    text = json.dumps(data, indent=2, default=str)
    if not write_in_room(room, path, text):  # ``room``: kept for this write (record_room), needs no new space
        write_text_atomic(path, text)


def write_resolved_config(run_dir: Path, cfg: DictConfig) -> None:
    """``config.yaml``: the run's config resolved as it ran (``${oc.env:...}`` included), the one run.json's
    ``config_hash`` is of: env_check on another machine resolved ``.hydra/config.yaml`` with its own variables."""
    write_text_atomic(Path(run_dir) / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))


def write_text_atomic(path: Path, text: str) -> None:
    """``text`` to ``path`` through a temporary file renamed over it: a full disk or a kill leaves the
    earlier file (or none), never a truncated one; a full disk is one message naming ``path``."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with disk_full_guard(path, tmp):
        try:
            with tmp.open("w") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:  # a signal (KeyboardInterrupt) or an error before the rename: no stray file left
            tmp.unlink(missing_ok=True)
            raise


def index_roots(cfg: DictConfig) -> list[str]:
    """The roots whose runs relaunches look among (``run_index``): campaign.run_root and sweep_root."""
    return [
        OmegaConf.select(cfg, "campaign.run_root", default="outputs"),
        OmegaConf.select(cfg, "campaign.sweep_root", default="sweeps"),
    ]


class RunRecord:
    """Owns run.json and metrics.jsonl of one run directory (written by rank 0 only)."""

    def __init__(self, run_dir: Path, data: dict[str, Any]):
        """The record ``data`` of the run in ``run_dir``: run.json is written now, metrics.jsonl appended to.

        ``RunRecord.start`` makes a new run's; ``pilot.resume`` continues an existing one.
        """
        self.run_dir = Path(run_dir)
        self.data = data
        self.data.pop(STAMP, None)  # a run continued appends to metrics.jsonl: its summary is taken at its end
        self.save()
        self.room = keep_room(self.run_dir, (self.run_dir / "run.json").stat().st_size)  # for finish's write
        self.metrics = MetricsFile(self.run_dir / "metrics.jsonl")

    @classmethod
    def start(
        cls,
        run_dir: Path,
        cfg: DictConfig,
        overrides: Iterable[str],
        parent_id: str | None = None,
        mode: str = "train",
        sweep_dir: Path | None = None,
    ) -> RunRecord:
        """A new run: a new run_id; a training run's parent is the newest earlier run of its variant and seed."""
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        overrides = list(overrides)
        variant = variant_key(overrides, cfg)
        roots = index_roots(cfg)
        looked_in = run_index.roots_of(roots, run_dir)  # an indexed folder above it: that campaign's runs too
        if parent_id is None and mode == "train" and run_index.within_roots(looked_in, run_dir):
            # a run outside the roots is neither found as a parent nor given one (README)
            parent_id = run_index.find_parent(looked_in, variant, int(cfg.seed), sweep_dir)
        data: dict[str, Any] = {
            "run_id": new_run_id(),
            "parent_id": parent_id,
            "variant": variant,
            "mode": mode,
            "seed": int(cfg.seed),
            "status": "running",
            "stop_cause": None,
            "overrides": overrides,
            "config_hash": config_hash(cfg),
            "code_revision": code_revision(),
            "started_at": now_text(),
            "sweep_id": sweep_identity(sweep_dir),
        }
        # its index line, then its run.json, both while the index's lock is held: a kill between leaves a line
        # its directory disproves (the next search rebuilds the index), and no rebuild falls between the two
        with run_index.adding(roots, run_dir, data):
            return cls(run_dir, data)

    def rows(self, kind: str | None = None) -> list[dict[str, Any]]:
        """The rows of metrics.jsonl (of one ``kind``), as written so far."""
        path = self.run_dir / "metrics.jsonl"
        if not path.exists():
            return []
        parsed = (parse_row(line) for line in path.read_text().splitlines())
        return [row for row in parsed if row is not None and (kind is None or row.get("kind") == kind)]

    def save(self, room: Path | None = None) -> None:
        write_json_atomic(self.run_dir / "run.json", self.data, room)

    def update(self, **fields: Any) -> None:
        self.data.update(fields)
        self.save()

    def log_metrics(self, row: dict[str, Any]) -> None:
        self.metrics.write_line(metrics_line(row))  # whole, or not at all (DiskFull)

    def finish(self, status: str, stop_cause: str | None, **fields: Any) -> None:
        with suppress(OSError):  # the record comes first
            self.metrics.close()
        self.data.update(status=status, stop_cause=stop_cause, finished_at=now_text(), **fields)
        if stamp := metrics_stamp(self.run_dir / "metrics.jsonl"):  # the recap's tables read it, unchanged since
            self.data[STAMP] = stamp
        try:  # written into the room kept for this last write: a disk that filled up still records the ending
            self.save(room=self.room)
        except DiskFull:
            if stop_cause != "disk_full" or not fields.get("error"):
                raise
            # the disk filled up first elsewhere: that file is the cause, run.json only could not say so
            raise DiskFull(
                f"{fields['error']} (run.json could not record this either: it still says running)"
            ) from None
        finally:
            self.room = give_back(self.room)


def record_interrupted(run_dir: Path, record: RunRecord | None, signal_name: str, during: str) -> int:
    """A pilot's or an estimate's record of a signal that stopped it at once (``SignalsStopAtOnce``):
    ``interrupted`` (no verdict), with the signal; its exit code (128 + the signal). A record the
    signal cut while it was being started is read back from run.json; none: nothing claims a run."""
    exit_code = 128 + int(getattr(signal, signal_name))
    if record is None and (Path(run_dir) / "run.json").exists():
        record = RunRecord(Path(run_dir), read_run_json(Path(run_dir)))
    if record is not None:
        record.finish(
            "interrupted",
            f"interrupted: {signal_name} during the {during}",
            interrupted_by=[{"signal": signal_name, "exit_code": exit_code}],
        )
    return exit_code


WHEN_TAKEN: list[Callable[[Path], None]] = []  # called with the run directory when a process takes it and lets it go


class RunDirectoryLock:
    """An advisory lock (``flock``) on a run directory, held while a process writes it.

    A second process on the same directory is refused, naming the holder's pid and host.
    The kernel drops the lock when the holder dies (kill -9 included), so a stale lock
    file never blocks a resume.
    """

    NAME = ".pilot.lock"
    held_here: set[str] = set()  # the real paths of the locks this process holds (``abandoned``)

    def __init__(self, run_dir: Path, says_holder: bool = True):
        """``says_holder=False``: a moment's hold that writes no byte (it works on a full disk);
        a process refused meanwhile names an unknown holder."""
        self.path = Path(run_dir) / self.NAME
        self.fd: int | None = None
        self.says_holder = says_holder
        self.announced = False
        self.before: tuple[bytes, int, int] | None = None  # the lock file's text and times before ``announce``

    def acquire(self, announce: bool = True) -> RunDirectoryLock:
        """Hold the lock; ``announce=False`` (with ``says_holder``): write the holder only at ``announce()``
        (a run found finished under the lock is let go with its lock file as it was)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with disk_full_guard(self.path):  # no space for the lock file: one message naming it
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 200).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunDirectoryBusy(
                f"{self.path.parent} is in use by another pilot process ({holder}); two processes "
                "writing one run directory would mix their records. Fix: wait for it to end (or stop "
                "it), or give this run its own hydra.run.dir."
            ) from None
        self.fd = fd
        RunDirectoryLock.held_here.add(os.path.realpath(self.path))
        if self.says_holder and announce:
            self.announce()
        return self

    def announce(self) -> None:
        """Write this process as the holder (a process refused meanwhile names it) and run ``WHEN_TAKEN``."""
        try:
            before = os.fstat(self.fd)
            self.before = (os.pread(self.fd, 4096, 0), before.st_atime_ns, before.st_mtime_ns)
            with disk_full_guard(self.path):
                os.ftruncate(self.fd, 0)
                os.write(self.fd, f"pid {os.getpid()} on host {socket.gethostname()}".encode())
        except BaseException:
            os.close(self.fd)
            RunDirectoryLock.held_here.discard(os.path.realpath(self.path))
            self.fd = None
            raise
        self.announced = True
        for held in WHEN_TAKEN:  # the holder's first moments (pilot.run_directory: its own .hydra/ files)
            held(self.path.parent)

    def put_back(self) -> None:
        """The lock file as it was before ``announce`` (its holder's text and times): a line refused after it
        announced itself leaves the directory as it found it. Still held; what cannot be written stays."""
        if self.fd is None or not self.announced or self.before is None:
            return
        text, atime_ns, mtime_ns = self.before
        with suppress(OSError):
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, text, 0)
            os.utime(self.fd, ns=(atime_ns, mtime_ns))

    def release(self) -> None:
        if self.fd is not None:
            if self.announced:
                for held in WHEN_TAKEN:  # its last moments too: a line refused while it ran may have written
                    held(self.path.parent)
            os.close(self.fd)  # closing the descriptor drops the lock
            RunDirectoryLock.held_here.discard(os.path.realpath(self.path))
            self.fd, self.announced = None, False

    def __enter__(self) -> RunDirectoryLock:
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


@contextmanager
def refusal_puts_back(lock: RunDirectoryLock | None) -> Iterator[None]:
    """A ``ResumeRefused`` raised inside puts ``lock``'s file back as it was before it announced its holder."""
    try:
        yield
    except ResumeRefused:
        if lock is not None:
            lock.put_back()
        raise


def abandoned(run_dir: Path | str) -> str | None:
    """Why a run whose run.json says ``running`` has no process: its lock, last held by a process of
    this host, is free (the kernel drops it when the holder dies, kill -9 included). None when a
    process holds it, or when this host cannot tell (another host's run, no lock file)."""
    path = Path(run_dir) / RunDirectoryLock.NAME
    try:
        holder = path.read_text(errors="replace").strip()
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    parts = holder.split()
    if len(parts) != 5 or parts[0] != "pid" or parts[3] != "host" or parts[4] != socket.gethostname():
        os.close(fd)
        return None
    if parts[1] != str(os.getpid()) and os.path.realpath(path) in RunDirectoryLock.held_here:
        os.close(fd)  # this process took the lock since (a line about to be refused): its last holder is gone
        return f"{NO_PROCESS}: its lock, last held by pid {parts[1]} on this host, was free"
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:  # held: the run is running
        return None
    finally:
        os.close(fd)  # releases the shared lock too
    return f"{NO_PROCESS}: its lock, last held by pid {parts[1]} on this host, is free"


def resume_hint(overrides: Iterable[str], run_dir: Path, sweep_dir: Path | None) -> str:
    """How to continue an interrupted run: its own command in its directory. A sweep's job names its
    overrides as one command: the sweep's (-m) would start every job again in new directories."""
    where = override_argument("hydra.run.dir", run_dir)  # a path with spaces or quotes, pasted as printed
    if sweep_dir is None:
        return f"resume with the same command and {where}"
    return f"resume this job: python -m pilot {job_line(overrides)} {where}"


def job_line(overrides: Iterable[str]) -> str:
    """A sweep job's own overrides as one shell-quoted command line, Hydra's settings left out."""
    return " ".join(shlex.quote(o) for o in overrides if not o.startswith("hydra."))
