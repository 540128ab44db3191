"""Room kept on the run directory's file system for run.json's last write.

run.json is rewritten through a temporary file (``write_text_atomic``): a disk that filled up during
a run, by the run's own files or another process's, left no room for it, and run.json went on saying
``running`` beside files that said the run was over (a complete choice sheet). Every record keeps
``.run.json.room`` from the moment it is opened; its last write (``RunRecord.finish``) goes into the
room's own blocks and renames it over run.json, so how the run ended is recorded whichever file filled
the disk, and no other process's write can take that space first.
"""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

ROOM_NAME = ".run.json.room"
MIN_ROOM_BYTES = 16 * 1024  # run.json is 1-5 KB: room for it with a long error, whatever the block size


def keep_room(run_dir: Path, record_bytes: int) -> Path | None:
    """Write ``run_dir/.run.json.room``: twice the record's size, at least MIN_ROOM_BYTES, of random bytes
    (zeros take no space on a compressing file system). On a disk already full, as much as fits (the run's
    next write then fails, one message naming its file). Its path, or None when not a byte fit."""
    path = Path(run_dir) / ROOM_NAME
    size, written = max(MIN_ROOM_BYTES, 2 * record_bytes), 0
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)  # as run.json, under the umask
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
    return path if written else give_back(path)


def write_in_room(room: Path | None, path: Path, text: str) -> bool:
    """``text`` to ``path`` through the room: written over its own blocks, the rest cut off, synced, renamed
    over ``path`` (atomic, and no new space needed). False where there is no room, it is smaller than the text,
    or the file system refuses even so (copy-on-write needs new blocks): then the room is given back (its
    space free for an ordinary write) and ``path`` is as it was."""
    data = text.encode()
    try:
        if room is None or room.stat().st_size < len(data):
            give_back(room)
            return False
        fd = os.open(room, os.O_WRONLY)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(room, path)
    except OSError:
        give_back(room)
        return False
    return True


def give_back(room: Path | None) -> None:
    """Remove the room (``keep_room``): its space is free again. None: nothing kept (returns None, for
    ``self.room = give_back(self.room)``)."""
    if room is not None:
        with suppress(OSError):
            room.unlink()
