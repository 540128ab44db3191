"""Text for tables: a markdown table, a CSV file's text and a byte count in binary units (no pandas:
the estimate, the rental sheet and the pilot's report write tables in processes that never import
it, ~0.3 s of a pilot)."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from typing import Any


def byte_size(value: Any) -> str:
    """``1536`` -> ``1.5 KiB``; empty for None and NaN (nothing measured)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    value = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return ""


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    def cell(value: Any) -> str:
        return str("" if value is None else value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def csv_text(columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> str:
    """A CSV file's text: ``columns`` as its header, then each row's values in that order (empty for a
    missing one, None or NaN, as pandas wrote them; others as ``str`` writes them: a whole number stays
    ``4`` where pandas wrote ``4.0`` in a column that also held an empty cell)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(columns), restval="", extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: "" if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()} for row in rows)
    return out.getvalue()
