"""What the campaign's configuration requires of a GPU, and which catalog GPUs meet it.

A requirement comes from the config (``precision.dtype=bf16``) or from what the model
asks of PyTorch (its ``scaled_dot_product_attention`` calls, recorded by the
environment step). Each names the feature, the config value behind it and the
hardware that provides it:

- bf16 autocast: NVIDIA compute capability >= 8.0 (Ampere), AMD MI200/MI300 (gfx90a, gfx94x);
- fp8 matmuls (``torch._scaled_mm``): NVIDIA >= 8.9 (Ada, Hopper), AMD MI300 (gfx942);
- TF32: NVIDIA >= 8.0 (a fact, never a requirement: it changes fp32 results when enabled);
- PyTorch's flash attention kernel: NVIDIA >= 8.0, AMD gfx90a/gfx942 (aotriton);
- PyTorch's memory-efficient attention kernel: NVIDIA >= 5.0, AMD gfx90a/gfx942.

Sources: NVIDIA's compute-capability table (developer.nvidia.com/cuda-gpus), the checks
of PyTorch's ``aten/src/ATen/native/transformers/cuda/sdp_utils.cpp`` and
``torch.cuda.is_bf16_supported``, AMD's ROCm GPU specifications.

A *hard* requirement unmet means the configuration cannot run as piloted (bf16 on a
T4); a *soft* one means it runs with another kernel, so memory and time differ from the
choice sheet's (attention falls back from flash to memory-efficient).

The catalog (conf/rental/default.yaml) does not hold a compute capability yet:
``KNOWN_CAPABILITY`` gives it for the catalog's GPUs; a GPU it does not know is reported
as *unknown*, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# catalog key (or device_name) -> NVIDIA compute capability "major.minor", or the AMD gfx architecture
KNOWN_CAPABILITY: dict[str, str] = {
    "T4-16GB": "7.5",
    "V100-32GB": "7.0",
    "A10-24GB": "8.6",
    "L4-24GB": "8.9",
    "RTX4090-24GB": "8.9",
    "A100-40GB": "8.0",
    "L40S-48GB": "8.9",
    "A100-80GB": "8.0",
    "H100-PCIe-80GB": "9.0",
    "H100-80GB": "9.0",
    "H200-141GB": "9.0",
    "MI300X-192GB": "gfx942",
}
# torch.cuda.get_device_name() (a catalog entry's device_name) -> the same, for a GPU added under another key
KNOWN_DEVICE_CAPABILITY: dict[str, str] = {
    "tesla t4": "7.5",
    "v100": "7.0",
    "nvidia a10": "8.6",
    "nvidia l4": "8.9",
    "rtx 4090": "8.9",
    "a100-sxm4-40gb": "8.0",
    "l40s": "8.9",
    "a100-sxm4-80gb": "8.0",
    "h100 pcie": "9.0",
    "h100 80gb hbm3": "9.0",
    "h200": "9.0",
    "mi300x": "gfx942",
}

# feature -> (lowest NVIDIA compute capability, AMD architectures, what it is)
FEATURES: dict[str, tuple[tuple[int, int] | None, tuple[str, ...], str]] = {
    "bf16": ((8, 0), ("gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"), "bf16 autocast"),
    "fp8": ((8, 9), ("gfx940", "gfx941", "gfx942", "gfx950"), "fp8 matmuls"),
    "tf32": ((8, 0), (), "TF32 matmuls"),
    "flash_attention": ((8, 0), ("gfx90a", "gfx942"), "PyTorch's flash attention kernel"),
    "mem_efficient_attention": ((5, 0), ("gfx90a", "gfx942"), "PyTorch's memory-efficient attention kernel"),
}

# PyTorch's CUDA attention kernels, by the properties of one call (sdp_utils.cpp, torch 2.4 - 2.13)
FLASH_DTYPES = ("float16", "bfloat16")
MEM_EFFICIENT_DTYPES = ("float32", "float16", "bfloat16")
FLASH_MAX_HEAD_DIM = 256


@dataclass(frozen=True)
class Capability:
    """One GPU architecture: NVIDIA compute capability or AMD gfx name."""

    vendor: str  # "nvidia" or "amd"
    version: tuple[int, int] | None = None  # NVIDIA (major, minor)
    arch: str = ""  # AMD gfx architecture

    def __str__(self) -> str:
        return (
            f"compute capability {self.version[0]}.{self.version[1]}"
            if self.vendor == "nvidia"
            else f"architecture {self.arch}"
        )


def parse_capability(text: str | None) -> Capability | None:
    """``"8.9"`` -> NVIDIA (8, 9); ``"gfx942"`` (or ``"gfx942:sramecc+:xnack-"``) -> AMD; None stays None."""
    if text is None or str(text).strip() == "":
        return None
    text = str(text).strip()
    if text.lower().startswith("gfx"):
        return Capability("amd", arch=text.lower().split(":")[0])
    major, _, minor = text.partition(".")
    return Capability("nvidia", (int(major), int(minor or 0)))


def supports(capability: Capability | None, feature: str) -> bool | None:
    """Whether ``capability`` provides ``feature``; None when the capability is unknown."""
    if capability is None:
        return None
    lowest, amd, _ = FEATURES[feature]
    if capability.vendor == "amd":
        return capability.arch in amd
    return lowest is not None and capability.version >= lowest


def needs_text(feature: str) -> str:
    """'NVIDIA compute capability >= 8.0 or AMD MI200/MI300' for a feature."""
    lowest, amd, _ = FEATURES[feature]
    parts = [f"NVIDIA compute capability >= {lowest[0]}.{lowest[1]}"] if lowest else []
    families = [
        name
        for name, prefix in (("MI200", "gfx90a"), ("MI300", "gfx94"), ("MI350", "gfx95"))
        if any(arch.startswith(prefix) for arch in amd)
    ]
    if families:
        parts.append("AMD " + "/".join(families))
    return " or ".join(parts)


def catalog_capability(name: str, device_name: str = "", declared: str | None = None) -> Capability | None:
    """The catalog entry's capability: its own ``compute_capability`` field once the catalog has one,
    else the known table by key or device name; None when unknown."""
    if declared:
        return parse_capability(declared)
    if name in KNOWN_CAPABILITY:
        return parse_capability(KNOWN_CAPABILITY[name])
    device = str(device_name or "").strip().lower()
    return parse_capability(KNOWN_CAPABILITY.get(device_name) or KNOWN_DEVICE_CAPABILITY.get(device))


# --------------------------------------------------------------------------- attention calls
def predict_cuda_attention(call: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Which CUDA attention kernels PyTorch's rules admit for one recorded call (dtype under
    autocast, head dim, mask, dropout), without a GPU: a prediction, labelled so."""
    dtype = call.get("dtype", "float32")
    head_dim = int(call.get("head_dim") or 0)
    flash, efficient = [], []
    if dtype not in FLASH_DTYPES:
        flash.append(f"dtype {dtype} (flash runs float16/bfloat16 only)")
    if call.get("mask"):
        flash.append("an explicit attn_mask (flash takes is_causal only)")
    if head_dim > FLASH_MAX_HEAD_DIM:
        flash.append(f"head dim {head_dim} > {FLASH_MAX_HEAD_DIM}")
    if dtype not in MEM_EFFICIENT_DTYPES:
        efficient.append(f"dtype {dtype}")
    alignment = 8 if dtype in FLASH_DTYPES else 4
    if head_dim and head_dim % alignment:
        efficient.append(f"head dim {head_dim} not a multiple of {alignment}")
    return {
        "flash": {"eligible": not flash, "reasons": flash},
        "mem_efficient": {"eligible": not efficient, "reasons": efficient},
    }


# --------------------------------------------------------------------------- requirements
@dataclass(frozen=True)
class Requirement:
    feature: str  # a key of FEATURES
    because: str  # the config value or model property behind it
    hard: bool  # True: cannot run as piloted; False: runs with another kernel
    fallback: str  # what happens where it is unmet

    def describe(self) -> str:
        return f"{FEATURES[self.feature][2]} ({self.because}) needs {needs_text(self.feature)}"


def _precision_requirements(precision: str, model_dtype: str | None) -> list[Requirement]:
    """bf16 (autocast, or the parameters' own dtype) and fp8: hard requirements of the GPU's capability."""
    found: list[Requirement] = []
    if precision == "bf16":
        found.append(
            Requirement(
                "bf16",
                "precision.dtype=bf16",
                True,
                "cannot run bf16: fp16 with the gradient scaler is a different variant to pilot",
            )
        )
    elif model_dtype == "bf16":  # the parameters themselves in bf16: its matmuls need the same support
        found.append(
            Requirement(
                "bf16",
                "model.dtype=bf16",
                True,
                "cannot train bf16 parameters: model.dtype=fp32 (or fp16 with the gradient scaler) is a different variant to pilot",
            )
        )
    if precision == "fp8":
        found.append(Requirement("fp8", "precision.dtype=fp8", True, "cannot run fp8 matmuls"))
    return found


def campaign_requirements(
    precision: str,
    attention_calls: Iterable[dict[str, Any]] | None = None,
    attention_kernel: str | None = None,
    model_dtype: str | None = None,
) -> list[Requirement]:
    """What the configuration requires of a GPU.

    ``precision``: ``precision.dtype`` (fp32, bf16, fp16; fp8 once the schema has it); ``model_dtype``:
    ``model.dtype`` where the model has one (bf16 parameters need bf16 support as autocast does).
    ``attention_calls``: the model's scaled-dot-product-attention calls as the environment step
    recorded them; None when they were not examined. ``attention_kernel``: the CUDA kernel the
    pilot measured it selecting (on a GPU), which replaces the prediction.
    """
    found = _precision_requirements(precision, model_dtype)
    calls = list(attention_calls or [])
    if not calls:
        return found
    if attention_kernel in ("flash", "mem_efficient"):
        kernel = attention_kernel
        because = "the pilot measured PyTorch selecting it on its GPU for the model's attention"
    else:
        predictions = [predict_cuda_attention(call) for call in calls]
        head_dims = sorted({int(c.get("head_dim") or 0) for c in calls})
        count = sum(int(c.get("count", 1)) for c in calls)
        mask = "explicit mask" if calls[0].get("mask") else "no mask"
        shape = f"{count} attention call(s), head dim {', '.join(map(str, head_dims))}, {calls[0].get('dtype')}, {mask}"
        if all(p["flash"]["eligible"] for p in predictions):
            kernel, because = "flash", f"{shape}: flash-eligible (predicted from PyTorch's rules)"
        elif all(p["mem_efficient"]["eligible"] for p in predictions):
            kernel, because = "mem_efficient", f"{shape}: memory-efficient-eligible (predicted from PyTorch's rules)"
        else:
            return found  # only the math kernel: any GPU
    if kernel == "flash":
        found.append(
            Requirement(
                "flash_attention",
                because,
                False,
                "falls back to the memory-efficient kernel: more memory and time than the sheet's",
            )
        )
    else:
        found.append(
            Requirement(
                "mem_efficient_attention",
                because,
                False,
                "falls back to the math kernel: the attention matrix is materialised",
            )
        )
    return found


@dataclass
class GpuStatus:
    """The requirements of the campaign on one catalog GPU."""

    met: bool | None  # False: a hard requirement unmet; None: capability unknown
    text: str  # the choice sheet's cell
    unmet: list[Requirement]


def gpu_status(requirements: list[Requirement], capability: Capability | None) -> GpuStatus:
    """One choice-sheet cell: 'met (bf16: compute capability 8.0)' or 'NOT MET: bf16 ...'."""
    if not requirements:
        return GpuStatus(True, "none beyond CUDA", [])
    if capability is None:
        return GpuStatus(
            None,
            "unknown: add compute_capability to the catalog entry ("
            + "; ".join(r.describe() for r in requirements)
            + ")",
            [],
        )
    hard_unmet = [r for r in requirements if r.hard and not supports(capability, r.feature)]
    soft_unmet = [r for r in requirements if not r.hard and not supports(capability, r.feature)]
    parts = []
    for r in hard_unmet:
        parts.append(f"NOT MET: {r.describe()}; {capability}: {r.fallback}")
    for r in soft_unmet:
        parts.append(f"falls back: {r.describe()}; {capability}: {r.fallback}")
    met = [r for r in requirements if r not in hard_unmet and r not in soft_unmet]
    if met:
        parts.append(f"met ({capability}): " + ", ".join(FEATURES[r.feature][2] for r in met))
    return GpuStatus(not hard_unmet, "; ".join(parts), hard_unmet + soft_unmet)


def catalog_statuses(requirements: list[Requirement], catalog: Iterable[Any]) -> dict[str, GpuStatus]:
    """Per catalog GPU (``pilot.rental.catalog.Gpu``), its status for these requirements."""
    return {
        gpu.name: gpu_status(
            requirements,
            catalog_capability(gpu.name, getattr(gpu, "device_name", ""), getattr(gpu, "compute_capability", None)),
        )
        for gpu in catalog
    }
