"""phases.csv: its columns, the typed rows every reader builds, and its one writer.

A row is one phase on one device and rank (``pilot.phases.measure``) in one attempt of the run (1,
then one more for each resume of the same directory): what it ran with
(``INPUT_COLUMNS``), its duration after synchronisation, verdict and detail, and the memory
counters of ``pilot.phases.probe`` (``CUDA_COLUMNS`` empty on a CPU, never zero).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from numbers import Integral, Real
from pathlib import Path
from typing import Any

from pilot.errors import disk_full_guard

CUDA_COLUMNS = (
    "mem_baseline_bytes",
    "mem_allocated_bytes",
    "mem_reserved_bytes",
    "mem_peak_allocated_bytes",
    "mem_peak_reserved_bytes",
)
CPU_COLUMNS = ("rss_baseline_bytes", "rss_bytes", "rss_peak_bytes", "rss_peak_scope")
INPUT_COLUMNS = (
    "micro_batch",
    "accumulation",
    "replicas",
    "seq_len",
    "examples",
    "precision",
    "activation_checkpointing",
)
COLUMNS = (
    "phase",
    "device",
    "rank",
    "attempt",
    "duration_s",
    "verdict",
    "detail",
    "loss",
    *INPUT_COLUMNS,
    *CUDA_COLUMNS,
    *CPU_COLUMNS,
)
INTEGER_COLUMNS = ("rank", "attempt", "micro_batch", "accumulation", "replicas", "seq_len", "examples")


def typed_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows in phases.csv's columns and types: a count or byte number an ``int``, a duration a
    ``float``, an empty or missing cell ``None`` (rows as measured, or as ``csv.DictReader`` reads
    the file: no pandas, whose import costs the pilot ~0.3 s)."""
    typed = []
    for row in rows:
        cells = {column: _cell(column, row.get(column)) for column in COLUMNS}
        typed.append({column: None if value == "" else value for column, value in cells.items()})
    return typed


def read_phases_csv(path: Path) -> list[dict[str, Any]]:
    """phases.csv's rows, typed (``typed_rows``); ``OSError`` or ``ValueError`` when it cannot be read (no
    such file, not UTF-8 text, a line the csv module refuses, no header naming a ``phase`` column). A
    byte-order mark (a file saved by a spreadsheet) is read past."""
    with Path(path).open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        try:
            header, rows = reader.fieldnames, list(reader)
        except csv.Error as error:
            raise ValueError(str(error)) from error
    if not header:
        raise ValueError("it is empty (no header line)")
    if "phase" not in header:
        raise ValueError(
            f"no 'phase' column in its header ({', '.join(header[:6])}{', ...' if len(header) > 6 else ''})"
        )
    return typed_rows(rows)


NUMBER_COLUMNS = INTEGER_COLUMNS + tuple(c for c in COLUMNS if c.endswith("_bytes"))  # whole numbers or empty


def write_phases_csv(
    run_dir: Path, rows: Sequence[dict[str, Any]], keep_earlier: bool = False, attempt: int = 1
) -> Path:
    """Write ``run_dir/phases.csv`` (atomically: a temporary file, then a rename), each cell as
    ``typed_rows`` types it: a count or byte number whole or empty, a duration a float or empty.

    ``keep_earlier``: a resumed run appends its rows to the file's, as the attempt after the file's
    last (``earlier_attempts``); nothing a run wrote is replaced. ``attempt``: which attempt of the
    run this is by its record (an attempt killed before it wrote its rows left none in the file).
    """
    earlier, attempt = earlier_attempts(run_dir, attempt) if keep_earlier else ([], attempt)
    return write_attempt(run_dir, earlier, rows, attempt)


def earlier_attempts(run_dir: Path, attempt: int = 1) -> tuple[list[dict[str, Any]], int]:
    """The rows phases.csv holds from earlier attempts of the run, each with its attempt (a file written
    before the column existed holds attempt 1), and this attempt's number: ``attempt`` (by the run's
    record) or the one after the file's last, the higher. An unreadable file is kept as
    phases.unreadable.csv, not replaced."""
    path = Path(run_dir) / "phases.csv"
    earlier: list[dict[str, Any]] = []
    if path.exists():
        read = _earlier_rows(path)
        if read is None:
            path.rename(path.with_name("phases.unreadable.csv"))
        earlier = read or []
    for row in earlier:
        row["attempt"] = _attempt_of(row)
    return earlier, max(attempt, max((row["attempt"] for row in earlier), default=0) + 1)


def write_attempt(
    run_dir: Path, earlier: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]], attempt: int
) -> Path:
    """phases.csv: the ``earlier`` attempts' rows, then ``rows`` as attempt ``attempt``."""
    path = Path(run_dir) / "phases.csv"
    rows = [*earlier, *({**row, "attempt": attempt} for row in rows)]
    tmp = path.with_name(".phases.csv.tmp")
    with disk_full_guard(path, tmp, needed_bytes=64 * 1024):
        with tmp.open("w", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(COLUMNS)
            writer.writerows([_cell(column, row.get(column)) for column in COLUMNS] for row in rows)
        tmp.replace(path)
    return path


def _attempt_of(row: dict[str, Any]) -> int:
    """An earlier row's attempt; 1 when it has none (a file from before the column) or its cell is not
    a number (a hand-edited file)."""
    try:
        return int(float(row.get("attempt") or 1))
    except (TypeError, ValueError, OverflowError):
        return 1


def cut_short(path: Path) -> bool:
    """A phases.csv whose last line is incomplete: pilot writes it whole (every line ends with a newline,
    the file is renamed into place), so it was cut after (a copy, a disk, a hand)."""
    try:
        with Path(path).open("rb") as handle:
            handle.seek(0, 2)
            if handle.tell() == 0:
                return False
            handle.seek(-1, 2)
            return handle.read(1) != b"\n"
    except OSError:
        return False


def _earlier_rows(path: Path) -> list[dict[str, Any]] | None:
    """The rows of an existing phases.csv; None when it cannot be read as one (no header, a row
    with more cells than the header, not text, its last line cut)."""
    if cut_short(path):
        return None
    try:
        with path.open(newline="") as handle:
            reader = csv.DictReader(handle)
            rows, header = list(reader), reader.fieldnames
    except (OSError, ValueError, csv.Error):
        return None
    if not header or any(None in row for row in rows):
        return None
    return rows


def _cell(column: str, value: Any) -> Any:
    """``value`` as phases.csv holds it in ``column``: empty for none; a number column's value whole."""
    if value is None or value == "" or (isinstance(value, float) and math.isnan(value)):
        return ""
    if column in NUMBER_COLUMNS:
        return _whole(value)
    if column == "duration_s":
        return _real(value)
    return value


def _whole(value: Any) -> Any:
    if isinstance(value, Integral):
        return int(value)
    try:
        return int(value)  # the text of a whole number (an earlier row), exact at any size
    except (TypeError, ValueError):
        pass
    try:
        number = float(value)
    except (TypeError, ValueError):
        return ""
    return int(number) if math.isfinite(number) and number.is_integer() else ""


def _real(value: Any) -> Any:
    if isinstance(value, Real):
        return float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return ""
    return "" if math.isnan(number) else number
