"""FLOPs of what runs under it, counted by PyTorch's own formulas (``torch.utils.flop_counter``).

Attention on CPU (``scaled_dot_product_attention``'s fused CPU kernel, which the estimate's fake mode
runs) is counted with the formulas torch gives its CUDA kernels: torch's registry lacks the CPU ones.
So are ``nn.LSTM``'s fused kernels (oneDNN's on the CPU, cuDNN's and MIOpen's): ``rnn_flops``.

``FlopCounterMode`` also attributes every operation to the modules it runs in (module hooks on
every call, a set of parents per operation): 2.3 s of the 7B estimate's 9.5 s, for a per-module
table the estimate never reads. ``FlopTotal`` keeps the same formulas and the same decomposition
of operations without a formula, and only the total. That decomposition runs other operations than
training does (``silu_backward`` as six elementwise ones, each a full-size temporary): the estimate
enters it *beneath* the memory tracker, which then sees the operation training runs, and switches it
off (``counting``) outside the micro-batch it counts.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry, sdpa_backward_flop_count, sdpa_flop_count, shape_wrapper

from pilot.estimate.rnn_flops import RNN_FORMULAS


def _raw(formula: Any) -> Any:
    """``formula`` (over shapes) taking tensors, as torch's own registry entries do (``shape_wrapper``),
    marked so that ``FlopCounterMode(custom_mapping=...)`` does not wrap it twice."""
    wrapped = shape_wrapper(formula)
    wrapped._get_raw = True
    return wrapped


@_raw
def _flash_for_cpu(query: Any, key: Any, value: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    """CPU's fused attention, as torch counts its CUDA kernels (QK^T and the weighted sum of V)."""
    return sdpa_flop_count(query, key, value)


@_raw
def _flash_for_cpu_backward(
    grad: Any, query: Any, key: Any, value: Any, *args: Any, out_shape: Any = None, **kwargs: Any
) -> int:
    return sdpa_backward_flop_count(grad, query, key, value)


# scaled_dot_product_attention on CPU (and under the fake mode on CPU) runs these, which torch's registry
# lacks: without them every attention product went uncounted (only the linear layers were); nn.LSTM's
# fused kernels too (only its model's other layers were)
FORMULAS = {
    **flop_registry,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: _flash_for_cpu,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward: _flash_for_cpu_backward,
    **{op: _raw(formula) for op, formula in RNN_FORMULAS.items()},
}


class FlopTotal(TorchDispatchMode):
    """Total FLOPs of the operations run inside it (``get_total_flops``, as ``FlopCounterMode``)."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0
        self.counting = True  # False: operations pass through uncounted and undecomposed

    def get_total_flops(self) -> int:
        return self.total

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if not self.counting:
            return func(*args, **kwargs)
        packet = func._overloadpacket
        formula = FORMULAS.get(packet)
        if formula is None and func is not torch.ops.prim.device.default:
            with self:  # an operation without a formula may decompose into some that have one
                decomposed = func.decompose(*args, **kwargs)
            if decomposed is not NotImplemented:
                return decomposed
        out = func(*args, **kwargs)
        if formula is not None:
            self.total += int(formula(*args, **kwargs, out_val=out))
        return out
