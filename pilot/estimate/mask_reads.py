"""Library code that reads a mask's values only to choose a kernel path, which fake tensors cannot give.

One today: ``nn.TransformerEncoder`` and ``nn.TransformerDecoder`` compare the ``mask`` a forward is
given with a causal mask (``torch.nn.modules.transformer._detect_is_causal_mask``) when the caller
does not say ``is_causal``. On fake tensors that comparison has no value, and every correct
causal model built on them was refused an estimate ("reads a tensor value"), the user's forward
blamed for PyTorch's own check. Inside ``FakeMaskPaths`` a fake mask is taken as not detected causal:
the attention runs with the mask it is given (with a key padding mask the real run does the same),
and the estimate's notes say so.

And PyTorch's attention fast path (``torch.backends.mha``): in evaluation, ``nn.TransformerEncoder`` given a
``src_key_padding_mask`` packs the batch into a nested tensor, which fake tensors cannot hold ("NestedTensorImpl
doesn't support sizes"), and a correct encoder was refused an estimate, its forward blamed. Inside
``FakeMaskPaths`` the fast path is off: evaluation is estimated on the standard path, at the padded size
(the fast path holds at most that), and the notes say so when a module asked for it.
"""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.nn.modules import transformer

NOTE = (
    "nn.Transformer's causal-mask detection reads the mask's values, which fake tensors do not have: "
    "estimated with the attention given the mask as it is (is_causal not detected); pass is_causal=True "
    "with a causal mask to estimate the causal kernel path"
)

FASTPATH_NOTE = (
    "PyTorch's attention fast path (nn.MultiheadAttention, nn.TransformerEncoder in evaluation: native kernels, "
    "a nested tensor for a padded batch) cannot run on fake tensors: estimated on the standard path, at the "
    "padded size, which the fast path does not exceed"
)


class FakeMaskPaths:
    """While entered, ``_detect_is_causal_mask`` answers "not causal" for a fake mask without an
    ``is_causal`` hint (``used`` says whether it did); real masks and given hints are PyTorch's."""

    def __init__(self) -> None:
        self.used = False
        self.fastpath_asked = False  # a module asked whether the attention fast path is on (answered: off)
        self._original = transformer._detect_is_causal_mask
        self._fastpath = torch.backends.mha.get_fastpath_enabled

    def __enter__(self) -> FakeMaskPaths:
        transformer._detect_is_causal_mask = self._detect
        torch.backends.mha.get_fastpath_enabled = self._fastpath_off
        return self

    def __exit__(self, *exc) -> None:
        transformer._detect_is_causal_mask = self._original
        torch.backends.mha.get_fastpath_enabled = self._fastpath

    def _fastpath_off(self) -> bool:
        self.fastpath_asked = True
        return False

    def _detect(self, mask=None, is_causal=None, size=None) -> bool:
        if is_causal is None and isinstance(mask, FakeTensor):
            self.used = True
            return False
        return self._original(mask, is_causal, size)

    @property
    def notes(self) -> list[str]:
        return [NOTE] * self.used + [FASTPATH_NOTE] * self.fastpath_asked
