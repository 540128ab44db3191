"""``python -m pilot.env_check <pilot run dir> [--smoke]``: run it first on the rented machine.

It collects the environment step's facts here (with the run's own config) and compares them with
what the pilot recorded in its run directory (``environment.json``, ``requirements.lock``,
``memory_estimate.json`` for the GPU planned, ``run.json`` for the code revision). One line per
difference, with what it affects:

- distributions missing or at another version (the campaign's dependencies — torch, pilot, the
  targets' distributions and what they require — can change results; others are notes);
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

from pilot.env_check.cli import main
from pilot.env_check.compare_code import compare_code, compare_distributions, compare_targets
from pilot.env_check.compare_device import compare_attention, compare_device, compare_distributed, compare_numerics
from pilot.env_check.compare_stack import compare_stack
from pilot.env_check.comparison import check
from pilot.env_check.difference import Difference
from pilot.env_check.run_dir import PilotRun, RunDirRefused, load_run
from pilot.env_check.smoke import SMOKE_RTOL, recorded_first_step_loss, smoke

__all__ = [
    "SMOKE_RTOL",
    "Difference",
    "PilotRun",
    "RunDirRefused",
    "check",
    "compare_attention",
    "compare_code",
    "compare_device",
    "compare_distributed",
    "compare_distributions",
    "compare_numerics",
    "compare_stack",
    "compare_targets",
    "load_run",
    "main",
    "recorded_first_step_loss",
    "smoke",
]
