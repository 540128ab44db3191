"""Settings that need several values of the model and the data: the ``_target_`` each builds, the
sizes the data fixes for the model, the heads and the data file."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from pilot.config.tokenizer import tokenizer_problem
from pilot.config.values import import_target, reads_estimate_settings, select
from pilot.data.task import ContractError
from pilot.engine.build import longest_sequence, refuse_short_tables
from pilot.errors import PilotError, error_line, raised_at
from pilot.models.adapter_targets import (
    adapt_nothing,
    adaptable_layers,
    names_in_both_lists,
    names_matching_nothing,
    names_of_unwrappable,
    regex_adapts_nothing,
    save_nothing,
    saved_names_matching_nothing,
)
from pilot.models.hf_causal_lm import DTYPES, config_problem, meta_model, saved_config_problem
from pilot.validation.adapter_config import adapter_settings_if_any, check_adapter_config
from pilot.validation.checkpointing import check_checkpointing
from pilot.validation.keys import check_arguments
from pilot.validation.model_path import builds_hf, check_config_beside_path, check_model_path, typed_config_keys
from pilot.validation.module_folder import import_fix
from pilot.validation.on_meta import model_on_meta
from pilot.validation.problems import Problem, is_number
from pilot.validation.saved_tokenizer import check_saved_tokenizer
from pilot.validation.special_ids import check_special_ids


def _check_target(cfg, key: str, problems: list[Problem]) -> Any | None:
    path = select(cfg, key)
    if not path:
        problems.append(
            Problem(key, path, "missing: name the class or factory to build, e.g. pilot.models.tiny_gpt.TinyGPT.")
        )
        return None
    try:
        return import_target(path)
    except (ImportError, AttributeError) as error:
        problems.append(
            Problem(
                key,
                path,
                f"cannot be imported ({error}). "
                + (import_fix(error) or "Fix: give the full dotted path of an importable class or function."),
            )
        )
        return None
    except Exception as error:  # noqa: BLE001 - the module's own code raised while it was imported
        problems.append(
            Problem(
                key, path, f"importing it raised {error_line(error)}{raised_at(error)}. Fix: the module's own code."
            )
        )
        return None


def _check_targets(cfg, problems: list[Problem]) -> None:
    """Both ``_target_`` import, their arguments are given, and the model supports the memory setting."""
    model_cls = _check_target(cfg, "model._target_", problems)
    data_fn = _check_target(cfg, "data._target_", problems)
    for section, target in (("model", model_cls), ("data", data_fn)):
        if target is not None:
            check_arguments(cfg, section, target, problems)
    check_checkpointing(cfg, model_cls, problems)


def _check_model_matches_data(cfg, problems: list[Problem]) -> None:
    """The model's sizes that the data fixes: classes, length, vocabulary, input width."""
    head, classes = select(cfg, "model.num_classes"), select(cfg, "data.num_classes")
    if head is not None and classes is not None and head != classes:
        problems.append(
            Problem(
                "model.num_classes",
                head,
                f"the head has {head} outputs but data.num_classes={classes}: the "
                "loss would still compute while training the wrong task. "
                f"Fix: model.num_classes={classes}.",
            )
        )
    model_len, data_len = select(cfg, "model.max_len"), select(cfg, "data.max_len")
    if model_len is not None and data_len is not None and model_len < data_len:
        problems.append(
            Problem(
                "model.max_len",
                model_len,
                f"shorter than data.max_len={data_len}. Fix: model.max_len={data_len} (or more).",
            )
        )
    asked = select(cfg, "estimate.seq_len") if reads_estimate_settings(cfg) else None  # mode=train: unread
    if is_number(model_len) and is_number(asked) and asked > model_len:
        problems.append(
            Problem(
                "estimate.seq_len",
                asked,
                f"longer than the model's positions (model.max_len={model_len}). Fix: estimate.seq_len={model_len} (or less), "
                f"or model.max_len={asked} to estimate the model built for that length.",
            )
        )
    model_vocab, data_vocab = select(cfg, "model.vocab_size"), select(cfg, "data.vocab_size")
    if is_number(model_vocab) and is_number(data_vocab) and 0 < model_vocab < data_vocab:
        problems.append(
            Problem(
                "model.vocab_size",
                model_vocab,
                f"the data has {data_vocab} token ids (data.vocab_size): larger ids would index "
                f"past the embedding. Fix: model.vocab_size={data_vocab} "
                "(conf/model/tiny_gpt.yaml takes it from the data).",
            )
        )
    model_in, data_in = select(cfg, "model.in_features"), select(cfg, "data.in_features")
    if is_number(model_in) and is_number(data_in) and model_in != data_in:
        problems.append(
            Problem(
                "model.in_features",
                model_in,
                f"the data's inputs have {data_in} features (data.in_features). Fix: model.in_features={data_in}.",
            )
        )


def _check_heads(cfg, problems: list[Problem]) -> None:
    width, heads = select(cfg, "model.d_model"), select(cfg, "model.n_head")
    if is_number(width) and is_number(heads) and width > 0 and heads > 0 and width % heads:
        divisors = [h for h in range(1, min(width, 64) + 1) if width % h == 0]
        problems.append(
            Problem(
                "model.n_head",
                heads,
                f"must divide model.d_model={width} (each head gets "
                f"d_model / n_head dimensions). Fix: one of {', '.join(map(str, divisors))}.",
            )
        )


def _pilots_own_data(cfg) -> bool:
    """The data option is one of pilot's tasks (``pilot.data.*``), whose ``path`` and ``tokenizer`` are a file and
    a tokenizer directory; a plug-in task's keys are its own (a folder of shards, a name it chooses by)."""
    return str(select(cfg, "data._target_") or "").startswith("pilot.data.")


def _check_data_path(cfg, problems: list[Problem]) -> None:
    if not _pilots_own_data(cfg):
        return
    path = select(cfg, "data.path")
    if isinstance(path, str) and not path.strip():  # data.path= or an unset ${oc.env:...}: not the embedded set
        problems.append(
            Problem(
                "data.path",
                path,
                "an empty path names no file (an unset variable?), and the run would train on another data set "
                "than meant. Fix: the path of your file, or data.path=null for the embedded data set.",
            )
        )
        return
    if isinstance(path, str) and path and not Path(path).is_file():
        where = Path(path).resolve()
        problems.append(
            Problem(
                "data.path",
                path,
                f"{'is a directory' if where.is_dir() else 'no such file'} ({where}; relative "
                "paths start from the directory pilot runs in). Fix: the path of the "
                + (
                    "JSONL, CSV or Parquet file."
                    if select(cfg, "data.tokenizer") is not None
                    else "JSONL file, or data.path=null for the embedded data set."
                ),
            )
        )


def _check_tokenizer(cfg, problems: list[Problem]) -> None:
    """``data.tokenizer`` (a task that reads a local tokenizer directory) names one; a file and a
    tokenizer only the user can name (``???``) are asked for by key."""
    data = list((select(cfg, "data") or {}).keys())  # `in` on a DictConfig skips ??? values
    for key, what in (("path", "your data file (.jsonl, .csv, .parquet)"), ("tokenizer", "a tokenizer directory")):
        if key in data and OmegaConf.is_missing(cfg.data, key):
            problems.append(Problem(f"data.{key}", "???", f"no value. Fix: data.{key}=<{what}>."))
    if "tokenizer" not in data or OmegaConf.is_missing(cfg.data, "tokenizer") or not _pilots_own_data(cfg):
        return
    path = select(cfg, "data.tokenizer")
    problem = tokenizer_problem(path)
    if problem:
        problems.append(Problem("data.tokenizer", path, f"{problem} (relative paths start from where pilot runs)"))


def _check_hf_config(cfg, problems: list[Problem]) -> None:
    """model.config (model=hf_causal_lm, built from a config): a key transformers' config class does
    not define, or sizes its own check refuses, before any directory or record is made."""
    if not builds_hf(cfg):
        return
    if (dtype := select(cfg, "model.dtype")) is not None and dtype not in DTYPES:
        problems.append(Problem("model.dtype", dtype, f"must be one of {', '.join(DTYPES)} (the parameters' dtype)."))
    if path := select(cfg, "model.path"):  # the saved config builds it: only its attention is asked here
        attn = str(select(cfg, "model.attn_implementation") or "sdpa")
        if any(p.key == "model.path" for p in problems):
            return
        if (found := saved_config_problem(str(path), attn)) is not None:  # mistral saved with 8 kv heads for 4
            key, why = found
            problems.append(Problem(key, str(path), why) if key == "model.path" else Problem(key, attn, why, said=True))
        return
    config = select(cfg, "model.config")
    settings = OmegaConf.to_container(config, resolve=True) if isinstance(config, DictConfig) else None
    try:
        found = config_problem(
            str(select(cfg, "model.model_type")),
            settings,
            typed_config_keys(),
            str(select(cfg, "model.attn_implementation") or "sdpa"),
        )
    except PilotError:  # transformers missing: building says it
        return
    if found is not None:
        named, why = found
        key = "model.model_type" if set(named) == {"model_type"} else "model.config"
        problems.append(Problem(key, named or settings, why, said=True))  # each message names its settings


def _adapts_nothing(targets: Any, saved: Any, problems: list[Problem]) -> bool:
    """adapter.target_modules=[] (and nothing saved): peft adapts no layer and refuses at setup."""
    if not (isinstance(targets, list) and not targets and not saved):
        return False
    problems.append(
        Problem(
            "adapter.target_modules",
            targets,
            "an empty list adapts no layer: nothing would train. Fix: adapter.target_modules=all-linear, or "
            "the layers to adapt ([q_proj,v_proj] for a Llama), or adapter=none to train every parameter.",
        )
    )
    return True


def _check_adapter_names(cfg, problems: list[Problem]) -> None:
    """adapter.target_modules and modules_to_save as lists: a name in both (peft trains it in full, with
    no adapter), and over a transformers model a name that matches no module of it (it would adapt or
    save nothing while the record lists it; peft goes on silently with what part of a list matches).
    Found on the model built on the meta device, before anything runs (building refuses them too, after
    the run directory exists): one block deep, and where that misses a name, every block (a hybrid
    model's first block may lack it)."""
    if (settings := adapter_settings_if_any(cfg)) is None:
        return
    if both := names_in_both_lists(settings):
        problems.append(Problem("adapter.modules_to_save", settings["modules_to_save"], both, said=True))
        return
    targets, saved = settings.get("target_modules"), settings.get("modules_to_save") or []
    if _adapts_nothing(targets, saved, problems):
        return
    pattern = targets if isinstance(targets, str) and targets != "all-linear" else None
    if not (isinstance(targets, list) or saved or pattern):
        return
    targets = targets if isinstance(targets, list) else []
    for model in _models_on_meta(cfg):
        if model is None:
            return
        if unwrappable := names_of_unwrappable(targets, model):  # '0': blocks.0 as well as mlp.0
            problems.append(Problem("adapter.target_modules", targets, unwrappable))
            return
        names = [n for n, _ in model.named_modules()]
        unmatched, unsaved = names_matching_nothing(targets, names), saved_names_matching_nothing(saved, names)
        unmatched_pattern = pattern is not None and not any(_full_match(pattern, n) for n in names)
        if not unmatched and not unsaved and not unmatched_pattern:
            return
    if unmatched_pattern:
        problems.append(
            Problem(
                "adapter.target_modules",
                pattern,
                regex_adapts_nothing(pattern, model, adaptable_layers(model)),
                said=True,
            )
        )
    if unmatched:
        problems.append(
            Problem("adapter.target_modules", targets, adapt_nothing(unmatched, model, adaptable_layers(model)))
        )
    if unsaved:
        problems.append(Problem("adapter.modules_to_save", saved, save_nothing(unsaved, saved, model), said=True))


def _models_on_meta(cfg) -> Iterator[torch.nn.Module | None]:
    """The model on the meta device, to find module names in: a transformers model one block deep, then
    whole (one block may not build alone: Jamba's attention offset); any other model (the built-in TinyGPT,
    yours) as its config builds it (``model_on_meta``)."""
    if not builds_hf(cfg):
        yield model_on_meta(cfg)
        return
    config = select(cfg, "model.config")
    built = (
        str(select(cfg, "model.model_type")),
        OmegaConf.to_container(config, resolve=True) if isinstance(config, DictConfig) else None,
        select(cfg, "model.path"),
        str(select(cfg, "model.attn_implementation") or "sdpa"),
    )
    yield meta_model(*built, blocks=1)
    yield meta_model(*built, blocks=None)


def _check_adapter_rank(cfg, problems: list[Problem]) -> None:
    """adapter.r above every adaptable layer's own rank (min of its in and out features) on a transformers
    model: the update's rank cannot exceed it, so the rank beyond adds parameters and memory that train
    nothing a smaller rank would not (r=100000 on 64-wide layers estimated 246 million trained parameters)."""
    rank = select(cfg, "adapter.r")
    if not builds_hf(cfg) or not isinstance(rank, int) or isinstance(rank, bool) or problems:
        return
    config = select(cfg, "model.config")
    model = meta_model(
        str(select(cfg, "model.model_type")),
        OmegaConf.to_container(config, resolve=True) if isinstance(config, DictConfig) else None,
        select(cfg, "model.path"),
        str(select(cfg, "model.attn_implementation") or "sdpa"),
    )
    ranks = [min(m.weight.shape[:2]) for m in model.modules() if isinstance(m, torch.nn.Linear)] if model else []
    if ranks and rank > max(ranks):
        problems.append(
            Problem(
                "adapter.r",
                rank,
                f"is above the rank any layer of the model can take (its widest linear layer allows {max(ranks)}: "
                "the smaller of its input and output sizes); the rank beyond adds parameters and memory that a "
                f"rank-{max(ranks)} update already spans. Fix: adapter.r={max(ranks)} or less (LoRA ranks are usually 4-64).",
            )
        )


def _full_match(pattern: str, name: str) -> bool:
    try:
        return re.fullmatch(pattern, name) is not None
    except re.error:  # not an expression at all: peft says so when it builds
        return True


def _check_hf_tables(cfg, problems: list[Problem]) -> None:
    """A transformers model built from its config whose token embedding has fewer rows than the data's
    token ids, or whose learned position table is shorter than its longest sequence: found on the model
    one block deep on the meta device, before anything runs (building refuses it too, but a training run
    then already had a directory and a failed record, and the corrected command was refused there as
    another config)."""
    if not builds_hf(cfg) or any(p.key.startswith("model.") for p in problems):
        return
    config = select(cfg, "model.config")
    settings = OmegaConf.to_container(config, resolve=True) if isinstance(config, DictConfig) else None
    model = meta_model(
        str(select(cfg, "model.model_type")),
        settings,
        select(cfg, "model.path"),
        str(select(cfg, "model.attn_implementation") or "sdpa"),
    )
    if model is None:
        return
    try:
        refuse_short_tables(model, select(cfg, "data.vocab_size"), *longest_sequence(cfg))
    except ContractError as error:
        problems.append(Problem("model.config", settings, str(error), said=True))


def check_model_and_data(cfg, problems: list[Problem]) -> None:
    for check in (
        _check_targets,
        _check_model_matches_data,
        _check_heads,
        _check_data_path,
        _check_tokenizer,
        check_model_path,
        check_config_beside_path,
        check_special_ids,
        check_saved_tokenizer,
        _check_hf_config,
        _check_hf_tables,
        check_adapter_config,
        _check_adapter_names,
        _check_adapter_rank,
    ):
        check(cfg, problems)
