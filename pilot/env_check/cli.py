"""``python -m pilot.env_check``: the command line, the verdict and the journal entry."""

from __future__ import annotations

import argparse
import math
import os
import socket
import sys
import time
from pathlib import Path

from omegaconf import OmegaConf

from pilot.env_check.comparison import check
from pilot.env_check.run_dir import PilotRun, RunDirRefused
from pilot.env_check.smoke import SMOKE_RTOL
from pilot.errors import PilotError
from pilot.rental.journal import append_entry


def _journal(run: PilotRun, path: Path | None, lines: list[str]) -> str | None:
    target = path or Path(
        os.environ.get("PILOT_JOURNAL") or OmegaConf.select(run.cfg, "campaign.journal", default="sweeps/journal.md")
    )
    try:
        append_entry(target, f"env_check ({run.directory}) on {socket.gethostname()}", lines)
    except OSError as error:  # the journal is a notebook: it never fails the check
        return f"env_check: could not append to the journal {target}: {error}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pilot.env_check", description="Compare this machine with the stack a pilot passed on."
    )
    parser.add_argument("run_dir", type=Path, help="the pilot's run directory (environment.json, requirements.lock)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="also run one training update and one evaluation "
        "here and compare the first update's loss with the pilot's",
    )
    parser.add_argument(
        "--rtol",
        type=float,
        default=None,
        help="tolerance of the smoke comparison (default: "
        + ", ".join(f"{k} {v:g}" for k, v in SMOKE_RTOL.items())
        + ")",
    )
    parser.add_argument(
        "--journal",
        type=Path,
        default=None,
        help="the campaign's journal (default: $PILOT_JOURNAL, else the run's campaign.journal)",
    )
    parser.add_argument("--no-journal", action="store_true", help="do not append the result to the journal")
    args = parser.parse_args(argv)  # a bad argument exits 2 with the usage
    started = time.perf_counter()
    try:
        if args.rtol is not None and not (math.isfinite(args.rtol) and args.rtol >= 0):
            raise RunDirRefused(f"--rtol {args.rtol}: must be a finite number >= 0")
        differences, lines, run = check(args.run_dir, args.smoke, args.rtol)
    except PilotError as error:
        print(f"env_check: {error}", file=sys.stderr)
        return 2
    severe = [d for d in differences if d.severe]
    verdict = (
        f"env_check: {len(severe)} difference(s) that can change results or fail the campaign"
        if severe
        else "env_check: pass — nothing here can change the pilot's results"
    )
    verdict += f"; {len(differences) - len(severe)} note(s); {time.perf_counter() - started:.1f} s"
    output = lines + [d.line() for d in severe] + [d.line() for d in differences if not d.severe] + [verdict]
    print("\n".join(output))
    if not args.no_journal:
        problem = _journal(run, args.journal, [f"- {line}" for line in output])
        if problem:
            print(problem, file=sys.stderr)
    return 1 if severe else 0
