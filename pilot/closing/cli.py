"""``python -m pilot.closing <export dir>``: the reload check's command line (the parent process runs it)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

import torch

from pilot.closing.export import CONTROL_FILE
from pilot.closing.export_config import reference_policy, run_policy
from pilot.closing.reload import RESULT_FILE, refuse_not_an_export, reload_and_compare
from pilot.errors import PilotError


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
    result_path = args.directory / RESULT_FILE
    with suppress(OSError):
        result_path.unlink(missing_ok=True)
    try:
        refuse_not_an_export(args.directory)  # before the run's policy is read from what may not be there
        policy = (
            reference_policy(args.reference_config, args.allow_target)
            if args.reference_config
            else run_policy(args.directory, args.allow_target)
        )
        result = reload_and_compare(args.directory, policy)
    except PilotError as error:
        with suppress(OSError):
            result_path.write_text(json.dumps({"verdict": "fail", "refused": True, "reason": str(error)}, indent=2))
        print(error, file=sys.stderr)
        return error.exit_code
    result_path.write_text(json.dumps(result, indent=2))
    print(result["reason"])
    return 0 if result["verdict"] == "pass" else 1
