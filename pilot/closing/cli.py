"""``python -m pilot.closing <export dir>``: the reload check's command line (the parent process runs it)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

import torch

from pilot.closing.export import CONTROL_FILE
from pilot.closing.export_config import reference_policy, run_policy
from pilot.closing.reload import ERROR_FILE, NOT_WRITTEN, RESULT_FILE, refuse_not_an_export, reload_and_compare
from pilot.errors import PilotError, RunDirectoryBusy, first_line
from pilot.faults import fault_point
from pilot.run_record import RunDirectoryLock, write_json_atomic


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pilot.closing <export dir>``: 0 pass, 1 fail, 2 refused (the message says why)."""
    parser = argparse.ArgumentParser(prog="python -m pilot.closing", description=main.__doc__)
    parser.add_argument("directory", type=Path, help=f"the export: config.yaml, model.safetensors, {CONTROL_FILE}")
    parser.add_argument(
        "--reference-config",
        type=Path,
        help="the config the export must equal "
        "(default: the run's config.yaml next to the export, checked against run.json)",
    )
    parser.add_argument(
        "--allow-target",
        action="append",
        default=[],
        metavar="MODULE.ATTR",
        help="also instantiate this _target_, at any key (repeatable)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="CPU threads (the run's own count for a bit-identical rerun; default: torch's)",
    )
    args = parser.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    result_path = args.directory / RESULT_FILE  # replaced once this check has a verdict, never removed before
    try:
        refuse_not_an_export(args.directory)  # before the run's policy is read from what may not be there
    except PilotError as error:  # not an export: nothing of this check is written there (a user's file kept)
        print(f"pilot.closing: {error}", file=sys.stderr)
        return error.exit_code
    try:
        policy = (
            reference_policy(args.reference_config, args.allow_target)
            if args.reference_config
            else run_policy(args.directory, args.allow_target)
        )
        fault_point("reload")  # tests: the reload process killed (kill -9, the out-of-memory killer) mid-check
        result = reload_and_compare(args.directory, policy)
    except PilotError as error:
        _write(result_path, failed := {"verdict": "fail", "refused": True, "reason": str(error)})
        print(error, file=sys.stderr)
        record_in_run(args.directory, failed)
        return error.exit_code
    except Exception as error:  # noqa: BLE001 - a damaged or unreadable export: its verdict, not a traceback
        reason = f"the export could not be reloaded: {type(error).__name__}: {first_line(error)}"
        _write(result_path, failed := {"verdict": "fail", "reason": reason})
        print(f"pilot.closing: {reason}", file=sys.stderr)
        record_in_run(args.directory, failed)
        return 1
    _write(result_path, result)
    print(result["reason"])
    if (recorded := record_in_run(args.directory, result)) is not None:
        print(recorded)
    return 0 if result["verdict"] == "pass" else 1


def record_in_run(export_dir: Path, result: dict) -> str | None:
    """Run by hand (an ``incomplete`` closing redone): the run's run.json takes this verdict, the one it
    had kept beside it (``closing.redone``). Not when the run's own process holds the run directory (it
    runs this check and records it itself), nor for an export that is not the run's closing's."""
    run_dir = export_dir.resolve().parent
    path = run_dir / "run.json"
    if not path.is_file():
        return None
    try:
        lock = RunDirectoryLock(run_dir, says_holder=False).acquire()
    except (RunDirectoryBusy, OSError):
        return None
    try:
        record = json.loads(path.read_text())
        closing = record.get("closing") if isinstance(record, dict) else None
        weights = str(((closing or {}).get("weights") or {}).get("file", "")) if isinstance(closing, dict) else ""
        if not weights.startswith(f"{export_dir.resolve().name}/"):
            return None
        earlier = {"verdict": closing.get("verdict"), "reason": closing.get("reason")}
        if "redone" in closing:  # redone before: that one's earlier verdict too (the run's own stays findable)
            earlier["redone"] = closing["redone"]
        redone_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        size = (closing.get("weights") or {}).get("bytes")
        said = f"; {weights}: {size:,} bytes" if isinstance(size, int) else ""  # as the run's own closing says it
        closing.update(verdict=result["verdict"], reason=result["reason"] + said)
        closing["redone"] = {"at": redone_at, "by": "python -m pilot.closing", "earlier": earlier}
        write_json_atomic(path, record)
    except (OSError, ValueError):  # an unreadable record or a full disk: the check's own file says the verdict
        return None
    finally:
        lock.release()
    return (
        f"{path}: closing.verdict {earlier['verdict']} -> {result['verdict']} (the earlier one kept in closing.redone)"
    )


def _write(path: Path, result: dict) -> None:
    """The verdict, whole or not at all (a read-only export keeps the one it has); where it cannot be written
    (a full disk), it is given on stderr after ``NOT_WRITTEN`` for the run's process, which records it."""
    staged = path.with_name(f".{path.name}.tmp")
    try:
        fault_point("enospc_verdict")  # tests: the disk full when the verdict is written
        staged.write_text(json.dumps(result, indent=2))
        staged.replace(path)
    except OSError as error:
        with suppress(OSError):
            staged.unlink(missing_ok=True)  # no empty file left where the verdict did not fit
        print(f"{NOT_WRITTEN}{error.strerror or error}: {json.dumps(result)}", file=sys.stderr)
        return
    with suppress(OSError):
        path.with_name(ERROR_FILE).unlink(missing_ok=True)  # an earlier attempt's output: this verdict replaces it
