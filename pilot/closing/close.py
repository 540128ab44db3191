"""Closing a run (``close_run``: export, then the reload check in a new process) and its ``REPRODUCE.md``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from pilot.closing.export import export_with_controls
from pilot.closing.provenance import command_line
from pilot.closing.reload import check_in_new_process
from pilot.data.task import TaskData


def write_reproduce(run_dir: Path, record: dict[str, Any], provenance: dict[str, Any] | None = None) -> Path:
    """REPRODUCE.md: the commit, the command and, for a plug-in run (``provenance``, from
    ``plugin_provenance``), the search path, PYTHONPATH, user modules' hashes and package versions."""
    revision = record.get("code_revision") or {}
    command = command_line(list(record.get("overrides") or []), provenance)
    dirty = " (the tree had uncommitted changes: they are not in this commit)" if revision.get("dirty") else ""
    text = f"""# Reproduce run {record.get("run_id")}

Code: commit `{revision.get("commit")}`{dirty}.

```bash
git checkout {revision.get("commit")}
pip install "torch==2.13.0" -e ".[test]"{_pip_packages(provenance)}
{command}
```

Seed {record.get("seed")} is part of the config; the resolved config is `config.yaml`
(and `export/config.yaml`). Raw metrics: `metrics.jsonl`. Evaluation artefact:
`export/model.safetensors`; the rerun of its control inputs: `export/reload_check.json`
(`python -m pilot.closing export` repeats it).
{_plugin_section(provenance)}"""
    path = Path(run_dir) / "REPRODUCE.md"
    path.write_text(text)
    return path


def _pip_packages(provenance: dict[str, Any] | None) -> str:
    """A second pip line pinning the packages a plug-in run's targets and tokenizer came from."""
    packages = (provenance or {}).get("packages") or {}
    if not packages:
        return ""
    pins = " ".join(f'"{name}=={found}"' for name, found in packages.items())
    return f"\npip install {pins}"


def _plugin_section(provenance: dict[str, Any] | None) -> str:
    if not provenance:
        return ""
    lines = ["", "## Plug-in code and files", ""]
    lines.append(f"Launched in `{provenance['launched_in']}` (relative paths in the overrides start there).")
    lines.append(f"- `hydra.searchpath`: {', '.join(f'`{p}`' for p in provenance['searchpath']) or 'none'}")
    lines.append(f"- `PYTHONPATH` entries: {', '.join(f'`{p}`' for p in provenance['pythonpath']) or 'none'}")
    for target, module in provenance["modules"].items():
        lines.append(f"- `{target}`: `{module['file']}` sha256 `{module['sha256']}`")
    for name, found in provenance["packages"].items():
        lines.append(f"- package `{name}` {found}")
    for path, digest in provenance["files"].items():
        lines.append(f"- file `{path}` sha256 `{digest}`")
    lines.append("")
    lines.append("Check a module or file before rerunning: `sha256sum <file>` must print the hash above.")
    return "\n".join(lines) + "\n"


def close_run(model: torch.nn.Module, task: TaskData, cfg: DictConfig, run_dir: Path) -> dict[str, Any]:
    export_dir = Path(run_dir) / "export"
    export_with_controls(model, task, cfg, export_dir)
    return check_in_new_process(export_dir, cfg)
