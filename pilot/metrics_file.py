"""metrics.jsonl, appended one whole line at a time. A line the disk had no room for was left cut short (a
disk filled by another process mid-run: the file no longer parsed as JSON lines until a resume mended it,
while the message said nothing written before had changed): it is cut back off, so the file holds what it
held before the write, and the write raises ``DiskFull`` naming the file."""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

from pilot.errors import disk_full_guard


def _append(fd: int, data: memoryview) -> None:
    while data:
        data = data[os.write(fd, data) :]  # a short write on a nearly full disk, then ENOSPC


class MetricsFile:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def write_line(self, line: str) -> None:
        """``line`` and its newline appended whole, or not at all (``DiskFull``)."""
        assert self.fd is not None, "metrics.jsonl written after it was closed"
        data = memoryview((line + "\n").encode())
        before = os.fstat(self.fd).st_size
        with disk_full_guard(self.path):
            try:
                _append(self.fd, data)
            except OSError:
                with suppress(OSError):  # frees what was written: never needs space
                    os.ftruncate(self.fd, before)
                raise

    def close(self) -> None:
        if self.fd is not None:
            fd, self.fd = self.fd, None
            os.close(fd)
