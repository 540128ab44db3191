"""One line of env_check's diff (``Difference``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Difference:
    """One line of the diff: what differs, the pilot's value, this machine's, and what it affects."""

    what: str
    pilot: Any
    here: Any
    affects: str
    severe: bool  # can change results or fail the campaign: exit 1

    def line(self) -> str:
        return (
            f"{'DIFF' if self.severe else 'note'}  {self.what}: pilot {self.pilot}, here {self.here} — {self.affects}"
        )
