"""A model's token embedding and output layer as transformers' API names them (``get_input_embeddings``,
``get_output_embeddings``), or None where it has none to give: transformers 5 raises NotImplementedError
from them for a model whose class does not say (ResNet, ConvNeXt, Wav2Vec2, HuBERT: no token embedding),
which came out of pilot's own vocabulary check as the model's failure to build, in every mode."""

from __future__ import annotations

import torch


def token_embedding(model: torch.nn.Module) -> torch.nn.Module | None:
    """``model.get_input_embeddings()``, or None (no such method, or the model has no token embedding)."""
    return _layer(model, "get_input_embeddings")


def output_layer(model: torch.nn.Module) -> torch.nn.Module | None:
    """``model.get_output_embeddings()``, or None (no such method, or the model says it has none)."""
    return _layer(model, "get_output_embeddings")


def _layer(model: torch.nn.Module, method: str) -> torch.nn.Module | None:
    get = getattr(model, method, None)
    if not callable(get):
        return None
    try:
        layer = get()
    except NotImplementedError:  # transformers: "not auto-handled for <Model>; please override in the subclass"
        return None
    return layer if isinstance(layer, torch.nn.Module) else None
