"""Closing a run: export, reload in a fresh process, rerun control inputs, archive.

``close_run`` exports the artefact meant for evaluation (safetensors weights +
resolved config), records the outputs of fixed control inputs (the first
validation examples) *before* export, then starts a new Python process
(``python -m pilot.closing <export dir>``) that rebuilds the model from the
exported config, loads the weights through safetensors, reruns the control
inputs and compares: exact on CPU fp32, ``closing.rtol/atol`` otherwise.
The run directory keeps the artefact, the resolved config, the code revision
(run.json), the raw metrics and ``REPRODUCE.md``.

The exported ``config.yaml`` is a file on disk, so the reload treats it as untrusted:
before anything is built it must equal a *reference* config -- the one the parent
process writes for it (``--reference-config``), or, when a user runs the reload by hand,
the run's own ``config.yaml`` next to the export, checked against ``config_hash`` in
``run.json``. A ``_target_`` (at any depth, in lists, ``_args_``, ``_partial_`` nodes)
that is not the reference's at the same key, and not named by ``--allow-target``, is
refused, naming the key; known code-running callables (``os.*``, ``subprocess.*``,
``torch.load``, ``builtins.*`` ...) are refused even when allowed. Exit status:
0 pass, 1 fail, 2 refused.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from safetensors.torch import load_file, save_file

from pilot.checkpoint import export_artefact
from pilot.data.task import TaskData, move_to
from pilot.engine.build import build_model
from pilot.errors import PilotError, UnsafeFileError
from pilot.run_record import config_hash

CONTROL_FILE = "control.safetensors"
RESULT_FILE = "reload_check.json"
EXPORT_FILES = ("config.yaml", "model.safetensors", CONTROL_FILE)
# Never instantiated from an exported config, even when allowed: they run code, load pickles,
# write or delete files, or reach the network. A name matches itself and everything under it;
# the object a target resolves to is checked too (``os.system`` is ``posix.system``).
CODE_RUNNING = (
    "builtins",
    "os",
    "posix",
    "nt",
    "posixpath",
    "ntpath",
    "subprocess",
    "_posixsubprocess",
    "pty",
    "sys",
    "importlib",
    "pkgutil",
    "zipimport",
    "runpy",
    "code",
    "codeop",
    "inspect",
    "types",
    "gc",
    "functools",
    "operator",
    "threading",
    "_thread",
    "multiprocessing",
    "asyncio",
    "signal",
    "ctypes",
    "_ctypes",
    "pickle",
    "_pickle",
    "copyreg",
    "marshal",
    "shelve",
    "dill",
    "cloudpickle",
    "joblib",
    "shutil",
    "pathlib",
    "io",
    "_io",
    "tempfile",
    "zipfile",
    "tarfile",
    "sqlite3",
    "socket",
    "urllib",
    "http",
    "webbrowser",
    "pdb",
    "bdb",
    "timeit",
    "trace",
    "cProfile",
    "profile",
    "site",
    "yaml",
    "hydra",
    "omegaconf",
    "numpy.load",
    "numpy.save",
    "numpy.savez",
    "numpy.savetxt",
    "numpy.lib.npyio",
    "numpy.ctypeslib",
    "pandas.read_pickle",
    "torch.load",
    "torch.save",
    "torch.serialization",
    "torch.hub",
    "torch.jit",
    "torch.package",
    "torch.utils.cpp_extension",
    "torch.ops",
    "torch.classes",
    "torch.library",
    "torch._C",
    "torch.multiprocessing",
    "torch.distributed",
    "safetensors.torch.save_file",
    "pilot.closing",
    "pilot.checkpoint",
)


@torch.no_grad()
def control_outputs(model: torch.nn.Module, task: TaskData, cfg: DictConfig) -> dict[str, torch.Tensor]:
    """Inputs (the collated control batch) and the model's outputs on them, as plain tensors."""
    items = (
        task.encoded("val")[: int(cfg.closing.control_examples)]
        or task.encoded("train")[: int(cfg.closing.control_examples)]
    )
    batch = task.collate(items)
    model.eval()
    device = next(model.parameters()).device
    output = task.forward(model, move_to(batch, device))
    tensors = {f"input.{k}": v.contiguous() for k, v in batch.items() if torch.is_tensor(v)}
    tensors["output"] = output.detach().float().cpu().contiguous()
    return tensors


def export_with_controls(model: torch.nn.Module, task: TaskData, cfg: DictConfig, directory: Path) -> Path:
    directory = Path(directory)
    weights = export_artefact(model, cfg, directory)
    save_file(control_outputs(model, task, cfg), str(directory / CONTROL_FILE))
    return weights


# --------------------------------------------------------------------------- the exported config's targets
class ExportConfigRefused(UnsafeFileError):
    """The exported config differs from its reference or names code the reload will not run."""


@dataclass(frozen=True)
class ReloadPolicy:
    """What the reload may instantiate: the reference config's targets, key by key, and the
    targets the user allowed at any key. ``reference`` is None when none could be trusted
    (``unverified`` says why): then only allowed targets pass."""

    reference: dict[str, Any] | None  # flattened reference config (full key -> value)
    source: str  # where the reference came from, for messages
    allowed_targets: frozenset[str] = frozenset()
    unverified: str | None = None


def flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    """Leaves of a plain container by full key: ``model.hidden``, ``a.b[0]._target_``.
    A ``_target_`` is a leaf whatever it holds. Two leaves with one full key (a key named
    ``"model._target_"`` next to ``model: {_target_: ...}``) would hide one of them: refused."""
    if isinstance(node, dict) and node:
        children = [
            (f"{prefix}.{key}" if prefix else str(key), value, key == "_target_") for key, value in node.items()
        ]
    elif isinstance(node, list) and node:
        children = [(f"{prefix}[{index}]", item, False) for index, item in enumerate(node)]
    else:
        return {prefix: node}
    flat: dict[str, Any] = {}
    for full, value, is_leaf in children:
        for key, leaf in ({full: value} if is_leaf else flatten(value, full)).items():
            if key in flat:
                raise ExportConfigRefused(
                    f"two entries of the config are both named {key} (a key with a "
                    "dot or brackets in its name); refused"
                )
            flat[key] = leaf
    return flat


def is_target_key(key: str) -> bool:
    return key == "_target_" or key.endswith("._target_")


def _same(a: Any, b: Any) -> bool:
    return a == b or (a != a and b != b)  # NaN equals NaN here


def blocked_under(name: str) -> str | None:
    """The entry of CODE_RUNNING that ``name`` is, or lies under."""
    return next((blocked for blocked in CODE_RUNNING if name == blocked or name.startswith(blocked + ".")), None)


def code_running(target: str) -> str | None:
    """Why a ``_target_`` string is refused by name alone: a blocked name, or a dunder or
    malformed part (``x.__globals__``, ``a..b``) that could reach one."""
    if any(not part.isidentifier() or part.startswith("__") for part in target.split(".")):
        return f"'{target}' (a private or malformed name)"
    return blocked_under(target)


def _home(obj: Any) -> str:
    """The dotted name an object lives under (``os.system`` -> ``posix.system``)."""
    if isinstance(obj, ModuleType):
        return obj.__name__
    owner = getattr(obj, "__self__", None)
    if getattr(obj, "__module__", None) is None and owner is not None and not isinstance(owner, ModuleType):
        return _home(type(owner))
    return f"{getattr(obj, '__module__', None) or 'builtins'}.{getattr(obj, '__qualname__', '')}".rstrip(".")


def resolves_to_code(target: str) -> str | None:
    """Import ``target`` the way Hydra's ``_locate`` does, checking every object on the way;
    called only for targets already allowed."""
    parts = target.split(".")
    obj: Any = importlib.import_module(parts[0])
    homes = [_home(obj)]
    for index in range(1, len(parts)):
        try:
            obj = getattr(obj, parts[index])
        except AttributeError:
            obj = importlib.import_module(".".join(parts[: index + 1]))
        homes.append(_home(obj))
    return next((blocked for home in homes if (blocked := blocked_under(home))), None)


def refusals(container: dict[str, Any], policy: ReloadPolicy) -> list[str]:
    """Every reason to refuse the exported config (empty: it may be instantiated). Imports
    nothing until every target is known to be allowed."""
    flat, problems = flatten(container), []
    reference = policy.reference
    for key, target in flat.items():
        if not is_target_key(key):
            continue
        blocked = code_running(target) if isinstance(target, str) else None
        expected = reference.get(key) if reference is not None else None
        if not isinstance(target, str):
            problems.append(f"{key} = {target!r}: not a dotted name")
        elif blocked:
            problems.append(
                f"{key} = {target}: {blocked} runs code or touches files; never instantiated, even when allowed"
            )
        elif target != expected and target not in policy.allowed_targets:
            why = (
                f"the reference has {expected or 'no _target_ there'}"
                if reference is not None
                else f"no reference to allow it ({policy.unverified})"
            )
            problems.append(f"{key} = {target}: {why}; pass --allow-target {target} if you trust it")
    if reference is not None:  # every other value must be the reference's too (closing.rtol included)
        absent = "<absent>"
        for key in sorted(set(flat) | set(reference)):
            if not (is_target_key(key) and key in flat) and not _same(
                flat.get(key, absent), reference.get(key, absent)
            ):
                problems.append(
                    f"{key}: {flat.get(key, absent)!r} here, {reference.get(key, absent)!r} in the reference"
                )
    if problems:
        return problems
    for key, target in flat.items():  # all allowed by name: now check what they resolve to
        if is_target_key(key):
            try:
                blocked = resolves_to_code(target)
            except Exception as error:  # ImportError, or an import that fails on its own
                problems.append(f"{key} = {target}: cannot be imported ({type(error).__name__}: {error})")
                continue
            if blocked:
                problems.append(
                    f"{key} = {target}: resolves to {blocked}, which runs code or touches "
                    "files; never instantiated, even when allowed"
                )
    return problems


def read_config(path: Path) -> dict[str, Any]:
    """A config file as a plain dict, without resolving anything: pilot writes its configs
    resolved, so an interpolation (``${oc.decode:...}`` could build a ``_target_``) is refused."""
    try:
        cfg = OmegaConf.load(path)
    except Exception as error:  # missing, not YAML, not an OmegaConf config
        raise PilotError(
            f"{path} cannot be read as a config: {type(error).__name__}: "
            f"{str(error).splitlines()[0][:200] if str(error) else ''}"
        ) from None
    if not isinstance(cfg, DictConfig):
        raise ExportConfigRefused(f"{path} is not a mapping; refused")
    container = OmegaConf.to_container(cfg, resolve=False)
    interpolations = [
        f"{key} = {value!r}" for key, value in flatten(container).items() if isinstance(value, str) and "${" in value
    ]
    if interpolations:
        raise ExportConfigRefused(
            f"{path} holds interpolations, which pilot never writes (its configs are "
            f"saved resolved); refused, nothing was resolved: {'; '.join(interpolations)}"
        )
    return container


def load_export_config(directory: Path, policy: ReloadPolicy) -> DictConfig:
    """The export's config, once it passed every check; raises ``ExportConfigRefused`` otherwise."""
    path = Path(directory) / "config.yaml"
    container = read_config(path)
    problems = refusals(container, policy)
    if problems:
        compared = f"compared with {policy.source}" if policy.reference is not None else "no reference"
        raise ExportConfigRefused(
            f"{path} refused ({compared}); nothing was built or loaded:\n  - "
            + "\n  - ".join(problems)
            + "\nFix: restore the export from the run that wrote it; pass --allow-target MODULE.ATTR only "
            "for a target you trust (values that differ cannot be allowed)."
        )
    return OmegaConf.create(container)


def reference_policy(path: Path, allowed_targets: Sequence[str] = ()) -> ReloadPolicy:
    """A reference config the caller vouches for (the parent writes the run's own config)."""
    return ReloadPolicy(flatten(read_config(path)), f"reference {path}", frozenset(allowed_targets))


def run_policy(directory: Path, allowed_targets: Sequence[str] = ()) -> ReloadPolicy:
    """By hand: the run's ``config.yaml`` next to the export (``<run>/export`` or
    ``<run>/export/rank<r>``), trusted when it hashes to ``run.json``'s ``config_hash``; a pilot
    run keeps no ``config.yaml``, so there the export itself must hash to it."""
    directory, allowed = Path(directory).resolve(), frozenset(allowed_targets)
    run_dir = next((d for d in (directory.parent, directory.parent.parent) if (d / "run.json").exists()), None)
    if run_dir is None:
        return ReloadPolicy(
            None,
            "",
            allowed,
            f"no run.json in {directory.parent} or {directory.parent.parent} to check the export against",
        )
    try:
        record = json.loads((run_dir / "run.json").read_text())
        hashes = {record.get("config_hash")} | {r.get("config_hash") for r in record.get("resumes") or []}
    except (OSError, ValueError, AttributeError, TypeError) as error:
        return ReloadPolicy(None, "", allowed, f"{run_dir / 'run.json'} is unreadable ({type(error).__name__})")
    hashes.discard(None)
    config_path = run_dir / "config.yaml"
    checked = config_path if config_path.exists() else directory / "config.yaml"
    container = read_config(checked)
    actual = config_hash(OmegaConf.create(container))  # no interpolation left to resolve
    if actual in hashes:
        return ReloadPolicy(flatten(container), f"the run's {checked}", allowed)
    return ReloadPolicy(
        None,
        "",
        allowed,
        f"{checked} hashes to {actual}, not to run.json's config_hash "
        f"{record.get('config_hash')}: one of them was edited, or the run was "
        "resumed under other settings",
    )


# --------------------------------------------------------------------------- reload and compare
def reload_and_compare(directory: Path, policy: ReloadPolicy | None = None) -> dict[str, Any]:
    """Runs in the fresh process: check the config, rebuild, load safetensors weights, rerun, compare.

    ``policy`` None: the caller vouches for the directory (it has just written it); the config
    is still refused for interpolations and code-running targets.
    """
    directory = Path(directory)
    absent = [name for name in EXPORT_FILES if not (directory / name).is_file()]
    if absent:
        raise PilotError(
            f"{directory} is not a pilot export: {', '.join(absent)} missing "
            f"(an export holds {', '.join(EXPORT_FILES)})"
        )
    if policy is None:
        policy = ReloadPolicy(flatten(read_config(directory / "config.yaml")), "the caller's")
    cfg = load_export_config(directory, policy)
    task = instantiate(cfg.data, _convert_="all")
    model = build_model(cfg)
    missing, unexpected = model.load_state_dict(load_file(str(directory / "model.safetensors")), strict=False)
    if missing or unexpected:
        return {
            "verdict": "fail",
            "reason": f"weights do not fit the model: missing {missing}, unexpected {unexpected}",
        }
    recorded = load_file(str(directory / CONTROL_FILE))
    # fresh (aligned) copies: tensors read from a file may sit at offsets that make MKL take another
    # path through the same matmul, and the comparison is bit for bit
    batch = {k[len("input.") :]: v.clone() for k, v in recorded.items() if k.startswith("input.")}
    model.eval()
    with torch.no_grad():
        output = task.forward(model, batch).detach().float()
    rtol, atol = float(cfg.closing.rtol), float(cfg.closing.atol)
    expected = recorded["output"]
    difference = (output - expected).abs().max().item() if output.shape == expected.shape else float("inf")
    exact = rtol == 0 and atol == 0
    matches = torch.equal(output, expected) if exact else torch.allclose(output, expected, rtol=rtol, atol=atol)
    rule = "bit-identical" if exact else f"within rtol={rtol}, atol={atol}"
    return {
        "verdict": "pass" if matches else "fail",
        "reason": (
            f"reloaded export reproduces {expected.shape[0]} control outputs {rule}"
            if matches
            else f"reloaded export differs on the control inputs: max |diff| = {difference:.3g}, required {rule}"
        ),
        "max_abs_difference": difference,
    }


def check_in_new_process(directory: Path, cfg: DictConfig, timeout_s: int = 600) -> dict[str, Any]:
    """Reload ``directory`` in a fresh process that may only instantiate what ``cfg`` (the run's
    own config, written to a private file for it) holds; the verdict comes back in RESULT_FILE."""
    directory = Path(directory)
    result_path = directory / RESULT_FILE
    result_path.unlink(missing_ok=True)  # never read an earlier run's verdict
    with tempfile.TemporaryDirectory(prefix="pilot-reload-") as private:
        reference = Path(private) / "config.yaml"
        OmegaConf.save(cfg, reference, resolve=True)
        # the parent's CPU thread count: another count changes the float reduction order, and the
        # comparison is bit for bit on CPU fp32
        completed = subprocess.run(
            [
                sys.executable,
                "-m",
                "pilot.closing",
                str(directory),
                "--reference-config",
                str(reference),
                "--threads",
                str(torch.get_num_threads()),
            ],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    if not result_path.exists():
        return {
            "verdict": "fail",
            "reason": "the reload process failed: "
            + (completed.stderr.strip().splitlines() or ["no output"])[-1][:300],
        }
    return json.loads(result_path.read_text())


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


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pilot.closing <export dir>``: 0 pass, 1 fail, 2 refused (the message says why)."""
    parser = argparse.ArgumentParser(prog="python -m pilot.closing", description=main.__doc__)
    parser.add_argument("directory", type=Path, help=f"the export: config.yaml, model.safetensors, {CONTROL_FILE}")
    parser.add_argument(
        "--reference-config",
        type=Path,
        help="the config the export must equal "
        "(default: the run's config.yaml next to the export, checked against run.json)",
    )
    parser.add_argument(
        "--allow-target",
        action="append",
        default=[],
        metavar="MODULE.ATTR",
        help="also instantiate this _target_, at any key (repeatable)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="CPU threads (the run's own count for a bit-identical rerun; default: torch's)",
    )
    args = parser.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    result_path = args.directory / RESULT_FILE
    with suppress(OSError):
        result_path.unlink(missing_ok=True)
    try:
        policy = (
            reference_policy(args.reference_config, args.allow_target)
            if args.reference_config
            else run_policy(args.directory, args.allow_target)
        )
        result = reload_and_compare(args.directory, policy)
    except PilotError as error:
        with suppress(OSError):
            result_path.write_text(json.dumps({"verdict": "fail", "refused": True, "reason": str(error)}, indent=2))
        print(error, file=sys.stderr)
        return error.exit_code
    result_path.write_text(json.dumps(result, indent=2))
    print(result["reason"])
    return 0 if result["verdict"] == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
