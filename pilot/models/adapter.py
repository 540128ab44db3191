"""Adapters (``adapter=lora``): a ``peft`` config applied to any model the group can target.

``cfg.adapter`` is a ``peft`` config by ``_target_`` (``peft.LoraConfig``: ``r``, ``lora_alpha``,
``lora_dropout``, ``target_modules``...; ``adapter=none`` is an empty node), so every key a
peft user knows is an override. ``apply_adapter`` wraps the built model with ``get_peft_model``:
the base is frozen, only the adapter trains. What a run keeps of an adapted model is the adapter
alone (``trained_state``: the checkpoint's ``model`` entry), and the base is named by its identity
(``base_identity``: the model config's hash and a hash of its frozen weights), so a reload can
prove it rebuilt the same base before it applies the adapter.

peft is imported only when an adapter is asked for (it imports transformers: seconds).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from safetensors.torch import load_file, save_file

from pilot.errors import ConfigRefused, PilotError

ADAPTER_WEIGHTS = "adapter_model.safetensors"  # peft's own file names: PeftModel.from_pretrained reads them
ADAPTER_CONFIG = "adapter_config.json"
BASE_FILE = "base.json"  # the base's identity, next to the adapter
ADAPTER_FILES = (ADAPTER_WEIGHTS, ADAPTER_CONFIG, BASE_FILE)


def wants_adapter(cfg: DictConfig) -> bool:
    adapter = cfg.get("adapter")
    return adapter is not None and adapter.get("_target_") is not None


def _peft():
    try:
        import peft
    except ImportError as error:  # an optional extra: pip install 'pilot[hf]'
        raise PilotError("adapter=lora needs the peft package. Fix: pip install 'pilot[hf]'.") from error
    return peft


def apply_adapter(model: torch.nn.Module, cfg: DictConfig) -> torch.nn.Module:
    """``model`` wrapped by the adapter ``cfg.adapter`` names (its base frozen), or ``model`` itself."""
    if not wants_adapter(cfg):
        return model
    peft = _peft()
    settings = adapter_settings(cfg)
    try:
        peft_config = instantiate(OmegaConf.create(settings), _convert_="all")
    except Exception as error:  # a peft key with a value peft refuses
        raise ConfigRefused(f"adapter: peft refuses the config ({error}). Fix: see peft's LoraConfig.") from error
    targets, saved = settings.get("target_modules"), settings.get("modules_to_save")
    if both := names_in_both_lists(settings):
        raise ConfigRefused(both)
    layers = adaptable_layers(model)  # before peft wraps them
    try:
        with warnings.catch_warnings():  # peft asks transformers 5 by a name it deprecated: not the user's to fix
            warnings.filterwarnings("ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning)
            adapted = peft.get_peft_model(model, peft_config)
    except ValueError as error:  # target modules that the model does not have
        if isinstance(targets, str) and targets != "all-linear":
            raise ConfigRefused(regex_adapts_nothing(targets, model, layers)) from error
        raise ConfigRefused(
            f"adapter.target_modules={targets!r} does not fit {type(model).__name__}: {str(error).splitlines()[0]} "
            f"Fix: adapter.target_modules=all-linear or a list of the model's linear layers "
            f"({', '.join(layers) or 'it has none'})."
        ) from error
    _refuse_names_that_adapt_nothing(adapted, targets, layers)
    unsaved = saved_names_matching_nothing(saved or [], (n for n, _ in base_of(adapted).named_modules()))
    if unsaved:
        raise ConfigRefused(save_nothing(unsaved, saved, base_of(adapted)))
    if not any(p.requires_grad for p in adapted.parameters()):
        raise ConfigRefused(
            "adapter: the adapter peft built trains nothing (every parameter is frozen), while the run would "
            "record an adapter training. Fix: drop the adapter key that freezes it (adapter.inference_mode=true)."
        )
    return adapted


NAME_LISTS = ("target_modules", "modules_to_save", "exclude_modules")  # module names: strings to peft


def adapter_settings(cfg: DictConfig) -> dict[str, Any]:
    """``cfg.adapter`` as the keyword arguments of its peft config, module names as strings: a name
    typed as a number (``[0,3]``: an ``nn.Sequential``'s layers) reaches peft as ``'0'``."""
    settings = OmegaConf.to_container(cfg.adapter, resolve=True)
    for key in NAME_LISTS:
        if isinstance(settings.get(key), list):
            settings[key] = [str(name) for name in settings[key]]
    return settings


def names_in_both_lists(settings: dict[str, Any]) -> str | None:
    """Why names in both ``target_modules`` and ``modules_to_save`` are refused: peft trains such a
    module in full and adapts it not at all, so the record would list an adapter that is not there."""
    targets, saved = settings.get("target_modules"), settings.get("modules_to_save")
    both = [str(name) for name in targets if name in saved] if isinstance(targets, list) and saved else []
    if not both:
        return None
    return (
        f"adapter.target_modules={targets!r} and adapter.modules_to_save={saved!r} both name {', '.join(both)}: "
        "peft trains it in full and puts no adapter on it. Fix: name it in one list only (modules_to_save: "
        "trained in full; target_modules: a low-rank update)."
    )


def saved_names_matching_nothing(saved: list[str], names: Iterable[str]) -> list[str]:
    """The ``modules_to_save`` that match none of the module ``names`` as peft matches them (the end of
    a module's name)."""
    names = list(names)
    return [t for t in saved if not any(n.endswith(t) for n in names)]


def save_nothing(unmatched: list[str], saved: list[str], model: torch.nn.Module) -> str:
    """Why ``modules_to_save`` names that match no module of ``model`` are refused: peft accepts them
    silently and trains nothing more, while the record and the export's config list them."""
    children = ", ".join(name for name, _ in model.named_children())
    return (
        f"adapter.modules_to_save={saved!r}: {', '.join(unmatched)} {_verb(unmatched)} no module of {type(model).__name__}, "
        f"so nothing more would train while the record lists them. Fix: the names of the modules to train in "
        f"full (lm_head, embed_tokens, score...; its top-level modules: {children or 'none'}), or "
        "adapter.modules_to_save=null."
    )


def adaptable_layers(model: torch.nn.Module) -> list[str]:
    """The names (last part) of the layers a LoRA adapter can wrap: ``nn.Linear`` and transformers'
    ``Conv1D`` (GPT-2's c_attn, c_proj, c_fc), and their subclasses (Falcon's ``FalconLinear``), every one."""
    return sorted(
        {
            name.rsplit(".", 1)[-1]
            for name, m in model.named_modules()
            if isinstance(m, torch.nn.Linear) or any(kind.__name__ == "Conv1D" for kind in type(m).__mro__)
        }
    )


def _refuse_names_that_adapt_nothing(adapted: torch.nn.Module, targets: Any, layers: list[str]) -> None:
    """peft refuses a list of which no name matches, and adapts silently what part of it matches: the
    rest would train nothing while the run's config says it does (Bloom has no q_proj: only lm_head
    trained). Every name of the list must match a module."""
    if not isinstance(targets, list):
        return  # all-linear, or a regular expression: peft's own matching
    unmatched = names_matching_nothing(targets, getattr(adapted, "targeted_module_names", None) or [])
    if unmatched:
        raise ConfigRefused(f"adapter.target_modules={targets!r}: {adapt_nothing(unmatched, base_of(adapted), layers)}")


def adapt_nothing(unmatched: list[str], model: torch.nn.Module, layers: list[str]) -> str:
    """Why target names that match no module of ``model`` are refused, with the ``layers`` it has (a name
    holding several of them, ``[q_proj v_proj]`` typed without commas, is told the list)."""
    words = [word for name in unmatched for word in re.split(r"[\s;|]+", name.strip()) if word]
    split = len(words) > len(unmatched) and all(word in layers for word in words)
    fix = f'"adapter.target_modules=[{",".join(words)}]" (a list\'s items are separated by commas)' if split else ""
    return (
        f"{', '.join(unmatched)} {_verb(unmatched)} no module of {type(model).__name__}, so they would adapt nothing while the "
        f"record lists them (its layers an adapter can wrap: {', '.join(layers) or 'none'}). Fix: "
        + (fix or "adapter.target_modules=all-linear, or the names of the layers above.")
    )


def regex_adapts_nothing(pattern: str, model: torch.nn.Module, layers: list[str]) -> str:
    """Why a ``target_modules`` string that matches no module is refused: peft reads a string as a
    regular expression over each module's whole dotted name, where a list matches the names' ends."""
    try:
        matched = [(n, type(m).__name__) for n, m in model.named_modules() if n and re.fullmatch(pattern, n)]
    except re.error:
        matched = []
    matched = [(name, kind) for name, kind in matched if name.rsplit(".", 1)[-1] not in layers]
    if matched:  # it matches modules, but peft cannot wrap them (an attention block, not its linear layers)
        shown = ", ".join(f"{name} ({kind})" for name, kind in matched[:3]) + (" ..." if len(matched) > 3 else "")
        return (
            f"adapter.target_modules={pattern!r} matches {len(matched)} module(s) of {type(model).__name__} that peft "
            f"cannot wrap: {shown}; an adapter wraps linear, embedding and convolution layers (here: "
            f"{', '.join(layers) or 'none'}). Fix: an expression that matches only those (e.g. '.*attn.*_proj'), a "
            "list of their names, or all-linear."
        )
    if pattern in layers:  # a layer's name written alone: the list form is the fix
        fix = f"a list of layer names, e.g. adapter.target_modules=[{pattern}], a whole-name expression such as '.*\\.{pattern}'"
    else:  # no layer of that name: a list of it would be refused too
        fix = "a list of the layer names above"
    return (
        f"adapter.target_modules={pattern!r}: a single string is a regular expression that must match a "
        f"module's whole dotted name (e.g. model.layers.0.self_attn.q_proj), and it matches none of "
        f"{type(model).__name__}'s (its layers an adapter can wrap: {', '.join(layers) or 'none'}). Fix: {fix}, "
        "or all-linear."
    )


def names_matching_nothing(targets: list[str], names: Iterable[str]) -> list[str]:
    """The ``targets`` that match none of the module ``names`` as peft matches a list: the whole name, or
    its last dotted parts."""
    names = list(names)
    return [t for t in targets if not any(n == t or n.endswith(f".{t}") for n in names)]


def is_adapted(model: torch.nn.Module) -> bool:
    """A peft-wrapped model (without importing peft)."""
    return hasattr(model, "peft_config") and callable(getattr(model, "get_base_model", None))


def base_of(model: torch.nn.Module) -> torch.nn.Module:
    """The model an adapter wraps (the model itself when there is none): settings go there."""
    return model.get_base_model() if is_adapted(model) else model


def trainable_names(model: torch.nn.Module) -> set[str]:
    return {name for name, p in model.named_parameters() if p.requires_grad}


def trained_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """What a checkpoint keeps of the model: the whole ``state_dict``, or an adapted model's trained
    tensors alone (the frozen base is rebuilt from the config; ``base_identity`` proves it)."""
    state = model.state_dict()
    if not is_adapted(model):
        return state
    names = trainable_names(model)
    return {name: tensor for name, tensor in state.items() if name in names}


def load_trained_state(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    """The inverse of ``trained_state``: every trained tensor must be there, nothing else."""
    if not is_adapted(model):
        model.load_state_dict(state)
        return
    missing = sorted(trainable_names(model) - set(state))
    unexpected = sorted(set(state) - set(model.state_dict()))
    if missing or unexpected:
        raise ValueError(
            f"the checkpoint's adapter does not fit the model: missing {missing[:3]}, unexpected {unexpected[:3]}"
        )
    model.load_state_dict(state, strict=False)


def describe_parameters(model: torch.nn.Module) -> str:
    """ "N parameters, B bytes of weights", and how many train when some are frozen (shared tensors once)."""
    params = list(model.parameters())
    total, trained = sum(p.numel() for p in params), sum(p.numel() for p in params if p.requires_grad)
    weight_bytes = sum(p.numel() * p.element_size() for p in params)
    text = f"{total:,} parameters, {weight_bytes:,} bytes of weights"
    return text if trained == total else f"{text}; {trained:,} trained ({100 * trained / max(total, 1):.2g}%)"


def base_identity(model: torch.nn.Module, cfg: DictConfig) -> dict[str, Any]:
    """The base an adapter was trained on: its config (and hash), the seed that initialised it, the
    local directory it came from, and the sha256 of its frozen tensors (names, dtypes, shapes, bytes)."""
    model_cfg = OmegaConf.to_container(cfg.model, resolve=True)
    config_text = json.dumps({"model": model_cfg, "seed": int(cfg.seed)}, sort_keys=True)
    adapters = set(getattr(model, "peft_config", {}))  # peft keys each adapter tensor by its name ("default")
    digest = hashlib.sha256()
    for name, tensor in sorted(base_of(model).state_dict().items()):
        if adapters & set(name.split(".")):
            continue  # the adapter's own tensors (lora_A.default.weight), inside the base's modules
        data = tensor.detach().to("cpu").contiguous()
        digest.update(f"{name}:{data.dtype}:{tuple(data.shape)}".encode())
        digest.update(data.view(torch.uint8).numpy().tobytes() if data.numel() else b"")
    return {
        "model": _as_built(model_cfg, base_of(model)),
        "seed": int(cfg.seed),
        "path": model_cfg.get("path") if isinstance(model_cfg, dict) else None,
        "config_sha256": hashlib.sha256(config_text.encode()).hexdigest(),
        "weights_sha256": digest.hexdigest(),
    }


def _as_built(model_cfg: Any, base: torch.nn.Module) -> Any:
    """The model config as base.json shows it: where the base came from ``model.path``, its saved config
    (transformers' ``config.json``) instead of the builder's ``model_type`` and ``config``, which nothing read
    (a GPT-2 base was named a Llama, the YAML's default). The hashes keep the config as composed."""
    saved = getattr(base, "config", None)
    if not (isinstance(model_cfg, dict) and model_cfg.get("path") and callable(getattr(saved, "to_json_string", None))):
        return model_cfg
    shown = {key: value for key, value in model_cfg.items() if key not in ("model_type", "config")}
    return {**shown, "saved_config": json.loads(saved.to_json_string(use_diff=False))}


def export_adapter(model: torch.nn.Module, cfg: DictConfig, directory: Path) -> Path:
    """The adapter alone, in peft's own format (``adapter_model.safetensors`` + ``adapter_config.json``:
    ``PeftModel.from_pretrained(base, directory)`` loads it), and ``base.json``, the base's identity."""
    peft = _peft()
    directory = Path(directory)
    state = peft.get_peft_model_state_dict(model)
    tensors = {name: tensor.detach().to("cpu").contiguous() for name, tensor in state.items()}
    weights = directory / ADAPTER_WEIGHTS
    tmp = directory / f"{ADAPTER_WEIGHTS}.tmp{os.getpid()}"
    save_file(tensors, str(tmp), metadata={"format": "pt"})
    os.replace(tmp, weights)
    model.peft_config[model.active_adapter].save_pretrained(str(directory))
    (directory / BASE_FILE).write_text(json.dumps(base_identity(model, cfg), indent=2) + "\n")
    return weights


def load_adapter(base: torch.nn.Module, cfg: DictConfig, directory: Path) -> tuple[torch.nn.Module, str | None]:
    """``base`` with the adapter exported in ``directory`` (``PeftModel.from_pretrained``, as a user loads
    it), and why it is not the base the adapter was trained on (None when its identity matches)."""
    peft = _peft()
    model = peft.PeftModel.from_pretrained(base, str(directory))
    return model, _other_base(model, cfg, directory)


def load_into_adapted(model: torch.nn.Module, cfg: DictConfig, directory: Path) -> tuple[torch.nn.Module, str | None]:
    """``model``, adapted by its own factory (``get_peft_model`` inside the model's ``_target_``), with the
    adapter weights exported in ``directory``, and why it is not the base they were trained on."""
    peft = _peft()
    loaded = peft.set_peft_model_state_dict(model, load_file(str(Path(directory) / ADAPTER_WEIGHTS)))
    if unexpected := list(getattr(loaded, "unexpected_keys", []) or []):
        return model, f"the exported adapter's tensors do not fit the adapter the factory builds: {unexpected[:3]}"
    return model, _other_base(model, cfg, directory)


def _other_base(model: torch.nn.Module, cfg: DictConfig, directory: Path) -> str | None:
    """Why ``model``'s base is not the one the adapter in ``directory`` was trained on (None: it is)."""
    recorded = json.loads((Path(directory) / BASE_FILE).read_text())
    found = base_identity(model, cfg)
    for key in ("weights_sha256", "config_sha256"):
        if found[key] != recorded.get(key):
            return (
                f"the base rebuilt from the exported config is not the one the adapter was trained on: "
                f"{key} {found[key][:12]} here, {str(recorded.get(key))[:12]} in {BASE_FILE}"
            )
    return None


def frozen_head_hint(model: torch.nn.Module) -> str:
    """Why an adapter run may not learn a handful of examples: its output layer frozen on a base
    that was never trained (a random head caps the logits); "" when that is not the case."""
    if not is_adapted(model):
        return ""
    base = base_of(model)
    head = base.get_output_embeddings() if callable(getattr(base, "get_output_embeddings", None)) else None
    if head is None or any(p.requires_grad for p in head.parameters()):
        return ""
    name = next((n for n, m in base.named_modules() if m is head), "the output layer")
    add = f"add it to the adapter (adapter.target_modules=[...,{name.rsplit('.', 1)[-1]}])"
    source = str(getattr(getattr(base, "config", None), "_name_or_path", "") or "")  # from_pretrained's path
    if source:  # weights were loaded: whether they were ever trained cannot be told from here
        return (
            f" Only the adapter trains and the output layer `{name}` is frozen at the weights loaded from {source}: "
            f"if those were never trained (a checkpoint saved from a fresh model), they cap the logits. Fix: {add}, "
            "or a trained base."
        )
    return (
        f" Only the adapter trains and the output layer `{name}` is frozen: on a randomly initialised base "
        f"(no weights loaded) its fixed random weights cap the logits. Fix: a trained base (model.path=DIR), or {add}."
    )


def scaled_logits_hint(model: torch.nn.Module, lr: float) -> str:
    """A model whose configuration scales its logits down (Cohere's ``logit_scale=0.0625``, Granite's
    ``logits_scaling`` dividing them): a fresh head's logits move that many times slower, so a handful
    of examples is not learnt at a full fine-tuning's learning rate; "" otherwise (a trained base's
    weights already make up for the scale)."""
    config = getattr(base_of(model) if is_adapted(model) else model, "config", None)
    multiplied, divided = getattr(config, "logit_scale", None), getattr(config, "logits_scaling", None)
    factor, said = 1.0, []
    if isinstance(multiplied, (int, float)) and not isinstance(multiplied, bool) and multiplied > 0:
        factor, said = factor * multiplied, [f"config.logit_scale={multiplied:g}"]
    if isinstance(divided, (int, float)) and not isinstance(divided, bool) and divided > 0:
        factor, said = factor / divided, [*said, f"config.logits_scaling={divided:g} (divides)"]
    if factor >= 0.5:
        return ""
    return (
        f" The model scales its logits by {factor:g} ({', '.join(said)}): on fresh weights they move {1 / factor:g}x "
        f"slower than the head's outputs, so a handful of examples needs a larger learning rate. Fix: optim.lr="
        f"{lr / factor:.3g} for this check, or a trained base (model.path=DIR), whose weights already make up "
        "for the scale."
    )


def adapter_rate_hint(model: torch.nn.Module, lr: float) -> str:
    """An adapter whose head is trained but which still did not learn: low-rank updates usually need a
    learning rate about ten times a full fine-tuning's (measured: the README's LoRA pilot on a random
    Llama fails at 1e-3, 6.7x in 300 updates, and passes at 1e-2, 194x in 70); "" otherwise."""
    if not is_adapted(model) or frozen_head_hint(model) or lr >= 1e-2:
        return ""
    return (
        f" Only the adapter trains (the output layer through its adapter or its trainable copy, the base frozen), at "
        f"optim.lr={lr:g}: low-rank updates "
        f"usually need about ten times a full fine-tuning's rate. Fix: a higher rate for the adapter run (optim.lr="
        f"{lr * 10:g}); a base built from a config (random weights, no model.path) gives the adapter random features "
        "to adapt, which may not separate the subset at any rate: judge the adapter on the trained base."
    )


def _verb(names: list[str]) -> str:
    return "matches" if len(names) == 1 else "match"
