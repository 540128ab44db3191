"""Library code that reads a mask's values only to choose a kernel path, which fake tensors cannot give.

One today: ``nn.TransformerEncoder`` and ``nn.TransformerDecoder`` compare the ``mask`` a forward is
given with a causal mask (``torch.nn.modules.transformer._detect_is_causal_mask``) when the caller
does not say ``is_causal``. On fake tensors that comparison has no value, and every correct
causal model built on them was refused an estimate ("reads a tensor value"), the user's forward
blamed for PyTorch's own check. Inside ``FakeMaskPaths`` a fake mask is taken as not detected causal:
the attention runs with the mask it is given (with a key padding mask the real run does the same),
and the estimate's notes say so.
"""

from __future__ import annotations

from torch._subclasses.fake_tensor import FakeTensor
from torch.nn.modules import transformer

NOTE = (
    "nn.Transformer's causal-mask detection reads the mask's values, which fake tensors do not have: "
    "estimated with the attention given the mask as it is (is_causal not detected); pass is_causal=True "
    "with a causal mask to estimate the causal kernel path"
)


class FakeMaskPaths:
    """While entered, ``_detect_is_causal_mask`` answers "not causal" for a fake mask without an
    ``is_causal`` hint (``used`` says whether it did); real masks and given hints are PyTorch's."""

    def __init__(self) -> None:
        self.used = False
        self._original = transformer._detect_is_causal_mask

    def __enter__(self) -> FakeMaskPaths:
        transformer._detect_is_causal_mask = self._detect
        return self

    def __exit__(self, *exc) -> None:
        transformer._detect_is_causal_mask = self._original

    def _detect(self, mask=None, is_causal=None, size=None) -> bool:
        if is_causal is None and isinstance(mask, FakeTensor):
            self.used = True
            return False
        return self._original(mask, is_causal, size)

    @property
    def notes(self) -> list[str]:
        return [NOTE] if self.used else []
