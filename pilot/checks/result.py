"""A check's verdict: pass, warn or fail (phases add oom, and incomplete: a check whose process was
killed before it answered, so nothing was checked), with a reason a user can act on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pilot.errors import INCOMPLETE

VERDICTS = ("pass", "warn", "fail", "oom", "skipped", INCOMPLETE)
GATING = ("fail", "oom", INCOMPLETE)  # these make the pilot exit non-zero (it cannot vouch for what went unchecked)


@dataclass
class Finding:
    """One flagged problem, tied to an example where there is one."""

    problem: str
    split: str = ""
    example: int | None = None  # index in the data set
    detail: str = ""

    def __str__(self) -> str:
        where = (
            f"{self.split} example {self.example}: "
            if self.example is not None
            else (f"{self.split}: " if self.split else "")
        )
        return f"{where}{self.problem}" + (f" ({self.detail})" if self.detail else "")


@dataclass
class CheckResult:
    step: str
    verdict: str
    reason: str
    findings: list[Finding] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "verdict": self.verdict,
            "reason": self.reason,
            "findings": [vars(f) for f in self.findings],
            "details": self.details,
        }


def worst(verdicts: list[str]) -> str:
    order = {"pass": 0, "skipped": 1, "warn": 2, INCOMPLETE: 3, "fail": 4, "oom": 5}
    return max(verdicts, key=lambda v: order[v]) if verdicts else "pass"


def summarise(
    step: str, findings: list[Finding], ok_reason: str, details: dict[str, Any], warnings: list[Finding] = ()
) -> CheckResult:
    """fail when any finding, warn when only warnings, pass otherwise; the reason counts them."""
    if findings:
        first = str(findings[0])
        more = f" (+{len(findings) - 1} more)" if len(findings) > 1 else ""
        return CheckResult(step, "fail", f"{first}{more}", list(findings) + list(warnings), details)
    if warnings:
        more = f" (+{len(warnings) - 1} more)" if len(warnings) > 1 else ""
        return CheckResult(step, "warn", f"{warnings[0]}{more}", list(warnings), details)
    return CheckResult(step, "pass", ok_reason, [], details)
