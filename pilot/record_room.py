"""Room kept on the run directory's file system for run.json's last write.

run.json is rewritten through a temporary file (``write_text_atomic``): a disk that filled up during
a run, by the run's own files or another process's, left no room for it, and run.json went on saying
``running`` beside files that said the run was over (a complete choice sheet). Every record keeps
``.run.json.room`` from the moment it is opened and gives it back just before its last write
(``RunRecord.finish``), so how the run ended is recorded whichever file filled the disk.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

ROOM_NAME = ".run.json.room"
MIN_ROOM_BYTES = 16 * 1024  # run.json is 1-5 KB: its temporary copy, rounded up to blocks, with a long error


def keep_room(run_dir: Path, record_bytes: int) -> Path | None:
    """Write ``run_dir/.run.json.room``: twice the record's size, at least MIN_ROOM_BYTES, of random bytes
    (zeros take no space on a compressing file system). On a disk already full, as much as fits (the run's
    next write then fails, one message naming its file). Its path, or None when not a byte fit."""
    path = Path(run_dir) / ROOM_NAME
    size, written = max(MIN_ROOM_BYTES, 2 * record_bytes), 0
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError:
        return None
    try:
        data = os.urandom(size)
        while written < size:
            written += os.write(fd, data[written:])
    except OSError:  # no space for the rest: what fits is kept
        pass
    finally:
        os.close(fd)
    if not written:
        with suppress(OSError):
            path.unlink()
        return None
    return path


def give_back(room: Path | None) -> None:
    """Remove the room (``keep_room``): its space is free for the record's last write. None: nothing kept."""
    if room is not None:
        with suppress(OSError):
            room.unlink()
