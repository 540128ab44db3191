"""Reading the pilot's run directory (``load_run``): environment.json, requirements.lock, run.json, the
run's config (verified against run.json's config_hash) and the rental the choice sheet chose."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from pilot.closing.blocked_targets import code_running
from pilot.environment.errors import LockUnreadable
from pilot.environment.files import FACTS_FILE, LOCK_FILE, read_lock
from pilot.environment.targets import config_targets
from pilot.errors import PilotError, error_line
from pilot.run_record import config_hash

CONFIG_FILES = ("config.yaml", "export/rank0/config.yaml", ".hydra/config.yaml")  # resolved ones first


class RunDirRefused(PilotError):
    """The run directory cannot be compared: missing, not a pilot's, or its config is refused."""


@dataclass
class PilotRun:
    """What the pilot left in its run directory."""

    directory: Path
    facts: dict[str, Any]
    lock: dict[str, tuple[str, str, bool]]
    record: dict[str, Any]
    cfg: DictConfig
    config_source: str
    planned: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


def _read_json(path: Path, required: bool) -> dict[str, Any]:
    if not path.exists() and not required:
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise LockUnreadable(
            f"{path} cannot be read ({error_line(error)}). Fix: restore the file the pilot wrote, or rerun the pilot."
        ) from None
    if not isinstance(data, dict):
        raise LockUnreadable(f"{path} is not a JSON object. Fix: restore the file the pilot wrote.")
    return data


def _load_config(directory: Path, record: dict[str, Any]) -> tuple[DictConfig, str]:
    """The run's config: the first file that hashes to run.json's config_hash; without run.json,
    the first that exists (said so)."""
    tried = []
    for name in CONFIG_FILES:
        path = directory / name
        if not path.is_file():
            continue
        try:
            cfg = OmegaConf.load(path)
            digest = config_hash(cfg) if record.get("config_hash") else None
        except Exception as error:  # not YAML, a broken interpolation: try the next file
            tried.append(f"{name} ({type(error).__name__})")
            continue
        if not isinstance(cfg, DictConfig):
            tried.append(f"{name} (not a mapping)")
            continue
        if digest is None:
            return cfg, f"{name} (not verified: no config_hash in run.json)"
        if digest == record["config_hash"]:
            return cfg, f"{name} (matches run.json's config_hash {digest})"
        tried.append(f"{name} (hash {digest} != {record['config_hash']})")
    looked = ", ".join(tried) or "none of " + ", ".join(CONFIG_FILES) + " exists"
    raise RunDirRefused(
        f"{directory}: no config of the run to compare with ({looked}). Fix: give the pilot's "
        "run directory as it was written (with its export/ or .hydra/ folder)."
    )


def _refuse_code_running(cfg: DictConfig, source: str) -> None:
    """env_check builds the model and the task from the run's config: a target that runs code or touches
    files by name (os.system, torch.load, ...) is refused, as the closing refuses it."""
    blocked = [
        f"{key}={target}: {why}"
        for key, target in config_targets(cfg).items()
        if isinstance(target, str) and (why := code_running(target))
    ]
    if blocked:
        raise RunDirRefused(f"{source} names targets env_check never builds: " + "; ".join(blocked))


def _planned(directory: Path, cfg: DictConfig) -> dict[str, Any] | None:
    """The rental the pilot's choice sheet chose (memory_estimate.json), with its catalog entry."""
    estimate = _read_json(directory / "memory_estimate.json", required=False)
    chosen = estimate.get("chosen") if isinstance(estimate.get("chosen"), dict) else None
    if not chosen or not chosen.get("gpu"):
        return None
    entry = OmegaConf.select(cfg, f"rental.catalog.{chosen['gpu']}", default=None)
    entry = OmegaConf.to_container(entry, resolve=True) if isinstance(entry, DictConfig) else {}
    return {
        "gpu": chosen["gpu"],
        "count": int(chosen.get("count") or 1),
        "device_name": entry.get("device_name", ""),
        "memory_gib": entry.get("memory_gib"),
    }


# the facts env_check reads from the pilot's environment.json, each section's keys it reads by name
READ_FACTS = {
    "python": ("version",),
    "torch": ("version", "build", "cuda", "hip"),
    "cuda": ("runtime", "driver"),
    "device": (),
    "targets": (),
}


def load_run(directory: Path) -> PilotRun:
    directory = Path(directory)
    if not directory.is_dir():
        what = "a file, not a directory" if directory.exists() else "no such directory"
        raise RunDirRefused(
            f"{directory}: {what}. Fix: the pilot's run directory "
            "(outputs/<date>/<time>-<suffix>), copied to this machine."
        )
    missing = [name for name in (FACTS_FILE, LOCK_FILE) if not (directory / name).is_file()]
    if missing:
        raise RunDirRefused(
            f"{directory} holds no {' and no '.join(missing)}: not a pilot run directory, or a "
            "pilot from before the environment step. Fix: give a pilot's run directory, or "
            "rerun the pilot (python -m pilot ...) to record its environment."
        )
    facts = _read_json(directory / FACTS_FILE, required=True)
    for key, inner in READ_FACTS.items():
        section = facts.get(key)
        if not isinstance(section, list if key == "targets" else dict):
            lacking = [key]
        else:
            lacking = [f"{key}.{name}" for name in inner if name not in section]
        if lacking:
            raise LockUnreadable(
                f"{directory / FACTS_FILE} has no '{lacking[0]}' as the environment step writes it: "
                "not written by it, or edited. Fix: restore the file, or rerun the pilot."
            )
    record = _read_json(directory / "run.json", required=False)
    cfg, source = _load_config(directory, record)
    _refuse_code_running(cfg, source)
    return PilotRun(directory, facts, read_lock(directory / LOCK_FILE), record, cfg, source, _planned(directory, cfg))


def multi_gpu(run: PilotRun) -> bool:
    """Whether the campaign runs on several GPUs: replicas in the config, or a planned rental of several."""
    return int(run.cfg.distributed.replicas) > 1 or bool(run.planned and run.planned["count"] > 1)
