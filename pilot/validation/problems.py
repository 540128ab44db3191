"""What every check reports: a ``Problem`` (key, value, fix), all of them raised at once as one
``ConfigError``; and the two number tests every check uses."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pilot.errors import ConfigRefused


@dataclass
class Problem:
    key: str
    value: Any
    fix: str
    said: bool = False  # ``fix`` is a whole message already naming its key and value (a builder's PilotError)

    def __str__(self) -> str:
        return f"  - {self.fix}" if self.said else f"  - {self.key}={self.value!r}: {self.fix}"


class ConfigError(ConfigRefused):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__(f"{len(problems)} problem(s) in the config:\n" + "\n".join(str(p) for p in problems))


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_finite(value: Any) -> bool:
    return is_number(value) and math.isfinite(value)
