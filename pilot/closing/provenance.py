"""What a plug-in run needs besides pilot's own commit to run again: the Hydra search path and
``PYTHONPATH`` entries it was launched with (absolute), a sha256 of every user module a
``_target_`` names (not pilot's own) and of the local data file and tokenizer, and the versions of
the installed packages the targets (and a tokenizer directory) come from. ``REPRODUCE.md`` shows it
and builds the command that repeats the run from a fresh shell in any directory."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shlex
import sys
from importlib.metadata import PackageNotFoundError, packages_distributions, version
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from pilot.config.values import select
from pilot.user_code import module_file

# read whenever a run names a tokenizer directory (data=hf_instructions and the like)
TOKENIZER_PACKAGES = ("transformers", "tokenizers", "datasets")


def sha256_of(path: Path) -> str:
    """The file's sha256, read in 1 MiB blocks (user modules here; config targets in environment/)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def package_sources(package_dir: Path | None = None) -> dict[str, str]:
    """Every ``.py`` file of pilot's own package (the training loop, the loss, the checks) by its path in
    the package -> the first 16 hex digits of its sha256: a clone elsewhere compares equal, an edit does not."""
    root = Path(package_dir) if package_dir is not None else Path(__file__).resolve().parents[1]
    return {path.relative_to(root).as_posix(): sha256_of(path)[:16] for path in sorted(root.rglob("*.py"))}


def targets_in(node: Any) -> list[str]:
    """Every ``_target_`` string in a resolved config, at any depth, in order."""
    if isinstance(node, dict):
        found = [node["_target_"]] if isinstance(node.get("_target_"), str) else []
        return found + [t for key, value in node.items() if key != "_target_" for t in targets_in(value)]
    if isinstance(node, list):
        return [t for value in node for t in targets_in(value)]
    return []


def _installed_version(distribution: str) -> str | None:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


def _absolute_searchpath(entry: str) -> str:
    scheme, separator, where = entry.partition("://")
    if scheme == "file" and separator:
        return f"file://{Path(where).expanduser().resolve()}"
    return entry


def _user_files(cfg: DictConfig) -> dict[str, str]:
    """sha256 of the local data file and of the tokenizer directory's files, by path."""
    files: list[Path] = []
    data_path, tokenizer = select(cfg, "data.path"), select(cfg, "data.tokenizer")
    if isinstance(data_path, str) and Path(data_path).is_file():
        files.append(Path(data_path))
    if isinstance(tokenizer, str) and Path(tokenizer).is_dir():
        files += sorted(p for p in Path(tokenizer).iterdir() if p.is_file())
    return {str(path.resolve()): sha256_of(path) for path in files}


def loaded_user_modules(named: set[str]) -> dict[str, str]:
    """sha256 of every module this process imported from your own code, by file: not pilot's, not the
    standard library's or an installed package's, not already in ``named`` (the targets' modules) — the
    helpers a task or model imports (a collate in ``_common.py``, a model in another package of yours)
    ran as much as the module a ``_target_`` names."""
    found: dict[str, str] = {}
    for module in list(sys.modules.values()):
        path = module_file(module)
        if path is not None and str(path) not in named:
            found[str(path)] = sha256_of(path)
    return dict(sorted(found.items()))


def plugin_provenance(cfg: DictConfig, searchpath: list[str] | tuple = ()) -> dict[str, Any] | None:
    """None for a run of pilot's own targets, configs and data only (REPRODUCE.md then needs nothing more);
    a run of your data file (``data.path``) gets the file's hash and where it was launched (a relative path)."""
    targets = [t for t in targets_in(OmegaConf.to_container(cfg, resolve=True)) if not t.startswith("pilot.")]
    uses_tokenizer = select(cfg, "data.tokenizer") is not None
    files = _user_files(cfg)
    if not (targets or searchpath or uses_tokenizer or files):
        return None
    distributions = packages_distributions()
    modules: dict[str, dict[str, str]] = {}
    packages = {name: _installed_version(name) for name in (TOKENIZER_PACKAGES if uses_tokenizer else ())}
    for target in targets:
        module_name = target.rpartition(".")[0]
        installed = distributions.get(module_name.split(".")[0])
        if installed:  # an installed package: its version says what ran
            packages.update({name: _installed_version(name) for name in installed})
            continue
        spec = importlib.util.find_spec(module_name)
        if spec is not None and spec.origin and Path(spec.origin).is_file():
            modules[target] = {"file": str(Path(spec.origin).resolve()), "sha256": sha256_of(Path(spec.origin))}
    pythonpath = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    helpers = loaded_user_modules({module["file"] for module in modules.values()}) if modules else {}
    return {
        "searchpath": [_absolute_searchpath(entry) for entry in searchpath],
        "pythonpath": [str(Path(entry).expanduser().resolve()) for entry in pythonpath],
        "launched_in": str(Path.cwd()),
        "modules": modules,
        "helper_modules": helpers,
        "packages": {name: found for name, found in sorted(packages.items()) if found},
        "files": files,
    }


def command_line(overrides: list[str], provenance: dict[str, Any] | None) -> str:
    """``python -m pilot ...`` as the run was launched; for a plug-in run with absolute
    ``PYTHONPATH`` and ``hydra.searchpath`` so that it runs from any directory."""
    if not provenance:  # each word quoted for the shell (a path with a space, ${...})
        return " ".join(["python -m pilot", *(shlex.quote(word) for word in overrides)])
    prefix = f"PYTHONPATH={os.pathsep.join(provenance['pythonpath'])} " if provenance["pythonpath"] else ""
    search = [f"hydra.searchpath=[{','.join(provenance['searchpath'])}]"] if provenance["searchpath"] else []
    return " ".join([f"{prefix}python -m pilot", *(shlex.quote(word) for word in [*search, *overrides])])
