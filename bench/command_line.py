"""The command line of a benchmark that takes no options: ``--help`` prints its text and exits; anything
else is refused before it runs (each benchmark runs for minutes and overwrites its file in bench/results/)."""

from __future__ import annotations

import argparse


def no_options(text: str | None) -> None:
    argparse.ArgumentParser(description=text, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
