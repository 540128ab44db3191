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
    typed: str | None = None  # the value as the command line wrote it, where Hydra read it as another

    def __str__(self) -> str:
        read_as = repr(self.value) if self.typed is None else self.typed
        if self.typed is not None and not is_finite(self.value):  # 1e400: Hydra's float overflowed
            read_as += f" (read as {self.value!r})"
        return f"  - {self.fix}" if self.said else f"  - {self.key}={read_as}: {self.fix}"


def with_values_as_typed(problems: list[Problem], overrides: list[str]) -> None:
    """Each problem of a key the command line set said with the value as typed where Hydra wrote it otherwise
    (``optim.lr=1e400`` was said 'optim.lr=inf', ``optim.lr=-1e-3`` '-0.001')."""
    typed = {o.split("=", 1)[0].lstrip("+~"): o.split("=", 1)[1] for o in overrides if "=" in o}
    for problem in problems:
        text = typed.get(problem.key)
        if text is not None and not problem.said and text.strip() not in (str(problem.value), repr(problem.value)):
            if is_number(problem.value) and "," not in text:  # a number read from other digits; a sweep's list aside
                problem.typed = text


class ConfigError(ConfigRefused):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__(f"{len(problems)} problem(s) in the config:\n" + "\n".join(str(p) for p in problems))


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_finite(value: Any) -> bool:
    return is_number(value) and math.isfinite(value)
