"""`gradcheck`: PyTorch's finite-difference check of a function of tensors.

The analytic Jacobian comes from the shim's backward pass (one `autograd.grad` per output
element), the numerical one from central differences on the inputs' arrays; they must agree
to `atol + rtol * |numerical|` elementwise, as PyTorch checks.
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
    for o_index, out in enumerate(outputs):
        if not (isinstance(out, Tensor) and out.requires_grad):
            continue
        for i in wrt:
            x = inputs[i]
            analytic = np.zeros((out.numel(), x.numel()))
            for k in range(out.numel()):
                seed = np.zeros(out.numel(), out.dtype)
                seed[k] = 1
                (g,) = grad(
                    out,
                    x,
                    Tensor._wrap(seed.reshape(out.shape)),
                    retain_graph=True,
                    allow_unused=True,
                    materialize_grads=True,
                )
                analytic[k] = g.numpy().reshape(-1)
            numerical = _numerical(func, inputs, i, o_index, eps)
            if not np.allclose(analytic, numerical, rtol=rtol, atol=atol):
                message = (
                    f"Jacobian mismatch for output {o_index} with respect to input {i},\n"
                    f"numerical:{numerical}\nanalytical:{analytic}\n"
                )
                if raise_exception:
                    raise GradcheckError(message)
                return False
    return True


def _numerical(func, inputs, i, o_index, eps) -> np.ndarray:
    x = inputs[i]
    base = x.detach().numpy().astype(np.float64)
    columns = []
    with no_grad():
        for j in range(base.size):
            values = []
            for sign in (1, -1):
                moved = base.copy().reshape(-1)
                moved[j] += sign * eps
                args = list(inputs)
                args[i] = Tensor._wrap(moved.reshape(base.shape).astype(x.dtype))
                out = func(*args)
                out = out if isinstance(out, Tensor) else out[o_index]
                values.append(out.numpy().astype(np.float64).reshape(-1))
            columns.append((values[0] - values[1]) / (2 * eps))
    return np.stack(columns, axis=1) if columns else np.zeros((0, 0))


__all__ = ["GradcheckError", "gradcheck"]
