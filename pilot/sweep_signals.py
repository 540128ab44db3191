"""Ctrl-C on a sweep whose jobs run in their own processes on this machine (submitit's local
launcher, ``hydra/launcher=local_parallel``).

The terminal sends SIGINT to every process of the foreground group: this process, submitit's
controller of each job (``python -m submitit.local._local``) and the jobs. Each job stops at its
signal and records it (a checkpoint of the update in progress, ``interrupted``). The controllers,
though, died with a ``KeyboardInterrupt`` traceback each and then signalled their job a second
time, which stops a job at once, without its checkpoint.

``LocalJobsStopThemselves`` (a Hydra callback) ignores SIGINT in this process from the start of
such a multirun. The controllers it starts inherit that (Python leaves an ignored SIGINT ignored),
and so do the jobs until pilot installs their own handler, so one Ctrl-C reaches each job once.
This process then waits for the jobs as usual and writes the recap of what they recorded
(``pilot.__main__``: exit 130 when a job was interrupted). SIGTERM still ends it at once. Jobs
run in this process (the basic launcher) or on a cluster are left as they are.
"""

from __future__ import annotations

import signal
from typing import Any

from omegaconf import OmegaConf

try:
    from hydra.experimental.callback import Callback
except ImportError:  # pragma: no cover - hydra is a dependency
    Callback = object

LOCAL_LAUNCHER = "LocalLauncher"  # hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher


class LocalJobsStopThemselves(Callback):
    def on_multirun_start(self, config: Any, **kwargs: Any) -> None:
        target = str(OmegaConf.select(config, "hydra.launcher._target_", default="") or "")
        if target.rsplit(".", 1)[-1] == LOCAL_LAUNCHER:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
