"""The rental settings: every catalog entry, the chosen GPU and the lists of counts and packages."""

from __future__ import annotations

import difflib

from pilot.config.values import select
from pilot.rental.catalog import catalog_problems
from pilot.validation.problems import Problem, is_finite, is_number


def check_rental(cfg, problems: list[Problem]) -> None:
    rental = select(cfg, "rental")
    if rental is None:
        return
    for key, value, fix in catalog_problems(rental.catalog):
        if is_finite(value) or not is_number(value):  # nan/inf are reported once, by check_finite
            problems.append(Problem(key, value, fix))
    names = list(rental.catalog or {})
    if rental.gpu is not None and rental.gpu not in names:
        problems.append(Problem("rental.gpu", rental.gpu, _gpu_fix(str(rental.gpu), names)))
    for key in ("counts", "packages_days"):
        values = list(select(cfg, f"rental.{key}") or [])
        if not values or any(v <= 0 for v in values):
            problems.append(Problem(f"rental.{key}", values, "a non-empty list of positive numbers."))
        elif len(set(values)) < len(values):  # each a row (or a plan) of its own: a repeat is the same one twice
            unique = list(dict.fromkeys(values))
            problems.append(
                Problem(f"rental.{key}", values, f"each value once. Fix: rental.{key}=[{','.join(map(str, unique))}].")
            )
    counts = list(select(cfg, "rental.counts") or [])
    if rental.gpu_count is not None and rental.gpu_count > 0 and counts and rental.gpu_count not in counts:
        problems.append(
            Problem(
                "rental.gpu_count",
                rental.gpu_count,
                f"not one of rental.counts=[{','.join(map(str, counts))}]: the choice sheet has no row with it, so "
                f"nothing could be planned. Fix: one of {', '.join(str(c) for c in counts)}, or add it to "
                f"rental.counts (rental.counts=[{','.join(str(c) for c in sorted({*counts, rental.gpu_count}))}]).",
            )
        )


def _gpu_fix(gpu: str, names: list[str]) -> str:
    """What to write for a rental.gpu the catalog lacks: null for Python's None, the catalog names it starts
    (H100: H100-80GB, H100-PCIe-80GB), or the catalog and how to add one (one shell word: no space, quoted)."""
    if gpu.strip().lower() in ("none", "nil"):
        return "not in the catalog. Fix: rental.gpu=null (the command line's word for none: no GPU pinned)."
    near = [n for n in names if n.lower().startswith(gpu.strip().lower())] or difflib.get_close_matches(
        gpu, names, 3, 0.5
    )
    if near:
        return f"not in the catalog. Fix: {' or '.join(f'rental.gpu={n}' for n in near)}."
    return (
        f"not in the catalog. Fix: one of {', '.join(names)}, or add it as "
        "'+rental.catalog.NAME={memory_gib:80,fp32_tflops:60}' (its numbers; conf/rental/default.yaml lists every field)."
    )
