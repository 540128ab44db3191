"""``python -m pilot.recap``'s command line: its arguments, each refusal one line with the fix."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _share(text: str) -> float:
    """--quality-tolerance: a share of the control's loss, >= 0 (as campaign.quality_tolerance)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number; e.g. 0.02 (2% of the control's loss)") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} must be a share >= 0, e.g. 0.02 (2% of the control's loss)")
    return value


def _named(value: str) -> Path:
    """A directory argument; an empty one is refused (it would mean the current directory, where the
    recap's files would land among whatever is there)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("empty: name a directory")
    return Path(value)


def _one_line(message: str) -> None:
    """argparse's refusal as one line with the fix (its usage block before it named no fix)."""
    print(
        f"python -m pilot.recap: {message}. Fix: python -m pilot.recap --help shows how it is called", file=sys.stderr
    )
    raise SystemExit(2)


def _options_known(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``argv``, once every option in it is one of ``parser``'s (or the start of one): ``--helpp`` was
    answered 'the following arguments are required: paths', argparse's first complaint, not the option."""
    known = [name for name in parser._option_string_actions if name.startswith("-")]  # noqa: SLF001
    for argument in argv:
        if argument == "--":
            break
        name = argument.split("=", 1)[0]
        if _number(argument):  # a negative value (--quality-tolerance -1): argparse's to judge, not an option
            continue
        if argument.startswith("-") and len(argument) > 1 and not any(k.startswith(name) for k in known):
            long = [k for k in known if k.startswith("--")]
            parser.error(f"unrecognized option {argument} (it takes {', '.join(long)})")
    return argv


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def recap_arguments(argv: list[str] | None) -> argparse.Namespace:
    """The recap's arguments (``argv``: the command line's when None)."""
    parser = argparse.ArgumentParser(
        prog="python -m pilot.recap", description="Build recap.csv/recap.md/recap.png over run or sweep directories."
    )
    parser.add_argument("paths", nargs="+", type=_named, help="run or sweep directories (searched for runs)")
    parser.add_argument("--out", type=_named, default=None, help="where to write (default: the first path)")
    parser.add_argument("--control", default="", help='overrides of the control variant, e.g. "optim.lr=0.0001"')
    parser.add_argument(
        "--quality-tolerance",
        type=_share,
        default=None,
        help="mark each variant's validation loss within/outside this share of the control's",
    )
    parser.add_argument(
        "--pool",
        action="store_true",
        help="judge the runs of different sweeps as one (default: each sweep on its own runs)",
    )
    parser.add_argument("--no-plot", action="store_true")
    parser.error = _one_line  # type: ignore[method-assign]
    return parser.parse_args(_options_known(parser, sys.argv[1:] if argv is None else argv))
