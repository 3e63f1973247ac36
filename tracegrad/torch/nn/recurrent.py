"""PyTorch's recurrent layers `RNN`, `LSTM` and `GRU`: stacked, optionally bidirectional,
over padded (time-major or `batch_first`) or packed sequences.

Each layer and direction projects the inputs of all time steps in one matmul, then runs the
step of `recurrent_cells` per time step (one matmul each); an LSTM over equal batch sizes
without projection runs its steps inside one node (`LSTMSequence`), which keeps its training
step near PyTorch's fused kernel. Parameters carry PyTorch's names
(`weight_ih_l0`, `bias_hh_l1_reverse`, `weight_hr_l0`) and initialisation, so state dicts load
by name. A packed sequence runs step by step with its `batch_sizes`: the batch shrinks as
sequences end (forward direction) and grows as they start (reverse direction).
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.nn import functional as F
from tracegrad.torch.nn import init
from tracegrad.torch.nn.module import Module, Parameter
from tracegrad.torch.nn.recurrent_cells import (
    GRUCell,
    LSTMCell,
    LSTMSequence,
    RNNCell,
    RNNCellBase,
    gate_scale,
    gru_step,
    input_projection,
    lstm_step,
    rnn_step,
    scaled_t,
)
from tracegrad.torch.nn.utils.rnn import PackedSequence

__all__ = ["GRU", "LSTM", "RNN", "GRUCell", "LSTMCell", "RNNBase", "RNNCell", "RNNCellBase"]

_GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


class RNNBase(Module):
    """Parameters, checks and the layer loop shared by `RNN`, `LSTM` and `GRU`."""

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        _check_arguments(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout)
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        dtype = get_default_dtype() if dtype is None else np.dtype(dtype)
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        directions = 2 if bidirectional else 1
        self._flat_weights_names = []
        self._all_weights = []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input = input_size if layer == 0 else real_hidden * directions
                shapes = [(gate_size, layer_input), (gate_size, real_hidden)]
                names = ["weight_ih_l{}{}", "weight_hh_l{}{}"]
                if bias:
                    shapes += [(gate_size,), (gate_size,)]
                    names += ["bias_ih_l{}{}", "bias_hh_l{}{}"]
                if proj_size > 0:
                    shapes.append((proj_size, hidden_size))
                    names.append("weight_hr_l{}{}")
                suffix = "_reverse" if direction == 1 else ""
                names = [n.format(layer, suffix) for n in names]
                for name, shape in zip(names, shapes):
                    setattr(self, name, Parameter(ops.empty(shape, dtype=dtype)))
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op, as PyTorch's on CPU (it packs weights for cuDNN)."""

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    # -- checks (PyTorch's) ---------------------------------------------------------------------

    def check_input(self, input, batch_sizes) -> None:
        """PyTorch's checks of the input: dtype, dimensions (2 when packed), feature size."""
        weight = self._flat_weights[0]
        if input.dtype != weight.dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype.name}) does not match weight dtype "
                f"({weight.dtype.name}). Convert input: input.to({weight.dtype.name}), or "
                f"convert model: model.to({input.dtype.name})"
            )
        expected = 2 if batch_sizes is not None else 3
        if input.dim() != expected:
            raise RuntimeError(f"input must have {expected} dimensions, got {input.dim()}")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(
                f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                f"got {input.shape[-1]}"
            )

    def _mini_batch(self, input, batch_sizes) -> int:
        if batch_sizes is not None:
            return int(batch_sizes[0])
        return input.shape[0] if self.batch_first else input.shape[1]

    def get_expected_hidden_size(self, input, batch_sizes) -> tuple[int, int, int]:
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self._layers_x_directions(), self._mini_batch(input, batch_sizes), size)

    def _layers_x_directions(self) -> int:
        return self.num_layers * (2 if self.bidirectional else 1)

    def check_hidden_size(self, hx, expected, msg: str = "Expected hidden size {}, got {}"):
        if tuple(hx.shape) != tuple(expected):
            raise RuntimeError(msg.format(tuple(expected), list(hx.shape)))

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    # -- forward ----------------------------------------------------------------------------------

    def _zeros(self, input, batch: int, size: int):
        return ops.zeros((self._layers_x_directions(), batch, size), dtype=input.dtype)

    def _padded(self, input, h0, c0):
        """Run a padded (T, B, F) (or batch-first) input as T * B time-major rows."""
        x = ops.transpose(input, 0, 1) if self.batch_first else input
        steps, batch = x.shape[0], x.shape[1]
        rows = ops.reshape(x, (steps * batch, x.shape[2]))
        out, h_n, c_n = self._run(rows, [batch] * steps, h0, c0)
        out = ops.reshape(out, (steps, batch, out.shape[-1]))
        return (ops.transpose(out, 0, 1) if self.batch_first else out), h_n, c_n

    def _run(self, rows, batch_sizes: list[int], h0, c0):
        """All layers over time-major `rows` (N, F), N = sum(batch_sizes): returns the last
        layer's output rows (N, directions * H), h_n and c_n (None without c0)."""
        directions = 2 if self.bidirectional else 1
        h0s = ops.unbind(h0, 0)
        c0s = ops.unbind(c0, 0) if c0 is not None else None
        h_n, c_n = [], []
        x = rows
        for layer in range(self.num_layers):
            if layer > 0 and self.dropout > 0 and self.training:
                x = F.dropout(x, self.dropout, True)
            outs = []
            for direction in range(directions):
                k = layer * directions + direction
                state = [h0s[k]] if c0s is None else [h0s[k], c0s[k]]
                out, state = self._direction(x, batch_sizes, k, state, direction == 1)
                outs.append(out)
                h_n.append(state[0])
                if c0s is not None:
                    c_n.append(state[1])
            x = outs[0] if directions == 1 else ops.cat(outs, 1)
        return x, ops.stack(h_n, 0), (ops.stack(c_n, 0) if c0s is not None else None)

    def _step_function(self, x, k: int):
        """(projected input rows, step(proj, *state) -> state) of layer-direction `k`."""
        w = dict(zip(_KINDS, [None] * len(_KINDS)))
        for name in self._all_weights[k]:
            w[name.split("_l")[0]] = getattr(self, name)
        hidden = self.hidden_size
        if self.mode == "LSTM":
            scale, offset = gate_scale("ssts", hidden, x.dtype)
            bias = None if w["bias_ih"] is None else ops.add(w["bias_ih"], w["bias_hh"])
            w_hh_t = scaled_t(w["weight_hh"], scale)
            w_hr_t = None if w["weight_hr"] is None else ops.t(w["weight_hr"])

            def step(p, h, c):
                return lstm_step(p, h, c, w_hh_t, scale, offset, w_hr_t)

            return input_projection(x, w["weight_ih"], bias, scale), step
        if self.mode == "GRU":
            scale, _ = gate_scale("sst", hidden, x.dtype)
            rz_scale, rz_offset = gate_scale("ss", hidden, x.dtype)
            w_hh_t = scaled_t(w["weight_hh"], scale)
            b_hh = None if w["bias_hh"] is None else ops.mul(w["bias_hh"], scale)

            def step(p, h):
                return (gru_step(p, h, w_hh_t, b_hh, rz_scale, rz_offset),)

            return input_projection(x, w["weight_ih"], w["bias_ih"], scale), step
        nonlinearity = "tanh" if self.mode == "RNN_TANH" else "relu"
        bias = None if w["bias_ih"] is None else ops.add(w["bias_ih"], w["bias_hh"])
        w_hh_t = ops.t(w["weight_hh"])

        def step(p, h):
            return (rnn_step(p, h, w_hh_t, nonlinearity),)

        return input_projection(x, w["weight_ih"], bias, None), step

    def _direction(self, x, batch_sizes: list[int], k: int, init: list, reverse: bool):
        """One direction of one layer over the rows `x`: (output rows, final state).

        The batch of step t is its first `batch_sizes[t]` rows (sizes never increase): going
        forward, the rows that end leave the state (kept for the final state); going
        backward, the rows that start join it from the initial state."""
        steps = len(batch_sizes)
        if self.mode == "LSTM" and self.proj_size == 0 and min(batch_sizes) == batch_sizes[0]:
            return self._lstm_sequence(x, k, init, steps, reverse)
        proj, step = self._step_function(x, k)
        pieces = ops.split(proj, batch_sizes, 0) if steps > 1 else (proj,)
        current = batch_sizes[-1] if reverse else batch_sizes[0]
        state = init if current == init[0].shape[0] else [s[:current] for s in init]
        ended = []
        outs = [None] * steps
        for t in range(steps - 1, -1, -1) if reverse else range(steps):
            size = batch_sizes[t]
            if size < current:
                parts = [ops.split(s, [size, current - size], 0) for s in state]
                ended.append([p[1] for p in parts])
                state = [p[0] for p in parts]
            elif size > current:
                state = [ops.cat([s, i[current:size]], 0) for s, i in zip(state, init)]
            current = size
            state = step(pieces[t], *state)
            outs[t] = state[0]
        if ended:
            state = [ops.cat([s, *(e[j] for e in reversed(ended))], 0) for j, s in enumerate(state)]
        return (ops.cat(outs, 0) if steps > 1 else outs[0]), list(state)

    def _lstm_sequence(self, x, k: int, init: list, steps: int, reverse: bool):
        """The common LSTM case (equal batch sizes, no projection) as one node per
        layer-direction (`LSTMSequence`): the input projection and the steps in NumPy."""
        w = {name.split("_l")[0]: getattr(self, name) for name in self._all_weights[k]}
        out, h, c = LSTMSequence.apply(
            x,
            w["weight_ih"],
            w["weight_hh"],
            w.get("bias_ih"),
            w.get("bias_hh"),
            init[0],
            init[1],
            steps,
            reverse,
        )
        return out, [h, c]

    def _packed(self, input, hx):
        """(data, batch sizes as ints, hx sorted like the batch) of a packed input."""
        data, batch_sizes, sorted_indices, _ = input
        sizes = [int(b) for b in np.asarray(batch_sizes.numpy())]
        if hx is not None and sorted_indices is not None:
            hx = [_apply_permutation(h, sorted_indices) for h in hx]
        return data, sizes, hx


_KINDS = ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr")


def _apply_permutation(tensor, permutation, dim: int = 1):
    return ops.index_select(tensor, dim, permutation)


def _unbatched_hx_check(hx, is_batched: bool) -> None:
    want = 3 if is_batched else 2
    if hx is not None and hx.dim() != want:
        kind = "batched 3-D" if is_batched else "unbatched 2-D"
        raise RuntimeError(
            f"For {kind} input, hx should also be {want}-D but got {hx.dim()}-D tensor"
        )


class RNN(RNNBase):
    """Elman RNN, `h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`, act tanh or relu.

    `RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False)`; `forward(input, hx=None)` returns
    (output, h_n)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(
                f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(mode, *args, **kwargs)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        return _single_state_forward(self, "RNN", " tensor", input, hx)


class GRU(RNNBase):
    """Gated recurrent unit with PyTorch's gates (r, z, n):
    `n = tanh(x W_in^T + b_in + r * (h W_hn^T + b_hn))`, `h' = (1 - z) * n + z * h`.
    `forward(input, hx=None)` returns (output, h_n)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input, hx=None):
        return _single_state_forward(self, "GRU", "", input, hx)


def _single_state_forward(module: RNNBase, name: str, word: str, input, hx):
    """RNN's and GRU's forward (one state tensor), with PyTorch's checks in its order."""
    directions = 2 if module.bidirectional else 1
    if isinstance(input, PackedSequence):
        data, sizes, hxs = module._packed(input, None if hx is None else [hx])
        hx = module._zeros(data, sizes[0], module.hidden_size) if hxs is None else hxs[0]
        module.check_forward_args(data, hx, sizes)
        out, h_n, _ = module._run(data, sizes, hx, None)
        packed = PackedSequence(
            out, input.batch_sizes, input.sorted_indices, input.unsorted_indices
        )
        if input.unsorted_indices is not None:
            h_n = _apply_permutation(h_n, input.unsorted_indices)
        return packed, h_n
    if input.dim() not in (2, 3):
        raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{word} instead")
    is_batched = input.dim() == 3
    batch_dim = 0 if module.batch_first else 1
    _unbatched_hx_check(hx, is_batched)
    if not is_batched:
        input = ops.unsqueeze(input, batch_dim)
        if hx is not None:
            hx = ops.unsqueeze(hx, 1)
    if hx is None:
        batch = input.shape[batch_dim]
        hx = ops.zeros(
            (module.num_layers * directions, batch, module.hidden_size), dtype=input.dtype
        )
    module.check_forward_args(input, hx, None)
    out, h_n, _ = module._padded(input, hx, None)
    if not is_batched:
        return ops.squeeze(out, batch_dim), ops.squeeze(h_n, 1)
    return out, h_n


class LSTM(RNNBase):
    """Long short-term memory with PyTorch's gates (i, f, g, o) and optional projection
    (`proj_size`: h_t = W_hr (o * tanh(c_t))). `forward(input, hx=None)`, hx = (h_0, c_0),
    returns (output, (h_n, c_n))."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(self, input, batch_sizes) -> tuple[int, int, int]:
        return (self._layers_x_directions(), self._mini_batch(input, batch_sizes), self.hidden_size)

    def check_forward_args(self, input, hidden, batch_sizes) -> None:
        self.check_input(input, batch_sizes)
        self.check_hidden_size(
            hidden[0],
            self.get_expected_hidden_size(input, batch_sizes),
            "Expected hidden[0] size {}, got {}",
        )
        self.check_hidden_size(
            hidden[1],
            self.get_expected_cell_size(input, batch_sizes),
            "Expected hidden[1] size {}, got {}",
        )

    def _zero_states(self, input, batch: int):
        real = self.proj_size if self.proj_size > 0 else self.hidden_size
        return self._zeros(input, batch, real), self._zeros(input, batch, self.hidden_size)

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            data, sizes, hxs = self._packed(input, hx)
            hx = self._zero_states(data, sizes[0]) if hxs is None else tuple(hxs)
            self.check_forward_args(data, hx, sizes)
            out, h_n, c_n = self._run(data, sizes, hx[0], hx[1])
            packed = PackedSequence(
                out, input.batch_sizes, input.sorted_indices, input.unsorted_indices
            )
            if input.unsorted_indices is not None:
                h_n = _apply_permutation(h_n, input.unsorted_indices)
                c_n = _apply_permutation(c_n, input.unsorted_indices)
            return packed, (h_n, c_n)
        if input.dim() not in (2, 3):
            raise ValueError(f"LSTM: Expected input to be 2D or 3D, got {input.dim()}D instead")
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = ops.unsqueeze(input, batch_dim)
        if hx is None:
            hx = self._zero_states(input, input.shape[batch_dim])
        else:
            want = 3 if is_batched else 2
            if hx[0].dim() != want or hx[1].dim() != want:
                kind = "batched 3-D" if is_batched else "unbatched 2-D"
                raise RuntimeError(
                    f"For {kind} input, hx and cx should also be {want}-D but got "
                    f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors"
                )
            if not is_batched:
                hx = (ops.unsqueeze(hx[0], 1), ops.unsqueeze(hx[1], 1))
        self.check_forward_args(input, hx, None)
        out, h_n, c_n = self._padded(input, hx[0], hx[1])
        if not is_batched:
            return ops.squeeze(out, batch_dim), (ops.squeeze(h_n, 1), ops.squeeze(c_n, 1))
        return out, (h_n, c_n)


def _check_arguments(mode, input_size, hidden_size, num_layers, bias, batch_first, dropout):
    if (
        not isinstance(dropout, numbers.Number)
        or not 0 <= dropout <= 1
        or isinstance(dropout, bool)
    ):
        raise ValueError(
            "dropout should be a number in range [0, 1] representing the probability of an "
            "element being zeroed"
        )
    if dropout > 0 and num_layers == 1:
        warnings.warn(
            "dropout option adds dropout after all but last recurrent layer, so non-zero "
            "dropout expects num_layers greater than 1, but got dropout="
            f"{dropout} and num_layers={num_layers}",
            stacklevel=4,
        )
    if not isinstance(bias, bool):
        raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
    if not isinstance(batch_first, bool):
        raise TypeError(f"batch_first should be of type bool, got: {type(batch_first).__name__}")
    if not isinstance(input_size, int):
        raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
    if input_size <= 0:
        raise ValueError("input_size must be greater than zero")
    if not isinstance(hidden_size, int):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
