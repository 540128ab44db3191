"""The files a config's data settings name (``data.path``, ``data.tokenizer``, a plug-in task's own file
keys), fingerprinted for the checkpoints (``pilot.file_fingerprint``): a resume whose data file was
replaced or edited in place trained on it without a word, its record claiming one data set throughout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from pilot.file_fingerprint import fingerprint


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
    if isinstance(node, str) and node.strip() and Path(node).exists():
        return {prefix: node}
    return {}


def data_files_fingerprint(cfg: DictConfig) -> dict[str, str]:
    """``{key: fingerprint}`` of every file or directory the ``data`` settings name."""
    try:
        data = OmegaConf.to_container(cfg.data, resolve=True)
    except Exception:  # noqa: BLE001 - a setting that does not resolve here: the run's own checks say it
        return {}
    return {key: digest for key, path in _named_paths(data, "data").items() if (digest := fingerprint(path))}
