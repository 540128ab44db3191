"""metrics.jsonl: the rows (kind, update, loss) and the summary the recap reads (``read_metrics``).

Fast path, for a file as pilot writes it (``run_record.metrics_line``: kind, update and loss lead
every line, in that order): the file's bytes are never decoded (ASCII) nor split into rows; one
regex checks every line and captures the validation rows (``_validation_rows``), and only the last
line of each kind goes through json. Any other file goes through json line by line, where any
damaged line makes the run unreadable: no silent gaps. Both read the same values from the same
file. The picture's training points of fast-path files are read by numpy for many files at once
(``training_points``). At 10,000 runs of 200 updates this is what keeps the recap within a few
times the plain read of the files (bench/recap_10k.py).
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from pilot.record_damage import (
    NUMBER,
    Unreadable,
    decode,
    is_count,
    is_number,
    json_kind,
    json_problem,
    read_bytes,
    wrong_value,
)

# metrics.jsonl: one JSON object per line that starts with these keys, in this order (run_record.metrics_line
# writes them so); the fast reader below relies on it, so the order is written here, not left to whoever
# builds the row
METRICS_LEADING_KEYS = ("kind", "update", "loss")
# A line as pilot writes it starts with METRICS_LEADING_KEYS, in that order
# (run_record.metrics_line); loss is a JSON number or what json writes for nan/inf.
JSON_NUMBER = r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|NaN|-?Infinity"
_FIELDS = {"kind": r'"(?:train|val)"', "update": r"(?:0|[1-9]\d*)", "loss": f"(?:{JSON_NUMBER})"}
# the same grammar for the fast path: ASCII digits, the common case first, possessive (a line that
# fails fails at once); about 15% faster than the plain form over 10,000 runs
_FAST_FIELDS = {
    "kind": r'"(?:train|val)"',
    "update": r"(?:[1-9][0-9]*+|0)",
    "loss": r"(?:-?+(?:[1-9][0-9]*+|0)(?:\.[0-9]++|)(?:[eE][+-]?+[0-9]++|)|NaN|-?Infinity)",
}
_LINE_END = r"(?:\}\n|,[^\n]*+(?<=\})\n)"  # after the loss: the end of the object, or more keys and "}"


def _leading(captured: tuple[str, ...], kind: str | None = None, fields: dict[str, str] = _FIELDS) -> str:
    """The start of a line as pilot writes it (``kind``: of that kind only), capturing ``captured``."""
    fields = {**fields, **({"kind": f'"{kind}"'} if kind else {})}
    return r"\{" + ", ".join(
        f'"{key}": ' + (f"({fields[key]})" if key in captured else fields[key]) for key in METRICS_LEADING_KEYS
    )


KIND_ROW = {
    kind: re.compile(_leading(("update", "loss"), kind) + "[,}]") for kind in ("train", "val")
}  # (update, loss) of a line of one kind, as text (``match``; tests/test_records.py checks the format)
# Lines as pilot writes them, on bytes: any training lines, then one validation line, whose update
# and loss are captured (or the end of the file). ``_validation_rows`` matches it chunk after chunk.
CHUNK = re.compile(
    "(?:{train}{end})*+(?:{val}{end}|\\Z)".format(
        train=_leading((), "train", _FAST_FIELDS), val=_leading(("update", "loss"), "val", _FAST_FIELDS), end=_LINE_END
    ).encode()
)
TRAIN_ROW = re.compile(_leading(("update", "loss"), "train", _FAST_FIELDS).encode())  # (update, loss) text
LAST_LINE_KEYS = {
    "train": (("examples_seen", ("an integer >= 0", is_count)), ("targets_seen", ("an integer >= 0", is_count))),
    "val": (("accuracy", NUMBER),),
}  # read from the last line of each kind only
SPACE = b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"  # the ASCII characters str.strip() removes


def _validation_rows(body: bytes) -> list[tuple[bytes, bytes]] | None:
    """The (update, loss) text of every validation line if every line of ``body`` (ending in a
    newline) is as pilot writes it: a well-formed kind, update and loss first, closed by ``}``, one
    record per line; else None. One regex pass, no row built for a training line; what it does not
    check is the text between the loss and the closing brace of a line other than the last of each
    kind, which the recap does not read."""
    if not _one_record_per_line(body):
        return None
    position, end, rows = 0, len(body), []
    while position < end:  # matched at each position, never searched: a damaged line costs one attempt
        chunk = CHUNK.match(body, position)
        if chunk is None:
            return None
        if chunk.lastindex:
            rows.append(chunk.groups())
        position = chunk.end()
    return rows


def _one_record_per_line(body: bytes) -> bool:
    """As many '{"kind": "' as lines (each line starting with one is checked by CHUNK). When every "{"
    starts a line that holds: numpy counts both bytes faster than bytes.count finds the text."""
    text = np.frombuffer(body, np.uint8)
    lines = np.count_nonzero(text == ord("\n"))
    return np.count_nonzero(text == ord("{")) == lines or body.count(b'{"kind": "') == lines


def _as_written(body: bytes | str) -> bool:
    """Whether every line of ``body`` (ending in a newline) is as pilot writes it (``_validation_rows``)."""
    return _validation_rows(body.encode() if isinstance(body, str) else body) is not None


def metrics_line(line: str) -> tuple[str, int, Any, dict[str, Any]]:
    """kind, update, loss and the whole object of one metrics.jsonl line; Unreadable says what is wrong."""
    try:
        row = json.loads(line)
    except ValueError as error:
        raise Unreadable(json_problem(error)) from None
    except RecursionError:
        raise Unreadable("not JSON (nested too deep)") from None
    if not isinstance(row, dict):
        raise Unreadable(f"{json_kind(row)}, not an object")
    kind, update, loss = row.get("kind"), row.get("update"), row.get("loss")
    if kind not in ("train", "val"):
        raise Unreadable(wrong_value(row, "kind", "'train' or 'val'"))
    if not is_count(update):
        raise Unreadable(wrong_value(row, "update", "an integer >= 0"))
    if not (is_number(loss) or (loss is None and kind == "val" and "loss" in row)):  # val: null = nothing scored
        raise Unreadable(wrong_value(row, "loss", "a number"))
    return kind, update, loss, row


def _check_last_line(row: dict[str, Any], kind: str) -> None:
    for key, (expected, check) in LAST_LINE_KEYS[kind]:
        if row.get(key) is not None and not check(row[key]):
            raise Unreadable(wrong_value(row, key, expected))


def _rows_line_by_line(text: str, name: str) -> tuple[list, dict[str, dict[str, Any]]]:
    """Every line through json: the rows and the last line of each kind; Unreadable names the first bad line."""
    rows, last, problems = [], {}, []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            kind, update, loss, row = metrics_line(line)
        except Unreadable as problem:
            problems.append(f"{name} line {number}: {problem}")
            continue
        rows.append((kind, update, loss))
        last[kind] = (number, row)
    if problems:
        more = f" (and {len(problems) - 1} more damaged line(s))" if len(problems) > 1 else ""
        raise Unreadable(problems[0] + more)
    for kind, (number, row) in last.items():
        try:
            _check_last_line(row, kind)
        except Unreadable as problem:
            raise Unreadable(f"{name} line {number}: {problem}") from None
    return rows, {kind: row for kind, (_, row) in last.items()}


def _last_of_kind(body: bytes, kind: str, name: str) -> dict[str, Any]:
    """The last line of ``kind`` in a file ``_as_written`` accepted, parsed and checked."""
    start = body.rfind(b'\n{"kind": "' + kind.encode() + b'"') + 1
    if not start and not body.startswith(b'{"kind": "' + kind.encode() + b'"'):
        return {}
    try:
        row = metrics_line(body[start : body.find(b"\n", start)].decode())[3]
        _check_last_line(row, kind)
    except Unreadable as problem:
        number = body.count(b"\n", 0, start) + 1
        raise Unreadable(f"{name} line {number}: {problem}") from None
    return row


def plottable(points: np.ndarray) -> np.ndarray:
    """The (update, loss) rows the picture can draw: finite, positive losses (its log scale)."""
    return points[np.isfinite(points[:, 1]) & (points[:, 1] > 0)]


def _train_curve(rows: list) -> np.ndarray:
    """The training points (update, loss) of rows read line by line, as ``training_points`` gives them."""
    return plottable(np.array(rows, dtype=np.float64).reshape(-1, 2))


# Training points of files pilot wrote, read by numpy over many files at once: a loss is read from
# its digits (at most 9 before the point and the first 16 after: 1e-16 absolute, far below a pixel);
# a line it cannot read so (an exponent, nan, a sign, a long number) is parsed exactly, on its own.
DIGIT = np.zeros(256)
DIGIT[48:58] = np.arange(10)  # a byte's value as a digit, 0 for any other byte
INTEGER, FRACTION, SEEN = 9, 16, 24  # digits read before and after the point; fraction digits seen
PLACE = np.concatenate([10.0 ** np.arange(INTEGER - 1, -1, -1), [0.0], 10.0 ** -np.arange(1, FRACTION + 1)])
LINES = 8192  # lines numpy reads at once: its largest temporary stays near 2 MB
UPDATE_AT = len(b'{"kind": "train", "update": ')  # where a training line's update starts
LOSS_AFTER = len(b', "loss": ')  # from the comma after the update to the loss: 10 bytes, no digit


def _losses(window: np.ndarray, first: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The numbers starting at ``first`` (after 10 bytes that are not digits), and which of them this
    reading cannot give: no point within 9 digits, an exponent, a sign, nan, a fraction of 24 digits."""
    lead = window[first, : INTEGER + 1]
    point = first + np.argmin((lead - ord("0")) <= 9, axis=1)  # bytes below "0" wrap to large values
    seen = window[point - INTEGER, : INTEGER + 1 + SEEN]
    fraction = np.argmin((seen[:, INTEGER + 1 :] - ord("0")) <= 9, axis=1)  # 0: none, or all 24
    after = seen[np.arange(len(first)), INTEGER + 1 + fraction]
    odd = (point == first) | (seen[:, INTEGER] != ord(".")) | (fraction == 0)
    odd |= (after != ord(",")) & (after != ord("}"))  # an exponent
    digits = DIGIT[seen[:, : INTEGER + 1 + FRACTION]]
    digits[:, INTEGER + 1 :] *= np.arange(FRACTION) < fraction[:, None]
    return np.einsum("ij,j->i", digits, PLACE), odd  # numpy's own loop, no BLAS (see ``training_points``)


def training_points(bodies: list[bytes]) -> list[np.ndarray]:
    """Every training point (update, loss) of each body (a whole file ``_validation_rows`` accepted),
    ``plottable`` ones only; one numpy pass over all bodies instead of a float() per line. Keep the
    bodies to about a megabyte: numpy asks for huge pages for arrays of 4 MiB, which cost 3x here.
    No BLAS (``einsum``, not ``@``): the recap runs this in processes forked from one that may have
    used an OpenMP thread pool, which a BLAS built on OpenMP would wait for forever."""
    if not bodies:
        return []
    buffer = b"".join([*bodies, bytes(80)])  # padding: every window below stays inside
    text = np.frombuffer(buffer, np.uint8)
    window = np.lib.stride_tricks.sliding_window_view(text, 40)
    ends = np.flatnonzero(text == ord("\n"))
    starts = np.concatenate(([0], ends[:-1] + 1))
    lines = starts[text[starts + len(b'{"kind": "')] == ord("t")]  # "train", not "val"
    points = np.concatenate([_points(window, chunk) for chunk in np.split(lines, range(LINES, len(lines), LINES))])
    for row in np.flatnonzero(np.isnan(points[:, 0])):  # rare: read exactly
        update, loss = TRAIN_ROW.match(buffer, lines[row]).groups()
        points[row] = int(update), float(loss)
    owners = np.searchsorted(np.cumsum([len(body) for body in bodies]), lines, side="right")
    keep = np.isfinite(points[:, 1]) & (points[:, 1] > 0)  # ``plottable``
    split = np.cumsum(np.bincount(owners[keep], minlength=len(bodies)))[:-1]
    return np.split(points[keep], split)


def _points(window: np.ndarray, lines: np.ndarray) -> np.ndarray:
    """(update, loss) of training ``lines`` (their starts); NaN where ``_losses`` cannot read one."""
    first = lines + UPDATE_AT
    comma = first + np.argmax(window[first, : INTEGER + 1] == ord(","), axis=1)  # none in reach: first
    update = np.einsum("ij,j->i", DIGIT[window[comma - INTEGER, :INTEGER]], PLACE[:INTEGER])  # no digit after
    loss, odd = _losses(window, comma + LOSS_AFTER)
    update[odd | (comma == first)] = np.nan
    return np.column_stack([update, loss])


def _read_body(path: Path | str, name: str) -> tuple[bytes, str | None]:
    """The file's bytes, and its text when the bytes are not plain ASCII with ``\\n`` lines (then the
    bytes are that text's: newlines as ``Path.read_text`` reads them); Unreadable if it is not UTF-8."""
    data = read_bytes(path)
    if data.isascii() and b"\r" not in data:
        return data, None
    text = decode(data, name)
    return text.encode(), text


def _blank(data: bytes, text: str | None) -> bool:
    """Nothing but whitespace, as ``str.strip`` sees it (a file starting with "{" is not: no copy made)."""
    if text is not None:
        return not text.strip()
    return not data or (data[0] in SPACE and not data.strip(SPACE))


def _without_cut_line(data: bytes, text: str | None) -> tuple[bytes, str | None]:
    """The file without a last line cut short: one without its newline that is not JSON (a kill or a
    full disk in the middle of the write, or a line still being written). The run's writer ends every
    line with its newline, and a resume sets such a line aside; the run is judged by its record."""
    if not data or data.endswith(b"\n"):
        return data, text
    start = data.rfind(b"\n") + 1
    try:
        json.loads(data[start:])
    except ValueError:
        data = data[:start]
        return data, (data.decode() if text is not None else None)
    return data, text


def read_metrics(path: Path | str, curve: bool = False) -> dict[str, Any]:
    """Summary of metrics.jsonl and its validation points; with ``curve``, also every training point
    the picture draws (``_train_curve``). Fast path: ``_as_written``; a file it does not account for
    goes through json line by line."""
    name = os.path.basename(path)
    data, text = _without_cut_line(*_read_body(path, name))
    body = data if data.endswith(b"\n") else data + b"\n"
    if _blank(data, text):
        rows, last, val_text = [], {}, None
    elif (val_text := _validation_rows(body)) is not None:
        rows, last = None, {kind: _last_of_kind(body, kind, name) for kind in ("train", "val")}
    else:
        rows, last = _rows_line_by_line(data.decode() if text is None else text, name)
    if val_text is not None:
        val = [(int(u), float(loss)) for u, loss in val_text]
    else:
        val = [(int(u), float(loss)) for k, u, loss in rows if k == "val" and loss is not None]
    finite = [loss for _, loss in val if math.isfinite(loss)]
    last_train, last_val = last.get("train", {}), last.get("val", {})
    summary = {
        "updates_done": last_train.get("update", 0),
        "examples_seen": last_train.get("examples_seen", 0),
        "targets_seen": last_train.get("targets_seen", 0),
        "final_train_loss": last_train.get("loss"),
        "final_val_loss": val[-1][1] if val else None,
        "best_val_loss": min(finite) if finite else None,
        "final_val_accuracy": last_val.get("accuracy"),
        "val_points": len(val),
        "_val_curve": val,
    }
    if curve and rows is None:
        summary["_train_body"] = body  # read with the other runs' (``training_points``)
    elif curve:
        summary["_train_curve"] = _train_curve([(u, loss) for k, u, loss in rows if k == "train"])
    return summary


STAMP_MOST_BYTES = 256 << 20  # about a million updates' lines: read at the run's end in well under a second
VAL_ROW = re.compile(_leading(("update", "loss"), "val", _FAST_FIELDS).encode())  # (update, loss) of a val line
VAL_LINE_START = b'\n{"kind": "val"'
SUMMARY_TYPES = {
    "updates_done": is_count,
    "examples_seen": is_count,
    "targets_seen": is_count,
    "final_train_loss": lambda v: v is None or is_number(v),
    "final_val_loss": lambda v: v is None or is_number(v),
    "best_val_loss": lambda v: v is None or is_number(v),
    "final_val_accuracy": lambda v: v is None or is_number(v),
    "val_points": is_count,
    "last_val_update": lambda v: v is None or is_count(v),
}  # what a stamp's summary holds (``metrics_stamp``), each of the type read_metrics gives it


def _stamped_validation_rows(body: bytes) -> list[tuple[bytes, bytes]] | None:
    """The (update, loss) text of every validation line, found by its start alone (a file pilot wrote and
    nothing changed since: ``unchanged_summary``); None where one is not as pilot writes it (a null loss)."""
    starts = [0] if body.startswith(VAL_LINE_START[1:]) else []
    at = body.find(VAL_LINE_START)
    while at >= 0:
        starts.append(at + 1)
        at = body.find(VAL_LINE_START, at + 1)
    rows = []
    for start in starts:
        if (found := VAL_ROW.match(body, start)) is None:
            return None
        rows.append(found.groups())
    return rows


def stamped_curves(path: Path | str, summary: dict[str, Any]) -> dict[str, Any] | None:
    """``summary`` (``unchanged_summary``: the file is as the run's end read it) with the curves the picture
    draws, its validation points and the file's bytes for ``training_points``, without checking every line
    again; None where a validation line is not as pilot writes it (then ``read_metrics`` reads it whole)."""
    try:
        body = read_bytes(path)
    except Unreadable:
        return None
    val = _stamped_validation_rows(body) if body.isascii() and body.endswith(b"\n") else None
    if val is None or len(val) != summary["val_points"]:
        return None
    return {**summary, "_val_curve": [(int(u), float(loss)) for u, loss in val], "_train_body": body}


def metrics_stamp(path: Path | str) -> dict[str, Any] | None:
    """metrics.jsonl's size and modification time (to the nanosecond) beside its summary as ``read_metrics``
    reads it: what a run's record keeps at its end, so that the recap's tables need not read the file again
    while it is as it was (``unchanged_summary``). None: no file, one the recap could not read, or one that
    changed while it was read, or one over ``STAMP_MOST_BYTES``."""
    try:
        before = os.stat(path)
        if before.st_size > STAMP_MOST_BYTES:  # read whole into memory: the recap reads a larger one itself
            return None
        summary = read_metrics(path)
        after = os.stat(path)
    except (OSError, Unreadable):
        return None
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns):
        return None
    val = summary.pop("_val_curve")
    summary["last_val_update"] = val[-1][0] if val else None
    return {"bytes": after.st_size, "mtime_ns": after.st_mtime_ns, "summary": summary}


def unchanged_summary(stamp: Any, path: Path | str) -> dict[str, Any] | None:
    """A record's stamp's summary (``metrics_stamp``) where metrics.jsonl still has the size and modification
    time it had then: the file the summary was read from. None: no stamp, a stamp of another shape (a record
    written by hand, damaged), or a file changed since (then the file is read, never the stamp)."""
    if not isinstance(stamp, dict) or not isinstance(summary := stamp.get("summary"), dict):
        return None
    if set(summary) != set(SUMMARY_TYPES) or not all(check(summary[k]) for k, check in SUMMARY_TYPES.items()):
        return None
    try:
        now = os.stat(path)
    except OSError:
        return None
    if not (is_count(stamp.get("bytes")) and is_count(stamp.get("mtime_ns"))):
        return None
    return dict(summary) if (now.st_size, now.st_mtime_ns) == (stamp["bytes"], stamp["mtime_ns"]) else None
