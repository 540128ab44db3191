"""Preemption and time limits on a cluster: checkpoint at the next update boundary, then requeue.

submitit sends USR2 before a preemption or the time limit and, in its own
handler, requeues the job (Hydra's submitit launcher makes the job
checkpointable). Saving inside a signal handler could catch an update half
done, so ``PreemptionWatch`` replaces the handler by one that only raises a
flag; the training loop checks the flag after every update, saves a complete
checkpoint, records the interruption, and then hands over to submitit's
handler (requeue and exit). Once ``max_requeues`` interruptions are used up
the run ends cleanly with status ``preempted`` instead, so it is still a row
in the recap. submitit itself only counts time-outs, not preemptions.
"""
from __future__ import annotations

import os
import signal
from typing import Any, Callable, Optional


class PreemptionWatch:
    def __init__(self, signum: int = signal.SIGUSR2):
        self.signum = signum
        self.requested = False
        self.previous: Optional[Callable[..., Any]] = None
        self.installed = False

    def install(self) -> "PreemptionWatch":
        """Watch only inside a submitit job: elsewhere USR2 keeps its default meaning."""
        if "SUBMITIT_EXECUTOR" not in os.environ and "SLURM_JOB_ID" not in os.environ:
            return self
        self.previous = signal.getsignal(self.signum)
        signal.signal(self.signum, self._flag)
        self.installed = True
        return self

    def _flag(self, signum: int, frame: Any) -> None:
        self.requested = True

    def hand_over(self) -> None:
        """Let submitit requeue the job (it exits the process)."""
        signal.signal(self.signum, self.previous if callable(self.previous) else signal.SIG_DFL)
        if callable(self.previous):
            self.previous(self.signum, None)
        else:
            os.kill(os.getpid(), self.signum)

    def uninstall(self) -> None:
        if self.installed:
            signal.signal(self.signum, self.previous if self.previous is not None else signal.SIG_DFL)
            self.installed = False
