"""Closing a run (``close_run``: export, then the reload check in a new process) and its ``REPRODUCE.md``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from pilot.closing.export import export_with_controls
from pilot.closing.reload import check_in_new_process
from pilot.data.task import TaskData


def write_reproduce(run_dir: Path, record: dict[str, Any]) -> Path:
    revision = record.get("code_revision") or {}
    overrides = " ".join(record.get("overrides") or [])
    dirty = " (the tree had uncommitted changes: they are not in this commit)" if revision.get("dirty") else ""
    text = f"""# Reproduce run {record.get("run_id")}

Code: commit `{revision.get("commit")}`{dirty}.

```bash
git checkout {revision.get("commit")}
pip install "torch==2.13.0" -e ".[test]"
python -m pilot {overrides}
```

Seed {record.get("seed")} is part of the config; the resolved config is `config.yaml`
(and `export/config.yaml`). Raw metrics: `metrics.jsonl`. Evaluation artefact:
`export/model.safetensors`; the rerun of its control inputs: `export/reload_check.json`
(`python -m pilot.closing export` repeats it).
"""
    path = Path(run_dir) / "REPRODUCE.md"
    path.write_text(text)
    return path


def close_run(model: torch.nn.Module, task: TaskData, cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    export_dir = Path(run_dir) / "export"
    export_with_controls(model, task, cfg, export_dir)
    return check_in_new_process(export_dir, cfg)
