"""Fault injection for the tests: ``PILOT_FAULT=<point>[@<update>]`` (unset in normal use).

Each point is a place where a real run can be killed or fail: the tests set the variable and
check that the run's records and checkpoints still tell the truth afterwards.
"""

from __future__ import annotations

import errno
import os
import signal


def fault_point(point: str, update: int | None = None, path: object = None) -> None:
    """Test hook: ``PILOT_FAULT=<point>[:<signal>][@<update>]`` kills this process with SIGKILL
    there, or sends it ``<signal>`` (``closing:SIGINT``: a Ctrl-C arriving during the closing).

    Points: ``hydra_files`` (the run directory checked, Hydra about to write ``.hydra/``), ``job`` (Hydra's files written, the job's function begun; ``@N``: a sweep's job N), ``setup`` (the directory locked, the record not yet opened), ``update`` (after an update), ``before_write``, ``after_write``,
    ``before_rename`` (inside a checkpoint save), ``closing`` (after the final validation), ``recap`` (a recap waiting for its picture), ``record`` (the run's
    record being written, signals only noted), ``sheet`` (a pilot's choice sheet written, its verdicts not yet final), ``verdicts`` (a pilot's verdicts final, its report not yet written), ``reload`` and ``resume`` (inside the
    process of the reload check and of the resume check, before it answers).
    ``enospc`` raises "no space left on device" inside a checkpoint save instead of killing
    (where no small file system can be mounted to fill up for real); ``eperm`` there raises the
    system's refusal to write ``path`` (an immutable directory: root ignores permissions); ``exception`` raises an
    ordinary error after an update (a failure validation cannot foresee), ``setup_exception`` one before the
    run's record is opened (a job that crashes without a record). Unset in normal use.
    """
    if not fault_requested(point, update):
        return
    if point == "enospc" or point.startswith("enospc_"):  # enospc_verdict: the reload check's verdict file
        raise OSError(errno.ENOSPC, "No space left on device (injected by PILOT_FAULT)")
    if point == "eperm":
        raise PermissionError(errno.EPERM, "Operation not permitted (injected by PILOT_FAULT)", str(path))
    if point in ("exception", "setup_exception"):
        raise RuntimeError(f"injected failure (PILOT_FAULT={os.environ['PILOT_FAULT']})")
    sent = _spec(point, update).partition("@")[0].partition(":")[2]
    os.kill(os.getpid(), getattr(signal, sent) if sent else signal.SIGKILL)


def fault_requested(point: str, update: int | None = None) -> bool:
    """Whether ``PILOT_FAULT`` names ``point`` (at this update). ``nan_weights`` is read by the
    training run itself: it poisons the weights after that update while the loss stays finite.
    Several faults are separated by commas (``update:SIGTERM@2,recap:SIGTERM``: a second signal)."""
    return bool(_spec(point, update))


def _spec(point: str, update: int | None) -> str:
    """The first of ``PILOT_FAULT``'s faults that names ``point`` (at this update), or ""."""
    for spec in os.environ.get("PILOT_FAULT", "").split(","):
        name, _, at = spec.partition("@")
        if name.partition(":")[0] == point and (not at or update is None or int(at) == update):
            return spec
    return ""
