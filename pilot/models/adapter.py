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
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from safetensors.torch import load_file, save_file

from pilot.errors import ConfigRefused, PilotError
from pilot.models.adapter_targets import (
    adapt_nothing,
    adaptable_layers,
    names_in_both_lists,
    names_matching_nothing,
    regex_adapts_nothing,
    save_nothing,
    saved_names_matching_nothing,
)
from pilot.models.embedding_tables import output_layer

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


def _refuse_names_that_adapt_nothing(adapted: torch.nn.Module, targets: Any, layers: list[str]) -> None:
    """peft refuses a list of which no name matches, and adapts silently what part of it matches: the
    rest would train nothing while the run's config says it does (Bloom has no q_proj: only lm_head
    trained). Every name of the list must match a module."""
    if not isinstance(targets, list):
        return  # all-linear, or a regular expression: peft's own matching
    unmatched = names_matching_nothing(targets, getattr(adapted, "targeted_module_names", None) or [])
    if unmatched:
        raise ConfigRefused(f"adapter.target_modules={targets!r}: {adapt_nothing(unmatched, base_of(adapted), layers)}")


def built_adapter(model: torch.nn.Module) -> dict[str, Any]:
    """What peft built, beside what was asked (all-linear reaches a mixture of experts' router, and peft gives
    its experts' 3-D tensors ranks of their own): the layers it adapted and the tensors it adapted directly,
    each by its name's last part with their count, and the ranks and alphas it set apart from r."""
    if not is_adapted(model):
        return {}
    built: dict[str, Any] = {}
    for key, names in (("adapted_layers", "targeted_module_names"), ("adapted_tensors", "targeted_parameter_names")):
        counted = Counter(name.rsplit(".", 1)[-1] for name in getattr(model, names, None) or [])
        if counted:
            built[key] = dict(sorted(counted.items()))
    config = next(iter((getattr(model, "peft_config", None) or {}).values()), None)
    for key in ("rank_pattern", "alpha_pattern"):
        if getattr(config, key, None):
            built[key] = dict(getattr(config, key))
    return built


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
    head = output_layer(base)
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
