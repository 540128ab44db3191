"""Which modules a LoRA adapter's names reach, as peft matches them (a list's name at a dotted name's end, a
string as a regular expression over the whole name): the layers it can wrap, and why names that reach none,
or reach a module it cannot wrap, are refused (peft adapts part of a list silently, or refuses the model)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import torch


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
    """The names of the layers a LoRA adapter can wrap: ``nn.Linear`` and transformers' ``Conv1D`` (GPT-2's
    c_attn, c_proj, c_fc), and their subclasses (Falcon's ``FalconLinear``), every one; each as the shortest
    end of its dotted name that names no other module (peft matches a list's name at a name's end: an
    ``nn.Sequential``'s '0' is also ``blocks.0``, a whole block, so it is ``mlp.0``)."""
    named = [(name, m) for name, m in model.named_modules() if name]
    wrapped = {
        n for n, m in named if isinstance(m, torch.nn.Linear) or any(k.__name__ == "Conv1D" for k in type(m).__mro__)
    }
    others = {n.rsplit(".", 1)[-1]: [] for n, _ in named}  # last part -> the other modules' names ending so
    for name, _ in named:
        if name not in wrapped:
            others[name.rsplit(".", 1)[-1]].append(name)
    ends = set()
    for name in wrapped:
        parts = name.split(".")
        clashes = others.get(parts[-1], [])
        for size in range(1, len(parts) + 1):
            end = ".".join(parts[-size:])
            if not any(other == end or other.endswith("." + end) for other in clashes):
                ends.add(end)
                break
    return sorted(ends)


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


WRAPPED_KINDS = (torch.nn.Linear, torch.nn.Embedding, torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)


def names_of_unwrappable(targets: list[str], model: torch.nn.Module) -> str | None:
    """Why ``targets`` name a module LoRA cannot wrap (``0`` is ``blocks.0``, a whole block, as well as
    ``mlp.0``): peft refuses the model ("Target module Block(...) is not supported"); None when none does."""
    said = []
    for target in targets:
        hits = [
            (n, type(m).__name__)
            for n, m in model.named_modules()
            if (n == target or n.endswith(f".{target}"))
            and not isinstance(m, WRAPPED_KINDS)
            and not any(k.__name__ == "Conv1D" for k in type(m).__mro__)
        ]
        if hits:
            said.append(
                f"{target} names {hits[0][0]}, a {hits[0][1]}" + (f" (and {len(hits) - 1} more)" if hits[1:] else "")
            )
    if not said:
        return None
    return (
        f"{'; '.join(said)}: LoRA wraps linear, embedding and convolution layers, and peft refuses the model "
        f"when a name ends such a module's. Fix: name only layers it wraps ({', '.join(adaptable_layers(model))}), or all-linear"
    )


def _verb(names: list[str]) -> str:
    return "matches" if len(names) == 1 else "match"
