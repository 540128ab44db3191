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
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, packages_distributions, version
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from pilot.config.values import select
from pilot.data.data_files import data_files_fingerprint, named_data_paths
from pilot.file_fingerprint import read_by_programs
from pilot.user_code import imported_packages, module_file

# read whenever a run names a tokenizer directory (data=hf_instructions and the like)
TOKENIZER_PACKAGES = ("transformers", "tokenizers", "datasets")


def sha256_of(path: Path) -> str:
    """The file's sha256, read in 1 MiB blocks (user modules here; config targets in environment/)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


BESIDE_THE_PACKAGE = {"conf": "*.yaml", "hydra_plugins": "*.py"}  # pilot's configs and sweeper, beside pilot/


def package_sources(package_dir: Path | None = None) -> dict[str, str]:
    """Every ``.py`` file of pilot's own package (the training loop, the loss, the checks) by its path in
    the package -> the first 16 hex digits of its sha256: a clone elsewhere compares equal, an edit does not;
    and beside it, its default configs (``conf/``: an edited optimizer default trains at another learning
    rate) and its sweeper, by their path from the checkout (``conf/optim/adamw.yaml``)."""
    root = Path(package_dir) if package_dir is not None else Path(__file__).resolve().parents[1]
    found = {path.relative_to(root).as_posix(): sha256_of(path)[:16] for path in sorted(root.rglob("*.py"))}
    for folder, pattern in BESIDE_THE_PACKAGE.items():
        beside = root.parent / folder
        found.update(
            {path.relative_to(root.parent).as_posix(): sha256_of(path)[:16] for path in sorted(beside.rglob(pattern))}
        )
    return found


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


HASHED_UP_TO = 256 << 20  # a data file larger is named by its fingerprint alone: a sha256 reads it whole
DIRECTORY_FILES = 64  # a named directory with more files is named by its fingerprint alone


def _user_files(cfg: DictConfig) -> dict[str, str]:
    """sha256 by path of every file the data settings name (``data.path``, a plug-in task's own keys:
    ``pilot.data.data_files``) and of the files of a directory they name (``data.tokenizer``'s), up to
    ``HASHED_UP_TO`` bytes and ``DIRECTORY_FILES`` files each; ``_data_settings`` names all of them."""
    files: list[Path] = []
    for value in named_data_paths(cfg).values():
        path = Path(value)
        inside = sorted(p for p in path.iterdir() if p.is_file() and read_by_programs(p.name)) if path.is_dir() else []
        files += [path] if path.is_file() else inside if len(inside) <= DIRECTORY_FILES else []
    return {str(path.resolve()): sha256_of(path) for path in files if path.stat().st_size <= HASHED_UP_TO}


def _data_settings(cfg: DictConfig) -> dict[str, dict[str, str]]:
    """Every data setting that names a file or directory: its path and the fingerprint checkpoints hold."""
    fingerprints = data_files_fingerprint(cfg)
    return {
        key: {"path": str(Path(value).resolve()), "fingerprint": fingerprints[key]}
        for key, value in named_data_paths(cfg).items()
        if key in fingerprints
    }


def _imported_distributions(files: Iterable[str], distributions: dict[str, list[str]]) -> set[str]:
    """The installed distributions your modules import (transformers for a model built from it)."""
    return {
        name
        for file in files
        for top in imported_packages(Path(file), Path(file).stem)
        for name in distributions.get(top, [])
    }


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
    imported = _imported_distributions([*(m["file"] for m in modules.values()), *helpers], distributions)
    packages.update({name: _installed_version(name) for name in imported if name not in packages})
    return {
        "searchpath": [_absolute_searchpath(entry) for entry in searchpath],
        "pythonpath": [str(Path(entry).expanduser().resolve()) for entry in pythonpath],
        "launched_in": str(Path.cwd()),
        "modules": modules,
        "helper_modules": helpers,
        "packages": {name: found for name, found in sorted(packages.items()) if found},
        "files": files,
        "data_settings": _data_settings(cfg),
    }


def library_packages(cfg: DictConfig) -> dict[str, str]:
    """The installed distributions pilot's own targets import, by version (transformers for
    ``model=hf_causal_lm``): the library that built the model ran as much as pilot did, and pilot's
    extras name only a range of it. torch and pilot are installed by REPRODUCE.md's first line."""
    found: dict[str, str] = {}
    for target in targets_in(OmegaConf.to_container(cfg, resolve=True)):
        if not target.startswith("pilot."):
            continue
        spec = importlib.util.find_spec(target.rpartition(".")[0])
        if spec is None or not spec.origin or not Path(spec.origin).is_file():
            continue
        for top in imported_packages(Path(spec.origin), "pilot"):
            names = [top] if _installed_version(top) else packages_distributions().get(top, [])
            found.update({name: _installed_version(name) for name in names if name not in ("torch", "pilot")})
    return {name: found for name, found in sorted(found.items()) if found}


def command_line(overrides: list[str], provenance: dict[str, Any] | None) -> str:
    """``python -m pilot ...`` as the run was launched; for a plug-in run with absolute
    ``PYTHONPATH`` and ``hydra.searchpath`` so that it runs from any directory."""
    if not provenance:  # each word quoted for the shell (a path with a space, ${...})
        return " ".join(["python -m pilot", *(shlex.quote(word) for word in overrides)])
    prefix = f"PYTHONPATH={os.pathsep.join(provenance['pythonpath'])} " if provenance["pythonpath"] else ""
    search = [f"hydra.searchpath=[{','.join(provenance['searchpath'])}]"] if provenance["searchpath"] else []
    return " ".join([f"{prefix}python -m pilot", *(shlex.quote(word) for word in [*search, *overrides])])
