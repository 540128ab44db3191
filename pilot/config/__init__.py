"""Config registration: schemas in Hydra's ConfigStore and pilot's resolvers."""

from __future__ import annotations

import hashlib
import os
import uuid

from omegaconf import OmegaConf

from pilot.config.help import config_groups
from pilot.config.schema import register_configs
from pilot.config.tokenizer import tokenizer_id, tokenizer_size


def unique(job: object = None) -> str:
    """Six hex digits: random, or for job ``job`` of a launch (``${pilot_unique:${hydra.job.num}}`` in
    hydra.sweep.subdir) drawn from the launch's id (``PILOT_SWEEP_ID``, which every job's process inherits):
    each process of a job resolves its directory anew, and a random suffix sent a SLURM job's second task,
    and the job requeued after a preemption, into directories of their own (the requeued job trained again
    from update 1, the task's directory was recapped as a failed run). Another launch: another id."""
    launch = os.environ.get("PILOT_SWEEP_ID")
    if job is None or not launch:
        return uuid.uuid4().hex[:6]
    return hashlib.sha256(f"{launch}/{job}".encode()).hexdigest()[:6]


def register() -> None:
    """Idempotent: call before Hydra composes a pilot config."""
    register_configs()
    if not OmegaConf.has_resolver("pilot_unique"):
        # a suffix for run and sweep directories, so two runs started in the same second never share (or
        # overwrite) a directory: random, or for a sweep's job one of its own (``unique``)
        OmegaConf.register_new_resolver("pilot_unique", unique, use_cache=True)
    if not OmegaConf.has_resolver("pilot.tokenizer_size"):
        # ${pilot.tokenizer_size:${data.tokenizer}}: len(tokenizer) of a local tokenizer directory
        OmegaConf.register_new_resolver("pilot.tokenizer_size", tokenizer_size, use_cache=True)
    if not OmegaConf.has_resolver("pilot.tokenizer_id"):
        # ${pilot.tokenizer_id:${data.tokenizer},pad}: the pad (bos, eos) id of that tokenizer, or None
        OmegaConf.register_new_resolver("pilot.tokenizer_id", tokenizer_id, use_cache=True)
    if not OmegaConf.has_resolver("pilot_config_groups"):
        # --help (conf/hydra/help/pilot.yaml): the groups and their options, without the schema entries
        OmegaConf.register_new_resolver("pilot_config_groups", config_groups)
