"""Keys Hydra refuses as not in the config that a '+' would add where pilot reads them: said with that fix."""

from __future__ import annotations

from omegaconf import DictConfig

from pilot.models.hf_causal_lm import config_key_outside_the_yaml
from pilot.rental.catalog import catalog_key_outside_the_yaml


def key_outside_the_yaml(cfg: DictConfig, key: str, argument: str) -> str | None:
    """A transformers config key the model's YAML does not list, a GPU field the catalog's entry does not set."""
    return config_key_outside_the_yaml(cfg, key, argument) or catalog_key_outside_the_yaml(cfg, key, argument)
