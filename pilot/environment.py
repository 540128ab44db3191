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
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib
import importlib.metadata as metadata
import json
import os
import platform
import re
import sys
import tempfile
import time
import warnings
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as PackageRequirement
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.overrides import TorchFunctionMode

from pilot.checks.result import CheckResult, Finding, summarise
from pilot.config.values import enum_value, resolve_device
from pilot.data.task import TaskData, move_to
from pilot.engine.build import build_model
from pilot.engine.distributed import resolve_backend
from pilot.errors import PilotError
from pilot.rental.requirements import (
    KNOWN_CAPABILITY,
    Requirement,
    campaign_requirements,
    catalog_capability,
    needs_text,
    parse_capability,
    predict_cuda_attention,
    supports,
)

STEP = "environment"
FACTS_FILE = "environment.json"
LOCK_FILE = "requirements.lock"
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
BACKENDS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "mem_efficient": SDPBackend.EFFICIENT_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "math": SDPBackend.MATH,
}
CUDA_ONLY_BACKENDS = ("mem_efficient", "cudnn")  # PyTorch has no CPU kernel for these
PROBE_ELEMENTS = 2**22  # the probe's attention matrix (heads x length x length) stays under 16 MiB in fp32
DIST_TIMEOUT = timedelta(seconds=30)  # a 1-process group that takes longer does not initialise
ROOT_DISTRIBUTIONS = ("torch", "pilot")  # the campaign's dependencies start here and at its targets


class LockUnreadable(PilotError, ValueError):
    """A requirements.lock or environment.json that cannot be read; the message names the file and line."""


def error_line(error: BaseException) -> str:
    """'ModuleNotFoundError: No module named x': the type and the first line of the message."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0][:300]}" if text else type(error).__name__


# --------------------------------------------------------------------------- 1. the device
@dataclass
class DeviceFacts:
    """The device the run uses: what the precision and attention requirements are judged against."""

    kind: str  # "cpu", "cuda" (NVIDIA) or "rocm" (AMD)
    name: str  # torch.cuda.get_device_name(), or the CPU
    capability: str | None = None  # "8.0" (NVIDIA compute capability) or "gfx942" (AMD); None: CPU
    memory_bytes: int | None = None  # device memory (host memory on a CPU)
    count: int = 1  # visible devices of this kind
    bf16: bool = True  # bf16 autocast runs natively (CPU: always, in software where needed)
    tf32: bool = False  # TF32 tensor cores (NVIDIA >= 8.0)
    fp8: bool = False  # fp8 matmuls (NVIDIA >= 8.9, AMD gfx942)
    simulated: bool = False  # injected (tests, a catalog GPU), not detected on this machine

    @classmethod
    def detect(cls, device: torch.device) -> DeviceFacts:
        if device.type != "cuda":
            return cls("cpu", _cpu_name(), None, _host_memory(), os.cpu_count() or 1, True, False, False)
        index = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        rocm = torch.version.hip is not None
        capability = getattr(props, "gcnArchName", "").split(":")[0] if rocm else f"{props.major}.{props.minor}"
        parsed = parse_capability(capability)
        try:  # torch's own answer, without counting emulation (torch >= 2.3)
            bf16 = torch.cuda.is_bf16_supported(including_emulation=False)
        except TypeError:
            bf16 = bool(supports(parsed, "bf16"))
        return cls(
            "rocm" if rocm else "cuda",
            props.name,
            capability,
            int(props.total_memory),
            torch.cuda.device_count(),
            bool(bf16),
            bool(supports(parsed, "tf32")),
            bool(supports(parsed, "fp8")),
        )

    @classmethod
    def from_catalog(cls, name: str, device_name: str = "", memory_gib: float | None = None) -> DeviceFacts:
        """A catalog GPU as the step would see it (``KNOWN_CAPABILITY``), to judge a config against it."""
        capability = catalog_capability(name, device_name)
        if capability is None:
            raise KeyError(f"no known compute capability for {name!r}: one of {', '.join(KNOWN_CAPABILITY)}")
        return cls(
            "rocm" if capability.vendor == "amd" else "cuda",
            device_name or name,
            KNOWN_CAPABILITY.get(name, KNOWN_CAPABILITY.get(device_name)),
            int(memory_gib * 2**30) if memory_gib else None,
            1,
            bool(supports(capability, "bf16")),
            bool(supports(capability, "tf32")),
            bool(supports(capability, "fp8")),
            simulated=True,
        )

    def describe(self) -> str:
        where = f"{self.name} ({self.kind}" + (f", {parse_capability(self.capability)}" if self.capability else "")
        return where + (", simulated)" if self.simulated else ")")


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _host_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


# --------------------------------------------------------------------------- 2. the stack
def _version_text(value: int | None, kind: str) -> str | None:
    """cuDNN's integer version as text: 8907 -> 8.9.7, 90100 -> 9.1.0."""
    if value is None:
        return None
    if kind == "cudnn":
        major, rest = (value // 10000, value % 10000) if value >= 90000 else (value // 1000, value % 1000)
        return f"{major}.{rest // 100}.{rest % 100}"
    return f"{value // 1000}.{(value % 1000) // 10}"  # CUDA driver API: 12040 -> 12.4


def _driver() -> dict[str, str | None]:
    """The NVIDIA driver's version and the CUDA version it supports (libcuda's cuDriverGetVersion)."""
    found: dict[str, str | None] = {"version": None, "cuda": None}
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
        match = re.search(r"Kernel Module\s+(?:for\s+\S+\s+)?([0-9][0-9.]+)", text)
        found["version"] = match.group(1) if match else text.splitlines()[0].strip()
    except OSError:
        pass
    try:
        number = ctypes.c_int()
        if ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(number)) == 0:
            found["cuda"] = _version_text(number.value, "cuda")
    except (OSError, AttributeError):
        pass
    return found


def stack_facts() -> dict[str, Any]:
    """Python, torch and its build, CUDA runtime and driver, cuDNN, NCCL."""
    cuda_available = torch.cuda.is_available()
    cudnn = None
    if torch.backends.cudnn.is_available():
        cudnn = _version_text(torch.backends.cudnn.version(), "cudnn")
    nccl = None
    if cuda_available and dist.is_nccl_available():
        try:
            raw = torch.cuda.nccl.version()
            nccl = ".".join(map(str, raw)) if isinstance(raw, tuple) else str(raw)
        except (RuntimeError, AttributeError):
            nccl = None
    build = (
        f"ROCm {torch.version.hip}"
        if torch.version.hip
        else (f"CUDA {torch.version.cuda}" if torch.version.cuda else "CPU only")
    )
    return {
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
            "platform": platform.platform(),
        },
        "torch": {
            "version": torch.__version__,
            "build": build,
            "cuda": torch.version.cuda,
            "hip": torch.version.hip,
            "git": getattr(torch.version, "git_version", None),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "threads": torch.get_num_threads(),
        },
        "cuda": {
            "available": cuda_available,
            "runtime": torch.version.cuda,
            "driver": _driver() if torch.version.cuda else {"version": None, "cuda": None},
            "cudnn": cudnn,
            "nccl": nccl,
            "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        },
        "gpus": [_gpu(i) for i in range(torch.cuda.device_count())] if cuda_available else [],
    }


def _gpu(index: int) -> dict[str, Any]:
    props = torch.cuda.get_device_properties(index)
    arch = getattr(props, "gcnArchName", "")
    return {
        "index": index,
        "name": props.name,
        "memory_bytes": int(props.total_memory),
        "capability": arch.split(":")[0] if torch.version.hip else f"{props.major}.{props.minor}",
        "multiprocessors": props.multi_processor_count,
    }


def numerics_facts(device: DeviceFacts) -> dict[str, Any]:
    """What the device supports and what this process has enabled (TF32, determinism)."""
    return {
        "bf16": device.bf16,
        "tf32": device.tf32,
        "fp8": device.fp8,
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "tf32_matmul": bool(torch.backends.cuda.matmul.allow_tf32),
        "tf32_cudnn": bool(torch.backends.cudnn.allow_tf32),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "tf32_override": os.environ.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"),
    }


# --------------------------------------------------------------------------- 3. attention
class _AttentionRecorder(TorchFunctionMode):
    """Records every ``scaled_dot_product_attention`` call (shapes, dtype, mask) and lets it run."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[dict[str, Any]] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention:
            self.calls.append(_describe_call(*args, **kwargs))
        return func(*args, **kwargs)


def _describe_call(
    query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False
) -> dict[str, Any]:
    mask = (
        None
        if attn_mask is None
        else {"dtype": str(attn_mask.dtype).replace("torch.", ""), "shape": list(attn_mask.shape)}
    )
    return {
        "query": list(query.shape),
        "key": list(key.shape),
        "value": list(value.shape),
        "dtype": str(query.dtype).replace("torch.", ""),
        "head_dim": int(query.shape[-1]),
        "heads": int(query.shape[-3]) if query.dim() >= 3 else 1,
        "kv_heads": int(key.shape[-3]) if key.dim() >= 3 else 1,
        "mask": mask,
        "is_causal": bool(is_causal),
        "dropout_p": float(dropout_p),
        "enable_gqa": bool(enable_gqa),
        "scale": scale,
    }


def _shape_batch(cfg: DictConfig, task: TaskData) -> tuple[dict[str, Any], str]:
    """The training micro-batch at the longest sequence the campaign sees (the task's synthetic batch
    at data.max_len), else its first training examples."""
    micro_batch = int(cfg.batch.micro_batch)
    seq_len = OmegaConf.select(cfg, "data.max_len", default=None)
    if task.synthetic_batch is not None and seq_len:
        return task.synthetic_batch(micro_batch, int(seq_len)), f"micro-batch {micro_batch} at data.max_len={seq_len}"
    items = [task.encode(example) for example in task.splits["train"][:micro_batch]]
    return task.collate(items), f"the first {len(items)} training example(s)"


def record_attention_calls(cfg: DictConfig, task: TaskData, meta: bool = False) -> tuple[list[dict[str, Any]], str]:
    """One training-mode forward of a fresh model, under the run's autocast, recording each attention
    call: on the CPU (the pilot's size: milliseconds), or on the meta device (``meta=True``: any size,
    nothing allocated, for mode=estimate; the first meta model costs ~1.5 s). The global RNG is
    restored afterwards: later steps see it untouched."""
    precision = enum_value(cfg.precision.dtype)
    device = torch.device("meta" if meta else "cpu")
    recorder = _AttentionRecorder()
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        with device:
            model = build_model(cfg)
        batch, where = _shape_batch(cfg, task)
        model.train()
        autocast = (
            torch.autocast("cpu", dtype=AUTOCAST_DTYPES[precision])
            if precision in AUTOCAST_DTYPES
            else torch.autocast("cpu", enabled=False)
        )
        with autocast, recorder:
            task.forward(model, move_to(batch, device))
    if meta and precision in AUTOCAST_DTYPES:  # autocast does not touch meta tensors; on a GPU it casts SDPA's inputs
        for call in recorder.calls:
            call["dtype"] = str(AUTOCAST_DTYPES[precision]).replace("torch.", "")
    unique: dict[str, dict[str, Any]] = {}
    for call in recorder.calls:
        key = json.dumps(call, sort_keys=True, default=str)
        unique.setdefault(key, {**call, "count": 0})["count"] += 1
    return list(unique.values()), where


def _probe_tensors(call: dict[str, Any], device: torch.device):
    """Tensors with the call's heads, head dim, dtype and mask kind, at batch 1 and a length that keeps
    the attention matrix small: what the kernels' rules look at, not the batch size."""
    dtype = getattr(torch, call["dtype"])
    heads, kv_heads, head_dim = call["heads"], call["kv_heads"], call["head_dim"]
    length = int(call["query"][-2]) if len(call["query"]) >= 2 else 1
    while heads * length * length > PROBE_ELEMENTS and length > 16:
        length //= 2
    generator = torch.Generator(device).manual_seed(0)  # its own: the global RNG stays untouched
    query, key, value = (
        torch.randn(1, n, length, head_dim, device=device, dtype=dtype, generator=generator)
        for n in (heads, kv_heads, kv_heads)
    )
    mask = None
    if call["mask"] is not None:
        mask_heads = call["mask"]["shape"][-3] if len(call["mask"]["shape"]) >= 3 else 1
        allowed = torch.ones(length, length, dtype=torch.bool, device=device).tril()
        allowed = allowed.expand(1, min(mask_heads, heads), length, length).contiguous()
        mask = (
            allowed
            if call["mask"]["dtype"] == "bool"
            else torch.zeros(allowed.shape, dtype=getattr(torch, call["mask"]["dtype"]), device=device).masked_fill(
                ~allowed, float("-inf")
            )
        )
    return query, key, value, mask


def probe_attention(call: dict[str, Any], device: torch.device) -> dict[str, Any]:
    """Which kernels run this call on ``device`` (measured by running each alone) and which one
    PyTorch selects; on a CPU the CUDA kernels are predicted from PyTorch's rules instead."""
    query, key, value, mask = _probe_tensors(call, device)
    options = dict(attn_mask=mask, dropout_p=call["dropout_p"], is_causal=call["is_causal"])
    if call["enable_gqa"]:
        options["enable_gqa"] = True
    backends: dict[str, dict[str, Any]] = {}
    for name, backend in BACKENDS.items():
        if device.type != "cuda" and name in CUDA_ONLY_BACKENDS:
            backends[name] = {"available": None, "measured": False, "reason": "CUDA kernel: not measurable on CPU"}
            continue
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                with sdpa_kernel([backend]):
                    F.scaled_dot_product_attention(query, key, value, **options)
                backends[name] = {"available": True, "measured": True, "reason": ""}
            except RuntimeError as error:
                why = [
                    str(w.message).splitlines()[0]
                    for w in caught
                    if "kernel" in str(w.message).lower() or "support" in str(w.message).lower()
                ]
                backends[name] = {
                    "available": False,
                    "measured": True,
                    "reason": "; ".join(why[:3]) or str(error).splitlines()[0][:200],
                }
    try:
        selected = SDPBackend(torch._fused_sdp_choice(query, key, value, **options)).name.lower()
    except (RuntimeError, TypeError, AttributeError, ValueError) as error:  # a private API: may change
        selected = f"not reported ({type(error).__name__})"
    if device.type == "cuda":
        return {"device": str(device), "backends": backends, "selected": _kernel_name(selected)}
    return {
        "device": str(device),
        "backends": backends,
        "selected": _kernel_name(selected),
        "cuda_predicted": predict_cuda_attention(call),
    }


def _kernel_name(selected: str) -> str:
    return {"flash_attention": "flash", "efficient_attention": "mem_efficient", "cudnn_attention": "cudnn"}.get(
        selected, selected
    )


def attention_facts(cfg: DictConfig, task: TaskData | None, device: torch.device) -> dict[str, Any]:
    """The model's attention calls and the kernels that run them here; ``examined: False`` with the
    reason when the model or the task could not be built for it."""
    try:
        task = task if task is not None else instantiate(cfg.data, _convert_="all")
        calls, where = record_attention_calls(cfg, task)
    except Exception as error:  # the model or the task does not build: reported by the targets and other steps
        return {"examined": False, "reason": error_line(error), "calls": []}
    probes = [probe_attention(call, device) for call in calls]
    return {
        "examined": True,
        "shapes_from": where,
        "calls": calls,
        "probes": probes,
        "note": (
            "CPU: the CPU kernels (flash for CPU, math) are measured; the CUDA kernels (flash, "
            "memory-efficient, cuDNN) are not measurable here: cuda_predicted applies PyTorch's rules "
            "to the recorded calls; env_check measures them on the rented GPU"
        )
        if device.type != "cuda"
        else "measured on this GPU",
    }


# --------------------------------------------------------------------------- 4. distributed
def distributed_facts(cfg: DictConfig, device: torch.device) -> dict[str, Any]:
    """Initialise the configured backend in a 1-process group (FileStore), all-reduce, tear down."""
    configured = str(enum_value(cfg.distributed.backend))
    backend = resolve_backend(configured, device)
    facts: dict[str, Any] = {
        "configured": configured,
        "backend": backend,
        "replicas": int(cfg.distributed.replicas),
        "initialises": False,
        "seconds": None,
    }
    if dist.is_initialized():  # torchrun or a SLURM task group: the group this run uses already exists
        facts.update(
            initialises=True, how=f"already initialised: {dist.get_backend()}, world size {dist.get_world_size()}"
        )
        return facts
    if backend == "nccl" and not (torch.cuda.is_available() and dist.is_nccl_available()):
        facts["error"] = (
            "no CUDA device is visible" if not torch.cuda.is_available() else "this torch is built without NCCL"
        )
        return facts
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pilot-env-") as scratch:
        try:
            store = dist.FileStore(str(Path(scratch) / "store"), 1)
            dist.init_process_group(backend, store=store, rank=0, world_size=1, timeout=DIST_TIMEOUT)
            try:
                value = torch.ones(1, device="cuda" if backend == "nccl" else "cpu")
                dist.all_reduce(value)
            finally:
                dist.destroy_process_group()
            facts.update(initialises=True, how="1-process group through a FileStore, one all-reduce, torn down")
        except Exception as error:  # RuntimeError, DistBackendError, ValueError: the backend's own words
            facts["error"] = error_line(error)
    facts["seconds"] = round(time.perf_counter() - started, 4)
    return facts


# --------------------------------------------------------------------------- 5, 6. code and distributions
@dataclass
class Installed:
    """One installed distribution, as importlib.metadata reads it."""

    name: str
    version: str
    top_level: list[str] = field(default_factory=list)
    editable: str | None = None  # the source URL of an editable install
    requires: list[str] = field(default_factory=list)


def canonical(name: str) -> str:
    """PEP 503 name: 'Hydra_Core' and 'hydra-core' are one distribution."""
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_distributions() -> dict[str, Installed]:
    """Every distribution on sys.path, first found wins (as pip freeze and the import system do)."""
    found: dict[str, Installed] = {}
    for distribution in metadata.distributions():
        meta = distribution.metadata
        name = meta["Name"]
        if not name or canonical(name) in found:
            continue
        editable = None
        direct = distribution.read_text("direct_url.json")
        if direct:
            try:
                info = json.loads(direct)
                editable = info.get("url") if info.get("dir_info", {}).get("editable") else None
            except json.JSONDecodeError:
                editable = None
        found[canonical(name)] = Installed(
            name,
            distribution.version,
            (distribution.read_text("top_level.txt") or "").split(),
            editable,
            meta.get_all("Requires-Dist") or [],
        )
    return found


def _requirement_names(requires: Iterable[str]) -> list[str]:
    """Names of the requirements that apply without extras on this platform."""
    names = []
    for line in requires:
        try:
            requirement = PackageRequirement(line)
        except InvalidRequirement:
            continue  # a malformed Requires-Dist line in someone's metadata: it names nothing installable
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            names.append(canonical(requirement.name))
    return names


def dependency_closure(roots: Iterable[str], installed: dict[str, Installed]) -> dict[str, str]:
    """The roots and everything they require, transitively: the distributions the campaign runs."""
    closure: dict[str, str] = {}
    pending = [canonical(r) for r in roots]
    while pending:
        name = pending.pop()
        if name in closure or name not in installed:
            continue
        closure[name] = installed[name].version
        pending += _requirement_names(installed[name].requires)
    return dict(sorted(closure.items()))


def _distributions_of(top: str, installed: dict[str, Installed]) -> list[str]:
    """Distributions that provide the top-level package ``top``: their top_level.txt (cheap) first,
    then importlib.metadata.packages_distributions (reads every RECORD: ~0.5 s) for the rest."""
    declared = [d.name for d in installed.values() if top in d.top_level]
    if declared:
        return declared
    return list(dict.fromkeys(metadata.packages_distributions().get(top, [])))


def _locate(target: str):
    """Import ``target`` as Hydra does: the longest importable module, then attributes; returns
    (object, the module that holds it)."""
    parts = target.split(".")
    module = importlib.import_module(parts[0])
    obj: Any = module
    for index in range(1, len(parts)):
        try:
            obj = getattr(obj, parts[index])
        except AttributeError:
            obj = importlib.import_module(".".join(parts[: index + 1]))
        if isinstance(obj, type(sys)):
            module = obj
    return obj, module


def config_targets(cfg: DictConfig) -> dict[str, Any]:
    """Every ``_target_`` of the config by its full key (``model._target_``), at any depth."""
    container = OmegaConf.to_container(cfg, resolve=False, throw_on_missing=False)
    found: dict[str, Any] = {}

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                full = f"{prefix}.{key}" if prefix else str(key)
                if key == "_target_":
                    found[full] = value
                else:
                    walk(value, full)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, f"{prefix}[{index}]")

    walk(container, "")
    return found


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def target_facts(key: str, target: Any, installed: dict[str, Installed]) -> dict[str, Any]:
    """Import one target; its module's file and sha256; the distribution and version it comes from."""
    facts: dict[str, Any] = {"key": key, "target": target, "imports": False}
    if not isinstance(target, str) or "." not in target:
        facts["error"] = "not a dotted path (module.attribute)"
        return facts
    try:
        _, module = _locate(target)
    except Exception as error:  # ImportError, AttributeError, or the module's own crash at import
        facts["error"] = error_line(error)
        facts["module"], _, attribute = target.rpartition(".")
        try:  # the module imports and lacks the name: say that, not "does not import"
            importlib.import_module(facts["module"])
            facts["error"] = f"the module imports but has no attribute '{attribute}'"
        except Exception:  # the import itself fails: the error above says why
            pass
        return facts
    facts.update(imports=True, module=module.__name__)
    path = getattr(module, "__file__", None)
    if path:
        facts.update(file=str(path), sha256=sha256_file(Path(path)))
    top = module.__name__.split(".")[0]
    if top in sys.stdlib_module_names:
        facts["distribution"] = "standard library"
        return facts
    names = _distributions_of(top, installed)
    facts["distributions"] = [
        {
            "name": n,
            "version": installed[canonical(n)].version if canonical(n) in installed else None,
            "editable": installed[canonical(n)].editable if canonical(n) in installed else None,
        }
        for n in names
    ]
    if not names:
        facts["distribution"] = "none: imported from a directory on sys.path, not an installed distribution"
    return facts


def lock_text(installed: dict[str, Installed], stack: dict[str, Any]) -> str:
    """pip-freeze style: ``name==version``, sorted; editable installs as a comment (no index has them)."""
    lines = [
        "# requirements.lock: the distributions installed when the pilot's environment step ran",
        "# (pip freeze style, read from importlib.metadata). Reinstall: pip install -r requirements.lock;",
        "# for a GPU machine after a CPU pilot, drop the torch==...+cpu line and install the same torch",
        "# release's GPU build (pip install torch==<release>); editable installs are comments: pip install -e.",
        f"# python {stack['python']['version']}; torch {stack['torch']['version']} ({stack['torch']['build']})",
    ]
    for key in sorted(installed):
        dist_ = installed[key]
        if dist_.editable:
            lines.append(f"# editable: {dist_.name}=={dist_.version} {dist_.editable}")
        else:
            lines.append(f"{dist_.name}=={dist_.version}")
    return "\n".join(lines) + "\n"


def read_lock(path: Path) -> dict[str, tuple[str, str, bool]]:
    """canonical name -> (name, version, editable) of a requirements.lock; a bad line is refused."""
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise LockUnreadable(
            f"{path} cannot be read ({type(error).__name__}: {error}). Fix: give the "
            "directory of a pilot run (it writes requirements.lock)."
        ) from None
    found: dict[str, tuple[str, str, bool]] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        editable = line.startswith("# editable:")
        if editable:
            line = line[len("# editable:") :].strip().split()[0] if line[len("# editable:") :].strip() else ""
        elif not line or line.startswith("#"):
            continue
        name, separator, version = line.partition("==")
        if not separator or not name.strip() or not version.strip():
            raise LockUnreadable(
                f"{path}, line {number}: {raw!r} is not 'name==version'. Fix: restore the "
                "file the pilot wrote, or edit that line."
            )
        found[canonical(name.strip())] = (name.strip(), version.strip(), editable)
    return found


# --------------------------------------------------------------------------- everything, and the verdict
def collect(
    cfg: DictConfig,
    device_facts: DeviceFacts | None = None,
    task: TaskData | None = None,
    device: torch.device | None = None,
) -> tuple[dict[str, Any], dict[str, Installed]]:
    """Every fact of the module docstring, with the seconds each part took; and the distributions."""
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
    facts["attention"] = timed("attention", lambda: attention_facts(cfg, task, device))
    facts["distributed"] = timed("distributed", lambda: distributed_facts(cfg, device))
    installed = timed("distributions", installed_distributions)
    facts["targets"] = timed("targets", lambda: [target_facts(k, t, installed) for k, t in config_targets(cfg).items()])
    roots = list(ROOT_DISTRIBUTIONS) + [d["name"] for t in facts["targets"] for d in t.get("distributions", [])]
    facts["campaign_distributions"] = timed("closure", lambda: dependency_closure(roots, installed))
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
    return campaign_requirements(facts["precision"], attention.get("calls"), measured)


def read_requirements(run_dir: Path) -> list[Requirement] | None:
    """The requirements the environment step recorded in ``run_dir`` (for the choice sheet); None when
    the directory holds no environment.json (mode=estimate, or a pilot from before the step)."""
    path = Path(run_dir) / FACTS_FILE
    if not path.is_file():
        return None
    try:
        recorded = json.loads(path.read_text()).get("requirements", [])
        return [Requirement(**entry) for entry in recorded]
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise LockUnreadable(
            f"{path}: its requirements cannot be read ({type(error).__name__}: {error}). "
            "Fix: restore the file the environment step wrote, or rerun the pilot."
        ) from None


def _major_minor(version: str | None) -> tuple[int, ...] | None:
    if not version:
        return None
    numbers = re.findall(r"\d+", str(version))
    return tuple(int(n) for n in numbers[:2]) if numbers else None


def judge(cfg: DictConfig, facts: dict[str, Any]) -> tuple[list[Finding], list[Finding]]:
    """(fails, warnings): what the config needs and the machine lacks; what is unusual."""
    fails: list[Finding] = []
    warns: list[Finding] = []
    device = DeviceFacts(**facts["device"])
    precision = facts["precision"]
    if precision == "bf16" and not device.bf16:
        fails.append(
            Finding(
                f"precision.dtype=bf16 needs bf16 support ({needs_text('bf16')}); {device.describe()} has none",
                detail="Fix: precision=fp16 (with its gradient scaler: a different variant to "
                "pilot) or precision=fp32, or a GPU with bf16 (A100, L4, H100, ...)",
            )
        )
    if precision == "fp8" and not device.fp8:
        fails.append(
            Finding(f"precision.dtype=fp8 needs fp8 matmuls ({needs_text('fp8')}); {device.describe()} has none")
        )
    _judge_distributed(facts["distributed"], fails, warns)
    for target in facts["targets"]:
        if not target["imports"]:
            fails.append(
                Finding(
                    f"{target['key']}={target['target']}: "
                    + (
                        f"module {target.get('module')} does not import ({target.get('error')})"
                        if "has no attribute" not in str(target.get("error"))
                        else str(target.get("error"))
                    ),
                    detail="Fix: install the package that provides it, or correct the dotted path",
                )
            )
    _judge_attention(facts["attention"], fails, warns)
    _judge_cuda(facts, device, precision, warns)
    return fails, warns


def _judge_distributed(facts: dict[str, Any], fails: list[Finding], warns: list[Finding]) -> None:
    if facts["initialises"]:
        return
    needed = facts["configured"] != "auto" or facts["replicas"] > 1
    problem = (
        f"distributed.backend={facts['configured']} ({facts['backend']}) does not initialise here: {facts.get('error')}"
    )
    fix = (
        "Fix: distributed.backend=gloo (or auto) on a CPU machine, or run on a machine with CUDA GPUs"
        if facts["backend"] == "nccl"
        else "Fix: check the network interface gloo binds (GLOO_SOCKET_IFNAME)"
    )
    (fails if needed else warns).append(
        Finding(problem, detail=fix if needed else "unused here (1 replica), but the choice sheet's DDP rows need it")
    )


def _judge_attention(facts: dict[str, Any], fails: list[Finding], warns: list[Finding]) -> None:
    if not facts.get("examined"):
        warns.append(Finding(f"the model's attention was not examined: {facts.get('reason')}"))
        return
    for call, probe in zip(facts["calls"], facts["probes"]):
        if not any(b["available"] for b in probe["backends"].values()):
            reasons = "; ".join(f"{n}: {b['reason']}" for n, b in probe["backends"].items() if b["reason"])
            fails.append(
                Finding(
                    f"no attention kernel runs the model's call (query {call['query']}, "
                    f"{call['dtype']}) on {probe['device']}: {reasons}"
                )
            )


def _judge_cuda(facts: dict[str, Any], device: DeviceFacts, precision: str, warns: list[Finding]) -> None:
    runtime, driver_cuda = facts["cuda"]["runtime"], facts["cuda"]["driver"].get("cuda")
    if runtime and driver_cuda and _major_minor(runtime) != _major_minor(driver_cuda):
        warns.append(
            Finding(
                f"torch is built for CUDA {runtime} and the driver supports CUDA {driver_cuda}",
                detail="runs while the driver's CUDA is newer (minor-version compatibility); "
                "kernels compiled for another CUDA may differ in speed and numerics",
            )
        )
    numerics = facts["numerics"]
    if device.kind in ("cuda", "rocm") and not numerics["deterministic_algorithms"]:
        warns.append(
            Finding(
                f"deterministic algorithms are off on {device.name}",
                detail="atomics in scatter/index_add and cuBLAS reductions make reruns differ in "
                "the last bits; torch.use_deterministic_algorithms(True) with "
                "CUBLAS_WORKSPACE_CONFIG=:4096:8 makes them repeatable (slower)",
            )
        )
    tf32_on = (
        numerics["tf32_matmul"]
        or numerics["float32_matmul_precision"] != "highest"
        or numerics.get("tf32_override") == "1"
    )
    if precision == "fp32" and device.tf32 and tf32_on:
        warns.append(
            Finding(
                f"fp32 matmuls run in TF32 on {device.name} (10-bit mantissa)",
                detail="results differ from fp32 at ~1e-3; torch.set_float32_matmul_precision('highest') keeps fp32",
            )
        )


def _summary(facts: dict[str, Any], seconds: float) -> str:
    stack, device, numerics = facts["torch"], DeviceFacts(**facts["device"]), facts["numerics"]
    attention = facts["attention"]
    if attention.get("examined") and attention["probes"]:
        selected = sorted({p["selected"] for p in attention["probes"]})
        kernels = f"attention: {'/'.join(selected)} on {attention['probes'][0]['device']}"
        if device.kind == "cpu" or attention["probes"][0]["device"] == "cpu":
            kernels += " (CUDA kernels not measurable on CPU)"
    else:
        kernels = "attention: " + (
            "no scaled_dot_product_attention call" if attention.get("examined") else "not examined"
        )
    dist_ = facts["distributed"]
    imported = sum(t["imports"] for t in facts["targets"])
    return (
        f"Python {facts['python']['version']}, torch {stack['version']} ({stack['build']}); "
        f"{device.describe()}; bf16 {'yes' if numerics['bf16'] else 'no'}, TF32 "
        f"{'yes' if numerics['tf32'] else 'no'}, fp8 {'yes' if numerics['fp8'] else 'no'}; {kernels}; "
        f"{dist_['backend']} {'initialises' if dist_['initialises'] else 'does not initialise'}; "
        f"{imported}/{len(facts['targets'])} target(s) import; {facts['distributions']} distributions "
        f"locked; {seconds:.2f} s"
    )


def write_files(run_dir: Path, facts: dict[str, Any], installed: dict[str, Installed]) -> dict[str, Path]:
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    paths = {"facts": run_dir / FACTS_FILE, "lock": run_dir / LOCK_FILE}
    paths["facts"].write_text(json.dumps(facts, indent=1, default=str) + "\n")
    paths["lock"].write_text(lock_text(installed, facts))
    return paths


def environment_step(
    cfg: DictConfig, run_dir: Path | None = None, device: DeviceFacts | None = None, task: TaskData | None = None
) -> CheckResult:
    """The pilot's first step. Writes environment.json and requirements.lock into ``run_dir`` (when
    given); ``device`` replaces the detected device (a simulated GPU in tests)."""
    started = time.perf_counter()
    facts, installed = collect(cfg, device, task)
    fails, warns = judge(cfg, facts)
    facts["verdict"] = "fail" if fails else ("warn" if warns else "pass")
    facts["findings"] = [str(f) for f in fails + warns]
    paths = write_files(run_dir, facts, installed) if run_dir is not None else {}
    seconds = time.perf_counter() - started
    facts["seconds"]["step"] = round(seconds, 4)
    if run_dir is not None:  # the step's own duration, included
        paths["facts"].write_text(json.dumps(facts, indent=1, default=str) + "\n")
    result = summarise(
        STEP,
        fails,
        _summary(facts, seconds),
        {"seconds": facts["seconds"], "files": {k: str(v) for k, v in paths.items()}, "table": markdown_lines(facts)},
        warns,
    )
    return result


# --------------------------------------------------------------------------- report and journal
def markdown_lines(facts: dict[str, Any]) -> list[str]:
    """The report's table: one row per fact."""
    stack, cuda, numerics = facts["torch"], facts["cuda"], facts["numerics"]
    device = DeviceFacts(**facts["device"])
    rows = [
        (
            "Python",
            f"{facts['python']['version']} ({facts['python']['implementation']}, {facts['python']['platform']})",
        ),
        ("torch", f"{stack['version']} ({stack['build']}; CPU capability {stack['cpu_capability']})"),
        (
            "CUDA runtime / driver",
            f"{cuda['runtime'] or '-'} / {cuda['driver'].get('version') or '-'}"
            f" (driver's CUDA {cuda['driver'].get('cuda') or '-'})",
        ),
        ("cuDNN / NCCL", f"{cuda['cudnn'] or '-'} / {cuda['nccl'] or '-'}"),
        ("device", device.describe() + (f", {device.memory_bytes / 2**30:.1f} GiB" if device.memory_bytes else "")),
        (
            "GPUs",
            "; ".join(
                f"{g['index']}: {g['name']} ({g['capability']}, {g['memory_bytes'] / 2**30:.1f} GiB)"
                for g in facts["gpus"]
            )
            or "none visible",
        ),
        ("bf16 / TF32 / fp8", " / ".join("yes" if numerics[k] else "no" for k in ("bf16", "tf32", "fp8"))),
        (
            "TF32 enabled, deterministic",
            f"matmul {numerics['tf32_matmul']} (precision "
            f"{numerics['float32_matmul_precision']}), cuDNN {numerics['tf32_cudnn']}; "
            f"deterministic algorithms {numerics['deterministic_algorithms']}",
        ),
    ]
    attention = facts["attention"]
    if not attention.get("examined"):
        rows.append(("attention", f"not examined: {attention.get('reason')}"))
    for call, probe in zip(attention.get("calls", []), attention.get("probes", [])):
        kernels = ", ".join(
            f"{n} {'yes' if b['available'] else ('no' if b['available'] is False else 'not measurable')}"
            for n, b in probe["backends"].items()
        )
        predicted = probe.get("cuda_predicted")
        guess = (
            (
                "; CUDA predicted: "
                + ", ".join(
                    f"{n} {'eligible' if p['eligible'] else 'not (' + '; '.join(p['reasons']) + ')'}"
                    for n, p in predicted.items()
                )
            )
            if predicted
            else ""
        )
        rows.append(
            (
                f"attention x{call['count']}",
                f"query {call['query']} {call['dtype']}, mask "
                f"{call['mask']['dtype'] if call['mask'] else 'none'}, causal {call['is_causal']}: "
                f"{kernels}; selected {probe['selected']} on {probe['device']}{guess}",
            )
        )
    dist_ = facts["distributed"]
    rows.append(
        (
            "distributed",
            f"{dist_['configured']} -> {dist_['backend']}: "
            + (dist_.get("how", "initialises") if dist_["initialises"] else f"fails ({dist_.get('error')})"),
        )
    )
    for target in facts["targets"]:
        where = ", ".join(
            f"{d['name']} {d['version']}" + (" editable" if d.get("editable") else "")
            for d in target.get("distributions", [])
        ) or target.get("distribution", "")
        state = (
            f"imports; sha256 {target.get('sha256', '')[:12]}; {where}"
            if target["imports"]
            else f"does not import ({target.get('error')})"
        )
        rows.append((target["key"], f"{target['target']}: {state}"))
    for requirement in facts.get("requirements", []):
        kind = "hard" if requirement["hard"] else "soft"
        rows.append(
            (
                "requires of a GPU",
                f"{requirement['feature']} ({requirement['because']}): {needs_text(requirement['feature'])}; {kind}",
            )
        )
    rows.append(
        (
            "distributions",
            f"{facts['distributions']} installed (requirements.lock); "
            f"{len(facts['campaign_distributions'])} in the campaign's dependencies",
        )
    )
    lines = ["| fact | value |", "| --- | --- |"]
    lines += [f"| {name} | {str(value).replace('|', '/')} |" for name, value in rows]
    return lines


def journal_lines(result: CheckResult) -> list[str]:
    """The pilot's stack for the campaign's journal (one entry per pilot)."""
    lines = [f"- stack ({result.verdict}): {result.reason}"]
    lines += [f"- environment {f.problem}" for f in result.findings]
    files = result.details.get("files", {})
    if files:
        lines.append(
            f"- locked in {files.get('facts')} and {files.get('lock')}; check the rented machine with "
            f"`python -m pilot.env_check {Path(files['facts']).parent}`"
        )
    return lines
