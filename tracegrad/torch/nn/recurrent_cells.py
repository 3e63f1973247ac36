"""One time step of PyTorch's RNN, LSTM and GRU, and the cell modules built on it.

The recurrent layers (`recurrent.py`) project every time step's input in one matmul and then
call these steps, so a step costs one matmul (`h @ W_hh^T`) plus elementwise work. Steps are
written to record few nodes (the shim's cost is per node): sigmoid gates arrive pre-scaled by
1/2, so ONE `tanh` over all gates gives every activation (`sigmoid(x) = (1 + tanh(x / 2)) / 2`,
which never overflows), and the gradients are the primitives' own rules.
"""

from __future__ import annotations

import math

import numpy as np

from tracegrad.torch import ops
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.engine import grad as autograd_grad
from tracegrad.torch.function import Function
from tracegrad.torch.grad_mode import enable_grad, is_grad_enabled
from tracegrad.torch.nn import init
from tracegrad.torch.nn.module import Module, Parameter
from tracegrad.torch.tensor import Tensor

# -- the gate arithmetic ------------------------------------------------------------------------


def gate_scale(kinds: str, hidden: int, dtype) -> tuple[Tensor, Tensor]:
    """(scale, offset), each (len(kinds) * hidden,), for gates of kinds 's' (sigmoid) and 't'
    (tanh) in PyTorch's order (LSTM's i, f, g, o is "ssts"; GRU's r, z, n is "sst"). With the
    pre-activations multiplied by `scale`, `tanh(a) * scale + offset` is sigmoid on the 's'
    gates and tanh on the 't' gates."""
    scale = np.repeat(np.array([0.5 if k == "s" else 1.0 for k in kinds], dtype), hidden)
    offset = np.repeat(np.array([0.5 if k == "s" else 0.0 for k in kinds], dtype), hidden)
    return Tensor(scale), Tensor(offset)


def scaled_t(weight, scale):
    """`weight.T` with its columns times `scale`: a projection whose output is pre-scaled (a
    per-forward cost on the weights instead of a per-step one on the gates)."""
    return ops.mul(ops.t(weight), scale)


def input_projection(x, w_ih, bias, scale):
    """`(x @ W_ih^T + bias) * scale` for every row of `x` at once (`bias` may be None)."""
    proj = ops.matmul(x, ops.t(w_ih) if scale is None else scaled_t(w_ih, scale))
    if bias is not None:
        proj = ops.add(proj, bias if scale is None else ops.mul(bias, scale))
    return proj


def rnn_step(x_proj, h, w_hh_t, nonlinearity: str):
    """`act(x_proj + h @ W_hh^T)`; `x_proj` holds both biases."""
    pre = ops.add(x_proj, ops.matmul(h, w_hh_t))
    return ops.tanh(pre) if nonlinearity == "tanh" else ops.relu(pre)


def lstm_step(x_proj, h, c, w_hh_t, scale, offset, w_hr_t=None):
    """One LSTM step; `x_proj` (both biases in) and `w_hh_t` are pre-scaled by
    `gate_scale("ssts")`. Returns (h, c); with a projection, h = (o * tanh(c)) @ W_hr^T."""
    gates = ops.add(x_proj, ops.matmul(h, w_hh_t))
    acts = ops.add(ops.mul(ops.tanh(gates), scale), offset)
    i, f, g, o = ops.chunk(acts, 4, 1)
    c = ops.add(ops.mul(f, c), ops.mul(i, g))
    h = ops.mul(o, ops.tanh(c))
    if w_hr_t is not None:
        h = ops.matmul(h, w_hr_t)
    return h, c


def gru_step(x_proj, h, w_hh_t, b_hh, scale, offset):
    """One GRU step, PyTorch's formulation: r and z from both projections, then
    n = tanh(x_n + r * (h W_hn^T + b_hn)), h' = n + z * (h - n). `x_proj` (with b_ih),
    `w_hh_t` and `b_hh` are pre-scaled by `gate_scale("sst")` (n's part is unscaled)."""
    h_proj = ops.matmul(h, w_hh_t)
    if b_hh is not None:
        h_proj = ops.add(h_proj, b_hh)
    x_rz, x_n = ops.split(x_proj, [2 * h.shape[-1], h.shape[-1]], 1)
    h_rz, h_n = ops.split(h_proj, [2 * h.shape[-1], h.shape[-1]], 1)
    rz = ops.add(ops.mul(ops.tanh(ops.add(x_rz, h_rz)), scale), offset)
    r, z = ops.chunk(rz, 2, 1)
    n = ops.tanh(ops.add(x_n, ops.mul(r, h_n)))
    return ops.add(n, ops.mul(z, ops.sub(h, n)))


# -- cells ----------------------------------------------------------------------------------------


class RNNCellBase(Module):
    """Shared parameters of the cells: weight_ih (chunks * hidden, input), weight_hh
    (chunks * hidden, hidden), bias_ih, bias_hh, all U(-1/sqrt(hidden), 1/sqrt(hidden))."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device=None,
        dtype=None,
    ):
        super().__init__()
        dtype = get_default_dtype() if dtype is None else np.dtype(dtype)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        rows = num_chunks * hidden_size
        self.weight_ih = Parameter(ops.empty((rows, input_size), dtype=dtype))
        self.weight_hh = Parameter(ops.empty((rows, hidden_size), dtype=dtype))
        if bias:
            self.bias_ih = Parameter(ops.empty(rows, dtype=dtype))
            self.bias_hh = Parameter(ops.empty(rows, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, input, hx):
        """(batched input, hx list or None, is_batched), with the checks of PyTorch's kernels
        (the dimensions were checked by the caller)."""
        is_batched = input.dim() == 2
        if not is_batched:
            input = ops.unsqueeze(input, 0)
        if input.shape[1] != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {input.shape[1]} expected "
                f"{self.input_size}"
            )
        if hx is None:
            return input, None, is_batched
        hx = [ops.unsqueeze(h, 0) if not is_batched else h for h in hx]
        for i, h in enumerate(hx):
            if h.shape[0] != input.shape[0]:
                raise RuntimeError(
                    f"Input batch size {input.shape[0]} doesn't match hidden{i} batch size "
                    f"{h.shape[0]}"
                )
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(
                    f"hidden{i} has inconsistent hidden_size: got {h.shape[1]}, expected "
                    f"{self.hidden_size}"
                )
        return input, hx, is_batched

    def _zeros(self, input):
        return ops.zeros((input.shape[0], self.hidden_size), dtype=input.dtype)

    def _biases(self):
        if self.bias_ih is None:
            return None
        return ops.add(self.bias_ih, self.bias_hh)


def _check_hidden_dim(name: str, what: str, hx) -> None:
    if hx is not None and hx.dim() not in (1, 2):
        raise ValueError(f"{name}: Expected {what} to be 1D or 2D, got {hx.dim()}D instead")


class RNNCell(RNNCellBase):
    """`h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)`, act tanh or relu."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device=None,
        dtype=None,
    ):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"RNNCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        _check_hidden_dim("RNNCell", "hidden", hx)
        x, hxs, is_batched = self._prepare(input, None if hx is None else [hx])
        h = self._zeros(x) if hxs is None else hxs[0]
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        proj = input_projection(x, self.weight_ih, self._biases(), None)
        out = rnn_step(proj, h, ops.t(self.weight_hh), self.nonlinearity)
        return out if is_batched else ops.squeeze(out, 0)


class LSTMCell(RNNCellBase):
    """One LSTM step with PyTorch's gates (i, f, g, o); returns (h', c')."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(
                        f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead"
                    )
        x, hxs, is_batched = self._prepare(input, None if hx is None else list(hx))
        h, c = (self._zeros(x), self._zeros(x)) if hxs is None else hxs
        scale, offset = gate_scale("ssts", self.hidden_size, x.dtype)
        proj = input_projection(x, self.weight_ih, self._biases(), scale)
        h, c = lstm_step(proj, h, c, scaled_t(self.weight_hh, scale), scale, offset)
        if not is_batched:
            return ops.squeeze(h, 0), ops.squeeze(c, 0)
        return h, c


class GRUCell(RNNCellBase):
    """One GRU step with PyTorch's gates (r, z, n); returns h'."""

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"GRUCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        _check_hidden_dim("GRUCell", "hidden", hx)
        x, hxs, is_batched = self._prepare(input, None if hx is None else [hx])
        h = self._zeros(x) if hxs is None else hxs[0]
        scale, offset = gate_scale("sst", self.hidden_size, x.dtype)
        proj = input_projection(x, self.weight_ih, self.bias_ih, scale)
        b_hh = None if self.bias_hh is None else ops.mul(self.bias_hh, scale)
        rz_scale, rz_offset = gate_scale("ss", self.hidden_size, x.dtype)
        out = gru_step(proj, h, scaled_t(self.weight_hh, scale), b_hh, rz_scale, rz_offset)
        return out if is_batched else ops.squeeze(out, 0)


# -- a whole LSTM sequence as one node ----------------------------------------------------------
#
# The shim's cost is per recorded node (tens of microseconds), and a composed LSTM records about a
# dozen per time step, so its training step is several times PyTorch's fused ATen kernel. The
# common case (equal batch sizes, no projection) therefore runs one layer-direction as ONE node:
# NumPy forward over all steps, and backpropagation through time by hand in the backward. A
# backward that must itself be differentiated (`create_graph=True`) recomputes the composed
# steps from the saved inputs and differentiates those, so higher derivatives stay exact.


def lstm_composed(x, w_ih, w_hh, b_ih, b_hh, h0, c0, steps: int, reverse: bool):
    """The LSTM over `steps` equal-size time steps of the rows `x` (steps * B, F), from the
    composed step: what `LSTMSequence` computes. Returns (outputs (steps * B, H), h_n, c_n)."""
    hidden = h0.shape[-1]
    scale, offset = gate_scale("ssts", hidden, x.dtype)
    bias = None if b_ih is None else ops.add(b_ih, b_hh)
    proj = input_projection(x, w_ih, bias, scale)
    pieces = ops.chunk(proj, steps, 0) if steps > 1 else (proj,)
    w_hh_t = scaled_t(w_hh, scale)
    h, c = h0, c0
    outs = [None] * steps
    for t in range(steps - 1, -1, -1) if reverse else range(steps):
        h, c = lstm_step(pieces[t], h, c, w_hh_t, scale, offset)
        outs[t] = h
    return (ops.cat(outs, 0) if steps > 1 else outs[0]), h, c


class LSTMSequence(Function):
    """One LSTM layer-direction over `steps` equal-size time steps as one autograd node:
    `apply(x, w_ih, w_hh, b_ih, b_hh, h0, c0, steps, reverse)` -> (outputs (steps * B, H),
    h_n, c_n) for the time-major rows `x` (steps * B, F); the biases may be None."""

    @staticmethod
    def forward(ctx, x, w_ih, w_hh, b_ih, b_hh, h0, c0, steps: int, reverse: bool):
        batch, hidden = h0.shape
        dtype = x.dtype
        # NumPy's exp is several times faster than its tanh, so every gate is a sigmoid of the
        # pre-activation negated (scale -1) or, for g, negated and doubled (scale -2):
        # sigmoid(z) = 1 / (1 + exp(-z)) and tanh(g) = 2 * sigmoid(2 g) - 1. The scale is
        # applied to the weights once, not per step.
        scale = np.full(4 * hidden, -1.0, dtype)
        scale[2 * hidden : 3 * hidden] = -2.0
        xp = x.detach().numpy() @ (w_ih.detach().numpy().T * scale)
        if b_ih is not None:
            xp += (b_ih.detach().numpy() + b_hh.detach().numpy()) * scale
        xp = xp.reshape(steps, batch, 4 * hidden)
        w = w_hh.detach().numpy()
        w_t = w.T * scale
        h, c = h0.detach().numpy(), c0.detach().numpy()
        acts = np.empty((steps, batch, 4 * hidden), dtype)
        c_prev = np.empty((steps, batch, hidden), dtype)
        tanh_c = np.empty((steps, batch, hidden), dtype)
        outs = np.empty((steps, batch, hidden), dtype)
        with np.errstate(over="ignore"):  # exp overflows to inf where the sigmoid is 0
            for t in range(steps - 1, -1, -1) if reverse else range(steps):
                c_prev[t] = c
                a = acts[t]
                np.matmul(h, w_t, out=a)
                a += xp[t]
                np.exp(a, out=a)
                a += 1
                np.reciprocal(a, out=a)
                g = a[:, 2 * hidden : 3 * hidden]
                g *= 2
                g -= 1
                c = a[:, hidden : 2 * hidden] * c
                c += a[:, :hidden] * g
                np.tanh(c, out=tanh_c[t])
                h = np.multiply(a[:, 3 * hidden :], tanh_c[t], out=outs[t])
        ctx.save_for_backward(x, w_ih, w_hh, b_ih, b_hh, h0, c0)
        ctx.arrays = (acts, c_prev, tanh_c, outs, h0.detach().numpy(), w)
        ctx.steps, ctx.reverse = steps, reverse
        return Tensor(outs.reshape(steps * batch, hidden)), Tensor(np.array(h)), Tensor(c)

    @staticmethod
    def backward(ctx, d_out, d_h, d_c):
        if is_grad_enabled():  # create_graph: differentiate the composed steps instead
            return _recomputed_backward(ctx, d_out, d_h, d_c)
        acts, c_prev, tanh_c, outs, h0, w = ctx.arrays
        steps, batch, hidden = outs.shape
        d_out = d_out.numpy().reshape(steps, batch, hidden)
        # every factor that depends on forward values only, for all steps at once
        i, f = acts[..., :hidden], acts[..., hidden : 2 * hidden]
        g, o = acts[..., 2 * hidden : 3 * hidden], acts[..., 3 * hidden :]
        dc_from_h = o * (1 - tanh_c * tanh_c)  # d c / d h through h = o * tanh(c)
        ifg = np.concatenate([g * i * (1 - i), c_prev * f * (1 - f), i * (1 - g * g)], axis=-1)
        ifg = ifg.reshape(steps, batch, 3, hidden)  # d gates_ifg / d c
        do = tanh_c * o * (1 - o)  # d gate_o / d h
        dh, dc = np.array(d_h.numpy()), np.array(d_c.numpy())
        d_gates = np.empty((steps, batch, 4, hidden), acts.dtype)  # (i, f, g, o) per row
        for t in range(steps) if ctx.reverse else range(steps - 1, -1, -1):
            dh += d_out[t]
            dc += dh * dc_from_h[t]
            d = d_gates[t]
            np.multiply(ifg[t], dc[:, None, :], out=d[:, :3])
            np.multiply(dh, do[t], out=d[:, 3])
            dc *= f[t]
            dh = d.reshape(batch, 4 * hidden) @ w
        flat = d_gates.reshape(steps * batch, 4 * hidden)
        # the state each step read: h0, then the previous step's output (in processing order)
        h_prev = np.empty_like(outs)
        if ctx.reverse:
            h_prev[-1], h_prev[:-1] = h0, outs[1:]
        else:
            h_prev[0], h_prev[1:] = h0, outs[:-1]
        d_w_hh = flat.T @ h_prev.reshape(steps * batch, hidden)
        x, w_ih, _, b_ih, _, _, _ = ctx.saved_tensors
        d_x = flat @ w_ih.detach().numpy()
        d_w_ih = flat.T @ x.detach().numpy()
        d_b = None if b_ih is None else flat.sum(0)
        grads = (d_x, d_w_ih, d_w_hh, d_b, None if d_b is None else d_b.copy(), dh, dc)
        return (
            *(g if g is None or isinstance(g, Tensor) else Tensor(g) for g in grads),
            None,
            None,
        )


def _recomputed_backward(ctx, d_out, d_h, d_c):
    """The backward as a differentiable function of the inputs (for `create_graph=True`)."""
    inputs = ctx.saved_tensors
    wanted = [x for x in inputs if x is not None and x.requires_grad]
    with enable_grad():
        outs = lstm_composed(*inputs, ctx.steps, ctx.reverse)
        grads = iter(
            autograd_grad(outs, wanted, (d_out, d_h, d_c), create_graph=True, allow_unused=True)
        )
    return (
        *(next(grads) if x is not None and x.requires_grad else None for x in inputs),
        None,
        None,
    )
