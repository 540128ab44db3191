"""The one place a run's model and trainer are built: ``mode=train``, the pilot's phases and
checks, the resume check, the estimate and the reload check all call these, so they start from
the same seed and the same instantiation."""

from __future__ import annotations

import logging
import random

import numpy as np
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from pilot.config.values import enum_value, reads_estimate_settings, resolve_device, select
from pilot.cpu_budget import busy_elsewhere
from pilot.data.data_files import data_files_fingerprint
from pilot.data.task import ContractError
from pilot.engine.distributed import DistContext
from pilot.engine.sharding import full_model_state
from pilot.engine.threads import ThreadChoice, choose_threads, launcher_cpus
from pilot.engine.trainer import Trainer
from pilot.errors import PilotError
from pilot.models.adapter import apply_adapter, base_of
from pilot.models.base_files import MODEL_FILES_KEY, base_files_fingerprint
from pilot.models.embedding_tables import token_embedding
from pilot.user_code import code_fingerprint

log = logging.getLogger("pilot")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


BUSY_SINCE_AT_MOST_S = 60.0  # an older sample says little about the machine now: a new 0.25 s window


def configure_threads(cfg: DictConfig, beside: str = "") -> ThreadChoice:
    """CPU threads per process (``engine/threads.py``): replicas, parallel sweep jobs and a process
    working ``beside`` this one share the cores instead of oversubscribing them."""
    replicas, configured = int(cfg.distributed.replicas), int(cfg.run.threads)
    # since the process started (or the sweep's previous job measured), else over 0.25 s; the pilot reports it
    busy = busy_elsewhere(reuse_s=BUSY_SINCE_AT_MOST_S) if replicas == 1 else None
    choice = choose_threads(configured, replicas, launcher_cpus(), busy, beside)
    torch.set_num_threads(choice.count)
    return choice


def build_model(cfg: DictConfig, adapter: bool = True) -> torch.nn.Module:
    """A freshly initialised ``cfg.model``: torch seeded with ``cfg.seed`` first, so every caller
    starts from the same weights; wrapped by ``cfg.adapter`` (its base frozen) unless ``adapter``
    is false (the reload check applies the exported adapter itself)."""
    torch.manual_seed(int(cfg.seed))
    model = instantiate(cfg.model, _convert_="all")
    refuse_short_tables(model, select(cfg, "data.vocab_size"), *longest_sequence(cfg))
    return apply_adapter(model, cfg) if adapter else model


def refuse_short_tables(model: torch.nn.Module, vocab_size: object, max_len: object, key: str = "data.max_len") -> None:
    """A model (transformers' API) whose token embedding has fewer rows than the data has token ids, or
    whose learned position table is shorter than the longest sequence, is refused (``ContractError``):
    the first such id would index past the table (an IndexError on a CPU, a device-side assert on a
    GPU), and an estimate on fake tensors, which never reads an index, would call it a fit."""
    tokens = token_embedding(model)
    rows = getattr(tokens, "num_embeddings", None)
    if isinstance(rows, int) and isinstance(vocab_size, int) and rows < vocab_size:
        raise ContractError(
            f"{type(model).__name__}'s token embedding has {rows} rows but the data has {vocab_size} token ids "
            f"(data.vocab_size): ids >= {rows} would index past it. Fix: a model with vocab_size >= {vocab_size} "
            "(model.config.vocab_size, or the saved model's embeddings resized with resize_token_embeddings)."
        )
    config = getattr(model, "config", None)
    positions = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
    if not (isinstance(positions, int) and isinstance(max_len, int)):
        return
    learned = [
        m
        for m in model.modules()
        if isinstance(m, torch.nn.Embedding)
        and m is not tokens
        and m.num_embeddings in (positions, positions + 2)  # OPT keeps 2 more rows
    ]
    if not learned and (beyond := untrained_positions(model, max_len, key)):
        _warn_once(beyond)
    # RoBERTa-like tables count positions from padding_idx + 1: that many rows are never a position
    usable = min((_usable_rows(m, positions) for m in learned), default=max_len)
    if usable < max_len:
        raise ContractError(
            f"{type(model).__name__} learns {usable} positions but the data holds sequences of up to "
            f"{max_len} tokens ({key}): a longer one indexes past its position table. Fix: "
            f"{key}={usable}, or a model with n_positions/max_position_embeddings >= {positions + max_len - usable}."
        )


def untrained_positions(model: torch.nn.Module, max_len: object, key: str = "data.max_len") -> str | None:
    """Why a rotary model made for fewer positions (``max_position_embeddings``) than the data's longest sequence,
    its config scaling none, measures little of itself past them; None otherwise (or a learned position table:
    ``refuse_short_tables`` refuses one that is short)."""
    config = getattr(model, "config", None)
    positions = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None)
    if not (isinstance(positions, int) and isinstance(max_len, int)) or positions >= max_len:
        return None
    if _context_extended(config):
        return None
    scaling = "rope_parameters" if hasattr(config, "rope_parameters") else "rope_scaling"  # transformers 5's name
    return (
        f"{type(model).__name__} was made for {positions} positions (max_position_embeddings) but the data holds "
        f"sequences of up to {max_len} tokens ({key}): positions past {positions} were never trained and its "
        f"config extends nothing (its {scaling} scales no position), so a longer sequence's loss says little of "
        f"the model. Fix: {key}={positions}, or a scaling rope_type (linear, dynamic, yarn) in the model "
        f"config's {scaling} for a longer context."
    )


def untrained_positions_in(cfg: DictConfig, model: torch.nn.Module) -> str | None:
    """``untrained_positions`` of ``model`` (an adapter's base) for the config's longest sequence."""
    return untrained_positions(base_of(model), *longest_sequence(cfg))


_warned: set[str] = set()  # said once per process: a pilot builds its model many times


def _warn_once(text: str) -> None:
    if text not in _warned:
        _warned.add(text)
        log.warning(text)


def _context_extended(config: object) -> bool:
    """A config that scales its rotary positions past what it was trained for (rope_scaling: linear, yarn...)."""
    scaling = getattr(config, "rope_scaling", None) or getattr(config, "rope_parameters", None)
    return isinstance(scaling, dict) and scaling.get("rope_type", scaling.get("type")) not in (None, "default")


def _usable_rows(table: torch.nn.Embedding, positions: int) -> int:
    """Positions a learned table holds: all of ``positions``, less the rows up to its padding index when
    positions are counted from there (RoBERTa: ids padding_idx + 1, padding_idx + 2, ...)."""
    if table.padding_idx is not None and table.num_embeddings == positions:
        return positions - table.padding_idx - 1
    return positions


def longest_sequence(cfg: DictConfig) -> tuple[object, str]:
    """The longest sequence the model must take, and the setting that says it: data.max_len, or
    estimate.seq_len when an estimate is asked at a longer one."""
    longest, key = select(cfg, "data.max_len"), "data.max_len"
    asked = select(cfg, "estimate.seq_len") if reads_estimate_settings(cfg) else None  # train: unread
    if isinstance(asked, int) and (not isinstance(longest, int) or asked > longest):
        longest, key = asked, "estimate.seq_len"
    return longest, key


class FilesChangedWhileRead(PilotError, RuntimeError):
    """The model folder or a data file changed while the run read them: what it trained on has no name."""


def build_trainer(cfg: DictConfig, ctx: DistContext = DistContext(), files_read: dict | None = None) -> Trainer:
    """Task, model and engine for ``cfg`` (already validated). ``files_read``: ``read_fingerprints`` taken
    before (a resume compared the checkpoint with it), else now; the trainer keeps it once the files are
    found as they were after the build."""
    read = read_fingerprints(cfg) if files_read is None else files_read  # before anything is read from them
    device = resolve_device(cfg)
    if device.type == "cuda":
        device = torch.device("cuda", ctx.local_rank)
        torch.cuda.set_device(device)
    task = instantiate(cfg.data, _convert_="all")
    seed_everything(int(cfg.seed))  # same initial weights on every replica
    trainer = Trainer(cfg, task, build_model(cfg), device, ctx)
    trainer.files_read = _unchanged_since(cfg, read)
    if trainer.plan.total_updates == 0:
        raise ValueError(
            f"budget.value={cfg.budget.value} ({enum_value(cfg.budget.fixed)}) buys no update: "
            f"{trainer.plan.train_examples} training examples, {trainer.plan.examples_per_update} "
            "per update. Fix: raise budget.value, lower batch.micro_batch/accumulation, or set "
            "batch.drop_last=false."
        )
    return trainer


def _unchanged_since(cfg: DictConfig, read: dict) -> dict:
    """What the trainer keeps of ``read``: the model folder's fingerprint, which must still hold once the model
    is built (else FilesChangedWhileRead), and the data files' taken now that they are read (a task may fill a
    cache folder its settings name while it loads; a resume compares what it finds before its build)."""
    now = base_files_fingerprint(cfg)
    if now != read.get(MODEL_FILES_KEY):
        raise FilesChangedWhileRead(
            f"model.path={select(cfg, 'model.path')}: its files changed while this run read them (their fingerprint "
            f"before building the model {str(read.get(MODEL_FILES_KEY))[:12]}, after {str(now)[:12]}): the model it "
            "would train could not be named. Fix: let whatever writes there finish (a save_pretrained), then start "
            "the run again."
        )
    return {**read, "data_files": data_files_fingerprint(cfg)}


def read_fingerprints(cfg: DictConfig) -> dict:
    """The fingerprints of what a run reads from files: the model folder's (``model.path``) and the data
    settings' files, before the build reads them (a resume compares them); the build keeps them
    (``_unchanged_since``) for every checkpoint and run.json: taken again at each save, a folder saved over
    during the run was recorded as the one the run had read."""
    model = base_files_fingerprint(cfg)
    code = code_fingerprint(own_targets(OmegaConf.to_container(cfg, resolve=False)))
    return {
        **({MODEL_FILES_KEY: model} if model else {}),
        "data_files": data_files_fingerprint(cfg),
        **({USER_CODE_KEY: code} if code else {}),
    }


USER_CODE_KEY = "user_code"  # {file: sha256} of your modules the config's _target_s name (read_fingerprints)


def own_targets(node: object) -> list[str]:
    """Every ``_target_`` of the config (as written) that is not pilot's."""
    if isinstance(node, dict):
        found = [str(node["_target_"])] if isinstance(node.get("_target_"), str) else []
        return [t for t in found if not t.startswith("pilot.")] + [t for v in node.values() for t in own_targets(v)]
    if isinstance(node, list):
        return [t for v in node for t in own_targets(v)]
    return []


def whole_model(trainer: Trainer) -> torch.nn.Module | None:
    """The trained model unsharded, for what runs on rank 0 alone (predictions, the closing's export
    and reload): under FSDP gathered from every rank (a collective) into a fresh copy built from the
    config on rank 0 (None on the others); without FSDP the model itself."""
    if not getattr(trainer, "sharded", False):
        return trainer.raw_model
    state = full_model_state(trainer.raw_model)
    if trainer.ctx.rank != 0:
        return None
    model = build_model(trainer.cfg)
    model.load_state_dict(state)
    return model.to(trainer.device)
