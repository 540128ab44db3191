"""Leaf helpers that read a config value: an enum member's plain value, a dotted import path and
the device a run asks for. They import nothing of pilot, so every layer can use them."""

from __future__ import annotations

import importlib
import inspect
import re
import shlex
from typing import TYPE_CHECKING, Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import OmegaConf

if TYPE_CHECKING:
    import torch


def enum_value(value: Any) -> Any:
    """A config enum member as its plain value ("left", not PaddingSide.left)."""
    return getattr(value, "value", value)


def import_target(path: str) -> Any:
    """Import ``package.module.attr`` (or ``package.module.Class.method``, as Hydra's ``_target_``
    resolves it) without calling it."""
    if "." not in path.strip("."):
        raise ImportError(f"'{path}' is not a dotted path")
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):  # the longest importable module, then attributes
        try:
            found: Any = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError as missing:
            if missing.name is not None and not ".".join(parts[:split]).startswith(missing.name):
                raise  # the module exists but imports something missing: say that
            continue
        for attr in parts[split:]:
            found = getattr(found, attr)
        return found
    raise ModuleNotFoundError(f"No module named '{parts[0]}'", name=parts[0])


def target_keywords(node: Any) -> set[str]:
    """The keyword arguments the ``_target_`` of a config node accepts (``peft.LoraConfig``'s own keys
    for adapter=lora), or none when it names nothing importable."""
    path = select(node, "_target_")
    if not isinstance(path, str):
        return set()
    try:
        parameters = inspect.signature(import_target(path)).parameters.values()
    except Exception:  # noqa: BLE001 - not importable, or no signature: nothing known
        return set()
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {p.name for p in parameters if p.kind in kinds}


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
    """``run.device`` as a torch device; ``auto`` is CUDA when one is visible, else the CPU. torch is
    imported here, not above: the recap's readers import this module and read no tensor."""
    import torch

    requested = enum_value(select(cfg, "run.device")) or "auto"
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(requested)


_PLAIN = re.compile(
    r"^[\w./@:+~-]*$", re.ASCII
)  # a value Hydra's override parser and a shell both take as written (ASCII only)


def override_argument(key: str, value: object) -> str:
    """``key=value`` as one shell word that Hydra's override parser reads back as ``value``: a value with
    spaces, commas, quotes or '$' in Hydra's single quotes (its own quotes and backslashes escaped), the
    whole word quoted for the shell where it needs it."""
    text = str(value)
    if _PLAIN.match(text):
        return f"{key}={text}"
    text = re.sub(r"(\\*)'", lambda m: m.group(1) * 2 + "\\'", text)  # backslashes before a quote doubled
    word = f"{key}='" + re.sub(r"(\\+)$", lambda m: m.group(1) * 2, text) + "'"  # and before the closing one
    return f'"{word}"' if not re.search(r'["$`\\!]', word) else shlex.quote(word)  # "k='a b'" reads best


def written_overrides(config: Any = None) -> list[str]:
    """The command line's settings as written (``'${x}'`` unresolved): those ``config``'s ``hydra`` node
    holds (a sweep job's composed config), else the running Hydra job's; [] outside Hydra."""
    if config is not None:
        task = OmegaConf.select(config, "hydra.overrides.task", default=None)
    else:
        task = HydraConfig.get().overrides.task if HydraConfig.initialized() else None
    return [str(o) for o in OmegaConf.to_container(task, resolve=False)] if task else []


def typed_value(value: object) -> str:
    """A value as the command line writes it: null, true/false (not Python's None, True)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def reads_estimate_settings(cfg: Any) -> bool:
    """Whether this run reads ``estimate.*``: a pilot and ``mode=estimate`` do; ``mode=train`` only with
    ``estimate.in_runs`` (its record's memory estimate)."""
    return enum_value(select(cfg, "mode")) != "train" or bool(select(cfg, "estimate.in_runs"))
