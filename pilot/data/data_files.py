"""The files a config's data settings name (``data.path``, ``data.tokenizer``, a plug-in task's own file
keys), fingerprinted for the checkpoints (``pilot.file_fingerprint``): a resume whose data file was
replaced or edited in place trained on it without a word, its record claiming one data set throughout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from pilot.file_fingerprint import fingerprint, read_by_programs


def _named_paths(node: Any, prefix: str) -> dict[str, str]:
    """Every string setting under ``node`` that names an existing file or directory, by its full key."""
    if isinstance(node, dict):
        found = {}
        for key, value in node.items():
            found.update(_named_paths(value, f"{prefix}.{key}"))
        return found
    if isinstance(node, list):
        found = {}
        for index, value in enumerate(node):
            found.update(_named_paths(value, f"{prefix}[{index}]"))
        return found
    if isinstance(node, str) and node.strip() and _names_a_path(prefix, node):
        return {prefix: node}
    return {}


PATH_KEYS = ("data.path", "data.tokenizer")  # pilot's own settings that name a file or directory
NOT_PATHS = ("data.split.",)  # pilot's own settings that never do (data.split.salt=pilot is a word, not ./pilot)


def _names_a_path(key: str, value: str) -> bool:
    """A setting names a path when it is one of pilot's path settings, or when it is not one of its word
    settings and names an existing file, or a directory written as a path (with a separator or a suffix):
    a bare word that happens to be a folder of the working directory (``pilot``, ``conf``) is a word."""
    if key.startswith(NOT_PATHS):
        return False
    path = Path(value)
    if key in PATH_KEYS or path.is_file():
        return path.exists()
    return path.is_dir() and ("/" in value or "\\" in value or bool(path.suffix))


def data_files_fingerprint(cfg: DictConfig, every_file: bool = False) -> dict[str, str]:
    """``{key: fingerprint}`` of every file or directory the ``data`` settings name: of a directory, the files
    programs read (not a README, not hidden ones; ``every_file``: all, as checkpoints before took it)."""
    keep = None if every_file else read_by_programs
    return {key: digest for key, path in named_data_paths(cfg).items() if (digest := fingerprint(path, keep))}


def named_data_paths(cfg: DictConfig) -> dict[str, str]:
    """``{key: path}`` of every file or directory the ``data`` settings name (those ``data_files_fingerprint``
    takes), as written; none where a setting does not resolve here."""
    try:
        return _named_paths(OmegaConf.to_container(cfg.data, resolve=True), "data")
    except Exception:  # noqa: BLE001 - a setting that does not resolve here: the run's own checks say it
        return {}
