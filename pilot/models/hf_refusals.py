"""How transformers' refusals of a model config are said: with the settings to change and the fix."""

from __future__ import annotations

import re
from typing import Any

from pilot.errors import PilotError

SIZE_KEYS = ("hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "intermediate_size")


def refusal(error: Exception, model_type: str, config: dict[str, Any] | None, attn: str) -> Exception:
    """What transformers refused, said with the setting to change (or ``error`` itself)."""
    text = str(error)
    attention = attention_refusal(error, attn)
    if attention is not None:
        return attention
    if "Unrecognized configuration class" in text:  # a model type with no causal LM (T5, an encoder...)
        return PilotError(
            f"model.model_type={model_type}: transformers has no causal language model for it "
            "(AutoModelForCausalLM knows none). Fix: a decoder model type (llama, qwen2, gpt2, ...); an "
            "encoder-decoder or encoder needs a model of your own (README, 'Your own model and data')."
        )
    if "Padding_idx must be within num_embeddings" in text:
        return padding_idx_refused(dict(config or {})) or error
    return error


def attention_refusal(error: Exception, attn: str) -> PilotError | None:
    """transformers refusing the attention implementation (Bloom, or Gemma2's softcapping, under sdpa),
    said with the setting to change; None for any other error."""
    text = str(error)
    if any(mark in text.lower() for mark in ("attention implementation", "attn_implementation", "flashattention")):
        fix = "model.attn_implementation=eager"
        if "flash" in str(attn).lower():  # a flash kernel not installed here: PyTorch's fused attention is the nearest
            fix = (
                "model.attn_implementation=sdpa (PyTorch's fused attention: on a GPU it runs flash or memory-"
                "efficient kernels, with no package to install), or model.attn_implementation=eager"
            )
        return PilotError(f"model.attn_implementation={attn}: {text.split('. ')[0].rstrip('.')}. Fix: {fix}")
    return None


def padding_idx_refused(settings: dict[str, Any]) -> PilotError | None:
    """A table given the pad id as its padding index has fewer rows than that id: the token embedding
    (vocab_size), or, where the vocabulary holds it, a position table that counts from the pad id
    (RoBERTa, XLM-RoBERTa: max_position_embeddings); None where the settings say neither."""
    pad, vocab, positions = (settings.get(k) for k in ("pad_token_id", "vocab_size", "max_position_embeddings"))
    if not isinstance(pad, int):
        return None
    if isinstance(vocab, int) and pad >= vocab:
        return PilotError(
            f"model.config.pad_token_id={pad} is not below model.config.vocab_size={vocab}: the padding token has "
            "no row in the embedding. Fix: a vocab_size above every token id (the default: ${data.vocab_size}), or "
            "the tokenizer's pad id."
        )
    if isinstance(positions, int) and pad >= positions:
        return PilotError(
            f"model.config.max_position_embeddings={positions} is not above model.config.pad_token_id={pad}: this "
            "model type counts positions from the pad id (RoBERTa's position table uses it as its padding index), so "
            f"the table needs pad id + 1 + the longest sequence rows. Fix: model.config.max_position_embeddings="
            f"{pad + 1 + positions} (for sequences of {positions} tokens)"
        )
    return None


def config_refused(config_class: type, settings: dict[str, Any], error: Exception) -> PilotError:
    """transformers' own check of the config (sizes that disagree), said with the settings it names."""
    reason = str(error).strip().splitlines()[-1].strip().rstrip(".")
    text = reason.lower()
    named = [key for key in settings if key in text or key.replace("_", " ") in text]
    numbers = set(re.findall(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])", reason))  # "(got embed_dim: 64 and num_heads: 3)"
    named += [  # a setting whose value the message quotes, under the model's own name for it (n_head: num_heads)
        k
        for k, v in settings.items()
        if k not in named
        and isinstance(v, (int, float))
        and not isinstance(v, bool)
        and f"{v:g}" in numbers - {"0", "1"}  # 0 and 1: bounds ("between 0 and 1")
    ]
    quoted = [k for k in named if k not in text and k.replace("_", " ") not in text]
    for value in {settings[k] for k in quoted}:  # "dropout ... got 2": resid_pdrop=2, not n_layer=2 too
        alike = [k for k in quoted if settings[k] == value]
        if len(alike) > 1 and (worded := [k for k in alike if _shares_a_word(k, text)]):
            named = [k for k in named if k not in alike or k in worded]
    if not named:  # a negative size (a tensor of negative dimension), else the sizes the model's own names come from
        named = [k for k, v in settings.items() if isinstance(v, int) and not isinstance(v, bool) and v < 0]
        named = named or [key for key in SIZE_KEYS if key in settings]
    shown = ", ".join(f"model.config.{key}={settings[key]}" for key in named)
    negative = any(isinstance(settings[key], int) and settings[key] < 0 for key in named)
    fix = "sizes > 0" if negative else "values that agree (the model's README names its constraints)"
    if typed := re.search(r"[Ff]ield '(\w+)' expected (\w+), got (\w+)", reason):  # a value of the wrong type
        key, expected, _ = typed.groups()
        fix = f"model.config.{key}=<{'an integer' if expected == 'int' else f'a {expected}'}>"
    return PilotError(
        f"transformers' {config_class.__name__} refuses model.config: {reason}"
        + (f" ({shown})" if shown else "")
        + f". Fix: {fix}."
    )


def setting_named_by(error: Exception, config_class: type, settings: dict[str, Any]) -> PilotError | None:
    """A build that failed on a setting's own value (``KeyError('gelux')`` for ``hidden_act=gelux``): said
    with that setting; None when no string setting's value is what the error names."""
    text = str(error)
    named = [k for k, v in settings.items() if isinstance(v, str) and v and (repr(v) in text or text == v)]
    if not named:
        return None
    key = named[0]
    known = ""
    if "act" in key:  # an activation's name: transformers' table of them
        from transformers.activations import ACT2FN

        known = f" (one of {', '.join(sorted(ACT2FN))})"
    return PilotError(
        f"model.config.{key}={settings[key]}: {config_class.__name__}'s layers cannot be built with it "
        f"({type(error).__name__}: {text[:200]}). Fix: a value transformers knows for {key}{known}"
    )


def _shares_a_word(key: str, text: str) -> bool:
    """Whether a setting's name and a word of the message share four letters in a row (resid_pdrop, dropout)."""
    name = key.replace("_", "")
    words = [w for w in re.findall(r"[a-z]{4,}", text)]
    return any(name[i : i + 4] in word for word in words for i in range(len(name) - 3))
