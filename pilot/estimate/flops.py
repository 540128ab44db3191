"""FLOPs of what runs under it, counted by PyTorch's own formulas (``torch.utils.flop_counter``).

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
from torch.utils.flop_counter import flop_registry


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
        formula = flop_registry.get(packet)
        if formula is None and func is not torch.ops.prim.device.default:
            with self:  # an operation without a formula may decompose into some that have one
                decomposed = func.decompose(*args, **kwargs)
            if decomposed is not NotImplemented:
                return decomposed
        out = func(*args, **kwargs)
        if formula is not None:
            self.total += int(formula(*args, **kwargs, out_val=out))
        return out
