"""One exception hierarchy (STYLE.md rule 13, submitit style).

What the user can fix is a ``PilotError``: ``python -m pilot`` prints its message
without a traceback and exits 2. Anything else is pilot's own bug and keeps its
traceback. This module is a leaf: every layer may import it.
"""
from __future__ import annotations


class PilotError(Exception):
    """A problem the user can fix; the message names the key or file, the value and the fix."""

    exit_code = 2


class ConfigRefused(PilotError, ValueError):
    """A setting, or a combination of settings, that cannot run (see config.validate.ConfigError)."""


class ResumeRefused(PilotError, ValueError):
    """The run directory's checkpoint or record forbids continuing it as asked."""


class UnsafeFileError(PilotError, RuntimeError):
    """A file that would need arbitrary unpickling or would run code named inside it: refused."""


class RunDirectoryBusy(PilotError, RuntimeError):
    """Another process holds the run directory's lock."""


class DiskFull(PilotError, OSError):
    """No space left while writing a file of the run; the message names the file and the space needed."""
