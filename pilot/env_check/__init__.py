"""``python -m pilot.env_check <pilot run dir> [--smoke]``: run it first on the rented machine.

It collects the environment step's facts here (with the run's own config) and compares them with
what the pilot recorded in its run directory (``environment.json``, ``requirements.lock``,
``memory_estimate.json`` for the GPU planned, ``run.json`` for the code revision). One line per
difference, with what it affects:

- distributions missing or at another version (the campaign's dependencies — torch, pilot, the
  targets' distributions and what they require — can change results; others are notes); a module of
  theirs the pilot had imported that does not import here (a broken install at the same version);
- torch, Python, CUDA, cuDNN, NCCL at another major.minor; a driver older than torch's CUDA;
- a GPU model other than the one planned (the choice sheet's rental), fewer GPUs than planned;
- a precision the config needs that this GPU lacks, fp32 matmuls running as TF32 here;
- an attention kernel the pilot had (or the requirements predicted) that is unavailable here;
- a distributed backend that does not initialise; a ``_target_`` module that does not import here
  or whose file differs from the pilot's (sha256); another code revision.

``--smoke`` rebuilds the configured variant, runs one training update and one evaluation here and
compares the first update's loss with the pilot's (``SMOKE_RTOL``, declared per precision, for a
different device). Every result is appended to the campaign's journal.

Exit codes: 0 nothing that can change results or fail the campaign (notes only); 1 at least one
such difference; 2 a bad argument or an unreadable run directory (a message, no traceback).

Modules: ``run_dir`` (reading the pilot's run directory), ``compare_stack``, ``compare_device`` and
``compare_code`` (the comparisons, each a list of ``Difference``), ``smoke``, ``comparison`` (all of it:
``check``), ``cli`` (the command line and the journal).
"""

from pilot.lazy import attribute_getter

_HOMES = {  # each name's module, imported on first use: ``python -m pilot.env_check`` imports this package
    # first, and on a machine that lacks one of pilot's own dependencies that must be said, not a traceback
    "main": "pilot.env_check.cli",
    "compare_code": "pilot.env_check.compare_code",
    "compare_distributions": "pilot.env_check.compare_code",
    "compare_sources": "pilot.env_check.compare_code",
    "compare_targets": "pilot.env_check.compare_code",
    "compare_attention": "pilot.env_check.compare_device",
    "compare_device": "pilot.env_check.compare_device",
    "compare_distributed": "pilot.env_check.compare_device",
    "compare_numerics": "pilot.env_check.compare_device",
    "compare_stack": "pilot.env_check.compare_stack",
    "check": "pilot.env_check.comparison",
    "Difference": "pilot.env_check.difference",
    "PilotRun": "pilot.env_check.run_dir",
    "RunDirRefused": "pilot.env_check.run_dir",
    "load_run": "pilot.env_check.run_dir",
    "SMOKE_RTOL": "pilot.env_check.smoke",
    "recorded_first_step_loss": "pilot.env_check.smoke",
    "smoke": "pilot.env_check.smoke",
}
__all__ = sorted(_HOMES)


__getattr__ = attribute_getter(__name__, _HOMES)
