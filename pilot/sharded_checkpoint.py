"""The model and optimizer of an FSDP run on disk as shards: every rank writes its own
(``torch.distributed.checkpoint``, DCP), nothing is gathered onto one rank.

DCP writes one ``__<rank>_0.distcp`` per rank and, after every rank has written, rank 0 writes
``.metadata`` (which tensor, which offsets, which file). Each tensor is stored by name and offset,
so a checkpoint written by N ranks loads at any other number of ranks: DCP reads, for each rank,
the pieces of its new shards (``pilot.checkpoint`` publishes the directory and owns its name).

Reading is as safe as pilot's single-file checkpoints. DCP's own reader unpickles ``.metadata``
without restriction and reads non-tensor values with torch.load, weights_only off: a planted file
would run code. Here ``.metadata`` is read by an unpickler that builds DCP's metadata classes and
nothing else, and values are loaded with ``weights_only=True``.
"""

from __future__ import annotations

import pickle
import warnings
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn

from pilot.errors import UnsafeFileError

METADATA_FILE = ".metadata"  # DCP's name; written last, by rank 0

_METADATA = "torch.distributed.checkpoint.metadata"
_ALLOWED = {
    (_METADATA, name)
    for name in (
        "Metadata",
        "MetadataIndex",
        "StorageMeta",
        "TensorProperties",
        "TensorStorageMetadata",
        "ChunkStorageMetadata",
        "BytesStorageMetadata",
        "_MEM_FORMAT_ENCODING",
    )
} | {
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"),
    ("torch.serialization", "_get_layout"),
    ("torch", "Size"),
    ("pathlib", "PosixPath"),
    ("pathlib", "WindowsPath"),
}


class _MetadataUnpickler(pickle.Unpickler):
    """Builds DCP's metadata dataclasses, torch dtypes and sizes; refuses every other global."""

    def find_class(self, module: str, name: str):
        if (module, name) in _ALLOWED or (module == "torch" and isinstance(getattr(torch, name, None), torch.dtype)):
            return super().find_class(module, name)
        raise UnsafeFileError(
            f"{module}.{name} is named in the checkpoint's {METADATA_FILE}: loading it would build objects "
            "named in the file; refused, never executed. Only checkpoints written by pilot are read."
        )


def read_metadata(directory: Path):
    """The DCP metadata of a sharded checkpoint, read without running anything named in the file."""
    with (Path(directory) / METADATA_FILE).open("rb") as handle:
        return _MetadataUnpickler(handle).load()


def _reader(directory: Path):
    from torch.distributed.checkpoint import FileSystemReader
    from torch.distributed.checkpoint.metadata import StorageMeta

    class SafeReader(FileSystemReader):
        def read_metadata(self, *args, **kwargs):
            metadata = read_metadata(Path(self.path))
            if getattr(metadata, "storage_meta", None) is None:
                metadata.storage_meta = StorageMeta()
            metadata.storage_meta.load_id = self.load_id
            return metadata

    return SafeReader(directory)


def _planner():
    from torch.distributed.checkpoint import DefaultLoadPlanner

    class SafeLoadPlanner(DefaultLoadPlanner):
        def load_bytes(self, read_item, value):  # plain values (the optimizer's settings): never code
            loaded = torch.load(value, weights_only=True)
            if self.flatten_state_dict:
                from torch.distributed.checkpoint._nested_dict import set_element

                set_element(self.original_state_dict, self.mappings[read_item.dest_index.fqn], loaded)
            else:
                self.state_dict[read_item.dest_index.fqn] = loaded

    return SafeLoadPlanner()


@contextmanager
def _first_failure():
    """DCP reports a failure on any rank, on every rank, as one ``CheckpointException`` (a
    ``BaseException``); raise the first rank's own error instead (a full disk stays an ``OSError``).
    Without a process group DCP works in this one process: its warning that it does is not shown."""
    from torch.distributed.checkpoint.api import CheckpointException

    try:
        with warnings.catch_warnings():  # one process without a process group (FSDP on 1 rank, read_whole)
            warnings.filterwarnings("ignore", message="torch.distributed is disabled")
            yield
    except CheckpointException as error:
        rank, (failure, _) = min(error.failures.items(), key=lambda item: item[0])
        if isinstance(failure, Exception):
            raise failure from None
        raise RuntimeError(f"saving or loading the sharded checkpoint failed on rank {rank}: {failure}") from None


def _state_dicts(model: nn.Module, optimizer, trained_only: bool) -> dict:
    """This rank's shards of the model and optimizer (keyed by parameter name), as DCP takes them.
    The optimizer's state is created first if no update has run (so a resume has tensors to fill)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict

    model_state, optimizer_state = get_state_dict(
        model, optimizer, options=StateDictOptions(ignore_frozen_params=trained_only)
    )
    return {"model": model_state, "optimizer": optimizer_state}


def load_into(state: dict, directory: Path) -> None:
    """DCP's ``load`` of ``state`` (tensors filled in place, values replaced) from ``directory``, with the
    safe metadata reader and values read ``weights_only`` (a collective when a process group exists)."""
    from torch.distributed.checkpoint import load

    with _first_failure():
        load(state, storage_reader=_reader(directory), planner=_planner())


def write_shards(model: nn.Module, optimizer, trained_only: bool, directory: Path) -> None:
    """Every rank writes its shards into ``directory``; rank 0 writes ``.metadata`` after all of them
    (a collective: every rank calls it). Files are fsynced (DCP's ``sync_files``)."""
    from torch.distributed.checkpoint import FileSystemWriter, save

    with _first_failure():
        save(_state_dicts(model, optimizer, trained_only), storage_writer=FileSystemWriter(directory, sync_files=True))


def read_shards(model: nn.Module, optimizer, trained_only: bool, directory: Path) -> None:
    """Each rank loads its shards (at this run's number of ranks) into the model and optimizer
    (a collective). ``trained_only``: an adapter's base comes from the config, not the checkpoint."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, set_state_dict

    state = _state_dicts(model, optimizer, trained_only)
    load_into(state, directory)
    set_state_dict(
        model,
        optimizer,
        model_state_dict=state["model"],
        optim_state_dict=state["optimizer"],
        options=StateDictOptions(strict=not trained_only),
    )


def read_whole(directory: Path, prefix: str = "model.") -> dict[str, torch.Tensor]:
    """The whole tensors whose names start with ``prefix`` (``model.``: the model's state, by parameter
    name), assembled from every rank's shards in this one process, without a process group: a sharded
    checkpoint read as one (by the tests; by a user who wants the model out of a checkpoint)."""
    from torch.distributed.checkpoint.metadata import TensorStorageMetadata

    whole = {
        key: torch.empty(meta.size, dtype=meta.properties.dtype)
        for key, meta in read_metadata(directory).state_dict_metadata.items()
        if key.startswith(prefix) and isinstance(meta, TensorStorageMetadata)
    }
    load_into(whole, directory)
    return {key[len(prefix) :]: value for key, value in whole.items()}
