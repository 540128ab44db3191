"""A line every minute while a long piece of work runs, so that a console silent for minutes (a
200,000-token vocabulary's checks on a CPU) says what it is doing and for how long."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger("pilot")
EVERY_S = 60.0


@contextmanager
def still_running(what: str, every_s: float = EVERY_S) -> Iterator[None]:
    """Log "<what> still running (N s)" every ``every_s`` seconds until the block ends (a daemon thread:
    it never keeps the process alive, and it says nothing of a block shorter than ``every_s``)."""
    done, started = threading.Event(), time.monotonic()

    def beat() -> None:
        while not done.wait(every_s):
            log.info("%s still running (%.0f s)", what, time.monotonic() - started)

    thread = threading.Thread(target=beat, name="pilot-still-running", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
