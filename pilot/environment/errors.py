"""What the environment step says when something fails: an unreadable file, an exception in one line."""

from __future__ import annotations

from pilot.errors import PilotError


class LockUnreadable(PilotError, ValueError):
    """A requirements.lock or environment.json that cannot be read; the message names the file and line."""


def error_line(error: BaseException) -> str:
    """'ModuleNotFoundError: No module named x': the type and the first line of the message."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:300]}" if text else type(error).__name__
