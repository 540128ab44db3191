"""Leaf helpers that read a config value: an enum member's plain value, a dotted import path and
the device a run asks for. They import nothing of pilot, so every layer can use them."""

from __future__ import annotations

import importlib
from typing import Any

import torch
from omegaconf import OmegaConf


def enum_value(value: Any) -> Any:
    """A config enum member as its plain value ("left", not PaddingSide.left)."""
    return getattr(value, "value", value)


def import_target(path: str) -> Any:
    """Import ``package.module.attr`` without calling it."""
    module_name, _, attr = path.rpartition(".")
    if not module_name:
        raise ImportError(f"'{path}' is not a dotted path")
    return getattr(importlib.import_module(module_name), attr)


def select(cfg: Any, key: str) -> Any:
    """``cfg``'s value at the dotted ``key``, or None when absent or not resolvable."""
    try:
        return OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
    except Exception:  # a broken interpolation: reported once by the resolve step of validate()
        return None


def as_written(cfg: Any, key: str) -> Any:
    """``cfg``'s value at the dotted ``key`` as the config holds it, interpolations unresolved
    (``"${oops}"``); "???" when there is none."""
    node: Any = OmegaConf.to_container(cfg, resolve=False)
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return "???"
        node = node[part]
    return node


def resolve_device(cfg: Any) -> torch.device:
    """``run.device`` as a torch device; ``auto`` is CUDA when one is visible, else the CPU."""
    requested = enum_value(select(cfg, "run.device")) or "auto"
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(requested)
