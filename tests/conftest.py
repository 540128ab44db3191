"""Shared fixtures: compose pilot configs on the CPU with a clean Hydra state per test."""

from __future__ import annotations

import atexit
import compileall
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig

from pilot.config import register

CONF_DIR = Path(__file__).resolve().parents[1] / "conf"
REPO_ROOT = CONF_DIR.parent
# every pilot, estimate and sweep the tests start (in this process or a child) journals here,
# never into the repository's sweeps/journal.md
if "PILOT_JOURNAL" not in os.environ:  # a folder per test process, removed when it ends (not left in /tmp)
    _journal_dir = tempfile.mkdtemp(prefix="pilot-journal-")
    atexit.register(shutil.rmtree, _journal_dir, ignore_errors=True)
    os.environ["PILOT_JOURNAL"] = str(Path(_journal_dir) / "journal.md")
# no estimate read from a store an earlier test filled (tests/test_estimate_store.py turns it on)
os.environ["PILOT_ESTIMATE_CACHE"] = "off"
# pytest-xdist runs N workers side by side: the tests run in a worker's own process use their share of
# the cores, as pilot's own thread choice would (torch's default, every core, oversubscribes: issue 17
# measured 6x slower beside one busy process). Tests that compare runs bit for bit pin run.threads.
if os.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    torch.set_num_threads(max(1, len(os.sched_getaffinity(0)) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])))


def pytest_sessionstart(session):
    """pilot's modules compiled once, before any test: where PYTHONDONTWRITEBYTECODE=1 (this machine sets it)
    every process a test starts (hundreds: each CLI run, its checks' and closing's children) compiled all of
    them again from source, about 0.25 s of CPU each (measured: a CLI test's CPU 15.0-15.7 s with them
    compiled, 16.1-16.9 s without). The .pyc files go where Python looks for them (``__pycache__``, ignored
    by git); one older than its source is not used."""
    if not hasattr(session.config, "workerinput"):  # the controlling process only, not each xdist worker
        compileall.compile_dir(REPO_ROOT / "pilot", quiet=1)


@pytest.fixture(autouse=True)
def _clean_hydra_and_threads():
    GlobalHydra.instance().clear()
    threads = torch.get_num_threads()
    yield
    GlobalHydra.instance().clear()
    torch.set_num_threads(threads)


def compose_config(overrides: list[str] = ()) -> DictConfig:
    """The config ``python -m pilot <overrides>`` would run, forced onto the CPU."""
    register()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=["run.device=cpu", *overrides])


@pytest.fixture
def no_launcher_variables(monkeypatch):
    """No RANK/WORLD_SIZE/MASTER_* of an outer launcher: pilot spawns the test's ranks itself."""
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def make_cfg() -> Callable[..., DictConfig]:
    return lambda *overrides: compose_config(list(overrides))


def run_pilot(run_dir, *overrides: str, fault: str | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    """``python -m pilot <overrides> hydra.run.dir=<run_dir>`` in a new process, as a user types it;
    ``fault``: PILOT_FAULT (pilot.faults). No launcher variables of an outer run leak in."""
    env = {k: v for k, v in os.environ.items() if k not in ("PILOT_FAULT", "RANK", "WORLD_SIZE")}
    if fault:
        env["PILOT_FAULT"] = fault
    return subprocess.run(
        [sys.executable, "-m", "pilot", *overrides, f"hydra.run.dir={run_dir}"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
