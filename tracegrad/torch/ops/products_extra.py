"""More of PyTorch's top-level functions: NumPy-style aliases of the arithmetic and
comparisons (`multiply`, `divide`, `greater` ...), `positive`, the products (`kron`, `inner`,
`tensordot`, `vdot`, `ger`, `addr`, `chain_matmul`, `cross`, `trace`), distances and norms
(`cdist`, `dist`, `renorm`), `diagflat`, `vander`, and the factories `logspace` and the
deprecated `range` (which includes `end`, with PyTorch's warning).

Compositions of the shim's arithmetic, reductions and shape functions, so their derivatives
are those ops'.
"""

from __future__ import annotations

import builtins
import functools
import warnings

import numpy as np

from tracegrad.torch.creation_from_data import _check_device
from tracegrad.torch.ops.arithmetic import (
    abs,
    atan2,
    div,
    matmul,
    mm,
    mul,
    outer,
    sub,
    where,
)
from tracegrad.torch.ops.comparisons import ge, gt, le, lt, ne
from tracegrad.torch.ops.conventions import _as_tensor, _dims, _named
from tracegrad.torch.ops.creation import _factory, _float_dtype
from tracegrad.torch.ops.matrices import _fused, diag, diagonal
from tracegrad.torch.ops.reductions import amax, cumprod, norm, sum
from tracegrad.torch.ops.shapes import cat, expand, flatten, flip, permute, reshape, select, stack
from tracegrad.torch.ops.shapes_extra import broadcast_tensors

arctan2 = atan2
multiply = mul
divide = div
subtract = sub
greater, greater_equal, less, less_equal, not_equal = gt, ge, lt, le, ne


def true_divide(input, other):
    return div(input, other)


def positive(input):
    """`torch.positive`: the tensor itself (bool refused, as PyTorch's `+`)."""
    x = _as_tensor(input)
    if x.dtype == np.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return x


def ger(input, vec2):
    return outer(input, vec2)


def diagflat(input, offset=0):
    return diag(flatten(_as_tensor(input)), offset)


def vander(x, N=None, increasing=False):  # noqa: N803 - PyTorch's name
    """`torch.vander`: powers 0 .. N-1 of `x` by a running product, as PyTorch's (integers,
    and bools, as int64)."""
    x = _as_tensor(x)
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    dtype = np.result_type(x.dtype, np.int64) if x.dtype.kind in "biu" else x.dtype
    ones = _as_tensor(np.ones((x.shape[0], builtins.min(n, 1)), dtype))
    if n > 1:
        powers = cumprod(expand(reshape(x, (-1, 1)), (x.shape[0], n - 1)), 1)
        out = cat([ones, powers], 1)
    else:
        out = ones
    return out if increasing else flip(out, 1)


def trace(input):
    x = _as_tensor(input)
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
    if x.dtype == np.bool_:
        raise NotImplementedError("\"trace\" not implemented for 'bool'")
    return _named(sum(diagonal(x)), "TraceBackward0", (x,))


def kron(input, other):
    """`torch.kron`: every product of an element of `input` and one of `other`, block by
    block (the dims of the lower-dimensional one padded with ones in front)."""
    a, b = _as_tensor(input), _as_tensor(other)
    n = builtins.max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (n - a.ndim) + a.shape)
    b = reshape(b, (1,) * (n - b.ndim) + b.shape)
    a2 = reshape(a, tuple(s for d in a.shape for s in (d, 1)))
    b2 = reshape(b, tuple(s for d in b.shape for s in (1, d)))
    return reshape(mul(a2, b2), tuple(p * q for p, q in zip(a.shape, b.shape, strict=True)))


def tensordot(a, b, dims=2, out=None):
    """`torch.tensordot`: contract `dims` (the last n of `a` with the first n of `b`, or
    the two lists) by a permute, reshape and matrix product, as PyTorch's."""
    a, b = _as_tensor(a), _as_tensor(b)
    if isinstance(dims, int | np.integer) or (hasattr(dims, "ndim") and dims.ndim == 0):
        n = int(dims)
        if n < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={n}")
        if n > a.ndim or n > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={n}")
        da, db = list(builtins.range(-n, 0)), list(builtins.range(n))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    for i, j in zip(da, db, strict=True):
        if a.shape[i] != b.shape[j]:
            raise RuntimeError(
                f"contracted dimensions need to match, but first has size {a.shape[i]} in dim "
                f"{i} and second has size {b.shape[j]} in dim {j}"
            )
    da = [d % a.ndim for d in da] if a.ndim else da
    db = [d % b.ndim for d in db] if b.ndim else db
    fa = [d for d in builtins.range(a.ndim) if d not in da]
    fb = [d for d in builtins.range(b.ndim) if d not in db]
    k = int(np.prod([a.shape[d] for d in da]))
    left = reshape(permute(a, fa + da), (-1, k))
    right = reshape(permute(b, db + fb), (k, -1))
    return reshape(mm(left, right), [a.shape[d] for d in fa] + [b.shape[d] for d in fb])


def inner(input, other):
    a, b = _as_tensor(input), _as_tensor(other)
    if a.ndim == 0 or b.ndim == 0:
        return mul(a, b)
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(
            "inner() the last dimension must match on both input tensors but got shapes "
            f"{list(a.shape)} and {list(b.shape)}"
        )
    return tensordot(a, b, ([-1], [-1]))


def vdot(input, other):
    """`torch.vdot`: the dot product of two vectors, conjugating the first."""
    a, b = _as_tensor(input), _as_tensor(other)
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a.dtype != b.dtype:
        raise RuntimeError(
            "dot : expected both vectors to have same dtype, but found "
            f"{a.dtype.name} and {b.dtype.name}"
        )
    if a.shape != b.shape:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] "
            f"to have the same number of elements, but got {a.shape[0]} and {b.shape[0]} "
            "elements respectively"
        )
    if a.dtype.kind == "c":
        a = a.conj()
    return matmul(a, b)


@functools.cache
def _warn_chain_matmul() -> None:  # once per process, as PyTorch's TORCH_WARN_ONCE
    warnings.warn(
        "torch.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
        "torch.linalg.multi_dot instead, which accepts a list of two or more tensors rather "
        "than multiple parameters.",
        UserWarning,
        stacklevel=3,
    )


def chain_matmul(*matrices, out=None):
    _warn_chain_matmul()
    if len(matrices) == 1 and isinstance(matrices[0], list | tuple):
        matrices = matrices[0]
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    result = _as_tensor(matrices[0])
    if len(matrices) == 1:
        return result.clone()
    for m in matrices[1:]:
        result = mm(result, _as_tensor(m))
    return result


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """`torch.addr`: beta * input + alpha * outer(vec1, vec2)."""
    input, vec1, vec2 = _as_tensor(input), _as_tensor(vec1), _as_tensor(vec2)
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.ndim}-D")
    product = outer(vec1, vec2)
    if input.dtype != product.dtype:
        input = input._astype(np.result_type(input.dtype, product.dtype))
        product = product._astype(input.dtype)
    shape = product.shape
    return _fused(input, product, beta, alpha, shape, "AddrBackward0", (input, vec1, vec2))


def cross(input, other, dim=None):
    """`torch.cross`: the cross product along `dim` (without it, the first dim of size 3,
    with PyTorch's deprecation warning)."""
    a, b = _as_tensor(input), _as_tensor(other)
    if a.dtype != b.dtype:
        raise RuntimeError(f"expected scalar type {a.dtype.name} but found {b.dtype.name}")
    if dim is None:
        warnings.warn(
            "Using torch.cross without specifying the dim arg is deprecated.",
            UserWarning,
            stacklevel=2,
        )
        a, b = broadcast_tensors(a, b)
        dim = next((i for i, s in enumerate(a.shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    a, b = broadcast_tensors(a, b)
    (d,) = _dims(dim, a.ndim)
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise RuntimeError(
            f"linalg.cross: inputs dimension {dim} must have length 3. Got {a.shape[d]} and "
            f"{b.shape[d]}"
        )
    a0, a1, a2 = (select(a, d, i) for i in builtins.range(3))
    b0, b1, b2 = (select(b, d, i) for i in builtins.range(3))
    parts = [sub(mul(a1, b2), mul(a2, b1)), sub(mul(a2, b0), mul(a0, b2))]
    parts.append(sub(mul(a0, b1), mul(a1, b0)))
    return _named(stack(parts, d), "LinalgCrossBackward0", (a, b))


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """`torch.cdist`: the p-norm distance of every row of `x1` to every row of `x2` (batched),
    computed directly (PyTorch may use a matrix product for p = 2; the values differ in the
    last bits)."""
    x1, x2 = _as_tensor(x1), _as_tensor(x2)
    for name, x in (("X1", x1), ("X2", x2)):
        if x.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}"
        )
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    for x in (x1, x2):
        if x.dtype.kind != "f":
            raise RuntimeError(
                f"cdist only supports floating-point dtypes, {'X1' if x is x1 else 'X2'} got: "
                f"{x.dtype.name}"
            )
    diff = sub(
        reshape(x1, (*x1.shape[:-1], 1, x1.shape[-1])),
        reshape(x2, (*x2.shape[:-2], 1, *x2.shape[-2:])),
    )
    return _named(_pnorm(diff, p, -1), "CdistBackward0", (x1, x2))


def _pnorm(x, p, dim):
    if p == 0:
        return sum(ne(x, 0), dim)._astype(x.dtype)
    if p == float("inf"):
        return amax(abs(x), dim)
    return norm(x, p, dim)


def dist(input, other, p=2):
    diff = sub(_as_tensor(input), _as_tensor(other))
    if diff.dtype.kind not in "fc":
        raise RuntimeError(
            "norm(): input dtype should be either floating point or complex. Got "
            f"{diff.dtype.name} instead."
        )
    return _pnorm(reshape(diff, -1), p, 0)


def renorm(input, p, dim, maxnorm):
    """`torch.renorm`: each slice along `dim` whose p-norm exceeds `maxnorm` scaled down to
    it (by maxnorm / (norm + 1e-7), as PyTorch's)."""
    x = _as_tensor(input)
    if x.ndim < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {x.ndim} dimensions")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if x.dtype.kind not in "fc":
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
            f"{x.dtype.name}"
        )
    (d,) = _dims(dim, x.ndim)
    others = [i for i in builtins.range(x.ndim) if i != d]
    n = norm(x, p, others, keepdim=True)
    factor = where(gt(n, maxnorm), div(maxnorm, n + 1e-7), 1.0)
    return _named(mul(x, factor._astype(x.dtype)), "RenormBackward0", (x,))


def logspace(
    start, end, steps, base=10.0, *, dtype=None, layout=None, device=None, requires_grad=False
):
    """`torch.logspace`: base ** linspace(start, end, steps), computed in float64."""
    _check_device(device)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dtype = _float_dtype(dtype)
    exponents = np.linspace(start, end, steps)
    return _factory(np.power(float(base), exponents).astype(dtype), None, requires_grad)


def range(  # noqa: A001 - PyTorch's name
    start, end, step=1, *, dtype=None, layout=None, device=None, requires_grad=False
):
    """`torch.range` (deprecated): start, start + step, ... up to and including `end`."""
    warnings.warn(
        "torch.range is deprecated and will be removed in a future release because its "
        "behavior is inconsistent with Python's range builtin. Instead, use torch.arange, "
        "which produces values in [start, end).",
        UserWarning,
        stacklevel=2,
    )
    _check_device(device)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    count = int(np.floor((end - start) / step)) + 1
    dtype = _float_dtype(dtype)
    values = np.asarray(start, np.float64) + np.arange(count) * np.float64(step)
    return _factory(values.astype(dtype), None, requires_grad)


__all__ = [
    "arctan2",
    "multiply",
    "divide",
    "subtract",
    "true_divide",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "not_equal",
    "positive",
    "ger",
    "diagflat",
    "vander",
    "trace",
    "kron",
    "tensordot",
    "inner",
    "vdot",
    "chain_matmul",
    "addr",
    "cross",
    "cdist",
    "dist",
    "renorm",
    "logspace",
    "range",
]
