"""A model of many identical blocks estimated from a few of them (``estimate.blocks``).

A 7B decoder is 32 copies of one block between an embedding and a head. On fake tensors every
operation of every block is dispatched in Python, so a 32-block estimate costs the time of 32 blocks
(2.5-5 s each of the README's six 7B estimates), while every number the estimate gives grows by the
same amount with each block: the block's parameters, gradients and optimizer state, the activations
it keeps for its backward, its FLOPs. ``sampled`` runs the estimate with the model's blocks cut to the
first 3, 4 and 5 (``SAMPLED``) and gives the whole model's numbers from them, when:

- the model has one ``nn.ModuleList`` of at least ``MIN_BLOCKS`` children of one class with the same
  parameters and buffers (names, shapes, dtypes, trained or not) — its blocks; a second such list
  (an encoder and a decoder) or none: every block runs;
- every number of the three runs (each phase's peak and its parts, counts, FLOPs, closed forms) grows
  by the same amount from 3 to 4 blocks as from 4 to 5, to the byte: it is extended to the model's
  count from there;
- at each part's peak (a forward/backward, an optimizer step, an evaluation) every category of memory
  grows per block as fast as that category's own highest value during the part: the moment of the
  peak already holds every per-block term at its largest, so no other moment of the part can grow
  past it with more blocks (a first update without held gradients, where the start of the backward
  holds the blocks' activations and its end their gradients, fails this: every block runs).

Anything else — a model whose forward refuses fewer blocks, a block that behaves by its position —
runs every block, as ``estimate.blocks=all`` does; the estimate says which it did. The tests check
the sampled estimate equal to the one running every block, to the byte, across models and settings.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from torch import nn

log = logging.getLogger("pilot")

SAMPLED = (3, 4, 5)  # block counts run: consecutive, so one step of growth is checked against the next;
# from 3, as FSDP's first two blocks differ from the others (the second is prefetched during the first)
MIN_BLOCKS = 8  # fewer: sampling saves little over running them all
CHOSEN = ("peak_bytes", "breakdown", "during")  # a phase's peak: its highest part, chosen again by _peaks
GAP_SHARE = 0.001  # the most another moment may be able to pass a part's peak by, as a share of that peak
M = TypeVar("M")


class NotSampled(Exception):
    """Why the estimate runs every block."""


@dataclasses.dataclass
class Blocks:
    path: str  # the list's name in the model (``blocks``, ``model.layers``)
    count: int
    parameters: int = 0  # of the whole model, before it is cut


def repeated_blocks(model: nn.Module) -> Blocks | None:
    """The model's one list of identical blocks (``MIN_BLOCKS`` or more), or None."""
    found = [
        Blocks(name, len(module))
        for name, module in model.named_modules()
        if isinstance(module, nn.ModuleList) and len(module) >= MIN_BLOCKS and _identical(list(module))
    ]
    return found[0] if len(found) == 1 else None


def _identical(children: list[nn.Module]) -> bool:
    first = children[0]
    return all(type(child) is type(first) and _signature(child) == _signature(first) for child in children[1:])


def _signature(module: nn.Module) -> tuple:
    tensors = [*module.named_parameters(), *module.named_buffers()]
    return tuple((name, tuple(t.shape), t.dtype, t.requires_grad) for name, t in tensors)


def keep_first(model: nn.Module, blocks: Blocks, count: int) -> None:
    """Cut the model's block list to its first ``count`` blocks, in place."""
    del model.get_submodule(blocks.path)[count:]


def sampled(run: Callable[[Callable[[nn.Module], None] | None], M], setting: str) -> tuple[M, str | None]:
    """``run(cut)`` estimates the model after ``cut(model)`` (None: the whole model). The whole model's
    estimate, from ``SAMPLED`` block counts where that gives the same numbers, and a note saying how
    it was made (None: the model has no repeated blocks to speak of)."""
    if setting == "all":
        return run(None), None
    found: list[Blocks | None] = []

    def cut_to(count: int) -> Callable[[nn.Module], None]:
        def cut(model: nn.Module) -> None:  # a model without such blocks is left whole: its run is the estimate
            blocks = repeated_blocks(model)
            if blocks is not None:
                blocks.parameters = sum(p.numel() for p in model.parameters())
                keep_first(model, blocks, count)
            found.append(blocks)

        return cut

    try:
        samples = [run(cut_to(SAMPLED[0]))]
        if found[0] is None:
            return samples[0], None
        samples += [run(cut_to(count)) for count in SAMPLED[1:]]
        whole, gap = _extended(samples, found[0], list(SAMPLED))
    except NotSampled as why:
        return _every_block(run, found[0], str(why))
    except Exception as error:  # the model refuses fewer blocks: the whole one says what it says
        if not found or found[0] is None:  # it was the whole model that failed
            raise
        return _every_block(run, found[0], f"with fewer blocks it failed ({type(error).__name__}: {error})")
    blocks = found[0]
    note = (
        f"estimated from its first {', '.join(map(str, SAMPLED[:-1]))} and {SAMPLED[-1]} of {blocks.count} "
        f"identical blocks ({blocks.path}): every number grew by the same bytes per block and was extended to "
        f"every block; another moment of a part could pass its peak by at most {_mib(gap)} (what its "
        "categories' own highest values grow by per block beyond the peak); estimate.blocks=all runs every block"
    )
    return whole, note


def _every_block(run: Callable, blocks: Blocks, why: str) -> tuple[Any, str]:
    whole = run(None)
    log.info("estimate: every block run (%s)", why)
    return whole, f"every one of its {blocks.count} blocks ({blocks.path}) run: {why}"


def _extended(samples: list[M], blocks: Blocks, counts: list[int]) -> tuple[M, int]:
    """The value at ``blocks.count`` of what ``samples`` (at ``counts`` blocks, consecutive) hold, every number checked
    to grow by equal steps and each part's peak as fast as its categories' highest values; each phase's
    peak then re-chosen among its parts at that count; and by how much another moment could pass a peak."""
    whole = _affine(samples, blocks.count - counts[-1], "estimate")
    if whole.parameters != blocks.parameters:
        raise NotSampled(f"{whole.parameters:,} parameters extended, the model has {blocks.parameters:,}")
    return _peaks(whole), _peaks_grow_fastest(samples[-2:], blocks.count - counts[-1])


def _affine(values: list[Any], added: int, where: str) -> Any:
    """``values`` at consecutive block counts, extended by ``added`` more blocks (numbers; anything else
    must not change)."""
    first = values[0]
    if dataclasses.is_dataclass(first):
        fields = {
            f.name: _affine([getattr(v, f.name) for v in values], added, f"{where}.{f.name}")
            for f in dataclasses.fields(first)
            if f.name not in CHOSEN  # which part a phase's peak is in may change with the count: _peaks
        }
        return dataclasses.replace(first, **fields)
    if isinstance(first, dict):
        if any(v.keys() != first.keys() for v in values):
            raise NotSampled(f"{where} has other keys with other block counts")
        return {key: _affine([v[key] for v in values], added, f"{where}.{key}") for key in first}
    if isinstance(first, list):
        if any(len(v) != len(first) for v in values):
            raise NotSampled(f"{where} has another length with other block counts")
        return [_affine(list(items), added, f"{where}[{n}]") for n, items in enumerate(zip(*values))]
    if isinstance(first, int) and not isinstance(first, bool):
        steps = {later - earlier for earlier, later in zip(values, values[1:])}
        if len(steps) != 1:
            raise NotSampled(f"{where} did not grow by equal steps per block ({values})")
        return values[-1] + steps.pop() * added
    if any(v != first for v in values):
        raise NotSampled(f"{where} changed with the block count ({values})")
    return first


def _peaks(measured: M) -> M:
    """Each phase's peak at the whole model's count: its highest part (the first of equal ones)."""
    phases = []
    for phase in measured.phases:
        during, worst = max(phase.moments.items(), key=lambda item: item[1]["total"])
        phases.append(dataclasses.replace(phase, during=during, breakdown=dict(worst), peak_bytes=worst["total"]))
    return dataclasses.replace(measured, phases=phases)


def _peaks_grow_fastest(last_two: list[Any], added: int) -> int:
    """The most bytes another moment of a part could pass its peak by with ``added`` more blocks: what every
    category's own highest value during the part grows by per block (the most any moment of it can
    grow by) beyond what the peak grows by, over the added blocks. Refused (``NotSampled``) past
    ``GAP_SHARE`` of that peak."""
    earlier, later = (sample.part_peaks for sample in last_two)
    widest = 0
    for number, (before, after) in enumerate(zip(earlier, later)):
        grown = after["peak"]["total"] - before["peak"]["total"]
        highest = sum(
            max(after["highest"][c] - before["highest"][c], after["peak"][c] - before["peak"][c])
            for c in after["highest"]
            if c != "total"
        )
        gap = (highest - grown) * added
        if gap < 0 or gap > GAP_SHARE * (after["peak"]["total"] + grown * added):
            raise NotSampled(
                f"the peak of part {number + 1} grew by {grown:,} B per block, its categories' highest values "
                f"by {highest:,} B: another moment of it may pass the peak by up to {gap:,} B with {added} more blocks"
            )
        widest = max(widest, gap)
    return widest


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB" if size else "0 B"
