"""A run's Hydra files as they were before a command line's Hydra rewrote them, and putting them back.

Hydra writes its files (config.yaml, overrides.yaml, hydra.yaml) into ``hydra.output_subdir`` of the
run directory (``.hydra`` unless the line names another; nowhere when it is null) before pilot's
task starts. When that line is then refused (a resume under another config, a directory another
process runs in), those files would say a config the run never used: ``HydraFiles`` holds them as
they were — content and times, with ``run.json`` to tell whether the line ran after all — and
``put_back`` restores them. ``another_apps_hydra``: whether files found there are another Hydra app's.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf, open_dict, read_write


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _files(subdir: Path | None) -> dict[Path, bytes]:
    if subdir is None or not subdir.is_dir():
        return {}
    return {p: p.read_bytes() for p in subdir.iterdir() if p.is_file()}


def _times(paths: list[Path]) -> dict[Path, tuple[int, int]]:
    times = {}
    for path in paths:
        with contextlib.suppress(OSError):
            stat = path.stat()
            times[path] = (stat.st_atime_ns, stat.st_mtime_ns)
    return times


def output_subdir(run_dir: Path, subdir: str | None) -> Path | None:
    """Where Hydra writes its files for a line whose ``hydra.output_subdir`` is ``subdir``."""
    return None if subdir is None else run_dir / subdir


@dataclass
class HydraFiles:
    subdir: Path | None  # where this line's Hydra writes; None: nowhere
    existed: bool  # the subdirectory was there before
    files: dict[Path, bytes]
    times: dict[Path, tuple[int, int]]  # the files' and the subdirectory's (access, modification) in ns
    record: bytes | None  # run.json

    @classmethod
    def before_hydra(cls, run_dir: Path, subdir: str | None) -> HydraFiles:
        where = output_subdir(run_dir, subdir)
        files = _files(where)
        return cls(
            where,
            where is not None and where.is_dir(),
            files,
            _times([*([where] if where is not None else []), *files]),
            _read(run_dir / "run.json"),
        )

    @classmethod
    def as_written(cls, run_dir: Path, subdir: str | None, config: Any) -> HydraFiles:
        """This line's Hydra files as its Hydra wrote them, made from its own ``config`` (Hydra's
        ``run_job``: the config without ``hydra``, the ``hydra`` part, the task overrides, each through
        ``OmegaConf.to_yaml``), not read back: a line started on the same directory at the same moment
        may have rewritten them, or interleaved its bytes with these, before it was refused."""
        found = cls.before_hydra(run_dir, subdir)
        if found.subdir is None:
            return found
        try:
            task = copy.deepcopy(config)
            with read_write(task), open_dict(task):
                del task["hydra"]
            own = {
                "config.yaml": OmegaConf.to_yaml(task),
                "hydra.yaml": OmegaConf.to_yaml(HydraConfig.instance().cfg),
                "overrides.yaml": OmegaConf.to_yaml(config.hydra.overrides.task),
            }
        except Exception:  # noqa: BLE001 - a config Hydra did not set up as for a job: the files as read
            return found
        found.files.update({found.subdir / name: text.encode("utf-8") for name, text in own.items()})
        return found

    def put_back(self, run_dir: Path, may_have_run: bool = True) -> None:
        """The files as they were, if run.json is as it was or the line cannot have run
        (``may_have_run=False``: another process held the lock; else the line ran and its files stay).
        Each changed file is replaced whole; on a disk without room for a copy beside it, rewritten in
        place (what Hydra left there is wrong already). A subdirectory the line made goes."""
        if self.subdir is None or (self.record != _read(run_dir / "run.json") and may_have_run):
            return
        for written in _files(self.subdir):
            if written not in self.files:
                written.unlink(missing_ok=True)
        if not self.existed:
            with contextlib.suppress(OSError):
                self.subdir.rmdir()
            return
        for file, content in self.files.items():
            if _read(file) == content:
                continue
            staged = file.with_name(f".{file.name}.{os.getpid()}.tmp")
            try:
                staged.write_bytes(content)
                os.replace(staged, file)
            except OSError:
                staged.unlink(missing_ok=True)
                file.write_bytes(content)
        for path, (accessed, modified) in self.times.items():  # putting a file back changes its times
            with contextlib.suppress(OSError):
                os.utime(path, ns=(accessed, modified))


_jobs_before: dict[str, HydraFiles] = {}  # a sweep's job directories that held a run before its launch


def remember_job_files(run_dir: Path, subdir: str | None) -> None:
    """A sweep job's directory (a fixed ``hydra.sweep.subdir``) holding a run before the launch: its Hydra
    files as they are, for ``jobs_files_before`` (a job found finished there does not run, and the files
    the launch's Hydra rewrote would say a config it never used)."""
    if (Path(run_dir) / "run.json").is_file():
        _jobs_before[os.path.abspath(run_dir)] = HydraFiles.before_hydra(Path(run_dir), subdir)


def jobs_files_before() -> dict[str, HydraFiles]:
    """The job directories remembered since the last call (each call starts again), by absolute path."""
    jobs = dict(_jobs_before)
    _jobs_before.clear()
    return jobs


def close_job_log(run_dir: Path) -> None:
    """No more lines into the job's log in ``run_dir`` (Hydra's file handler on the root logger)."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename).parent == Path(run_dir).absolute():
            root.removeHandler(handler)
            handler.close()


PILOT_SECTIONS = {"mode", "budget", "model", "data"}  # in every config.yaml pilot's Hydra writes


def another_apps_hydra(hydra_dir: Path, config: DictConfig) -> bool:
    """Whether ``hydra_dir`` (Hydra's files in a run directory) was written for another Hydra app (a
    pilot line that stopped before its run, whose files may be replaced, leaves pilot's config there):
    its record would be overwritten. A config.yaml cut short by a kill while Hydra wrote it (empty, or
    the first top-level keys of this line's config, in its order) is pilot's own aborted start."""
    config_file = hydra_dir / "config.yaml"
    if not config_file.is_file():
        return False
    try:
        text = config_file.read_text()
    except (OSError, UnicodeDecodeError):  # unreadable: not known to be pilot's
        return True
    try:
        loaded = OmegaConf.create(text) if text.strip() else None
    except Exception:  # noqa: BLE001 - cut mid-way: judged by its keys below
        loaded = None
    if isinstance(loaded, DictConfig) and PILOT_SECTIONS <= set(loaded.keys()):
        return False
    return not cut_short_pilot_config(text, config)


def cut_short_pilot_config(text: str, config: DictConfig) -> bool:
    """Whether ``text`` is the start of the config.yaml this line's Hydra writes: empty, or its complete
    top-level keys are the first keys of ``config`` (Hydra's section left out), in that order."""
    lines = text.splitlines()
    if lines and not text.endswith("\n"):
        lines = lines[:-1]  # the line the kill cut
    keys = [line.split(":", 1)[0] for line in lines if line[:1].strip() and ":" in line]
    if lines and not (lines[0][:1].strip() and ":" in lines[0]):
        return False  # a whole first line that is no top-level key: not the start of pilot's YAML
    own = [str(key) for key in config.keys() if key != "hydra"]
    return keys == own[: len(keys)]
