"""The run directory's identity files: ``run.json`` and ``metrics.jsonl`` (DESIGN.md, output contract)."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Dict, Iterable, Optional

from omegaconf import DictConfig, OmegaConf

# settings that never change what is trained: a resume ignores them, and so does the variant key
NOT_DEFINING = ("run.", "pilot.", "checkpoint.", "closing.", "campaign.", "mode", "distributed.master_port")
DEFINING_EXCLUDED = {"seed"}  # the variant key also leaves these out: seeds repeat a variant


def new_run_id() -> str:
    """Time-sortable and unique: the second plus 48 random bits (never reused)."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:12]}"


def override_key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")




def variant_key(overrides: Iterable[str], cfg: Optional[DictConfig] = None) -> str:
    """Stable key of the overrides that define a variant.

    Seed, hydra.* and settings that do not change the experiment (run.*, pilot.*,
    checkpoint.*, closing.*, campaign.*, mode) are left out. With ``cfg``, a value is
    written as resolved, so ``optim.lr=2e-4`` and ``optim.lr=0.0002`` are one variant.
    """
    kept = []
    for override in overrides:
        key = override_key(override)
        if key in DEFINING_EXCLUDED or key.startswith(("hydra",) + NOT_DEFINING):
            continue
        value = OmegaConf.select(cfg, key, default=None) if cfg is not None and "." in key else None
        if isinstance(value, (int, float, str, bool)) and not isinstance(value, DictConfig):
            kept.append(f"{key}={value}")
        else:
            kept.append(override.lstrip("+~"))
    return ",".join(sorted(kept)) or "default"


def find_parent(roots: Iterable[Path], variant: str, seed: int, exclude_under: Optional[Path]) -> Optional[str]:
    """The newest earlier run of the same variant and seed: the run a relaunch relaunches."""
    newest: Optional[tuple] = None
    for root in roots:
        root = Path(root)
        if not root.is_dir():
            continue
        for path in root.glob("**/run.json"):
            if exclude_under is not None and exclude_under in path.parents:
                continue  # jobs of the same sweep are siblings, not relaunches
            try:
                data = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError):
                continue
            if data.get("variant") == variant and data.get("seed") == seed and data.get("mode") != "pilot":
                stamp = (data.get("started_at") or "", data.get("run_id") or "")
                if newest is None or stamp > newest[0]:
                    newest = (stamp, data.get("run_id"))
    return newest[1] if newest else None


def config_hash(cfg: DictConfig) -> str:
    container = OmegaConf.to_container(cfg, resolve=True, enum_to_str=True)
    blob = json.dumps(container, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def code_revision() -> Dict[str, Any]:
    """The git commit of the pilot checkout and whether its tree had uncommitted changes."""
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                                text=True, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                capture_output=True, text=True, check=True).stdout
        return {"commit": commit, "dirty": bool(status.strip())}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None, "note": "not a git checkout"}


def write_json_atomic(path: Path, data: Dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w") as handle:
        json.dump(data, handle, indent=2, default=str)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


class RunRecord:
    """Owns run.json and metrics.jsonl of one run directory (written by rank 0 only)."""

    def __init__(self, run_dir: Path, cfg: DictConfig, overrides: Iterable[str],
                 parent_id: Optional[str] = None, resume: Optional[Dict[str, Any]] = None,
                 mode: str = "train", sweep_dir: Optional[Path] = None):
        """A new run, or (``resume`` given, run.json present) the same run continued."""
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        overrides = list(overrides)
        existing = self.run_dir / "run.json"
        if resume is not None and existing.exists():
            self.data = json.loads(existing.read_text())
            self.data.setdefault("resumes", []).append(
                {**resume, "previous_status": self.data.get("status"),
                 "at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
            self.data.update(status="running", stop_cause=None, error=None)
            self._set_aside_metrics_after(int(resume.get("from_update", 0)))
            self.save()
            self.metrics = (self.run_dir / "metrics.jsonl").open("a")
            return
        variant = variant_key(overrides, cfg)
        if parent_id is None and mode == "train":
            roots = [OmegaConf.select(cfg, "campaign.run_root", default="outputs"),
                     OmegaConf.select(cfg, "campaign.sweep_root", default="sweeps")]
            parent_id = find_parent(roots, variant, int(cfg.seed), sweep_dir)
        self.data: Dict[str, Any] = {
            "run_id": new_run_id(), "parent_id": parent_id, "variant": variant, "mode": mode,
            "seed": int(cfg.seed), "status": "running", "stop_cause": None,
            "overrides": overrides, "config_hash": config_hash(cfg),
            "code_revision": code_revision(), "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        self.save()
        self.metrics = (self.run_dir / "metrics.jsonl").open("a")

    def _set_aside_metrics_after(self, update: int) -> None:
        """Rows written after the checkpoint are redone: move them to metrics.discarded.jsonl
        (kept, never deleted), so metrics.jsonl reads as one uninterrupted run."""
        path = self.run_dir / "metrics.jsonl"
        if not path.exists():
            return
        kept, discarded = [], []
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:  # a line cut by the kill
                discarded.append(line)
                continue
            (kept if row.get("update", 0) <= update else discarded).append(line)
        if discarded:
            with (self.run_dir / "metrics.discarded.jsonl").open("a") as handle:
                handle.write("".join(line + "\n" for line in discarded))
        tmp = path.with_name(".metrics.jsonl.tmp")
        tmp.write_text("".join(line + "\n" for line in kept))
        os.replace(tmp, path)

    def save(self) -> None:
        write_json_atomic(self.run_dir / "run.json", self.data)

    def update(self, **fields: Any) -> None:
        self.data.update(fields)
        self.save()

    def log_metrics(self, row: Dict[str, Any]) -> None:
        self.metrics.write(json.dumps(row) + "\n")
        self.metrics.flush()

    def finish(self, status: str, stop_cause: Optional[str], **fields: Any) -> None:
        self.metrics.close()
        self.update(status=status, stop_cause=stop_cause,
                    finished_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"), **fields)
