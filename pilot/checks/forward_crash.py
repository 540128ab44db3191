"""What the contract says when the model's forward crashes on its first collated micro-batch.

Most such crashes of a model built from a config are settings that disagree with each other: a
default sized for the full model (GPT-J's ``rotary_dim=64``) kept beside a small ``hidden_size``, a
head count that does not divide the width. The error itself names sizes, not settings ("the size of
tensor a (16) must match the size of tensor b (64)"). ``forward_crash`` turns it into one refusal
that says where it was raised (the innermost frame outside torch) and which of the model's settings
hold a size the error names, marking those the user did not set (a default). Nothing is guessed
beyond that: the settings listed are the candidates, the user picks the fix.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Mapping
from typing import Any

import torch

from pilot.data.task import ContractError
from pilot.models.embedding_tables import token_embedding
from pilot.models.hf_config_reads import config_settings_matching, is_size, sizes_in, unset_counts

TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
MOST_LISTED = 6  # settings named at most


def forward_crash(
    error: Exception, model: torch.nn.Module, settings: Mapping[str, Any] | None, rows: int
) -> ContractError:
    """The refusal for ``error``, raised by the model's forward on ``rows`` examples; ``settings``: the
    config's ``model`` node (what the user set), when there is one."""
    adapter = _adapter_layer(error, model)
    if adapter:
        return ContractError(
            f"the model's forward crashed on {rows} collated training example(s): {type(error).__name__}: "
            f"{_one_line(error)} (raised in {_where(error)}), in peft's adapter layer on {adapter}. Fix: "
            "adapter.target_modules naming only layers peft can adapt, leaving that one out (e.g. the "
            "attention projections: adapter.target_modules=[q_proj,v_proj])."
        )
    listed = _matching_settings(str(error), model, settings or {}, rows)
    default = (
        " (a default sized for a larger model, marked above, is the usual cause)" if "(not set" in str(listed) else ""
    )
    unset = unset_counts(getattr(model, "config", None)) if "NoneType" in str(error) else []
    matches = (
        f" Sizes in that message match these settings: {', '.join(listed)}. Fix: make the model's settings "
        f"agree with each other{default}."
        if listed
        else f" These count or size settings are None: {', '.join(unset)}. Fix: set the one the model needs "
        "(e.g. +model.config.<key>=<number>)."
        if unset
        else " Fix: the model's settings, or what the task's forward passes it (the error above says what failed)."
    )
    return ContractError(
        f"the model's forward crashed on {rows} collated training example(s): {type(error).__name__}: "
        f"{_one_line(error)} (raised in {_where(error)}).{matches}"
    )


def negative_ids(error: Exception, batch: Mapping[str, Any]) -> ContractError | None:
    """An index error on a batch whose integer inputs (any key but labels) hold negative values: the
    loss's ignore value (-100) left in ids an embedding looks up (decoder_input_ids shifted from labels
    by hand, -100 kept). Named with the key and the fix; None when no input holds one."""
    if not isinstance(error, (IndexError, RuntimeError)) or "index" not in str(error).lower():
        return None
    for key, value in batch.items():
        if (
            key in ("labels", "index")
            or not torch.is_tensor(value)
            or value.is_floating_point()
            or value.dtype == torch.bool
        ):
            continue
        negative = value < 0
        if bool(negative.any()):
            shown = sorted({int(v) for v in value[negative].unique()[:3]})
            return ContractError(
                f"the model's forward crashed ({type(error).__name__}: {_one_line(error)}): batch[{key!r}] holds "
                f"{int(negative.sum())} negative id(s) ({', '.join(map(str, shown))}), which no embedding can look up "
                "- the loss's ignore value left in inputs (decoder_input_ids shifted from labels by hand, -100 kept). "
                f"Fix: replace them with the pad id in {key} (transformers' shift_tokens_right does), keep -100 for "
                "labels only."
            )
    return None


def ids_past_an_embedding(error: Exception, model: torch.nn.Module, batch: Mapping[str, Any]) -> ContractError | None:
    """An index error on a batch whose integer inputs hold an id at or past the rows of one of the model's
    embeddings, the widest included (a model built with a smaller vocabulary than the data's tokenizer): named
    with the key, the id, that embedding and its rows; None when the widest has a row for every input id."""
    if not isinstance(error, (IndexError, RuntimeError)) or "index" not in str(error).lower():
        return None
    tables = [(name, m.num_embeddings) for name, m in model.named_modules() if isinstance(m, torch.nn.Embedding)]
    for key, value in sorted(batch.items(), key=lambda item: (item[0] != "input_ids", "ids" not in item[0])):
        if key in ("labels", "index") or not torch.is_tensor(value) or value.is_floating_point() or not value.numel():
            continue
        if value.dtype == torch.bool:
            continue
        highest = int(value.max())
        name, rows = max(tables, key=lambda table: table[1], default=("", highest + 1))
        tokens = token_embedding(model)
        if isinstance(tokens, torch.nn.Embedding) and tokens.num_embeddings <= highest:  # transformers' API says which
            name, rows = next(n for n, m in model.named_modules() if m is tokens), tokens.num_embeddings
        if rows <= highest:  # the token embedding, or not even the model's widest one, has a row for it
            return ContractError(
                f"the model's forward crashed ({type(error).__name__}: {_one_line(error)}): batch[{key!r}] holds id "
                f"{highest}, but the model's embedding {name or '(the model)'} has {rows} rows (ids 0-{rows - 1}): "
                f"ids >= {rows} index past it. Fix: build the model with a vocabulary of at least {highest + 1} "
                "(its vocab_size: the data's tokenizer's length), or data whose tokenizer fits the model."
            )
    return None


def _adapter_layer(error: Exception, model: torch.nn.Module) -> str:
    """The layer whose adapter (peft's wrapper of it) the crash was raised in: its name in the model and
    its class, said as a layer peft wraps as a plain one though its class has its own forward; "" when
    the crash is not in an adapter."""
    names = {id(module): name for name, module in model.named_modules()}
    found = ""
    tb = error.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        wrapper = frame.f_locals.get("self")
        base = getattr(wrapper, "base_layer", None)
        if f"{os.sep}peft{os.sep}" in frame.f_code.co_filename and isinstance(base, torch.nn.Module):
            kind = type(base)
            own = next((c for c in (torch.nn.Linear, torch.nn.Embedding, torch.nn.Conv1d) if isinstance(base, c)), None)
            overrides = own is not None and kind.forward is not own.forward
            name = names.get(id(wrapper), "?").removeprefix("base_model.model.")  # peft's own wrapping
            found = f"'{name}' ({kind.__name__}" + (
                f", a {own.__name__} subclass with its own forward: peft adapts it as a plain {own.__name__})"
                if overrides
                else ")"
            )
        tb = tb.tb_next
    return found


def _one_line(error: Exception) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= 300 else text[:297] + "..."


def _where(error: Exception) -> str:
    """The innermost frame of the traceback outside torch's own code: file name, line and function."""
    frames = traceback.extract_tb(error.__traceback__)
    outside = [frame for frame in frames if not frame.filename.startswith(TORCH_DIR)] or frames
    if not outside:
        return "an unknown place"
    frame = outside[-1]
    return f"{os.path.basename(frame.filename)}:{frame.lineno}, {frame.name}"


def _matching_settings(message: str, model: torch.nn.Module, settings: Mapping[str, Any], rows: int) -> list[str]:
    """``model.config.<key>=<value>`` (a transformers config) or ``model.<key>=<value>`` (the config's
    own arguments) for each integer setting whose value is a size the message names (not the batch's
    ``rows``, which a shape in the message holds whatever the cause)."""
    sizes = sizes_in(message) - {rows}
    if not sizes:
        return []
    config = getattr(model, "config", None)
    if hasattr(config, "to_dict"):  # transformers: every value the model was built with, defaults included
        found = config_settings_matching(sizes, config, settings.get("config") or {})
    else:
        found = [(True, f"model.{key}={value}") for key, value in settings.items() if is_size(value) and value in sizes]
    return [text for _, text in sorted(found, key=lambda item: item[0])][:MOST_LISTED]  # defaults first
