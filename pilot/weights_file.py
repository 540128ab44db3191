"""Model weights in a safetensors file, shared tensors included (tied embeddings, GPT-2).

safetensors refuses two names for one storage, so the file holds each tensor once and its
metadata maps every other name to the one kept (``pilot.shared``, JSON); ``read_weights`` gives
the full ``state_dict`` back, the shared names filled in, ready for ``load_state_dict(strict)``.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

SHARED_KEY = "pilot.shared"  # metadata: {dropped name: kept name}


def _storage_key(tensor: torch.Tensor) -> tuple:
    return (tensor.device, tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape))


def unique_tensors(state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    """(each tensor once, as contiguous CPU copies; {dropped name: kept name} for the names that share)."""
    kept: dict[tuple, str] = {}
    shared: dict[str, str] = {}
    tensors: dict[str, torch.Tensor] = {}
    for name, tensor in state.items():
        key = _storage_key(tensor)
        if key in kept:
            shared[name] = kept[key]
            continue
        kept[key] = name
        tensors[name] = tensor.detach().to("cpu").contiguous()
    return tensors, shared


def write_weights(state: dict[str, torch.Tensor], path: Path, metadata: dict[str, str] | None = None) -> None:
    """``state`` (a ``state_dict``) to ``path``; shared tensors once, their other names in the metadata."""
    tensors, shared = unique_tensors(state)
    save_file(tensors, str(path), metadata={**(metadata or {}), SHARED_KEY: json.dumps(shared)})
    _sort_metadata(path)


def _sort_metadata(path: Path) -> None:
    """Rewrite the header's metadata in sorted key order, in place: safetensors writes it in a hash map's
    order, which changes from process to process, so the same weights gave files with other bytes
    (and other checksums). The header keeps its length (the same keys and values, reordered)."""
    with open(path, "r+b") as handle:
        length = int.from_bytes(handle.read(8), "little")
        raw = handle.read(length)
        header = json.loads(raw)
        metadata = header.get("__metadata__")
        if not metadata:
            return
        header["__metadata__"] = dict(sorted(metadata.items()))
        text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
        if len(text) != len(raw.rstrip(b" ")):  # not the layout expected: left as safetensors wrote it
            return
        handle.seek(8)
        handle.write(text + b" " * (length - len(text)))


def read_weights(path: Path) -> dict[str, torch.Tensor]:
    """The full ``state_dict`` written by ``write_weights`` (or any safetensors file)."""
    tensors = load_file(str(path))
    with safe_open(str(path), framework="pt") as handle:
        shared = json.loads((handle.metadata() or {}).get(SHARED_KEY, "{}"))
    for name, kept in shared.items():
        tensors[name] = tensors[kept]
    return tensors
