"""The GPU catalog (``rental.catalog`` in conf/rental/default.yaml) as typed entries.

Each entry is checked here rather than by a typed schema, so a user can add a
GPU on the command line (``+rental.catalog.NAME={memory_gib: 48, fp32_tflops: 90}``);
an unknown field or a bad value is a config problem naming the key and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import yaml
from omegaconf import DictConfig, OmegaConf

FIELDS = {
    "memory_gib": "GiB of device memory",
    "fp32_tflops": "dense fp32 TFLOP/s",
    "bf16_tflops": "dense bf16 TFLOP/s (null: unsupported)",
    "fp16_tflops": "dense fp16 TFLOP/s (null: unsupported)",
    "device_name": "substring of torch.cuda.get_device_name()",
    "link_gbps": "GPU-to-GPU GB/s, both directions together, as the datasheet states (null: unknown)",
    "price_per_hour": "your price per GPU-hour",
    "compute_capability": 'NVIDIA compute capability such as "8.0", or the AMD architecture such as "gfx942" '
    "(null: known from the name or device_name of the catalog's GPUs, else unknown)",
}
NUMBERS = ("memory_gib", "fp32_tflops", "bf16_tflops", "fp16_tflops", "link_gbps", "price_per_hour")
REQUIRED = ("memory_gib", "fp32_tflops")


@dataclass(frozen=True)
class Gpu:
    name: str
    memory_gib: float
    fp32_tflops: float
    bf16_tflops: float | None = None
    fp16_tflops: float | None = None
    device_name: str = ""
    link_gbps: float | None = None  # GPU-to-GPU bandwidth (NVLink, Infinity Fabric or PCIe), both directions
    price_per_hour: float | None = None
    compute_capability: str | None = None  # "8.0", "gfx942"; None: looked up by name, else unknown

    def peak_tflops(self, precision: str) -> float | None:
        return {"fp32": self.fp32_tflops, "bf16": self.bf16_tflops, "fp16": self.fp16_tflops}[precision]

    def matches(self, device_name: str) -> bool:
        return bool(self.device_name) and self.device_name.lower() in device_name.lower()


def catalog_key_outside_the_yaml(cfg: DictConfig, key: str, argument: str) -> str | None:
    """``rental.catalog.A100-80GB.price_per_hour=1.8``: a field of a GPU entry that the shipped entry does
    not set (a price is yours to give) is refused by Hydra as not a setting; ``+`` adds it (None otherwise)."""
    parts = key.split(".")
    if len(parts) != 4 or parts[:2] != ["rental", "catalog"] or parts[3] not in FIELDS:
        return None
    entry = OmegaConf.select(cfg, ".".join(parts[:3]), default=None)
    if entry is None:
        return None  # no such GPU: its own line says so
    said = f"{key}: {FIELDS[parts[3]]}, which the catalog's {parts[2]} entry does not set"
    given = yaml.safe_load(argument.partition("=")[2] or "null") if "=" in argument else None
    with_it = {**OmegaConf.to_container(entry, resolve=False), parts[3]: given}
    refused = [fix for at, _, fix in catalog_problems({parts[2]: with_it}) if at == key]
    if refused:  # the + would only meet the next refusal (a negative price)
        return f"{said}, and {argument.partition('=')[2]} {refused[0][:-1]}. Fix: a positive number, e.g. +{key}=2.5"
    return f"{said}. Fix: +{argument} (the + adds a field to the entry)"


def catalog_problems(catalog: DictConfig) -> list[tuple]:
    """(key, value, fix) for every bad catalog entry."""
    problems = []
    for name, entry in (catalog or {}).items():
        key = f"rental.catalog.{name}"
        if not isinstance(entry, (dict, DictConfig)):
            problems.append((key, entry, "must be a mapping like {memory_gib: 80, fp32_tflops: 67, bf16_tflops: 989}."))
            continue
        for field_name in entry:
            if field_name not in FIELDS:
                problems.append(
                    (f"{key}.{field_name}", entry[field_name], f"unknown field. Fix: one of {', '.join(FIELDS)}.")
                )
        for field_name in REQUIRED:
            if entry.get(field_name) is None:
                problems.append((f"{key}.{field_name}", None, f"required ({FIELDS[field_name]})."))
        for field_name in NUMBERS:
            value = entry.get(field_name)
            if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0):
                problems.append((f"{key}.{field_name}", value, f"must be a positive number ({FIELDS[field_name]})."))
        name = entry.get("device_name")
        if name is not None and not isinstance(name, str):
            problems.append((f"{key}.device_name", name, f'must be text, quoted: device_name: "{name}".'))
        capability = entry.get("compute_capability")
        if capability is not None and not _capability_text(capability):
            problems.append((f"{key}.compute_capability", capability, f"must be {FIELDS['compute_capability']}."))
    return problems


def _capability_text(value: object) -> str | None:
    """A catalog's compute capability as text ("8.0"; YAML reads 8.0 as a number), or None when it is none."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    text = str(value).strip().lower()
    major, dot, minor = text.partition(".")
    if text.startswith("gfx") and len(text) > 3 or major.isdigit() and (not dot or minor.isdigit()):
        return text
    return None


def load_catalog(rental: DictConfig) -> list[Gpu]:
    """Catalog entries in file order (the order a user reads them in)."""
    known = {f.name for f in fields(Gpu)} - {"name"}
    entries = OmegaConf.to_container(rental.catalog, resolve=True) if rental.catalog else {}
    gpus = []
    for name, entry in entries.items():
        settings = {k: v for k, v in entry.items() if k in known}
        if settings.get("compute_capability") is not None:
            settings["compute_capability"] = _capability_text(settings["compute_capability"])
        gpus.append(Gpu(name=name, **settings))
    return gpus


def find(catalog: list[Gpu], name: str) -> Gpu:
    for gpu in catalog:
        if gpu.name == name:
            return gpu
    raise KeyError(name)


def by_name(catalog: list[Gpu]) -> dict[str, Gpu]:
    return {gpu.name: gpu for gpu in catalog}
