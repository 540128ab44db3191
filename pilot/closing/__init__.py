"""Closing a run: export, reload in a fresh process, rerun control inputs, archive.

``close_run`` exports the artefact meant for evaluation (safetensors weights +
resolved config), records the outputs of fixed control inputs (the first
validation examples) *before* export, then starts a new Python process
(``python -m pilot.closing <export dir>``) that rebuilds the model from the
exported config, loads the weights through safetensors, reruns the control
inputs and compares: exact on CPU fp32, ``closing.rtol/atol`` otherwise.
The run directory keeps the artefact, the resolved config, the code revision
(run.json), the raw metrics and ``REPRODUCE.md``.

The exported ``config.yaml`` is a file on disk, so the reload treats it as untrusted:
before anything is built it must equal a *reference* config -- the one the parent
process writes for it (``--reference-config``), or, when a user runs the reload by hand,
the run's own ``config.yaml`` next to the export, checked against ``config_hash`` in
``run.json``. A ``_target_`` (at any depth, in lists, ``_args_``, ``_partial_`` nodes)
that is not the reference's at the same key, and not named by ``--allow-target``, is
refused, naming the key; known code-running callables (``os.*``, ``subprocess.*``,
``torch.load``, ``builtins.*`` ...) are refused even when allowed. Exit status:
0 pass, 1 fail, 2 refused.

Modules: ``export`` (weights, config, control outputs), ``blocked_targets`` (what is never instantiated),
``export_config`` (the exported config against its reference), ``reload`` (the fresh process's check),
``close`` (``close_run``, ``REPRODUCE.md``), ``provenance`` (what a plug-in run adds to it),
``cli`` (``python -m pilot.closing``).
"""

from pilot.closing.blocked_targets import CODE_RUNNING, code_running
from pilot.closing.close import close_run, write_reproduce, write_run_reproduce
from pilot.closing.export import (
    ADAPTER_EXPORT_FILES,
    CONTROL_FILE,
    EXPORT_FILES,
    control_count,
    control_outputs,
    export_with_controls,
)
from pilot.closing.export_config import ExportConfigRefused, ReloadPolicy, reference_policy, run_policy
from pilot.closing.provenance import plugin_provenance
from pilot.closing.reload import RESULT_FILE, check_in_new_process, reload_and_compare

__all__ = [
    "ADAPTER_EXPORT_FILES",
    "CODE_RUNNING",
    "CONTROL_FILE",
    "EXPORT_FILES",
    "RESULT_FILE",
    "ExportConfigRefused",
    "ReloadPolicy",
    "check_in_new_process",
    "close_run",
    "code_running",
    "control_count",
    "control_outputs",
    "export_with_controls",
    "reference_policy",
    "reload_and_compare",
    "plugin_provenance",
    "run_policy",
    "write_reproduce",
    "write_run_reproduce",
]
