"""The pilot's first step, ``environment``: the software stack and the device, and what the config needs of them.

Facts (``collect``), all from the running process, no subprocess:
1. Python; torch and its build (CUDA or ROCm); CUDA runtime, driver and the driver's CUDA; cuDNN; NCCL;
2. the device the run uses (``DeviceFacts``: model, compute capability, memory; bf16, TF32, fp8), every
   visible GPU, the TF32 and determinism settings;
3. the model's scaled-dot-product-attention calls (recorded in one forward of a fresh model on the CPU
   at the training micro-batch and the longest sequence) and which attention kernels run them on this
   device (flash, memory-efficient, cuDNN, math; on a CPU the CUDA kernels are *predicted*, not measured);
4. whether the configured distributed backend initialises (a 1-process group through a FileStore,
   one all-reduce, torn down);
5. for every ``_target_`` of the config: the module's import, its file's sha256, its distribution;
6. every installed distribution (``requirements.lock``, pip-freeze style, from importlib.metadata).

Verdict: ``fail`` naming the requirement for what the config needs and the machine lacks (bf16 on a
device without it, a distributed backend that does not initialise, a target that does not import, an
attention call no kernel runs); ``warn`` for what is unusual (torch built for another CUDA than the
driver's, deterministic algorithms off on a GPU, fp32 matmuls in TF32). The device is injectable
(``DeviceFacts``) so a test simulates a GPU without bf16 on a CPU machine.

Modules, each one concern: ``device`` (1), ``stack`` (2), ``attention`` (3), ``distributed`` (4),
``targets`` (5), ``distributions`` (6), ``facts`` (all of them, timed), ``verdict`` (fail and warn),
``files`` (environment.json and requirements.lock, written and read), ``report_lines`` (the report's
table, the journal), ``step`` (the step: collect, judge, write), ``errors``.
"""

from pilot.environment.attention import record_attention_calls
from pilot.environment.device import DeviceFacts
from pilot.environment.distributions import Installed
from pilot.environment.errors import LockUnreadable
from pilot.environment.facts import collect
from pilot.environment.files import FACTS_FILE, LOCK_FILE, read_lock, read_requirements
from pilot.environment.report_lines import journal_lines, markdown_lines
from pilot.environment.step import STEP, environment_step
from pilot.environment.targets import config_targets, target_facts
from pilot.environment.verdict import judge

__all__ = [
    "FACTS_FILE",
    "LOCK_FILE",
    "STEP",
    "DeviceFacts",
    "Installed",
    "LockUnreadable",
    "collect",
    "config_targets",
    "environment_step",
    "journal_lines",
    "judge",
    "markdown_lines",
    "read_lock",
    "read_requirements",
    "record_attention_calls",
    "target_facts",
]
