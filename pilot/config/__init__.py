"""Config registration: schemas in Hydra's ConfigStore and pilot's resolvers."""

from __future__ import annotations

import uuid

from omegaconf import OmegaConf

from pilot.config.help import config_groups
from pilot.config.schema import register_configs
from pilot.config.tokenizer import tokenizer_id, tokenizer_size


def register() -> None:
    """Idempotent: call before Hydra composes a pilot config."""
    register_configs()
    if not OmegaConf.has_resolver("pilot_unique"):
        # a random suffix for run and sweep directories, so two runs started in the
        # same second never share (or overwrite) a directory
        OmegaConf.register_new_resolver("pilot_unique", lambda: uuid.uuid4().hex[:6], use_cache=True)
    if not OmegaConf.has_resolver("pilot.tokenizer_size"):
        # ${pilot.tokenizer_size:${data.tokenizer}}: len(tokenizer) of a local tokenizer directory
        OmegaConf.register_new_resolver("pilot.tokenizer_size", tokenizer_size, use_cache=True)
    if not OmegaConf.has_resolver("pilot.tokenizer_id"):
        # ${pilot.tokenizer_id:${data.tokenizer},pad}: the pad (bos, eos) id of that tokenizer, or None
        OmegaConf.register_new_resolver("pilot.tokenizer_id", tokenizer_id, use_cache=True)
    if not OmegaConf.has_resolver("pilot_config_groups"):
        # --help (conf/hydra/help/pilot.yaml): the groups and their options, without the schema entries
        OmegaConf.register_new_resolver("pilot_config_groups", config_groups)
