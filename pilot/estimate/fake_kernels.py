"""Operators whose fake (meta) kernel refuses inputs that their real kernels run, or allocates other
tensors than they do, given the outputs the real kernel allocates, so that the estimate runs the code
the training runs and counts the memory it holds.

``torch._grouped_mm``, which transformers' mixture-of-experts layers (Mixtral, Qwen2-MoE,
...) call. PyTorch's meta kernel copies the checks of the CUDA fast path (bf16 only), while the
real kernels run every float dtype: the CPU kernel, and on CUDA a loop of matrix products when the
fast path does not apply. The training a user pilots in float32 runs it, and its estimate was a
refusal. Both real kernels allocate one output of the product's shape in the output dtype (the
inputs' unless ``out_dtype`` says otherwise): that is what the estimate is given, the shape
checked by the meta kernel itself on bf16 stand-ins of the inputs.

``nn.LSTM`` on the CPU (``aten.mkldnn_rnn_layer`` and its backward), whose meta kernel runs but leaves
out the workspace the real kernel allocates and autograd keeps until the backward: see ``rnn_kernels``.

``RealKernelDtypes`` sits between the tracker and ``FakeTensorMode``: the stand-ins exist only
inside it, the tracker sees the operator's output as the real kernel allocates it.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from pilot.estimate.rnn_kernels import REAL_ALLOCATIONS

GROUPED_MM = torch.ops.aten._grouped_mm.default
FAST_PATH_DTYPE = torch.bfloat16  # the only dtype the meta kernel of _grouped_mm accepts (PyTorch 2.13)


class RealKernelDtypes(TorchDispatchMode):
    """Enter inside ``FakeTensorMode`` and before the tracker: ``torch._grouped_mm`` of other float
    dtypes than bf16 and the CPU's LSTM layer get the outputs the real kernels allocate; every other
    operator passes through."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is GROUPED_MM and _refused_by_meta(args):
            return _grouped_mm_output(args, kwargs)
        if func in REAL_ALLOCATIONS:
            return REAL_ALLOCATIONS[func](args, kwargs)
        return func(*args, **kwargs)


def _refused_by_meta(args: tuple) -> bool:
    """Float inputs other than bf16 (fp8 inputs belong to the scaled variant, left to PyTorch)."""
    mat_a, mat_b = args[0], args[1]
    return any(
        t.dtype != FAST_PATH_DTYPE and t.dtype.is_floating_point and t.dtype.itemsize > 1 for t in (mat_a, mat_b)
    )


def _grouped_mm_output(args: tuple, kwargs: dict) -> torch.Tensor:
    """The output of ``_grouped_mm(*args, **kwargs)`` as the real kernel allocates it: the shape the meta
    kernel gives bf16 stand-ins, in ``out_dtype`` or the first input's dtype."""
    named = {**dict(zip(("self", "mat2", "offs", "bias", "out_dtype"), args)), **kwargs}  # its schema's order
    mat_a, mat_b, bias = named["self"], named["mat2"], named.get("bias")
    shaped = GROUPED_MM(
        mat_a.to(FAST_PATH_DTYPE),
        mat_b.to(FAST_PATH_DTYPE),
        offs=named.get("offs"),
        bias=bias.to(FAST_PATH_DTYPE) if bias is not None else None,
    )
    return torch.empty(shaped.shape, dtype=named.get("out_dtype") or mat_a.dtype, device=mat_a.device)
