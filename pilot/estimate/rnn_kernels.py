"""``nn.LSTM`` on the CPU as the estimate's fake mode runs it: with the workspace its real kernel allocates.

On the CPU (float32, bf16 or fp16 input, not packed) ``nn.LSTM`` runs oneDNN's LSTM primitive once per
layer and direction: ``aten.mkldnn_rnn_layer``. With gradients on, the real kernel also returns a byte
tensor, the workspace: every time step's gates, hidden and cell states, and room for the backward's state
gradients. Autograd keeps it for ``mkldnn_rnn_layer_backward``, so it is held from the forward to the
backward like an activation. PyTorch's meta kernel (2.13) returns an empty one: a 64-wide tagger's
estimate missed 117 KiB of a 820 KiB peak (14% off, a correct task failed the pilot's ``estimate`` step).

Its size is oneDNN's own sum (3.x, ``src/cpu/rnn/rnn_utils``: ``set_workspace_sizes``, ``set_offsets``),
for the single-layer, single-direction primitive PyTorch builds: seven regions (gates, hidden states,
states, cell states, and the three state gradients, which oneDNN keeps in float32), each leading
dimension padded to 64 bytes (but never a multiple of 256 elements), each region starting on a 4096-byte
page, and one more page boundary for the GRU-only region, empty here. Checked byte for byte against the
real kernel in float32 and bf16 (tests/test_estimate_rnn.py).

The real backward returns the bias gradient and a copy of it (``bias_ih``'s and ``bias_hh``'s), the meta
kernel the same tensor twice: counted once by the tracker, then copied by autograd. The estimate gets two.

The kernels inside the real operators (the summed bias, the weights made contiguous, bf16's float32
copies of the gradients in the backward) are allocated in C++ below the tracker, which never sees them
on real tensors either: the estimate leaves them out as its measurement does.
"""

from __future__ import annotations

from typing import Any

import torch

RNN_LAYER = torch.ops.aten.mkldnn_rnn_layer.default
RNN_LAYER_BACKWARD = torch.ops.aten.mkldnn_rnn_layer_backward.default
PAGE = 4096  # oneDNN starts every workspace region on a page (rnn_utils: set_offsets)
LINE = 64  # bytes: oneDNN pads leading dimensions to a cache line (rnn_utils: get_good_ld)
GATES = 4  # PyTorch builds oneDNN's LSTM primitive for this operator (ideep::lstm_forward_training)
ACCUMULATOR = 4  # bytes: oneDNN keeps the state gradients in float32 whatever the input dtype


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _good_leading(elements: int, itemsize: int) -> int:
    """oneDNN's leading dimension for ``elements`` of ``itemsize`` bytes: a multiple of 64 bytes, and one
    line more where that is a multiple of 256 elements (4 KiB aliasing)."""
    padded = _round_up(elements, LINE // itemsize)
    return padded + LINE // itemsize if padded % 256 == 0 else padded


def workspace_bytes(steps: int, batch: int, inputs: int, hidden: int, itemsize: int, cell_itemsize: int) -> int:
    """Bytes of the workspace ``mkldnn_rnn_layer`` allocates in training, for ``steps`` x ``batch`` rows of
    ``inputs`` features into ``hidden`` units, states of ``itemsize`` bytes and cell states of
    ``cell_itemsize``: oneDNN's regions for one layer and one direction, each from a page boundary.
    States are kept for every step and the initial one (``steps + 1``), in two layer slots (input, output)."""
    slots = 2 * (steps + 1) * batch
    widest = max(inputs, hidden)
    regions = (
        steps * batch * _good_leading(GATES * hidden, itemsize) * itemsize,  # gates
        steps * batch * _good_leading(hidden, itemsize) * itemsize,  # hidden states
        slots * _good_leading(widest, itemsize) * itemsize,  # layer (and iteration) states
        slots * hidden * cell_itemsize,  # cell states
        slots * _good_leading(widest, ACCUMULATOR) * ACCUMULATOR,  # gradients of the layer states
        slots * _good_leading(widest, ACCUMULATOR) * ACCUMULATOR,  # gradients of the iteration states
        slots * hidden * ACCUMULATOR,  # gradients of the cell states
        0,  # GRU's (linear before reset) grid: none for an LSTM, but its page boundary counts
    )
    offset = 0
    for size in regions:
        offset = _round_up(offset, PAGE) + size
    return offset


def rnn_layer(args: tuple, kwargs: dict) -> Any:
    """``mkldnn_rnn_layer`` with the workspace the real kernel allocates (training: gradients on) where the
    meta kernel gives an empty one; its outputs otherwise as the meta kernel gives them."""
    output, hy, cy, workspace = RNN_LAYER(*args, **kwargs)
    if not torch.is_grad_enabled() or workspace is None or workspace.numel() > 0:
        return output, hy, cy, workspace
    named = {**dict(zip(("input", "w0", "w1", "w2", "w3", "hx_", "cx_"), args)), **kwargs}  # its schema's order
    source, cx = named["input"], named["cx_"]
    steps, batch, inputs = source.shape  # time-major: mkldnn_rnn transposes batch_first before the layers
    size = workspace_bytes(steps, batch, inputs, named["w1"].shape[1], source.element_size(), cx.element_size())
    return output, hy, cy, torch.empty(size, dtype=torch.uint8, device=source.device)


def rnn_layer_backward(args: tuple, kwargs: dict) -> Any:
    """``mkldnn_rnn_layer_backward`` with two bias gradients, as the real kernel returns them (the second a
    copy of the first), where the meta kernel returns one tensor twice."""
    grads = RNN_LAYER_BACKWARD(*args, **kwargs)
    if grads[3] is not None and grads[3] is grads[4]:
        grads = (*grads[:4], torch.empty_like(grads[3]), *grads[5:])
    return grads


REAL_ALLOCATIONS = {RNN_LAYER: rnn_layer, RNN_LAYER_BACKWARD: rnn_layer_backward}
