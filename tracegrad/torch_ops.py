"""PyTorch's operators, tensor methods and top-level functions, over tracegrad's primitives.

Everything here is a composition of the same primitives the functional API uses (so the
vjp, jvp and batching rules are theirs), with PyTorch's signatures (`dim`, `keepdim`),
semantics (`repeat` tiles, `std` is unbiased, `max(dim)` returns values and indices, `relu` and
`clamp` pass the gradient at the boundary as PyTorch does) and type promotion: a dimensioned
tensor's dtype wins over a 0-d tensor's of the same kind, and Python scalars only choose the
kind (a Python float makes an integer tensor the default float dtype). `install()` attaches the
methods to `Tensor`; `tracegrad/__init__.py` re-exports the functions.
"""

from __future__ import annotations

import builtins
from collections import namedtuple

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.core import _current_trace, bind
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import reduction, shape
from tracegrad.tensor import (
    _FACTORY_FLAG,
    Tensor,
    _check_device,
    get_default_dtype,
    record,
    tensor,
)

# -- promotion ------------------------------------------------------------------------------

_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _rank(dtype) -> int:
    return _KIND_RANK[np.dtype(dtype).kind]


def _promote(a, b):
    if a is None:
        return b
    if b is None:
        return a
    ra, rb = _rank(a), _rank(b)
    if ra != rb:
        return a if ra > rb else b
    return np.promote_types(a, b)


def result_type(*operands) -> np.dtype:
    """`torch.result_type` for tensors, NumPy arrays (as tensors) and Python scalars."""
    dims = zeros = None
    scalar_rank = -1
    for x in operands:
        if isinstance(x, Tensor | np.ndarray):
            if x.ndim:
                dims = _promote(dims, x.dtype)
            else:
                zeros = _promote(zeros, x.dtype)
        elif isinstance(x, np.generic):  # NumPy scalars count as Python numbers, as in torch
            scalar_rank = builtins.max(scalar_rank, _rank(x.dtype))
        elif isinstance(x, bool):
            scalar_rank = builtins.max(scalar_rank, 0)
        elif isinstance(x, int):
            scalar_rank = builtins.max(scalar_rank, 1)
        elif isinstance(x, float):
            scalar_rank = builtins.max(scalar_rank, 2)
        elif isinstance(x, complex):
            scalar_rank = builtins.max(scalar_rank, 3)
    result = dims
    if zeros is not None and (result is None or _rank(zeros) > _rank(result)):
        result = zeros
    if scalar_rank >= 0 and (result is None or scalar_rank > _rank(result)):
        default = get_default_dtype()
        result = np.dtype(
            [np.bool_, np.int64, default, np.complex64 if default == np.float32 else np.complex128][
                scalar_rank
            ]
        )
    return np.dtype(result)


def _cast(x, dtype):
    if isinstance(x, Tensor):
        return x if x.dtype == dtype else ew.astype(x, dtype)
    if isinstance(x, np.ndarray):
        return x.astype(dtype, copy=False)
    if isinstance(x, np.generic):
        return x.item()
    return x  # Python scalars stay weak: NumPy computes in the array's dtype


_NO_PARAMS: dict = {}


def _apply(prim, *args):
    """`bind(prim, *args)` with tensors: straight to `record` when no trace is active (the
    eager path, two calls shorter); inside a trace, `bind` decides."""
    if _current_trace.get() is None:
        return record(prim, args, _NO_PARAMS)
    return bind(prim, *args)


def _binary(prim, a, b, *, floating=False):
    # fast paths: the same dtype on both sides, or a float tensor with a Python number
    if isinstance(a, Tensor):
        if isinstance(b, Tensor):
            if a.dtype == b.dtype and (not floating or a.dtype.kind in "fc"):
                return _apply(prim, a, b)
        elif type(b) in (int, float) and a.dtype.kind in "fc":
            return _apply(prim, a, b)
    elif type(a) in (int, float) and isinstance(b, Tensor) and b.dtype.kind in "fc":
        return _apply(prim, a, b)
    dtype = result_type(a, b)
    if floating and dtype.kind in "biu":
        dtype = get_default_dtype()
    return bind(prim, _cast(a, dtype), _cast(b, dtype))


def _compare(prim, a, b):
    dtype = result_type(a, b)
    return bind(prim, _cast(a, dtype), _cast(b, dtype))


def _as_tensor(x) -> Tensor:
    return x if isinstance(x, Tensor) else tensor(x)


def _named(t, name: str, inputs=None, *, pinned=False):
    """Give the node of composite result `t` PyTorch's name, and, when `inputs` are given,
    PyTorch's `next_functions` (the composite's own inputs, not its internal nodes).
    `pinned`: the node keeps its (constant) saved values after backward, as a PyTorch node
    that saves only sizes can run again."""
    if isinstance(t, Tensor) and t._grad_fn is not None:
        fn = t._grad_fn
        fn._name = name
        if inputs is not None:
            fn._shown = tuple(
                x._edge_and_fn()[1] if isinstance(x, Tensor) else (None, 0) for x in inputs
            )
        fn._pinned = pinned
    return t


# -- arithmetic -------------------------------------------------------------------------------


def add(input, other, *, alpha=1):
    if alpha != 1:
        other = mul(other, alpha)
    return _binary(ew.add_p, input, other)


_BOOL_SUB = (
    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
    "invert a mask, use the `~` or `logical_not()` operator instead."
)


def _is_bool(x) -> bool:
    return isinstance(x, Tensor | np.ndarray) and x.dtype == np.bool_


def sub(input, other, *, alpha=1):
    if _is_bool(input) and _is_bool(other):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` "
            "or `logical_xor()` operator instead."
        )
    if _is_bool(input) or _is_bool(other):
        raise RuntimeError(_BOOL_SUB)
    if alpha != 1:
        other = mul(other, alpha)
    return _binary(ew.subtract_p, input, other)


def rsub(input, other, *, alpha=1):
    return _named(sub(other, input * alpha if alpha != 1 else input), "RsubBackward1", (input,))


def mul(input, other):
    return _binary(ew.multiply_p, input, other)


def div(input, other, *, rounding_mode=None):
    if rounding_mode is None:
        return _binary(ew.divide_p, input, other, floating=True)
    if rounding_mode == "floor":
        return _binary(ew.floor_divide_p, input, other)
    if rounding_mode == "trunc":
        return trunc(_binary(ew.divide_p, input, other, floating=True))._astype(
            result_type(input, other)
        )
    raise ValueError(
        f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
        f"'{rounding_mode}'"
    )


def pow(input, exponent):  # noqa: A001 - PyTorch's name
    if not isinstance(input, Tensor):
        return _binary(ew.power_p, input, exponent)
    return _binary(ew.power_p, input, exponent)


def remainder(input, other):
    return _binary(ew.remainder_p, input, other)


def floor_divide(input, other):
    return _binary(ew.floor_divide_p, input, other)


def matmul(input, other):
    return _binary(_linalg().matmul_p, input, other)


def _linalg():
    from tracegrad.primitives import linalg

    return linalg


def mm(input, mat2):
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(
            f"mm: expected 2-D tensors, got shapes {input.shape} and {mat2.shape}; use matmul"
        )
    return matmul(input, mat2)


def bmm(input, mat2):
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError(
            f"bmm: expected 3-D tensors, got shapes {input.shape} and {mat2.shape}; use matmul"
        )
    return _named(matmul(input, mat2), "BmmBackward0")


def mv(input, vec):
    return matmul(input, vec)


def dot(input, other):
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    return matmul(input, other)


def outer(input, vec2):
    return mul(unsqueeze(input, 1), unsqueeze(vec2, 0))


def neg(input):
    return bind(ew.negative_p, input)


negative = neg


def _unary(prim, torch_name=None, *, floating=True):
    def f(input):
        x = _as_tensor(input)
        if floating and x.dtype.kind in "biu":
            x = x._astype(get_default_dtype())
        out = _apply(prim, x)
        return _named(out, torch_name) if torch_name else out

    f.__name__ = torch_name or prim.name
    return f


exp = _unary(ew.exp_p)
exp2 = _unary(ew.exp2_p)
expm1 = _unary(ew.expm1_p)
log = _unary(ew.log_p)
log2 = _unary(ew.log2_p)
log10 = _unary(ew.log10_p)
log1p = _unary(ew.log1p_p)
sin = _unary(ew.sin_p)
cos = _unary(ew.cos_p)
tan = _unary(ew.tan_p)
sinh = _unary(ew.sinh_p)
cosh = _unary(ew.cosh_p)
tanh = _unary(ew.tanh_p)
asin = arcsin = _unary(ew.arcsin_p)
acos = arccos = _unary(ew.arccos_p)
atan = arctan = _unary(ew.arctan_p)
asinh = arcsinh = _unary(ew.arcsinh_p)
acosh = arccosh = _unary(ew.arccosh_p)
atanh = arctanh = _unary(ew.arctanh_p)
sqrt = _unary(ew.sqrt_p)
reciprocal = _unary(ew.reciprocal_p)
abs = _unary(ew.absolute_p, floating=False)  # noqa: A001 - PyTorch's name
absolute = abs
sign = _unary(ew.sign_p, floating=False)
floor = _unary(ew.floor_p, floating=False)
ceil = _unary(ew.ceil_p, floating=False)
trunc = _unary(ew.trunc_p, floating=False)
_rint = _unary(ew.rint_p, floating=False)


def round(input, *, decimals=0):  # noqa: A001 - PyTorch's name (half to even)
    x = _as_tensor(input)
    if x.dtype.kind in "biu":
        return clone(x)  # integers are already round (NumPy's rint would make floats)
    if decimals:
        scale = 10.0**decimals
        return div(_rint(mul(x, scale)), scale)
    return _rint(x)


square = _unary(ew.square_p, "PowBackward0", floating=False)


def rsqrt(input):
    return _named(reciprocal(sqrt(input)), "RsqrtBackward0", (input,))


def sigmoid(input):
    x = _as_tensor(input)
    if x.dtype.kind in "biu":
        x = x._astype(get_default_dtype())
    # 1 / (1 + exp(-x)) overflows harmlessly to 0 for very negative x
    with np.errstate(over="ignore"):
        return _named(reciprocal(add(exp(neg(x)), 1.0)), "SigmoidBackward0", (x,))


def relu(input):
    x = _as_tensor(input)
    return _named(where(gt(x, 0), x, 0), "ReluBackward0", (x,))


def atan2(input, other):
    return _binary(ew.arctan2_p, input, other, floating=True)


def maximum(input, other):
    return _binary(ew.maximum_p, input, other)


def minimum(input, other):
    return _binary(ew.minimum_p, input, other)


def clamp(input, min=None, max=None):  # noqa: A002 - PyTorch's names
    """PyTorch's clamp: the gradient passes where min <= x <= max, boundaries included."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    x = _as_tensor(input)
    out = x
    if min is not None:
        out = where(lt(x, min), _cast(min, x.dtype) if isinstance(min, Tensor) else min, out)
    if max is not None:
        out = where(gt(x, max), _cast(max, x.dtype) if isinstance(max, Tensor) else max, out)
    bounds = [b for b in (min, max) if isinstance(b, Tensor)]
    return _named(out, "ClampBackward1" if not bounds else "ClampBackward0", (x, *bounds))


clip = clamp


def clamp_min(input, min):  # noqa: A002
    return clamp(input, min=min)


def clamp_max(input, max):  # noqa: A002
    return clamp(input, max=max)


def where(condition, input, other):
    dtype = result_type(input, other)
    return bind(ew.where_p, _as_tensor(condition), _cast(input, dtype), _cast(other, dtype))


def lerp(input, end, weight):
    """PyTorch's rounding: from `input` for small weights, from `end` for large ones."""
    if isinstance(weight, int | float) and builtins.abs(weight) >= 0.5:
        return sub(end, mul(sub(end, input), 1 - weight))
    return add(input, mul(weight, sub(end, input)))


def addcmul(input, tensor1, tensor2, *, value=1):
    return add(input, mul(mul(tensor1, tensor2), value) if value != 1 else mul(tensor1, tensor2))


def addcdiv(input, tensor1, tensor2, *, value=1):
    # PyTorch's order: (value * tensor1) / tensor2
    return add(input, div(mul(tensor1, value) if value != 1 else tensor1, tensor2))


def masked_fill(input, mask, value):
    return where(mask, value, input)


# -- comparisons ------------------------------------------------------------------------------


def eq(input, other):
    return _compare(ew.equal_p, input, other)


def ne(input, other):
    return _compare(ew.not_equal_p, input, other)


def lt(input, other):
    return _compare(ew.less_p, input, other)


def le(input, other):
    return _compare(ew.less_equal_p, input, other)


def gt(input, other):
    return _compare(ew.greater_p, input, other)


def ge(input, other):
    return _compare(ew.greater_equal_p, input, other)


def isnan(input):
    return bind(ew.isnan_p, input)


def isfinite(input):
    return bind(ew.isfinite_p, input)


def isinf(input):
    return bind(ew.isinf_p, input)


def logical_not(input):
    return bind(ew.logical_not_p, input)


def logical_and(input, other):
    return bind(ew.logical_and_p, input, other)


def logical_or(input, other):
    return bind(ew.logical_or_p, input, other)


def _array(x):
    return _as_tensor(x).numpy(force=True)


def equal(input, other) -> bool:
    return input.shape == other.shape and bool(
        np.array_equal(input.numpy(force=True), other.numpy(force=True))
    )


def allclose(input, other, rtol=1e-5, atol=1e-8, equal_nan=False) -> bool:
    return bool(np.allclose(_array(input), _array(other), rtol, atol, equal_nan))


def isclose(input, other, rtol=1e-5, atol=1e-8, equal_nan=False) -> Tensor:
    return tensor(np.isclose(_array(input), _array(other), rtol, atol, equal_nan))


# -- reductions -------------------------------------------------------------------------------

_values_indices = namedtuple("return_types", ["values", "indices"])


def _numpy_names(fn):
    """PyTorch's NumPy-compatible keyword aliases: `axis` for `dim`, `keepdims` for
    `keepdim`. An empty `axis=()` keeps NumPy's meaning (reduce nothing)."""
    import functools

    @functools.wraps(fn)
    def wrapper(input, *args, **kwargs):
        if "axis" in kwargs:
            axis = kwargs.pop("axis")
            if isinstance(axis, tuple | list) and len(axis) == 0:
                kwargs.pop("keepdims", None)
                return _as_tensor(input)
            kwargs["dim"] = axis
        if "keepdims" in kwargs:
            kwargs["keepdim"] = kwargs.pop("keepdims")
        return fn(input, *args, **kwargs)

    return wrapper


def _dims(dim, ndim: int) -> tuple[int, ...] | None:
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    out = []
    for d in dims:
        if not -builtins.max(ndim, 1) <= d < builtins.max(ndim, 1):
            raise IndexError(
                f"Dimension out of range (expected to be in range of "
                f"[{-builtins.max(ndim, 1)}, {builtins.max(ndim, 1) - 1}], but got {d})"
            )
        if ndim:  # a 0-d tensor accepts dim 0 and -1, and has nothing to reduce
            out.append(d % ndim)
    return tuple(sorted(out))


def _alias(x, name: str):
    """A new tensor with `x`'s value (PyTorch returns a new view, never the input itself)."""
    return _named(tnp.reshape(x, x.shape), name, (x,))


@_numpy_names
def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001 - PyTorch's name
    x = _as_tensor(input)
    if dtype is not None:
        x = x._astype(dtype)
    elif x.dtype.kind in "bi" and x.dtype != np.int64 or x.dtype.kind == "u":
        x = x._astype(np.int64)
    axes = _dims(dim, x.ndim)
    out = reduction.sum(x, tuple(range(x.ndim)) if axes is None else axes, keepdim)
    return _named(out, "SumBackward0" if dim is None else "SumBackward1", (input,))


@_numpy_names
def mean(input, dim=None, keepdim=False, *, dtype=None):
    x = _as_tensor(input)
    if dtype is not None:
        x = x._astype(dtype)
    if x.dtype.kind not in "fc":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {x.dtype.name}"
        )
    axes = _dims(dim, x.ndim)
    axes = tuple(range(x.ndim)) if axes is None else axes
    count = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    with np.errstate(invalid="ignore", divide="ignore"):  # an empty mean is nan, quietly
        out = div(reduction.sum(x, axes, keepdim), count)
    name = "MeanBackward0" if dim is None else "MeanBackward1"
    return _named(out, name, (input,), pinned=True)


@_numpy_names
def prod(input, dim=None, keepdim=False, *, dtype=None):
    x = _as_tensor(input)
    if dtype is not None:
        x = x._astype(dtype)
    axes = _dims(dim, x.ndim)
    return tnp.prod(x, axis=axes, keepdims=keepdim)


@_numpy_names
def var(input, dim=None, *, correction=1, keepdim=False, unbiased=None):
    if unbiased is not None:
        correction = 1 if unbiased else 0
    x = _as_tensor(input)
    axes = _dims(dim, x.ndim)
    axes = tuple(range(x.ndim)) if axes is None else axes
    n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    centered = sub(x, mean(x, axes, keepdim=True))
    total = reduction.sum(mul(centered, centered), axes, keepdim)
    return _named(div(total, builtins.max(n - correction, 0)), "VarBackward0", (input,))


@_numpy_names
def std(input, dim=None, *, correction=1, keepdim=False, unbiased=None):
    v = var(input, dim, correction=correction, keepdim=keepdim, unbiased=unbiased)
    # PyTorch's gradient where the deviation is 0 is 0 (sqrt's would be inf * 0 = nan)
    zero = eq(v.detach(), 0)
    out = where(zero, 0.0, sqrt(where(zero, 1.0, v)))
    return _named(out, "StdBackward0", (input,))


def _reduce_choose(which: str):
    full = reduction.max if which == "max" else reduction.min
    arg = reduction.argmax if which == "max" else reduction.argmin
    pair = maximum if which == "max" else minimum

    def f(input, dim=None, keepdim=False):
        if isinstance(dim, Tensor):  # torch.max(a, b) is maximum
            return pair(input, dim)
        x = _as_tensor(input)
        if dim is None:
            if x.numel() == 0:
                raise RuntimeError(
                    f"{which}(): Expected reduction dim to be specified for input.numel() == 0. "
                    "Specify the reduction dim with the 'dim' argument."
                )
            # all-reduce: ties share the gradient evenly, as PyTorch's MaxBackward1
            return _named(full(x, tuple(range(x.ndim)), False), f"{which.capitalize()}Backward1")
        (d,) = _dims(dim, x.ndim) or (None,)
        if d is None:  # a 0-d tensor: itself, at index 0
            values = _alias(x, f"{which.capitalize()}Backward0")
            return _values_indices(values, _as_tensor(np.zeros((), np.int64)))
        index = arg(x.detach(), d, True)
        values = tnp.take_along_axis(x, index, axis=d)
        if not keepdim and x.ndim:
            values = squeeze(values, d)
            index = squeeze(index, d)
        _named(values, f"{which.capitalize()}Backward0", (x,))
        return _values_indices(values, _as_tensor(index))

    f.__name__ = which
    return _numpy_names(f)


max = _reduce_choose("max")  # noqa: A001 - PyTorch's name
min = _reduce_choose("min")  # noqa: A001 - PyTorch's name


@_numpy_names
def amax(input, dim=(), keepdim=False):
    x = _as_tensor(input)
    axes = _dims(dim, x.ndim) if dim != () else tuple(range(x.ndim))
    return reduction.max(x, axes, keepdim)


@_numpy_names
def amin(input, dim=(), keepdim=False):
    x = _as_tensor(input)
    axes = _dims(dim, x.ndim) if dim != () else tuple(range(x.ndim))
    return reduction.min(x, axes, keepdim)


@_numpy_names
def argmax(input, dim=None, keepdim=False):
    x = _as_tensor(input).detach()
    axes = None if dim is None else _dims(dim, x.ndim)
    if not axes:
        return _as_tensor(np.argmax(x.numpy()))
    return tnp.argmax(x, axis=axes[0], keepdims=keepdim)


@_numpy_names
def argmin(input, dim=None, keepdim=False):
    x = _as_tensor(input).detach()
    axes = None if dim is None else _dims(dim, x.ndim)
    if not axes:
        return _as_tensor(np.argmin(x.numpy()))
    return tnp.argmin(x, axis=axes[0], keepdims=keepdim)


@_numpy_names
def logsumexp(input, dim, keepdim=False):
    x = _as_tensor(input)
    axes = _dims(dim, x.ndim)
    m = reduction.max(x.detach(), axes, True)
    m = where(isfinite(m), m, 0.0)
    out = add(log(reduction.sum(exp(sub(x, m)), axes, True)), m)
    return _named(out if keepdim else squeeze(out, axes), "LogsumexpBackward0", (input,))


@_numpy_names
def softmax(input, dim, dtype=None):
    x = _as_tensor(input) if dtype is None else _as_tensor(input)._astype(dtype)
    axes = _dims(dim, x.ndim)
    e = exp(sub(x, reduction.max(x.detach(), axes, True)))
    return _named(div(e, reduction.sum(e, axes, True)), "SoftmaxBackward0", (input,))


@_numpy_names
def log_softmax(input, dim, dtype=None):
    x = _as_tensor(input) if dtype is None else _as_tensor(input)._astype(dtype)
    axes = _dims(dim, x.ndim)
    m = reduction.max(x.detach(), axes, True)
    shifted = sub(x, where(isfinite(m), m, 0.0))  # (x - max) - log(sum(exp(x - max)))
    out = sub(shifted, log(reduction.sum(exp(shifted), axes, True)))
    return _named(out, "LogSoftmaxBackward0", (input,))


def norm(input, p="fro", dim=None, keepdim=False):
    x = _as_tensor(input)
    if p in ("fro", 2, 2.0):
        return sqrt(sum(mul(x, x), dim, keepdim))
    if p in (1, 1.0):
        return sum(abs(x), dim, keepdim)
    if p == float("inf"):
        return amax(abs(x), dim if dim is not None else (), keepdim)
    return pow(sum(pow(abs(x), p), dim, keepdim), 1.0 / p)


@_numpy_names
def all(input, dim=None, keepdim=False):  # noqa: A001
    x = _as_tensor(input)
    axes = _dims(dim, x.ndim)
    return reduction.all(x, tuple(range(x.ndim)) if axes is None else axes, keepdim)


@_numpy_names
def any(input, dim=None, keepdim=False):  # noqa: A001
    x = _as_tensor(input)
    axes = _dims(dim, x.ndim)
    return reduction.any(x, tuple(range(x.ndim)) if axes is None else axes, keepdim)


@_numpy_names
def cumsum(input, dim, *, dtype=None):
    x = _as_tensor(input) if dtype is None else _as_tensor(input)._astype(dtype)
    (d,) = _dims(dim, x.ndim) or (None,)
    if d is None:
        return _alias(x, "CumsumBackward0")
    return tnp.cumsum(x, axis=d)


@_numpy_names
def cumprod(input, dim, *, dtype=None):
    x = _as_tensor(input) if dtype is None else _as_tensor(input)._astype(dtype)
    (d,) = _dims(dim, x.ndim) or (None,)
    if d is None:
        return _alias(x, "CumprodBackward0")
    return tnp.cumprod(x, axis=d)


# -- shapes -----------------------------------------------------------------------------------


def _shape_args(args) -> tuple[int, ...]:
    if len(args) == 1 and isinstance(args[0], tuple | list):
        return tuple(args[0])
    return tuple(args)


def reshape(input, *shape_):
    x = _as_tensor(input)
    new = _shape_args(shape_)
    return _named(tnp.reshape(x, new), "ViewBackward0", (x,))


def view(input, *shape_):
    if len(shape_) == 1 and not isinstance(shape_[0], int | tuple | list):
        return input._astype(shape_[0])  # view(dtype) reinterprets in PyTorch; we convert
    return reshape(input, *shape_)


def view_as(input, other):
    return reshape(input, other.shape)


reshape_as = view_as


def flatten(input, start_dim=0, end_dim=-1):
    x = _as_tensor(input)
    if x.ndim == 0:
        return reshape(x, 1)
    s, e = start_dim % x.ndim, end_dim % x.ndim
    new = x.shape[:s] + (int(np.prod(x.shape[s : e + 1])),) + x.shape[e + 1 :]
    return reshape(x, new)


def t(input):
    x = _as_tensor(input)
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    if x.ndim < 2:
        return _alias(x, "TBackward0")
    return _named(shape.transpose(x, (1, 0)), "TBackward0")


def transpose(input, dim0, dim1):
    x = _as_tensor(input)
    if x.ndim == 0:
        _dims(dim0, 0), _dims(dim1, 0)
        return _alias(x, "TransposeBackward0")
    axes = list(range(x.ndim))
    d0, d1 = _dims(dim0, x.ndim)[0], _dims(dim1, x.ndim)[0]
    axes[d0], axes[d1] = axes[d1], axes[d0]
    return _named(shape.transpose(x, tuple(axes)), "TransposeBackward0")


swapaxes = swapdims = transpose


def permute(input, *dims):
    x = _as_tensor(input)
    dims = tuple(d % x.ndim for d in _shape_args(dims))
    return _named(shape.transpose(x, dims), "PermuteBackward0")


def unsqueeze(input, dim):
    x = _as_tensor(input)
    d = dim % (x.ndim + 1)
    return tnp.expand_dims(x, d)


def squeeze(input, dim=None):
    x = _as_tensor(input)
    if dim is None:
        return tnp.squeeze(x)
    dims = _dims(dim, x.ndim)
    dims = tuple(d for d in dims if x.shape[d] == 1)
    if not dims:
        return _alias(x, "SqueezeBackward1")
    return _named(tnp.squeeze(x, axis=dims), "SqueezeBackward1", (x,))


def expand(input, *sizes):
    x = _as_tensor(input)
    sizes = _shape_args(sizes)
    lead = len(sizes) - x.ndim
    target = tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
    return tnp.broadcast_to(x, target)


def expand_as(input, other):
    return expand(input, other.shape)


def repeat(input, *sizes):
    """PyTorch's repeat tiles the whole tensor (NumPy's tile)."""
    return tnp.tile(_as_tensor(input), _shape_args(sizes))


def flip(input, dims):
    x = _as_tensor(input)
    return tnp.flip(x, axis=_dims(dims, x.ndim))


def cat(tensors, dim=0):
    tensors = [_as_tensor(x) for x in tensors]
    dtype = result_type(*tensors)
    return tnp.concatenate([_cast(x, dtype) for x in tensors], axis=dim)


concat = concatenate = cat


def stack(tensors, dim=0):
    tensors = [_as_tensor(x) for x in tensors]
    dtype = result_type(*tensors)
    out = tnp.stack([_cast(x, dtype) for x in tensors], axis=dim)
    return _named(out, "StackBackward0", tensors)


def chunk(input, chunks, dim=0):
    x = _as_tensor(input)
    size = -(-x.shape[dim] // chunks)
    return split(x, size, dim)


def split(input, split_size_or_sections, dim=0):
    x = _as_tensor(input)
    n = x.shape[dim]
    if isinstance(split_size_or_sections, int):
        bounds = list(range(split_size_or_sections, n, split_size_or_sections))
    else:
        bounds = list(np.cumsum(split_size_or_sections)[:-1])
    return tuple(tnp.split(x, bounds, axis=dim))


def unbind(input, dim=0):
    x = _as_tensor(input)
    return tuple(select(x, dim, i) for i in range(x.shape[dim]))


def select(input, dim, index):
    x = _as_tensor(input)
    key = (slice(None),) * (dim % x.ndim) + (index,)
    return _named(x[key], "SelectBackward0", (x,))


def narrow(input, dim, start, length):
    x = _as_tensor(input)
    key = (slice(None),) * (dim % x.ndim) + (slice(start, start + length),)
    return x[key]


def gather(input, dim, index):
    return tnp.take_along_axis(_as_tensor(input), _as_tensor(index), axis=dim)


def clone(input):
    out = bind(ew.positive_p, _as_tensor(input))  # a copy that keeps 0-d tensors 0-d
    return _named(out, "CloneBackward0")


def contiguous(input):
    return input


def _to(input, *args, **kwargs):
    dtype = kwargs.pop("dtype", None)
    _check_device(kwargs.pop("device", None))
    for a in args:
        if isinstance(a, Tensor):
            dtype = a.dtype
        elif isinstance(a, str):
            _check_device(a)
        elif a is not None:
            dtype = a
    if dtype is None or np.dtype(dtype) == input.dtype:
        return input
    return input._astype(dtype)


# -- creation ---------------------------------------------------------------------------------

_rng = np.random.default_rng()


def manual_seed(seed: int):
    """Seeds the generator behind randn/rand/randint/normal_/uniform_ (NumPy's PCG64, so the
    numbers differ from PyTorch's for the same seed)."""
    global _rng
    _rng = np.random.default_rng(seed)


def _factory(values, dtype, requires_grad) -> Tensor:
    t = Tensor._wrap(values if dtype is None else values.astype(dtype, copy=False))
    if requires_grad:
        t._set_requires_grad(True, _FACTORY_FLAG)
    return t


def _float_dtype(dtype):
    return get_default_dtype() if dtype is None else np.dtype(dtype)


def zeros(*size, dtype=None, requires_grad=False, device=None):
    _check_device(device)
    return _factory(np.zeros(_shape_args(size), _float_dtype(dtype)), None, requires_grad)


def ones(*size, dtype=None, requires_grad=False, device=None):
    _check_device(device)
    return _factory(np.ones(_shape_args(size), _float_dtype(dtype)), None, requires_grad)


def empty(*size, dtype=None, requires_grad=False, device=None):
    return zeros(*size, dtype=dtype, requires_grad=requires_grad, device=device)


def full(size, fill_value, *, dtype=None, requires_grad=False, device=None):
    _check_device(device)
    if dtype is None:
        dtype = result_type(fill_value) if not isinstance(fill_value, bool) else np.bool_
    return _factory(np.full(tuple(size), fill_value, dtype), None, requires_grad)


def randn(*size, dtype=None, requires_grad=False, device=None, generator=None):
    _check_device(device)
    values = _rng.standard_normal(_shape_args(size)).astype(_float_dtype(dtype))
    return _factory(values, None, requires_grad)


def rand(*size, dtype=None, requires_grad=False, device=None, generator=None):
    _check_device(device)
    values = _rng.random(_shape_args(size)).astype(_float_dtype(dtype))
    return _factory(values, None, requires_grad)


def randint(low, high=None, size=(), *, dtype=None, device=None):
    _check_device(device)
    if isinstance(high, tuple | list):  # randint(high, size)
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    return _factory(_rng.integers(low, high, tuple(size)), dtype or np.int64, False)


def randperm(n, *, dtype=None):
    return _factory(_rng.permutation(n), dtype or np.int64, False)


def arange(start, end=None, step=1, *, dtype=None, requires_grad=False, device=None):
    _check_device(device)
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = (
            result_type(start, end, step)
            if builtins.any(isinstance(v, float) for v in (start, end, step))
            else np.int64
        )
    return _factory(np.arange(start, end, step).astype(dtype), None, requires_grad)


def linspace(start, end, steps, *, dtype=None, requires_grad=False, device=None):
    _check_device(device)
    return _factory(np.linspace(start, end, steps).astype(_float_dtype(dtype)), None, requires_grad)


def eye(n, m=None, *, dtype=None, requires_grad=False, device=None):
    _check_device(device)
    return _factory(np.eye(n, m, dtype=_float_dtype(dtype)), None, requires_grad)


def _like(make):
    def f(input, *, dtype=None, requires_grad=False, device=None):
        return make(
            input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad, device=device
        )

    return f


zeros_like = _like(zeros)
ones_like = _like(ones)
empty_like = _like(empty)
randn_like = _like(randn)
rand_like = _like(rand)


def full_like(input, fill_value, *, dtype=None, requires_grad=False, device=None):
    return full(
        input.shape,
        fill_value,
        dtype=dtype or input.dtype,
        requires_grad=requires_grad,
        device=device,
    )


def as_tensor(data, dtype=None, device=None) -> Tensor:
    if isinstance(data, Tensor) and (dtype is None or np.dtype(dtype) == data.dtype):
        return data
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A tensor of `ndarray`'s values and dtype. Unlike PyTorch it copies: tensors own
    read-only arrays, and in-place tensor methods rebind rather than write."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    return tensor(ndarray)


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def numel(input) -> int:
    return input.numel()


# -- methods ----------------------------------------------------------------------------------


def _getitem(self, index):
    out = tnp.getitem(self, index)
    if isinstance(index, int) or (
        isinstance(index, tuple)
        and builtins.all(isinstance(i, int | slice) for i in index)
        and builtins.any(isinstance(i, int) for i in index)
    ):
        _named(out, "SelectBackward0", (self,))
    return out


def _is_basic(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    return builtins.all(
        i is None or i is Ellipsis or isinstance(i, int | slice) and not isinstance(i, bool)
        for i in items
    )


def _setitem(self, index, value):
    """`x[index] = value`, as a new value for `x` (functional), recorded when needed."""
    from tracegrad.autograd.grad_mode import _enabled

    basic = _is_basic(index)
    if basic and _enabled.get() and self._requires_grad and self._grad_fn is None:
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation."
        )
    self._check_inplace()
    target = np.empty(self.shape, bool)[tnp_index(index)].shape
    vshape = value.shape if isinstance(value, Tensor) else np.shape(value)
    try:
        np.broadcast_shapes(vshape, target)
        if len(vshape) > len(target) and builtins.any(
            d != 1 for d in vshape[: len(vshape) - len(target)]
        ):
            raise ValueError
    except ValueError:
        raise RuntimeError(_expand_message(vshape, target)) from None
    old = self._snapshot()
    if not isinstance(value, Tensor):
        value = np.asarray(value, dtype=self.dtype)
    elif value.dtype != self.dtype:
        value = value._astype(self.dtype)
    records = old._requires_grad or (isinstance(value, Tensor) and value._requires_grad)
    if not (records and _enabled.get()):
        arr = old._cell.value.copy()
        arr[tnp_index(index)] = value._cell.value if isinstance(value, Tensor) else value
        return self._rebind(Tensor._wrap(arr))
    keep = np.ones(self.shape, bool)
    keep[tnp_index(index)] = False
    # the transpose of indexing places `value` where `x[index]` reads: a vjp of getitem
    from tracegrad.autograd.engine import grad as _grad

    z = zeros(self.shape, dtype=self.dtype, requires_grad=True)
    picked = z[index]
    value = _as_tensor(value)
    if value.ndim > picked.ndim:
        value = reshape(value, picked.shape)
    placed = _grad(picked, z, grad_outputs=expand(value, picked.shape), create_graph=True)[0]
    name = "torch::autograd::CopySlices" if basic else "IndexPutBackward0"
    return self._rebind(_named(add(where(keep, old, 0), placed), name, (old, value)))


def _expand_message(vshape, target) -> str:
    return (
        f"The expanded size of the tensor ({target[-1] if target else 1}) must match the "
        f"existing size ({vshape[-1] if vshape else 1}) at non-singleton dimension "
        f"{builtins.max(len(target) - 1, 0)}.  Target sizes: {list(target)}.  "
        f"Tensor sizes: {list(vshape)}"
    )


def tnp_index(index):
    if isinstance(index, Tensor):
        return index.numpy()
    if isinstance(index, tuple):
        return tuple(i.numpy() if isinstance(i, Tensor) else i for i in index)
    return index


def _reflected(fn):
    def r(self, other):
        return fn(other, self)

    return r


def _inplace(name: str):
    def method(self, *args, **kwargs):
        self._check_inplace()
        result = getattr(self._snapshot(), name)(*args, **kwargs)
        return self._rebind(result)

    method.__name__ = name + "_"
    return method


def _zero_(self):
    self._check_inplace()
    return self._rebind(Tensor._wrap(np.zeros(self.shape, self.dtype)))


def _fill_(self, value):
    self._check_inplace()
    if isinstance(value, Tensor) and value._requires_grad:
        return self._rebind(expand(value._astype(self.dtype), self.shape))
    return self._rebind(Tensor._wrap(np.full(self.shape, value, self.dtype)))


def _copy_(self, src, non_blocking=False):
    self._check_inplace()
    src = _as_tensor(src)
    return self._rebind(
        expand(src._astype(self.dtype) if src.dtype != self.dtype else src, self.shape)
        if src.shape != self.shape
        else clone(src)
        if src._requires_grad
        else src
    )


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    self._check_inplace()
    return self._rebind(Tensor._wrap(_rng.normal(mean, std, self.shape).astype(self.dtype)))


def _uniform_(self, a=0.0, b=1.0, *, generator=None):
    self._check_inplace()
    return self._rebind(Tensor._wrap(_rng.uniform(a, b, self.shape).astype(self.dtype)))


def _new(make):
    def method(self, *size, dtype=None, requires_grad=False, device=None):
        return make(*size, dtype=dtype or self.dtype, requires_grad=requires_grad)

    return method


_METHODS = {
    "add": add,
    "sub": sub,
    "subtract": sub,
    "mul": mul,
    "multiply": mul,
    "div": div,
    "divide": div,
    "true_divide": div,
    "pow": pow,
    "remainder": remainder,
    "floor_divide": floor_divide,
    "matmul": matmul,
    "mm": mm,
    "bmm": bmm,
    "mv": mv,
    "dot": dot,
    "outer": outer,
    "neg": neg,
    "negative": neg,
    "exp": exp,
    "exp2": exp2,
    "expm1": expm1,
    "log": log,
    "log2": log2,
    "log10": log10,
    "log1p": log1p,
    "sin": sin,
    "cos": cos,
    "tan": tan,
    "sinh": sinh,
    "cosh": cosh,
    "tanh": tanh,
    "asin": asin,
    "acos": acos,
    "atan": atan,
    "arcsin": asin,
    "arccos": acos,
    "arctan": atan,
    "asinh": asinh,
    "arcsinh": asinh,
    "arccosh": acosh,
    "arctanh": atanh,
    "acosh": acosh,
    "atanh": atanh,
    "sqrt": sqrt,
    "rsqrt": rsqrt,
    "reciprocal": reciprocal,
    "abs": abs,
    "absolute": abs,
    "sign": sign,
    "floor": floor,
    "ceil": ceil,
    "trunc": trunc,
    "round": round,
    "square": square,
    "sigmoid": sigmoid,
    "relu": relu,
    "atan2": atan2,
    "maximum": maximum,
    "minimum": minimum,
    "clamp": clamp,
    "clip": clamp,
    "clamp_min": clamp_min,
    "clamp_max": clamp_max,
    "lerp": lerp,
    "addcmul": addcmul,
    "addcdiv": addcdiv,
    "masked_fill": masked_fill,
    "eq": eq,
    "ne": ne,
    "lt": lt,
    "le": le,
    "gt": gt,
    "ge": ge,
    "isnan": isnan,
    "isfinite": isfinite,
    "isinf": isinf,
    "logical_not": logical_not,
    "logical_and": logical_and,
    "logical_or": logical_or,
    "equal": equal,
    "allclose": allclose,
    "isclose": isclose,
    "sum": sum,
    "mean": mean,
    "prod": prod,
    "var": var,
    "std": std,
    "max": max,
    "min": min,
    "amax": amax,
    "amin": amin,
    "argmax": argmax,
    "argmin": argmin,
    "logsumexp": logsumexp,
    "softmax": softmax,
    "log_softmax": log_softmax,
    "norm": norm,
    "all": all,
    "any": any,
    "cumsum": cumsum,
    "cumprod": cumprod,
    "reshape": reshape,
    "view": view,
    "view_as": view_as,
    "reshape_as": reshape_as,
    "flatten": flatten,
    "t": t,
    "transpose": transpose,
    "swapaxes": transpose,
    "swapdims": transpose,
    "permute": permute,
    "unsqueeze": unsqueeze,
    "squeeze": squeeze,
    "expand": expand,
    "expand_as": expand_as,
    "repeat": repeat,
    "flip": flip,
    "chunk": chunk,
    "split": split,
    "unbind": unbind,
    "select": select,
    "narrow": narrow,
    "gather": gather,
    "clone": clone,
    "contiguous": contiguous,
    "to": _to,
    "type_as": lambda self, other: _to(self, other.dtype),
    "float": lambda self: _to(self, np.float32),
    "double": lambda self: _to(self, np.float64),
    "half": lambda self: _to(self, np.float16),
    "int": lambda self: _to(self, np.int32),
    "long": lambda self: _to(self, np.int64),
    "bool": lambda self: _to(self, np.bool_),
    "cpu": lambda self: self,
    "zero_": _zero_,
    "fill_": _fill_,
    "copy_": _copy_,
    "normal_": _normal_,
    "uniform_": _uniform_,
    "new_zeros": _new(zeros),
    "new_ones": _new(ones),
    "new_empty": _new(empty),
    "new_full": lambda self, size, fill_value, **kw: full(
        size, fill_value, dtype=kw.get("dtype") or self.dtype
    ),
    "new_tensor": lambda self, data, dtype=None, requires_grad=False: tensor(
        data, dtype=dtype or self.dtype, requires_grad=requires_grad
    ),
    "where": lambda self, condition, other: where(condition, self, other),
    "is_floating_point": lambda self: self.dtype.kind == "f",
    "__getitem__": _getitem,
    "__setitem__": _setitem,
    "__add__": add,
    "__radd__": _reflected(add),
    "__sub__": sub,
    "__rsub__": _reflected(sub),
    "__mul__": mul,
    "__rmul__": _reflected(mul),
    "__truediv__": div,
    "__rtruediv__": _reflected(div),
    "__floordiv__": floor_divide,
    "__rfloordiv__": _reflected(floor_divide),
    "__mod__": remainder,
    "__rmod__": _reflected(remainder),
    "__pow__": pow,
    "__rpow__": _reflected(pow),
    "__matmul__": matmul,
    "__rmatmul__": _reflected(matmul),
    "__neg__": neg,
    "__pos__": lambda self: self,
    "__abs__": abs,
    "__eq__": eq,
    "__ne__": ne,
    "__lt__": lt,
    "__le__": le,
    "__gt__": gt,
    "__ge__": ge,
    "__and__": logical_and,
    "__or__": logical_or,
    "__invert__": logical_not,
}

_INPLACE = [
    "add",
    "sub",
    "mul",
    "div",
    "pow",
    "neg",
    "exp",
    "log",
    "sin",
    "cos",
    "tanh",
    "sqrt",
    "abs",
    "sigmoid",
    "relu",
    "clamp",
    "clamp_min",
    "clamp_max",
    "lerp",
    "addcmul",
    "addcdiv",
    "masked_fill",
    "reciprocal",
    "floor",
    "ceil",
    "round",
    "sign",
    "square",
    "remainder",
]


def install() -> None:
    """Attach the methods, operators and in-place variants to `Tensor`."""
    for name, fn in _METHODS.items():
        setattr(Tensor, name, fn)
    for name in _INPLACE:
        setattr(Tensor, name + "_", _inplace(name))
    for op in ("add", "sub", "mul", "truediv", "floordiv", "pow", "mod", "matmul"):
        base = {"truediv": "div", "floordiv": "floor_divide", "mod": "remainder"}.get(op, op)
        if base in _INPLACE:
            setattr(Tensor, f"__i{op}__", _inplace(base))
    Tensor.T = property(lambda self: permute(self, *reversed(range(self.ndim))))
    Tensor.mT = property(lambda self: transpose(self, -2, -1))


install()

__all__ = [
    name
    for name, value in list(globals().items())
    if not name.startswith("_")
    and callable(value)
    and getattr(value, "__module__", None) == __name__
    and name not in {"install", "result_type", "tnp_index"}
] + ["result_type"]
