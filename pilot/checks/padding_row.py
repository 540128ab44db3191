"""Real tokens that read an embedding's padding row: part of ``inspect``, on a fresh model.

``nn.Embedding(padding_idx=p)`` keeps row p out of training: its gradient is always zero (and a model
built from its config starts it at zero). That is meant for the padding, which the attention mask hides
anyway. A *real* token whose id is p reads a vector that never trains, and a fresh model cannot tell it
from padding: what a tokenizer of another model gives (its pad id differs from the model's
``pad_token_id``, and p is one of its words), or a config whose pad id is a word of the vocabulary.

What it reads: the ids each embedding with a padding row receives (a hook on it: no guess about which
batch key feeds which table), at the batch's real positions (its attention mask, or ids != ``info["pad_id"]``)
for the first training micro-batches; positions a batch does not tell apart are not judged. Position
tables (RoBERTa's count real positions from ``padding_idx + 1``) never see p at a real position. Not
judged: a padding row that is the data's own pad id (``info["pad_id"]``: the common pad = eos choice, made
on purpose), and p as a row's last real token (an end token whose input predicts nothing after it).
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.batch_edges import untouched
from pilot.checks.loss_probe import micro_batches, padding_mask, spans
from pilot.checks.result import Finding
from pilot.data.task import TaskData

ROWS = 64  # first training examples read
SHOWN = 3  # positions named in the finding


def _tables(model: torch.nn.Module) -> dict[str, torch.nn.Embedding]:
    return {
        name: module
        for name, module in model.named_modules()
        if isinstance(module, torch.nn.Embedding) and module.padding_idx is not None
    }


def _last_real(real: torch.Tensor) -> torch.Tensor:
    """True at each row's last real position."""
    width = real.shape[1]
    last = torch.where(real, torch.arange(width).expand_as(real), -1).max(dim=1).values
    return torch.nn.functional.one_hot(last.clamp(min=0), width).bool() & real.any(dim=1, keepdim=True)


def _received(task: TaskData, model: torch.nn.Module, tables: dict[str, torch.nn.Embedding], batch: dict) -> dict:
    """The ids each table received while the model ran ``batch`` (name -> list of tensors)."""
    seen: dict[str, list[torch.Tensor]] = {}

    def keeper(name: str):
        def keep(module: torch.nn.Module, args: tuple) -> None:
            if args and torch.is_tensor(args[0]) and not args[0].is_floating_point():
                seen.setdefault(name, []).append(args[0].detach())

        return keep

    handles = [table.register_forward_pre_hook(keeper(name)) for name, table in tables.items()]
    try:
        task.forward(model, batch)
    finally:
        for handle in handles:
            handle.remove()
    return seen


def padding_row_findings(
    task: TaskData, model: torch.nn.Module, encoded: list[dict[str, Any]], micro_batch: int
) -> tuple[list[Finding], dict[str, Any]]:
    declared = task.info.get("pad_id") if isinstance(task.info, dict) else None
    tables = {name: table for name, table in _tables(model).items() if table.padding_idx != declared}
    if not tables or not encoded:
        return [], {}
    hits: dict[str, list[tuple[int, int]]] = {}  # table -> (example, position) of real tokens = padding_idx
    real_tokens = 0
    with untouched(model), torch.no_grad():
        model.eval()
        for start, batch in micro_batches(task, encoded[:ROWS], micro_batch):
            real = padding_mask(task, batch)
            if real is None:
                continue
            for name, received in _received(task, model, tables, batch).items():
                for ids in received:
                    if ids.shape != real.shape:
                        continue  # not the batch's positions (a table fed something else): not judged
                    real_tokens += int(real.sum())
                    inside = real & ~_last_real(real)  # a row's last real token reads nothing after it
                    rows, positions = torch.nonzero((ids == tables[name].padding_idx) & inside, as_tuple=True)
                    hits.setdefault(name, []).extend(
                        (start + int(r), int(p)) for r, p in zip(rows.tolist(), positions.tolist())
                    )
    details = {"tables": {name: table.padding_idx for name, table in tables.items()}, "real_tokens_read": real_tokens}
    found = [_finding(task, name, tables[name].padding_idx, at, encoded) for name, at in hits.items() if at]
    return found, details


def _finding(task: TaskData, name: str, pad: int, at: list[tuple[int, int]], encoded: list[dict[str, Any]]) -> Finding:
    first = at[0][0]
    positions = [p for e, p in at if e == first]
    rows = len({e for e, _ in at})
    shown = task.decode_tokens([pad])[0] if task.decode_tokens is not None else None
    token = f"id {pad}" + (f" ({shown!r})" if shown else "")
    declared = task.info.get("pad_id") if isinstance(task.info, dict) else None
    pads = f"; the data pads with id {declared}" if isinstance(declared, int) and declared != pad else ""
    return Finding(
        f"{len(at)} real token(s) in {rows} training row(s) are {token}, the padding row of {name} "
        f"(padding_idx={pad}{pads}; this row: positions {spans(positions[:SHOWN])}): that row never "
        "trains (its gradient is always zero), so these tokens read a frozen vector the model cannot tell from "
        "padding — a tokenizer of another model, or a pad id that is a word of the vocabulary. Fix: the model's own "
        "tokenizer, and a padding_idx (the config's pad_token_id) that no real token uses",
        "train",
        encoded[first].get("index", first) if first < len(encoded) else first,
    )
