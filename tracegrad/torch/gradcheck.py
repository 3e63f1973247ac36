"""`gradcheck`: PyTorch's finite-difference check of a function of tensors.

The analytic Jacobian comes from the shim's backward pass (one `autograd.grad` per output
element), the numerical one from central differences on the inputs' arrays; they must agree
to `atol + rtol * |numerical|` elementwise, as PyTorch checks. Complex numbers as PyTorch
checks them: a complex output as its real part, then its imaginary part; a complex input's
derivatives as PyTorch's gradients, dL/dre + i dL/dim, on both sides.
"""

from __future__ import annotations

import warnings

import numpy as np

from tracegrad.torch.engine import grad
from tracegrad.torch.grad_mode import no_grad
from tracegrad.torch.tensor import Tensor


class GradcheckError(RuntimeError):
    """Raised by `gradcheck` when the analytic and numerical Jacobians disagree."""


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **unused):
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    for i in wrt:
        if inputs[i].dtype not in (np.float64, np.complex128):
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or "
                "complex. This check will likely fail if all the inputs are not of double "
                "precision floating point or complex. ",
                UserWarning,
                stacklevel=2,
            )
    outputs = func(*inputs)
    outputs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    # complex outputs are checked as their imaginary parts, then their real parts (PyTorch's
    # order); real outputs in both passes
    complex_out = any(isinstance(o, Tensor) and o.dtype.kind == "c" for o in outputs)
    for part in ("imaginary", "real") if complex_out else (None,):
        for o_index, out in enumerate(outputs):
            if not (isinstance(out, Tensor) and out.requires_grad):
                continue
            out_part = part if out.dtype.kind == "c" else None
            for i in wrt:
                analytic = _analytic(out, inputs[i], out_part)
                numerical = _numerical(func, inputs, i, o_index, eps, out_part)
                if not np.allclose(analytic, numerical, rtol=rtol, atol=atol):
                    prefix = f"While considering the {part} part of complex outputs only, "
                    message = (
                        f"{prefix if out_part else ''}Jacobian mismatch for output {o_index} "
                        f"with respect to input {i},\nnumerical:{numerical}\n"
                        f"analytical:{analytic}\n"
                    )
                    if raise_exception:
                        raise GradcheckError(message)
                    return False
    return True


def _analytic(out: Tensor, x: Tensor, part) -> np.ndarray:
    """Row k: the gradient (PyTorch's: dL/dre + i dL/dim for a complex input) of the real
    function L = out[k] (its real or imaginary part: the seed 1 or 1j)."""
    rows = np.zeros((out.numel(), x.numel()), np.complex128 if x.dtype.kind == "c" else float)
    for k in range(out.numel()):
        seed = np.zeros(out.numel(), out.dtype)
        seed[k] = 1j if part == "imaginary" else 1
        (g,) = grad(
            out,
            x,
            Tensor._wrap(seed.reshape(out.shape)),
            retain_graph=True,
            allow_unused=True,
            materialize_grads=True,
        )
        rows[k] = g.numpy().reshape(-1)
    return rows


def _numerical(func, inputs, i, o_index, eps, part) -> np.ndarray:
    """Central differences of L = out[k] (or its part): along the real axis, and for a complex
    input also the imaginary one, combined as dL/dre + i dL/dim."""
    x = inputs[i]
    complex_input = x.dtype.kind == "c"
    base = x.detach().numpy().astype(np.complex128 if complex_input else np.float64)
    columns = []
    with no_grad():
        for j in range(base.size):
            column = 0
            for step in (1, 1j) if complex_input else (1,):
                values = []
                for sign in (1, -1):
                    moved = base.copy().reshape(-1)
                    moved[j] += sign * eps * step
                    args = list(inputs)
                    args[i] = Tensor._wrap(moved.reshape(base.shape).astype(x.dtype))
                    out = func(*args)
                    out = out if isinstance(out, Tensor) else out[o_index]
                    value = out.numpy().reshape(-1)
                    if part is not None:
                        value = value.imag if part == "imaginary" else value.real
                    values.append(value.astype(np.float64))
                column = column + step * (values[0] - values[1]) / (2 * eps)
            columns.append(column)
    return np.stack(columns, axis=1) if columns else np.zeros((0, 0))


__all__ = ["GradcheckError", "gradcheck"]
