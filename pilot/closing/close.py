"""Closing a run (``close_run``: export, then the reload check in a new process) and its ``REPRODUCE.md``."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from pilot.child_process import JobRunner
from pilot.closing.export import export_with_controls
from pilot.closing.provenance import command_line, library_packages, plugin_provenance
from pilot.closing.reload import check_in_new_process
from pilot.data.task import TaskData
from pilot.models.adapter import ADAPTER_CONFIG, ADAPTER_WEIGHTS, BASE_FILE


def write_reproduce(
    run_dir: Path,
    record: dict[str, Any],
    provenance: dict[str, Any] | None = None,
    libraries: dict[str, str] | None = None,
) -> Path:
    """REPRODUCE.md: the commit, the command and, for a plug-in run (``provenance``, from
    ``plugin_provenance``), the search path, PYTHONPATH, user modules' hashes and package versions;
    ``libraries`` (``library_packages``): the versions of what pilot's own targets import, pinned too."""
    revision = record.get("code_revision") or {}
    command = command_line(list(record.get("overrides") or []), provenance)
    if launched := (provenance or {}).get("launched_in"):  # a relative data.path starts there, not in the checkout
        command = f"cd {shlex.quote(launched)}  # where it was launched\n{command}"
    dirty = " (the tree had uncommitted changes: they are not in this commit)" if revision.get("dirty") else ""
    commit = revision.get("commit")
    code = (
        f"Code: commit `{commit}`{dirty}."
        if commit
        else f"Code: no commit recorded ({revision.get('note') or 'not a git checkout'}): use the same pilot source."
    )
    checkout = f"git checkout {commit}\n" if commit else ""
    text = f"""# Reproduce run {record.get("run_id")}

{code}

```bash
{checkout}pip install "torch==2.13.0" -e ".[test]"{_pip_packages(provenance, libraries)}
{command}
```

Seed {record.get("seed")} is part of the config; {_config_file(Path(run_dir))}
{_model_folder(record)}{_threads(record)}{_forced_resumes(record, provenance)}{_code_changed(record)}{_outputs(record)}
{_plugin_section(provenance)}"""
    path = Path(run_dir) / "REPRODUCE.md"
    path.write_text(text)
    return path


def write_run_reproduce(run_dir: Path, record: dict[str, Any], cfg: DictConfig, searchpath: Any = ()) -> Path:
    """REPRODUCE.md of a run of ``cfg``: what a plug-in run adds and the libraries pilot's own targets import."""
    return write_reproduce(run_dir, record, plugin_provenance(cfg, list(searchpath or [])), library_packages(cfg))


def _model_folder(record: dict[str, Any]) -> str:
    """The model read from ``model.path``, by its files' fingerprint: a folder saved over since starts
    another run (``pilot.models.base_files``)."""
    folder = record.get("model_path") or {}
    if folder.get("changed_while_read"):
        return (
            f"The model was read from `{folder.get('path')}`, whose files changed while the run read them "
            f"({folder['changed_while_read']}): which model each step read has no name; a rerun may differ.\n\n"
        )
    if not folder.get("fingerprint"):
        return ""
    return (
        f"The model was read from `{folder.get('path')}`, whose files ({folder.get('of') or 'every file'}) had the "
        f"fingerprint `{folder['fingerprint']}` (names, sizes and sampled blocks: `pilot.models.base_files`); a folder "
        "saved over since gives another run.\n\n"
    )


def _config_file(run_dir: Path) -> str:
    """Where the run's config is: written resolved (a pilot before 2026-12-07 kept Hydra's composition alone)."""
    if (run_dir / "config.yaml").exists():
        return "the resolved config is `config.yaml`."
    return "the config as Hydra composed it is `.hydra/config.yaml` (its overrides: `.hydra/overrides.yaml`)."


def _threads(record: dict[str, Any]) -> str:
    """CPU results depend on the thread count: the one the run chose (run.threads=0 reads the machine) and
    any a resume changed, so a rerun can pin it and knows when it cannot be bit-identical."""
    count = (record.get("threads") or {}).get("count")
    changed = [r for r in record.get("resumes") or [] if r.get("threads_changed")]
    lines = []
    chosen = not any(str(o).startswith("run.threads=") for o in record.get("overrides") or [])  # the first launch's
    if changed:  # the record's count is the last attempt's: the run began at the first change's "from" count
        first = str(changed[0]["threads_changed"]).split("->")[0].strip()
        lines.append(
            f"The run started at {first} CPU thread(s)"
            + (", chosen by run.threads=0 from the machine then" if chosen else "")
            + ", and a resume changed the count: no single run.threads repeats it bit for bit on a CPU."
        )
    elif count is not None and chosen:
        lines.append(
            f"The run trained at {count} CPU thread(s), chosen by run.threads=0 from the machine then: add "
            f"`run.threads={count}` to repeat it bit for bit on a CPU."
        )
    lines += [
        f"Resumed at update {r.get('from_update')} at another thread count ({r['threads_changed'].split(':')[0]}): "
        "a rerun at one count is correct but not bit-identical to this run."
        for r in changed
    ]
    return "\n".join(lines) + "\n\n" if lines else ""


def _code_changed(record: dict[str, Any]) -> str:
    """A run resumed under edited code of yours (``checkpoint.force_resume``): the files above are the code it
    ended with; which files changed, and from which update."""
    changed = [r for r in record.get("resumes") or [] if r.get("code_changed")]
    if not changed:
        return ""
    lines = [
        "This run was resumed under changed code of yours (`checkpoint.force_resume=true`): the files under",
        "'Your code and files' below are the code it ended with; a rerun repeats that code alone. Changed:",
    ]
    for resume in changed:
        files = "; ".join(
            f"`{c['file']}` sha256 {str(c['sha256_before'])[:12]} -> {str(c['sha256_now'])[:12]}"
            for c in resume["code_changed"]
        )
        lines.append(f"- from update {resume.get('takes_effect_from_update')}: {files}")
    return "\n".join(lines) + "\n\n"


def _forced_resumes(record: dict[str, Any], provenance: dict[str, Any] | None) -> str:
    """A run resumed under a changed config (``checkpoint.force_resume``): the command above is the config
    it ended with; what each earlier part ran under, and from which update the change took effect."""
    forced = [r for r in record.get("resumes") or [] if r.get("forced_despite")]
    if not forced:
        return ""
    lines = [
        "This run was resumed under a changed config (`checkpoint.force_resume=true`): the command above",
        "is the config it ended with. Before:",
    ]
    first = 1
    for resume in forced:
        before = command_line(list(resume.get("overrides_before") or []), provenance)
        lines.append(
            f"- updates {first}-{resume.get('from_update')}: `{before}`; from update "
            f"{resume.get('takes_effect_from_update')}: " + "; ".join(resume["forced_despite"])
        )
        first = int(resume.get("takes_effect_from_update") or first)
    return "\n".join(lines) + "\n\n"


def _outputs(record: dict[str, Any]) -> str:
    """What the run left to compare a rerun with: a training run's metrics and export, a pilot's report."""
    if record.get("mode") == "pilot":
        return (
            "The pilot's verdicts: `report.md` (and `run.json`); its measured phases: `phases.csv`; what\n"
            "reaches the loss: `examples.txt`; the estimate and the rentals: `choice_sheet.md`."
        )
    return (
        f"Raw metrics: `metrics.jsonl`. Evaluation artefact: {_artefact(record)} (its config:\n"
        "`export/config.yaml`); the rerun of its control inputs: `export/reload_check.json`, or\n"
        "`export/reload_check.error.txt` when the reload process gave no verdict (`python -m pilot.closing\n"
        "export` repeats it)."
    )


def _artefact(record: dict[str, Any]) -> str:
    weights = ((record.get("closing") or {}).get("weights") or {}).get("file", "export/model.safetensors")
    if not weights.endswith(ADAPTER_WEIGHTS):
        return f"`{weights}`"
    return (
        f"the adapter alone, `{weights}` with `export/{ADAPTER_CONFIG}` (peft's format: "
        f"`PeftModel.from_pretrained(base, 'export')`), on the base named in `export/{BASE_FILE}` "
        "(its config, seed and the sha256 of its weights)"
    )


def _pip_packages(provenance: dict[str, Any] | None, libraries: dict[str, str] | None = None) -> str:
    """A second pip line pinning the packages a plug-in run's targets and tokenizer came from, and those
    pilot's own targets import (``libraries``: transformers for a Hugging Face model)."""
    packages = dict(sorted({**(libraries or {}), **((provenance or {}).get("packages") or {})}.items()))
    pins = " ".join(
        f'"{name}=={str(found).split("+")[0]}"'  # 2.13.0+cpu: no such build on a registry, nor on a GPU machine
        for name, found in packages.items()
        if name.lower() not in INSTALLED_FIRST
    )
    return f"\npip install {pins}" if pins else ""


# what the first pip line installs: torch (its build for the machine) and pilot itself, from the checkout;
# pinned again as the run found them ("torch==2.13.0+cpu", "pilot==0.1.0"), pip would fetch another build
INSTALLED_FIRST = frozenset({"torch", "pilot"})


def _plugin_section(provenance: dict[str, Any] | None) -> str:
    if not provenance:
        return ""
    lines = ["", "## Your code and files", ""]
    lines.append(f"Launched in `{provenance['launched_in']}` (relative paths in the overrides start there).")
    lines.append(f"- `hydra.searchpath`: {', '.join(f'`{p}`' for p in provenance['searchpath']) or 'none'}")
    lines.append(f"- `PYTHONPATH` entries: {', '.join(f'`{p}`' for p in provenance['pythonpath']) or 'none'}")
    for target, module in provenance["modules"].items():
        lines.append(f"- `{target}`: `{module['file']}` sha256 `{module['sha256']}`")
    for path, digest in (provenance.get("helper_modules") or {}).items():
        lines.append(f"- imported by them: `{path}` sha256 `{digest}`")
    for name, found in provenance["packages"].items():
        lines.append(f"- package `{name}` {found}")
    for path, digest in provenance["files"].items():
        lines.append(f"- file `{path}` sha256 `{digest}`")
    for key, named in (provenance.get("data_settings") or {}).items():
        lines.append(
            f"- `{key}`: `{named['path']}` fingerprint `{named['fingerprint']}` (names, sizes and sampled blocks: "
            "`pilot.file_fingerprint`; a resume compares it)"
        )
    lines.append("")
    lines.append("Check a module or file before rerunning: `sha256sum <file>` must print the hash above.")
    return "\n".join(lines) + "\n"


def close_run(
    model: torch.nn.Module, task: TaskData, cfg: DictConfig, run_dir: Path, runner: JobRunner | None = None
) -> dict[str, Any]:
    """Export, then the reload check in a new process (``runner``: one started earlier, see
    ``pilot.child_process``); its verdict, plus what the export holds (``weights``: the file and its
    size, the adapter alone for an adapter run)."""
    export_dir = Path(run_dir) / "export"
    weights = export_with_controls(model, task, cfg, export_dir)
    closing = check_in_new_process(export_dir, cfg, runner=runner)
    closing["weights"] = {"file": f"export/{weights.name}", "bytes": weights.stat().st_size}
    closing["reason"] += f"; export/{weights.name}: {weights.stat().st_size:,} bytes"
    return closing
