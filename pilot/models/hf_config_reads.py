"""Which ``model.config`` settings a transformers config class reads, and what a model built from
settings it does not read would be.

``conf/model/hf_causal_lm.yaml`` gives Llama-shaped sizes to every model type. A config class stores
a key it does not define and reads it nowhere: OPT has ``ffn_dim`` and no ``intermediate_size``, so it
keeps its default 3072-wide MLP (6.5x the parameters the YAML suggests); a composite config
(Qwen3.5, Mllama: ``text_config`` and ``vision_config``) reads none of them, and transformers builds
its default size, billions of parameters that end the process out of memory before anything is said.

- ``width_and_depth_unread``: a refusal, before anything runs, when neither the width nor the depth
  is read (the model would be the default size), naming the sub-config's model type that reads them;
- ``unread_note``: a warning when some settings are not read, naming the model's own sizes that stay
  at the class's defaults (and a ``head_dim`` that is not hidden_size / num_attention_heads).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

WIDTH_AND_DEPTH = ("hidden_size", "num_hidden_layers")
SIZE_NAME = re.compile(
    r"dim|inner|ffn|intermediate|(^|_)d_|_layers$|_heads$"
)  # the names config classes give their sizes
FAR_ABOVE = 8  # a default size this many times the width the user set: sized for the full model


def known_keys(config_class: type) -> set[str]:
    known = set(config_class().to_dict()) | set(getattr(config_class, "attribute_map", {}))
    return known | set(inspect.signature(config_class.__init__).parameters) - {"self", "kwargs"}


def unknown_keys(config_class: type, settings: dict[str, Any]) -> list[str]:
    known = known_keys(config_class)
    return sorted(key for key in settings if key not in known)


def width_and_depth_unread(transformers: Any, model_type: str, settings: dict[str, Any]) -> str | None:
    """The refusal when the config class of ``model_type`` reads neither ``hidden_size`` nor
    ``num_hidden_layers`` of ``settings`` (both given), else None."""
    config_class = transformers.models.auto.configuration_auto.CONFIG_MAPPING[model_type]
    unread = unknown_keys(config_class, settings)
    if not all(key in settings and key in unread for key in WIDTH_AND_DEPTH):
        return None
    readers = _causal_sub_configs(transformers, config_class)
    fix = (
        " or ".join(f"model.model_type={name}" for name in readers)
        + " (the part of it that is a causal LM and reads them)"
        if readers
        else "a model type whose config reads them, or model.path=<a directory saved with the sizes you mean>"
    )
    held = f" (it holds {', '.join(sorted(getattr(config_class, 'sub_configs', {})))})" if readers else ""
    return (
        f"model.model_type={model_type}: transformers' {config_class.__name__}{held} reads none of "
        f"{', '.join(f'model.config.{key}' for key in unread)}: they would be stored and read by nothing, and the "
        "model built at transformers' default size for it (billions of parameters for some: out of memory "
        f"before a word is said). Fix: {fix}"
    )


def _causal_sub_configs(transformers: Any, config_class: type) -> list[str]:
    """The model types of ``config_class``'s sub-configs that transformers builds as causal LMs."""
    auto = transformers.models.auto
    causal = auto.modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    names = [getattr(sub, "model_type", sub) for sub in getattr(config_class, "sub_configs", {}).values()]
    return [name for name in names if isinstance(name, str) and name in causal]


def unread_note(config_class: type, settings: dict[str, Any], built: Any) -> str | None:
    """What a model built from ``settings`` by ``config_class`` (``built``: its config) does not take
    from them, in one warning, or None: the settings it stores and reads nowhere, and its own sizes
    left at the class's defaults."""
    unread = unknown_keys(config_class, settings)
    defaults = config_class().to_dict()
    mapped = {getattr(config_class, "attribute_map", {}).get(key, key) for key in settings}
    own = {
        key: value
        for key, value in built.to_dict().items()
        if isinstance(value, int)
        and not isinstance(value, bool)
        and key not in mapped
        and SIZE_NAME.search(key)
        and defaults.get(key) == value
    }
    said = []
    if unread:
        said.append(
            f"{config_class.__name__} reads none of {', '.join(f'model.config.{k}={settings[k]}' for k in unread)} "
            "(stored and read by nothing)"
        )
    heads, width, head_dim = (getattr(built, key, None) for key in ("num_attention_heads", "hidden_size", "head_dim"))
    large = {
        k: v for k, v in own.items() if "hidden_size" in mapped and isinstance(width, int) and v >= FAR_ABOVE * width
    }
    if unread and own:
        said.append(f"its own sizes stay at its defaults: {', '.join(f'{k}={v}' for k, v in sorted(own.items()))}")
    elif large:
        said.append(
            f"its own sizes stay at defaults sized for the full model, {FAR_ABOVE}x hidden_size={width} and more: "
            + ", ".join(f"{k}={v}" for k, v in sorted(large.items()))
        )
    if "head_dim" in own and all(isinstance(v, int) and v > 0 for v in (heads, width)) and head_dim * heads != width:
        said.append(f"head_dim={head_dim} is its default, not hidden_size / num_attention_heads = {width / heads:g}")
    if not said:
        return None
    return (
        f"model.model_type={built.model_type}: "
        + "; ".join(said)
        + ". The model is built as its config says. Fix: set the sizes "
        "under the names this config class reads (+model.config.<name>=...)."
    )


def sizes_in(message: str) -> set[int]:
    """The integers a message names (sizes, counts), 2 and above: 0 and 1 match too much."""
    return {int(number) for number in re.findall(r"(?<![\w.])\d+(?![\w.])", message) if int(number) >= 2}


def is_size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def config_settings_matching(sizes: set[int], config: Any, given: dict[str, Any]) -> list[tuple[bool, str]]:
    """(set by the user, ``model.config.<key>=<value>``) for each integer setting of a transformers config
    whose value is one of ``sizes``; a default is marked as such (``given``: what the user set)."""
    aliases = getattr(config, "attribute_map", {}) or {}
    set_by_user = {aliases.get(key, key): key for key in given}  # the attribute -> the name the user wrote
    model_type = getattr(config, "model_type", "the model")
    found = []
    for key, value in config.to_dict().items():
        if is_size(value) and value in sizes:
            if key in set_by_user:
                found.append((True, f"model.config.{set_by_user[key]}={value}"))
            else:
                found.append((False, f"model.config.{key}={value} (not set: {model_type}'s default)"))
    return found


COUNT_NAME = re.compile(r"^(num|n)_|_(size|dim|dims|heads|experts|per_tok|layers)$|top_?k")  # a count or a size


def unset_counts(config: Any) -> list[str]:
    """A transformers config's settings named as a count or size whose value is None (a default that
    leaves them to the checkpoint): what a crash on a None where a number was due points at."""
    if not hasattr(config, "to_dict"):
        return []
    model_type = getattr(config, "model_type", "the model")
    return [
        f"model.config.{key} (None: {model_type}'s default)"
        for key, value in config.to_dict().items()
        if value is None and COUNT_NAME.search(key)
    ][:6]
