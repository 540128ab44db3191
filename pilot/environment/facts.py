"""Every fact of the step (``collect``), with the seconds each part took, and the config's requirements of
a GPU derived from them."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from pilot.closing.provenance import package_sources
from pilot.config.values import enum_value, resolve_device
from pilot.data.task import TaskData
from pilot.environment.attention import attention_facts
from pilot.environment.device import DeviceFacts
from pilot.environment.distributed import distributed_facts
from pilot.environment.distributions import ROOT_DISTRIBUTIONS, Installed, dependency_closure, installed_distributions
from pilot.environment.imports import loaded_modules
from pilot.environment.stack import numerics_facts, stack_facts
from pilot.environment.targets import config_targets, target_facts
from pilot.rental.requirements import campaign_requirements


def collect(
    cfg: DictConfig,
    device_facts: DeviceFacts | None = None,
    task: TaskData | None = None,
    device: torch.device | None = None,
) -> tuple[dict[str, Any], dict[str, Installed]]:
    """Every fact of the package docstring (pilot/environment), with the seconds each part took; and the
    distributions."""
    seconds: dict[str, float] = {}

    def timed(name: str, work):
        started = time.perf_counter()
        value = work()
        seconds[name] = round(time.perf_counter() - started, 4)
        return value

    device = device if device is not None else resolve_device(cfg)
    device_facts = device_facts if device_facts is not None else DeviceFacts.detect(device)
    facts: dict[str, Any] = timed("stack", stack_facts)
    facts["device"] = asdict(device_facts)
    facts["numerics"] = numerics_facts(device_facts)
    facts["precision"] = str(enum_value(cfg.precision.dtype))
    facts["model_dtype"] = str(OmegaConf.select(cfg, "model.dtype", default=None) or "") or None
    facts["attention"] = timed("attention", lambda: attention_facts(cfg, task, device))
    facts["distributed"] = timed("distributed", lambda: distributed_facts(cfg, device))
    installed = timed("distributions", installed_distributions)
    facts["targets"] = timed("targets", lambda: [target_facts(k, t, installed) for k, t in config_targets(cfg).items()])
    roots = list(ROOT_DISTRIBUTIONS) + [
        name
        for t in facts["targets"]
        for name in [*(d["name"] for d in t.get("distributions", [])), *t.get("imported_distributions", [])]
    ]
    facts["campaign_distributions"] = timed("closure", lambda: dependency_closure(roots, installed))
    facts["campaign_modules"] = timed("modules", lambda: loaded_modules(facts["campaign_distributions"], installed))
    facts["pilot_sources"] = timed("pilot sources", package_sources)
    facts["distributions"] = len(installed)
    facts["requirements"] = [asdict(r) for r in requirements_of(facts)]
    facts["seconds"] = seconds
    return facts, installed


def requirements_of(facts: dict[str, Any]):
    """The config's requirements of a GPU, from the precision and the attention calls recorded here."""
    attention = facts.get("attention", {})
    measured = None
    probes = attention.get("probes") or []
    if probes and all(p["device"].startswith("cuda") for p in probes):
        measured = probes[0]["selected"]
    return campaign_requirements(facts["precision"], attention.get("calls"), measured, facts.get("model_dtype"))
