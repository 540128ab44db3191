"""Progress for long loops: a tqdm bar with rate and ETA on a terminal,
plain periodic log lines elsewhere (CI, cluster logs, pipes)."""

from __future__ import annotations

import logging
import sys
import time

from tqdm import tqdm

log = logging.getLogger("pilot")


class Progress:
    def __init__(self, total: int, description: str, log_every: int, enabled: bool = True, initial: int = 0):
        self.total, self.description, self.log_every = total, description, max(1, log_every)
        self.done = initial
        self.start_done = initial
        self.started = time.perf_counter()
        self.enabled = enabled
        self.bar: tqdm | None = None
        if enabled and sys.stderr.isatty():
            self.bar = tqdm(
                total=total, initial=initial, desc=description, unit="update", dynamic_ncols=True, leave=True
            )

    def advance(self, **postfix: float) -> None:
        self.done += 1
        if self.bar is not None:
            self.bar.set_postfix({k: f"{v:.4g}" for k, v in postfix.items()}, refresh=False)
            self.bar.update(1)
        elif self.enabled and (self.done % self.log_every == 0 or self.done == self.total):
            elapsed = time.perf_counter() - self.started
            rate = (self.done - self.start_done) / elapsed if elapsed > 0 else float("nan")
            eta = (self.total - self.done) / rate if rate > 0 else float("nan")
            values = " ".join(f"{k}={v:.4g}" for k, v in postfix.items())
            log.info(
                "%s %d/%d (%.1f updates/s, ETA %.0fs) %s", self.description, self.done, self.total, rate, eta, values
            )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
