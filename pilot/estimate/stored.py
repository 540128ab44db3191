"""Fake-tensor estimates kept on disk, keyed by everything they are computed from.

``mode=estimate`` at scale runs one estimate per micro-batch, checkpointing setting and FSDP rank
count its choice sheet tries (the README's 7B command: six, 5-17 s each). Running the command
again — another catalog, margin, reserve, price, package, or nothing changed — computed them
all again. ``stored_estimate`` keeps each one in a file named by the SHA-256 of what it depends on:

- the whole resolved config except ``rental`` (the sheet's own settings, read after the estimate),
  ``hydra`` (where the run writes) and ``campaign`` (the recap's roots, journal and control), with the
  variant (micro-batch, checkpointing, ranks);
- the batches the estimate runs on (every tensor's shape, dtype and bytes: the data);
- the code: every ``.py`` file of the ``pilot`` package, of every package a ``_target_`` of the config
  names that is not installed (your task and model code, helper modules in the same package — or,
  for a module on its own, the modules beside it — included, and every module of yours they use,
  in another package too), and the versions of Python, torch,
  transformers and peft.

Beside the key, each stored estimate records what it read while computed (``dependencies.Reads``:
modules of yours loaded, files opened and environment variables read on your code's behalf, installed
packages' versions). A file is used only when the material stored inside it equals the material
computed now (a hash collision or a hand-edited file is recomputed, not trusted) and what it read is
unchanged (``dependencies.changed``). Written atomically (a temporary
file, then ``os.replace``), so concurrent commands never read half a file. What is read from the
store says so in the estimate's notes (when and in how long it was computed).

Only estimates that took at least 2 s to compute are kept (``$PILOT_ESTIMATE_STORE_MIN_S`` to
change it): a small model's take a second or two, computing them again costs little and keeps
them true to code patched in memory.

Where: ``$PILOT_ESTIMATE_CACHE`` (``off``, ``false``, ``no``, ``none`` or ``0`` turn the store off), else
``$XDG_CACHE_HOME/pilot/estimates``, else ``~/.cache/pilot/estimates``. Deleting it is always safe.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import itertools
import json
import logging
import math
import os
import platform
import resource
import tempfile
import time
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from pilot.data.task import TaskData
from pilot.errors import PilotError, file_in_the_way
from pilot.estimate.dependencies import Reads, changed, content_fingerprint
from pilot.estimate.fake_tensor import MemoryEstimate, estimate_memory
from pilot.estimate.inputs import config_variant, estimate_inputs
from pilot.user_code import own_top_level, reached_modules
from pilot.variant import is_defining

CACHE_ENV = "PILOT_ESTIMATE_CACHE"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
VERSIONED = ("torch", "transformers", "peft", "tokenizers", "accelerate")
STORE_NOTE = "read from the estimate store"
MIN_SECONDS_ENV = "PILOT_ESTIMATE_STORE_MIN_S"  # kept only if computing took this long (default 2 s)

log = logging.getLogger("pilot")


def from_store(estimate: MemoryEstimate) -> bool:
    return any(note.startswith(STORE_NOTE) for note in estimate.notes)


OFF_WORDS = ("off", "false", "no", "none", "0")  # PILOT_ESTIMATE_CACHE=false made a directory named 'false'


def store_dir() -> Path | None:
    value = os.environ.get(CACHE_ENV, "").strip()
    if value.lower() in OFF_WORDS:
        return None
    if value:
        return Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pilot" / "estimates"


def _file_digest(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(str(path).encode())
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"<unreadable>")
    return digest.hexdigest()


def _targets(node: Any) -> set[str]:
    """Every ``_target_`` of a config (the model's, the data's, an adapter's...)."""
    if isinstance(node, dict):
        found = {str(node["_target_"])} if "_target_" in node else set()
        return found.union(*(_targets(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_targets(value) for value in node))
    return set()


def _user_sources(config: dict[str, Any]) -> list[Path]:
    """The source files of every top-level package (or module) of yours that a ``_target_`` names or
    that the targets' modules use (``user_code.reached_modules``: a model class from another package of
    yours), each whole — helpers in the same package, or for a module on its own in the same folder,
    included (a constant imported by value is followed no further) — read from disk, so that every
    process computes the same key."""
    targets = sorted(_targets(config))
    tops = {target.split(".")[0] for target in targets}
    tops |= {name.split(".")[0] for name in reached_modules([_imported(target) for target in targets])}
    files: set[Path] = set()
    for top in sorted(tops):
        spec = own_top_level(top)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue  # not yours, or a namespace package: its modules are in the recorded reads
        origin = Path(spec.origin).resolve()
        # a package: its every module; a module on its own (a plug-in folder on PYTHONPATH): the modules
        # beside it, which it imports as helpers (``import my_helpers``)
        files |= set(origin.parent.rglob("*.py") if spec.submodule_search_locations else origin.parent.glob("*.py"))
    return sorted(files)


def uses_your_code(cfg: DictConfig) -> bool:
    """Whether a ``_target_`` of ``cfg`` names code of yours (not pilot's, not installed), a namespace
    package's too; found without importing it (what it reads when imported is still to be recorded). Read as
    written, before validation: a value that does not resolve (``???``, ``${oc.env:...}``) is validation's to say."""
    targets = _targets(OmegaConf.to_container(cfg, resolve=False, enum_to_str=True, throw_on_missing=False))
    return any(own_top_level(target) is not None for target in targets)


def _imported(target: str) -> str:
    """The module ``target`` lives in (``pkg.models.Net.build``: ``pkg.models``), imported; "" if none is."""
    parts = target.split(".")
    for end in range(len(parts) - 1, 0, -1):
        try:
            importlib.import_module(".".join(parts[:end]))
        except Exception:  # not a module (a class's name), or one that fails: the estimate says so itself
            continue
        return ".".join(parts[:end])
    return ""


NAMED_ENTRIES = 2000  # of a named directory's entries, at most this many are in the key (a model folder holds dozens)


def _named_files(config: dict[str, Any]) -> dict[str, Any]:
    """Every local file or directory a config value names (``model.path``: a model's config.json, a
    plug-in factory's ``from_pretrained`` folder, a data file), by content: small files read whole, larger
    ones (weights) by size and modification time, a directory's files likewise (a model saved again into
    the same folder was read from the store under its old size)."""
    named: dict[str, Any] = {}
    sections = {key: value for key, value in config.items() if is_defining(key)}  # a tokenizer folder under data too
    for key, value in _strings(sections):
        path = Path(value).expanduser()
        if value in named or len(value) > 4096 or not _path_like(key, value) or not path.exists():
            continue
        files = (
            sorted(f for f in itertools.islice(path.rglob("*"), NAMED_ENTRIES) if f.is_file())
            if path.is_dir()
            else [path]
        )
        named[value] = {str(f.relative_to(path)) if path.is_dir() else f.name: content_fingerprint(f) for f in files}
    return named


def _beside_the_code(sources: list[Path]) -> dict[str, str]:
    """The other files in the folders of your task and model code (a sizes.json your factory reads, a
    vocabulary), by content (``content_fingerprint``): a changed one gave a stale estimate "of the same code"."""
    folders = sorted({source.parent for source in sources})
    files = {
        f
        for folder in folders
        for f in itertools.islice(folder.iterdir(), NAMED_ENTRIES)
        if f.is_file() and f.suffix not in (".py", ".pyc")
    }
    return {str(f): content_fingerprint(f) for f in sorted(files)}


def _strings(node: Any, key: str = "") -> list[tuple[str, str]]:
    """(key, value) of every non-empty string in ``node`` (a list's items under its key)."""
    if isinstance(node, dict):
        return [pair for name, value in node.items() for pair in _strings(value, str(name))]
    if isinstance(node, list):
        return [pair for value in node for pair in _strings(value, key)]
    return [(key, node)] if isinstance(node, str) and node else []


PATH_KEYS = ("path", "dir", "file", "folder", "tokenizer", "vocab", "checkpoint", "weights", "model_name")


def _path_like(key: str, value: str) -> bool:
    """A value that names a file: written as one (a separator, ``.``, ``~``), or a bare name under a key
    that names files (``model.path=my_model``). ``data.split.salt=pilot`` is no path, though a folder of
    that name sat in the working directory (the key then differed from one directory to the next)."""
    return "/" in value or value.startswith((".", "~")) or any(word in key.lower() for word in PATH_KEYS)


def _versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _batch_digest(batch: dict[str, Any]) -> str:
    digest = hashlib.sha256()
    for key in sorted(batch):
        value = batch[key]
        digest.update(key.encode())
        if torch.is_tensor(value):
            digest.update(f"{tuple(value.shape)} {value.dtype}".encode())
            digest.update(value.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
        else:
            digest.update(repr(value).encode())
    return digest.hexdigest()


# settings of a run that no estimated phase (first_step, steady_steps, eval_longest) reads: how often a run
# logs, saves, how it is closed and at how many CPU threads (fake tensors compute nothing); the section
# whole where no key is named. A change to them reads the stored estimate (``tests/test_estimate_store.py``
# computes both and compares).
NOT_ESTIMATED: dict[str, tuple[str, ...]] = {"run": ("threads", "log_every"), "checkpoint": (), "closing": ()}


def key_material(cfg: DictConfig, task: TaskData, variant: dict[str, Any]) -> dict[str, Any]:
    """What the estimate of ``cfg`` at ``variant`` is computed from (see the module's text)."""
    at_variant = config_variant(cfg, **variant)
    config = OmegaConf.to_container(at_variant, resolve=True, enum_to_str=True)
    for ignored in ("rental", "hydra", "campaign"):  # the sheet, where the run writes, the recap and journal
        config.pop(ignored, None)
    for section, keys in NOT_ESTIMATED.items():  # settings no estimated phase reads
        for key in keys or list(config.get(section) or {}):
            (config.get(section) or {}).pop(key, None)
    inputs = estimate_inputs(at_variant, task)
    sources = _user_sources(config)
    return {
        "config": config,
        "variant": variant,
        "batches": [_batch_digest(inputs.train_batch), _batch_digest(inputs.eval_batch)],
        "pilot": _file_digest(list(PACKAGE_DIR.rglob("*.py"))),
        "user_code": _file_digest(sources),
        "user_files": _beside_the_code(sources),
        "named_files": _named_files(config),
        "versions": _versions(),
    }


def _variant(micro_batch: int, activation_checkpointing: bool, ranks: int | None) -> dict[str, Any]:
    return {
        "micro_batch": int(micro_batch),
        "checkpointing": bool(activation_checkpointing),
        "ranks": None if ranks is None else int(ranks),
    }


def _entry(cfg: DictConfig, task: TaskData, variant: dict[str, Any]) -> tuple[Path, dict[str, Any]] | None:
    """The store's file for that estimate and what it must hold; None when the store is off."""
    directory = store_dir()
    if directory is None:
        return None
    material = json.loads(json.dumps(key_material(cfg, task, variant), default=str))
    return directory / f"{hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()}.json", material


def _read(entry: tuple[Path, dict[str, Any]] | None) -> MemoryEstimate | None:
    if entry is None:
        return None
    started, (path, material) = time.perf_counter(), entry
    try:
        stored = json.loads(path.read_text())
        if stored["material"] != material or stored.get("sha256") != _sum(stored["estimate"]):
            return None
        if why := changed(stored.get("reads")):  # what the estimate read besides its key (dependencies.py)
            log.info("the stored estimate %s is computed again: %s since it was stored", path.name, why)
            return None
        estimate = MemoryEstimate.from_dict(stored["estimate"])
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent, unreadable or from another pilot: computed again
    estimate.notes = [
        *estimate.notes,
        f"{STORE_NOTE} ({path}): computed {stored['computed_at']} in "
        f"{estimate.seconds:.1f} s from the same config, data, code, versions and every file, module and "
        "environment variable it read",
    ]
    estimate.computed_seconds, estimate.seconds = estimate.cost_seconds, time.perf_counter() - started
    estimate.host_rss_peak_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return estimate


def read_stored(
    cfg: DictConfig, task: TaskData, micro_batch: int, activation_checkpointing: bool, ranks: int | None = None
) -> MemoryEstimate | None:
    """The stored estimate of ``cfg`` at that variant, or None (nothing computed)."""
    return _read(_entry(cfg, task, _variant(micro_batch, activation_checkpointing, ranks)))


def stored_estimate(
    cfg: DictConfig, task: TaskData, micro_batch: int, activation_checkpointing: bool, ranks: int | None = None
) -> MemoryEstimate:
    """``estimate_memory`` of ``cfg`` at that variant (``ranks`` None: as configured), from the store
    when its inputs are unchanged; computed and stored otherwise."""
    variant = _variant(micro_batch, activation_checkpointing, ranks)
    entry = _entry(cfg, task, variant)
    found = _read(entry)
    if found is not None:
        return found
    # what your code reads while it is computed; a config of pilot's and installed code only reads nothing
    # of yours (its files are named in the key): no recording then, only the packages' versions
    recording = entry is not None and uses_your_code(cfg)
    with Reads() if recording else contextlib.nullcontext(Reads()) as reads:
        estimate = estimate_memory(
            cfg,
            task,
            micro_batch=variant["micro_batch"],
            activation_checkpointing=variant["checkpointing"],
            ranks=ranks,
        )
    if entry is not None and estimate.seconds >= min_store_seconds():
        computed_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        result = json.loads(json.dumps(asdict(estimate), default=str))
        stored = {"material": entry[1], "computed_at": computed_at, "estimate": result, "sha256": _sum(result)}
        _write(entry[0], {**stored, "reads": reads.dependencies()})
    return estimate


def min_store_seconds() -> float:
    """``$PILOT_ESTIMATE_STORE_MIN_S`` (default 2); ``EstimateStoreSetting`` names a value that is no
    number of seconds >= 0 (checked when ``mode=estimate`` starts, before anything is computed)."""
    value = os.environ.get(MIN_SECONDS_ENV) or "2"  # set but empty: the default
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise EstimateStoreSetting(
            f"{MIN_SECONDS_ENV}={value!r} is not a number of seconds >= 0. Fix: e.g. {MIN_SECONDS_ENV}=2 (the "
            f"default: only estimates that took 2 s or more are kept), 0 keeps every one, or unset it."
        )
    return seconds


class EstimateStoreSetting(PilotError, ValueError):
    """An environment setting of the estimate store that means nothing."""


def _sum(result: dict[str, Any]) -> str:
    """The stored estimate's own SHA-256: a file edited or damaged by hand is computed again."""
    return hashlib.sha256(json.dumps(result, sort_keys=True).encode()).hexdigest()


def _write(path: Path, data: dict[str, Any]) -> None:
    """Atomically (a temporary file, then ``os.replace``); a read-only or full store costs the next run
    time, nothing else: said once, and no temporary file left behind."""
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as handle:
            temporary = handle.name
            json.dump(data, handle, default=str)
        os.replace(temporary, path)
    except OSError as error:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        if not _said:
            _said.append(path.parent)
            blocking = file_in_the_way(path.parent)
            why = f"{blocking} is a file, not a directory" if blocking else (error.strerror or str(error))
            log.warning(
                "the estimate store %s=%s could not keep an estimate (%s): it is computed again next time. Fix: "
                "set %s to a directory you can write (off turns the store off), or free space there.",
                CACHE_ENV,
                path.parent,
                why,
                CACHE_ENV,
            )


_said: list[Path] = []
