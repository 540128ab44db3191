"""FLOPs of the fused recurrent kernels, which torch's formula registry (``torch.utils.flop_counter``) lacks.

``nn.LSTM`` runs one operator for a whole layer (and direction) of a whole sequence: on the CPU oneDNN's
``mkldnn_rnn_layer``, on CUDA cuDNN's ``_cudnn_rnn`` for the whole stack (ROCm: ``miopen_rnn``). None has a
formula and none decomposes, so an LSTM counted none of its products: a CPU tagger's FLOPs were its
linear head's alone (27,648 of 4.7 million), and the choice sheet's time per update 170 times short.

Counted as torch counts a linear layer, the matrix products alone: each of ``tokens`` rows (time steps
x batch rows; a packed sequence's rows) multiplies every weight matrix of every layer and direction once,
2 FLOPs a multiply-add; for an LSTM of ``inputs`` features into ``hidden`` units that is
``2 x 4 hidden x (inputs + hidden)`` per row and layer, the gates. The backward multiplies each matrix
twice per row (the gradient of its input and of the weight), twice the forward. The gates' elementwise
work is not counted, as torch counts no elementwise operation.

CUDA without cuDNN (and ``nn.LSTMCell``) runs the products as ``linear``/``mm``, which the registry
counts, and only the gates' elementwise work in ``_thnn_fused_lstm_cell`` (and ``_gru_``): nothing to add.
"""

from __future__ import annotations

from typing import Any

import torch


def _rows(input_shape: Any, packed: bool) -> int:
    """Rows each weight matrix multiplies: a packed input's rows, else time steps x batch (either order)."""
    return input_shape[0] if packed else input_shape[0] * input_shape[1]


def _products(rows: int, weight_shapes: Any) -> int:
    """2 FLOPs per multiply-add of ``rows`` rows with every matrix among ``weight_shapes`` (biases: none)."""
    return sum(2 * rows * shape[0] * shape[1] for shape in weight_shapes if len(shape) == 2)


def _mkldnn_layer(input: Any, weight0: Any, weight1: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
    """One layer and direction on the CPU: a time-major input (``mkldnn_rnn`` transposes batch_first)."""
    return _products(_rows(input, packed=False), (weight0, weight1))


def _mkldnn_layer_backward(
    input: Any, weight0: Any, weight1: Any, *args: Any, out_shape: Any = None, **kwargs: Any
) -> int:
    """Its backward, which computes every gradient (input, states, weights): twice the forward."""
    return 2 * _products(_rows(input, packed=False), (weight0, weight1))


def _whole_stack(op: Any, backward: bool) -> Any:
    """The formula of ``op``, a whole stack on a GPU (cuDNN's or MIOpen's: every layer and direction's
    matrices in ``weight``, projections too). Its backward computes the data gradients always (the weights'
    need them) and the weights' if ``output_mask`` asks: twice the forward in training."""
    names = [argument.name for argument in op.default._schema.arguments]

    def formula(*args: Any, out_shape: Any = None, **kwargs: Any) -> int:
        named = {**dict(zip(names, args)), **kwargs}
        forward = _products(_rows(named["input"], packed=bool(named["batch_sizes"])), named["weight"])
        if not backward:
            return forward
        mask = named["output_mask"]
        return (1 + bool(mask[3])) * forward if any(mask) else 0

    return formula


aten = torch.ops.aten
RNN_FORMULAS = {  # over shapes, as torch's registry writes them (``register_flop_formula``)
    aten.mkldnn_rnn_layer: _mkldnn_layer,
    aten.mkldnn_rnn_layer_backward: _mkldnn_layer_backward,
    **{op: _whole_stack(op, backward=False) for op in (aten._cudnn_rnn, aten.miopen_rnn)},
    **{op: _whole_stack(op, backward=True) for op in (aten._cudnn_rnn_backward, aten.miopen_rnn_backward)},
}
