"""What the environment step says when a file it wrote cannot be read back."""

from __future__ import annotations

from pilot.errors import PilotError


class LockUnreadable(PilotError, ValueError):
    """A requirements.lock or environment.json that cannot be read; the message names the file and line."""
