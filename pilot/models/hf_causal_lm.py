"""A Hugging Face ``transformers`` causal LM, built by config: no adapter code.

``build`` returns the ``transformers`` model itself (a ``PreTrainedModel``): either a fresh,
randomly initialised one from a config dict (``AutoConfig.for_model(model_type, **config)``, any
architecture ``transformers`` knows) or the one saved in a local directory (``path``;
``from_pretrained`` never downloads here). Its ``forward(input_ids, attention_mask=...)`` returns a
``ModelOutput`` whose ``logits`` the built-in tasks read (``pilot.data.task.logits_of``).
``memory=checkpointing`` uses the model's own ``gradient_checkpointing_enable``
(``pilot.engine.checkpointing``). The keyword defaults equal ``conf/model/hf_causal_lm.yaml``,
where each value is explained.
"""

from __future__ import annotations

import copy
import difflib
import logging
from pathlib import Path
from typing import Any

import torch

from pilot.errors import PilotError, error_line
from pilot.models.hf_config_reads import (
    config_settings_matching,
    known_keys,
    sizes_in,
    unknown_keys,
    unread_note,
    width_and_depth_unread,
)
from pilot.models.hf_refusals import attention_refusal, config_refused, refusal, setting_named_by
from pilot.models.saved_model import reads_ahead, refuse_weights_not_loaded

log = logging.getLogger(__name__)

_said: set[str] = set()  # the unread-settings warnings this process gave
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _transformers():
    try:
        import transformers
    except ImportError as error:  # an optional extra: pip install 'pilot[hf]'
        raise PilotError("model=hf_causal_lm needs the transformers package. Fix: pip install 'pilot[hf]'.") from error
    return transformers


def _from_directory(transformers, path: str, kwargs: dict[str, Any]):
    directory = Path(path).expanduser()
    if not (directory / "config.json").is_file():
        raise PilotError(
            f"model.path={path}: no config.json there. Fix: give a local directory written by "
            "save_pretrained (pilot never downloads), or model.path=null to build from model.config."
        )
    if torch.get_default_device().type == "meta" or torch._guards.detect_fake_mode() is not None:
        # shapes only (the fake-tensor estimate, mode=estimate's attention calls): built from its config.
        # from_pretrained refuses the meta device, and under fake tensors it reads the real weights (a 7B
        # model's 28 GB in a mode that allocates nothing) and leaves tied embeddings untied (counted twice)
        config = transformers.AutoConfig.from_pretrained(str(directory), local_files_only=True)
        return transformers.AutoModelForCausalLM.from_config(config, **kwargs)
    try:
        model, loading = transformers.AutoModelForCausalLM.from_pretrained(
            str(directory), local_files_only=True, output_loading_info=True, **kwargs
        )
    except (OSError, ValueError, TypeError, KeyError) as error:  # a damaged directory: said with its fix
        attention = attention_refusal(error, kwargs["attn_implementation"])  # a sound directory, the setting to change
        if attention is not None:
            raise attention from error
        raise PilotError(
            f"model.path={path}: transformers cannot load it ({error_line(error)}). Fix: a local directory written "
            "by save_pretrained, config.json and its weights (pilot never downloads), or model.path=null to build "
            "from model.config."
        ) from error
    refuse_weights_not_loaded(path, model, loading)
    return model


def build(
    model_type: str,  # no default: conf/model/hf_causal_lm.yaml says llama, hf_gpt2.yaml gpt2
    config: dict[str, Any] | None = None,
    path: str | None = None,
    dtype: str = "fp32",
    attn_implementation: str = "sdpa",
) -> torch.nn.Module:
    """The causal LM of ``path`` (a local directory), else a fresh one of ``model_type`` and ``config``."""
    transformers = _transformers()
    if dtype not in DTYPES:
        raise PilotError(f"model.dtype={dtype}: must be one of {sorted(DTYPES)}.")
    kwargs = {"attn_implementation": attn_implementation, "dtype": DTYPES[dtype]}
    try:
        model = _built(transformers, model_type, config, path, kwargs)
    except (ValueError, ImportError, AssertionError) as error:
        raise refusal(error, model_type, config, attn_implementation) from error
    model.config.use_cache = False  # training and the checks never reuse a key/value cache
    return model


def _built(transformers: Any, model_type: str, config: dict[str, Any] | None, path: str | None, kwargs: dict):
    if path:
        return _from_directory(transformers, path, kwargs)
    else:
        known = transformers.models.auto.configuration_auto.CONFIG_MAPPING
        if model_type not in known:  # transformers' own message lists all ~400 types
            raise PilotError(_unknown_model_type(transformers, model_type))
        settings = dict(config or {})
        if (unread := width_and_depth_unread(transformers, model_type, settings)) is not None:
            raise PilotError(unread)
        try:
            model_config = transformers.AutoConfig.for_model(model_type, **settings)
        except Exception as error:  # ValueError, huggingface_hub's StrictDataclassError (validate_architecture)
            raise config_refused(known[model_type], settings, error) from error
        if reads_ahead(transformers, model_config):
            raise PilotError(
                f"model.model_type={model_type} with is_decoder=false attends to every position, the tokens it is "
                "to predict included (an encoder: the loss would see each answer). Fix: +model.config.is_decoder=true "
                "(its causal mode), or a decoder-only model.model_type such as llama."
            )
        if (note := unread_note(known[model_type], settings, model_config)) and note not in _said:
            _said.add(note)  # once per process: the pilot builds the model several times
            log.warning(note)
        try:
            return transformers.AutoModelForCausalLM.from_config(model_config, **kwargs)
        except (IndexError, RuntimeError, TypeError) as error:  # settings that disagree, met while building
            raise _build_crash(error, model_type, model_config, settings) from error


def _build_crash(error: Exception, model_type: str, model_config: Any, settings: dict[str, Any]) -> Exception:
    """A build that crashed, with the settings whose values the message names (or ``error`` itself)."""
    found = config_settings_matching(sizes_in(str(error)), model_config, settings)
    if not found:
        return error
    listed = ", ".join(text for _, text in sorted(found, key=lambda item: item[0]))
    return PilotError(
        f"model.model_type={model_type} could not be built: {type(error).__name__}: {' '.join(str(error).split())}. "
        f"Sizes in that message match these settings: {listed}. Fix: make the model's settings agree with each "
        "other (a default sized for a larger model, or a token id used as an index, e.g. pad_token_id as the "
        "padding row of a position table)."
    )


COMMON_MODEL_TYPES = ("llama", "qwen2", "mistral", "gemma", "phi3", "gpt2")  # offered when none is near


def _unknown_model_type(transformers: Any, model_type: str) -> str:
    # the mapping also holds a few class names (EvollaModel): a model type is written in lower case
    known = [name for name in transformers.models.auto.configuration_auto.CONFIG_MAPPING if name.islower()]
    near = difflib.get_close_matches(str(model_type).lower(), known, n=3)
    common = [name for name in COMMON_MODEL_TYPES if name in known]
    fix = " or ".join(f"model.model_type={name}" for name in near) or f"a model type it knows, e.g. {', '.join(common)}"
    return (
        f"model.model_type={model_type}: not a model type transformers {transformers.__version__} knows. "
        f"Fix: {fix} (transformers.models.auto.configuration_auto.CONFIG_MAPPING lists them)."
    )


def config_problem(
    model_type: str, config: dict[str, Any] | None, typed: set[str] = frozenset(), attn_implementation: str = "sdpa"
) -> tuple[dict[str, Any], str] | None:
    """What building would refuse about ``model.config``, found before anything runs (pilot.validation):
    (the settings named, why). ``typed``: the keys the command line set; one of them the config class
    does not define is a typo (a key of the model's YAML may serve another model type: not judged).
    Then the model itself is built from the config on the meta device, one block deep (16 ms where the
    32 blocks of a 7B take 5 s; a block's sizes are checked alike in every block): what its layers refuse
    (GPT-2's embed_dim not divisible by the heads, an attention implementation Bloom lacks)."""
    transformers = _transformers()
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()  # its warnings about the config: building says them, once
    try:
        return _config_problem(transformers, model_type, dict(config or {}), typed, attn_implementation)
    finally:
        transformers.logging.set_verbosity(verbosity)


def _config_problem(
    transformers: Any, model_type: str, settings: dict[str, Any], typed: set[str], attn_implementation: str
) -> tuple[dict[str, Any], str] | None:
    known = transformers.models.auto.configuration_auto.CONFIG_MAPPING
    if model_type not in known:  # said before a run record exists, as building would say it
        return {"model_type": model_type}, _unknown_model_type(transformers, model_type)
    if given := [k for k in ("dtype", "torch_dtype") if k in settings and k in typed]:  # read by no build here
        value = str(settings[given[0]]).removeprefix("torch.")
        ours = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}.get(value)
        return {given[0]: settings[given[0]]}, (
            f"model.config.{given[0]}={value}: building from model.config does not read it (the run would train "
            f"in fp32 under a record saying {value}); the weights' dtype is model.dtype (fp32, bf16, fp16). "
            f"Fix: model.dtype={ours or 'bf16'} instead"
        )
    try:
        _refuse_unknown_keys(known[model_type], {k: v for k, v in settings.items() if k in typed})
    except PilotError as error:
        return {k: settings[k] for k in unknown_keys(known[model_type], settings) if k in typed}, str(error)
    if (unread := width_and_depth_unread(transformers, model_type, settings)) is not None:
        return {k: settings[k] for k in unknown_keys(known[model_type], settings)}, unread
    aliases = {v: k for k, v in (getattr(known[model_type], "attribute_map", {}) or {}).items()}  # n_layer: depth
    named = {k: (aliases.get(k, k), v) for k, v in settings.items() if isinstance(v, int) and not isinstance(v, bool)}
    if zero := {k: v for k, (name, v) in named.items() if name in COUNTS and v <= 0}:
        shown = ", ".join(f"model.config.{k}={v}" for k, v in zero.items())
        said = ", ".join(COUNTS[aliases.get(k, k)] for k in zero)
        return zero, f"{shown}: must be > 0 ({said}). Fix: a positive size."
    if negative := {k: v for k, (name, v) in named.items() if name == "num_hidden_layers" and v < 0}:
        shown = ", ".join(f"model.config.{k}={v}" for k, v in negative.items())
        said = "a number of blocks, >= 0 (0: the embeddings and the head alone). Fix: 0 or more, e.g. 2 for a pilot"
        return negative, f"{shown}: {said}."
    try:
        built = transformers.AutoConfig.for_model(model_type, **settings)
    except Exception as error:  # noqa: BLE001 - transformers' own check (StrictDataclassError, ValueError)
        refused = str(config_refused(known[model_type], settings, error))
        return {k: v for k, v in settings.items() if f"model.config.{k}=" in refused}, refused
    return _grouped_heads_problem(built) or _layers_problem(transformers, built, settings, attn_implementation)


def _layers_problem(
    transformers: Any, config: Any, settings: dict[str, Any], attn: str
) -> tuple[dict[str, Any], str] | None:
    """What the model's own layers refuse, from a one-block build on the meta device (no memory)."""
    try:
        _on_meta(transformers, config, attn, blocks=1)
    except (ValueError, ImportError, AssertionError, RuntimeError) as error:  # on meta: no allocation fails
        refused = refusal(error, config.model_type, settings, attn)
        if refused is error:
            refused = config_refused(type(config), settings, error)
        text = str(refused)
        return {k: v for k, v in settings.items() if f"model.config.{k}=" in text}, text
    except Exception as error:  # noqa: BLE001 - a setting's value, transformers' fault for this type, or building's to say
        if (named := setting_named_by(error, type(config), settings)) is not None:
            return {k: v for k, v in settings.items() if f"model.config.{k}=" in str(named)}, str(named)
        return _unbuildable_type(transformers, config.model_type, attn, error)
    return None


def _on_meta(transformers: Any, config: Any, attn: str, blocks: int | None) -> torch.nn.Module:
    """The model of ``config`` on the meta device (no memory), ``blocks`` blocks deep (None: all of them)."""
    shallow = _fewer_blocks(config, blocks) if blocks is not None else config
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(shallow, attn_implementation=attn)


def _fewer_blocks(config: Any, blocks: int) -> Any:
    """A copy of ``config`` ``blocks`` blocks deep, or ``config`` itself where its depth or its blocks'
    types cannot be set (a read-only property: Mamba's, Jamba's and RecurrentGemma's block types)."""
    shallow = copy.deepcopy(config)
    try:
        if isinstance(getattr(shallow, "num_hidden_layers", None), int) and shallow.num_hidden_layers > blocks:
            shallow.num_hidden_layers = blocks
            if isinstance(getattr(shallow, "layer_types", None), list):  # one type per block (Gemma 2, Qwen 3...)
                shallow.layer_types = shallow.layer_types[:blocks]
    except AttributeError:
        return config
    return shallow


def _unbuildable_type(transformers: Any, model_type: str, attn: str, error: Exception) -> tuple[dict, str] | None:
    """When building fails in a way pilot does not know (``error``): if transformers cannot build the
    model type from its own default config either, that is said (a bug of this transformers for this
    type, not the user's settings); else None (building says the error, where it happens)."""
    try:
        _on_meta(transformers, transformers.AutoConfig.for_model(model_type), attn, blocks=None)
    except Exception as default_error:  # noqa: BLE001 - any error: the default config fails too
        if type(default_error) is type(error):
            first = (str(error).splitlines() or [""])[0][:200]
            return {"model_type": model_type}, (
                f"model.model_type={model_type}: transformers {transformers.__version__} cannot build it from a "
                f"config, not even from its own default one ({type(error).__name__}: {first}): a fault of this "
                "transformers for this model type, not of your settings. Fix: another model type, or another "
                "transformers version"
            )
    return None


def meta_model(
    model_type: str, config: dict[str, Any] | None, path: str | None, attn: str = "sdpa", blocks: int | None = 1
) -> torch.nn.Module | None:
    """The model a config (or ``path``'s config.json) builds, on the meta device, ``blocks`` blocks deep
    (None: all of them); None when it cannot be built (validation's other checks, or building, say why)."""
    transformers = _transformers()
    verbosity = transformers.logging.get_verbosity()
    transformers.logging.set_verbosity_error()
    try:
        built = (
            transformers.AutoConfig.from_pretrained(str(Path(path).expanduser()), local_files_only=True)
            if path
            else transformers.AutoConfig.for_model(model_type, **dict(config or {}))
        )
        return _on_meta(transformers, built, attn, blocks)
    except Exception:  # noqa: BLE001
        return None
    finally:
        transformers.logging.set_verbosity(verbosity)


def saved_config_problem(path: str, attn: str) -> tuple[str, str] | None:
    """What building ``path``'s saved model would refuse, found before anything runs: key/value heads that do
    not divide its heads (the first forward's size mismatch, 15 s into a pilot), or, on the meta device, the
    attention implementation ``attn`` (Bloom without an sdpa kernel). (the setting to name, why), else None."""
    transformers = _transformers()
    try:
        config = transformers.AutoConfig.from_pretrained(str(Path(path).expanduser()), local_files_only=True)
    except Exception:  # noqa: BLE001 - a folder transformers cannot read: check_model_path says it
        return None
    if (heads := _grouped_heads_problem(config)) is not None:
        text = heads[1].replace("model.config.", "").split(" Fix: ")[0]
        return (
            "model.path",
            f"its config.json says {text} Fix: edit {path}/config.json (saved with heads that cannot run)",
        )
    try:
        _on_meta(transformers, config, attn, 1)
    except Exception as error:  # noqa: BLE001 - only the attention's refusal is said here
        refused = attention_refusal(error, attn)
        return None if refused is None else ("model.attn_implementation", str(refused))
    return None


def _grouped_heads_problem(config: Any) -> tuple[dict[str, Any], str] | None:
    """Grouped-query attention shares each key/value head among num_attention_heads /
    num_key_value_heads query heads: a count that does not divide fails in the first forward
    (a tensor size mismatch that names no setting), so it is said before anything runs."""
    heads = getattr(config, "num_attention_heads", None)
    kv_heads = getattr(config, "num_key_value_heads", None)
    if not isinstance(heads, int) or not isinstance(kv_heads, int) or kv_heads <= 0 or heads % kv_heads == 0:
        return None
    divisors = [d for d in range(1, heads + 1) if heads % d == 0]
    return {"num_key_value_heads": kv_heads, "num_attention_heads": heads}, (
        f"model.config.num_key_value_heads={kv_heads} does not divide model.config.num_attention_heads={heads}: "
        "each key/value head serves a whole group of query heads. Fix: model.config.num_key_value_heads="
        f"one of {', '.join(map(str, divisors))} ({heads}: one per query head; 1: multi-query)."
    )


def config_key_outside_the_yaml(cfg: Any, key: str, argument: str) -> str | None:
    """``model.config.n_inner=128`` typed without ``+`` for a key transformers' config class has but the
    model's YAML does not list: Hydra refuses it, and the way to pass it is ``+`` (None otherwise)."""
    target = str(cfg.get("model", {}).get("_target_", "") or "")
    if not key.startswith("model.config.") or not target.endswith("hf_causal_lm.build"):
        return None
    try:
        known = _transformers().models.auto.configuration_auto.CONFIG_MAPPING
    except PilotError:
        return None
    model_type, name = str(cfg.model.get("model_type")), key.split(".")[2]
    if name == "model_type":  # the config class's own name for its architecture, chosen one level up
        value = argument.split("=", 1)[1]
        return f"{key}: the architecture is not a setting of model.config. Fix: model.model_type={value}"
    if model_type not in known or name not in known_keys(known[model_type]):
        return None
    return (
        f"{key}: a setting of transformers' {known[model_type].__name__} that the model's YAML does not list. "
        f"Fix: +{argument} (the + adds it to model.config, which is passed to {known[model_type].__name__})"
    )


def _refuse_unknown_keys(config_class: type, settings: dict[str, Any]) -> None:
    """A key the config class does not define would be stored on it and read by nothing (a typo
    trains the default): refused, with the nearest keys it does define."""
    unknown = unknown_keys(config_class, settings)
    if unknown:
        known = known_keys(config_class)
        lines = [
            f"model.config.{key}"
            + (
                f" (did you mean {' or '.join(f'model.config.{n}' for n in near)}?)"
                if (near := difflib.get_close_matches(key, sorted(known), n=2))
                else ""
            )
            for key in unknown
        ]
        raise PilotError(
            f"{', '.join(lines)}: not a setting of transformers' {config_class.__name__}: it would be stored and "
            "read by nothing, and the run would train the default. Fix: the setting's name in "
            f"{config_class.__name__} (its to_dict() lists them), or drop it."
        )


COUNTS = {  # sizes that cannot be 0 (a model without layers, num_hidden_layers=0, can: a bigram model)
    "hidden_size": "the residual width",
    "num_attention_heads": "attention heads per block",
    "num_key_value_heads": "key/value heads, each shared by a group of query heads",
    "head_dim": "the width of each head",
    "vocab_size": "token ids the embedding holds",
    "max_position_embeddings": "positions the model can read",
}


# memory=checkpointing: the built model's own gradient_checkpointing_enable (pilot.engine.checkpointing
# checks the model's supports_gradient_checkpointing when it is built)
build.supports_activation_checkpointing = True
