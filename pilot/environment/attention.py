"""3. The model's scaled-dot-product-attention calls and the kernels that run them here.

The calls are recorded in one forward of a fresh model on the CPU (or the meta device) at the training
micro-batch and the longest sequence; each is then probed kernel by kernel (flash, memory-efficient,
cuDNN, math) on the run's device. On a CPU the CUDA kernels are *predicted*, not measured."""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import torch
import torch.nn.functional as F
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.overrides import TorchFunctionMode

from pilot.config.values import enum_value
from pilot.data.task import TaskData, move_to
from pilot.engine.build import build_model
from pilot.environment.device import free_bytes
from pilot.errors import error_line
from pilot.estimate.fake_kernels import RealKernelDtypes
from pilot.models.pretrained_shapes import ShapesOnlyPretrained
from pilot.rental.requirements import predict_cuda_attention
from pilot.text_table import byte_size

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
BACKENDS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "mem_efficient": SDPBackend.EFFICIENT_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "math": SDPBackend.MATH,
}
CUDA_ONLY_BACKENDS = ("mem_efficient", "cudnn")  # PyTorch has no CPU kernel for these
PROBE_ELEMENTS = 2**22  # the probe's attention matrix (heads x length x length) stays under 16 MiB in fp32


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
        with (
            device,
            ShapesOnlyPretrained(cfg.model.get("_target_")) if meta else nullcontext(),
        ):  # a factory's from_pretrained: its config
            model = build_model(cfg)
        batch, where = _shape_batch(cfg, task)
        model.train()
        autocast = (
            torch.autocast("cpu", dtype=AUTOCAST_DTYPES[precision])
            if precision in AUTOCAST_DTYPES
            else torch.autocast("cpu", enabled=False)
        )
        with autocast, recorder:
            try:
                task.forward(model, move_to(batch, device))
            except Exception:
                if not meta:
                    raise
                recorder.calls.clear()  # a model that reads values on the way: again, on fake tensors
                with _fake_on_meta(model) as mode:
                    task.forward(model, _fake_batch(batch, mode))
    if meta and precision in AUTOCAST_DTYPES:  # autocast does not touch meta tensors; on a GPU it casts SDPA's inputs
        for call in recorder.calls:
            call["dtype"] = str(AUTOCAST_DTYPES[precision]).replace("torch.", "")
    unique: dict[str, dict[str, Any]] = {}
    for call in recorder.calls:
        key = json.dumps(call, sort_keys=True, default=str)
        unique.setdefault(key, {**call, "count": 0})["count"] += 1
    return list(unique.values()), where


@contextmanager
def _fake_on_meta(model: torch.nn.Module) -> Iterator[FakeTensorMode]:
    """The meta model's tensors made fake, and the fake mode entered: the forward runs on shapes alone,
    and a model that reads values on the way (transformers asks whether a padding mask hides anything,
    ``.item()``, impossible on the meta device) sees fake tensors, for which it skips that question."""
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    for module in model.modules():
        for name, param in list(module._parameters.items()):
            if param is not None:
                module._parameters[name] = torch.nn.Parameter(mode.from_tensor(param), param.requires_grad)
        for name, buffer in list(module._buffers.items()):
            if buffer is not None:
                module._buffers[name] = mode.from_tensor(buffer)
    quiet = logging.getLogger("torch._subclasses.fake_tensor")  # a fake kernel's refusal, logged with a
    level = quiet.level  # traceback by torch: the probe says it once (attention not examined)
    quiet.setLevel(logging.CRITICAL)
    try:
        with mode, RealKernelDtypes():  # mixture-of-experts' _grouped_mm in float32, as the estimate runs it
            yield mode
    finally:
        quiet.setLevel(level)


def _fake_batch(batch: dict[str, Any], mode: FakeTensorMode) -> dict[str, Any]:
    return {k: mode.from_tensor(v.to("meta")) if torch.is_tensor(v) else v for k, v in batch.items()}


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


def _beyond_memory(cfg: DictConfig) -> str:
    """Why the attention calls are recorded on the meta device (nothing allocated), or "": one S x S float32
    matrix per row of the micro-batch at data.max_len (what eager attention materialises for each head)
    would take more than a quarter of the host's available memory (data.max_len=100000: 40 GB a row; the
    forward ran, and the host swapped until the process was killed)."""
    seq_len = OmegaConf.select(cfg, "data.max_len", default=None)
    available = free_bytes(torch.device("cpu"))
    if not seq_len or available is None:
        return ""
    needed = int(cfg.batch.micro_batch) * int(seq_len) ** 2 * 4
    if needed <= available // 4:
        return ""
    return (
        f" (on the meta device, nothing allocated: one {seq_len} x {seq_len} float32 matrix per row of the "
        f"micro-batch would take {byte_size(needed)} of the {byte_size(available)} this host has available)"
    )


def attention_facts(cfg: DictConfig, task: TaskData | None, device: torch.device) -> dict[str, Any]:
    """The model's attention calls and the kernels that run them here; ``examined: False`` with the
    reason when the model or the task could not be built for it."""
    try:
        task = task if task is not None else instantiate(cfg.data, _convert_="all")
        too_large = _beyond_memory(cfg)
        calls, where = record_attention_calls(cfg, task, meta=bool(too_large))
        where += too_large
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
