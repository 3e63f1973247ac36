"""The pieces the SciPy linear-algebra primitives share: SciPy imported on first use, the
text of a SciPy call for the code generator, the dtype SciPy returns, the shape checks, triangle
masks written with tracegrad operations (so the rules differentiate again) and the batching rule
of an operation on (stacks of) matrices with a right-hand side."""

from __future__ import annotations

import functools
import importlib
import weakref

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.types import Aval, dtype_of, shape_of
from tracegrad.primitives.broadcasting import broadcast_to
from tracegrad.primitives.linalg._common import mul
from tracegrad.primitives.views import expand_dims, move_to_front, squeeze


@functools.cache
def _sl():
    """scipy.linalg, imported on first use."""
    return importlib.import_module("scipy.linalg")


def _emit(name: str, args, **params) -> list[str]:
    kw = "".join(f", {k}={v!r}" for k, v in params.items())
    return ["import scipy.linalg as _scipy_linalg", f"_scipy_linalg.{name}({', '.join(args)}{kw})"]


@functools.cache
def _dtype(name: str, *dtypes) -> np.dtype:
    """The dtype SciPy's `name` returns for these input dtypes (SciPy's own choice, found on a
    1 x 1 problem once per signature)."""
    one = [np.ones((1, 1), dtype=d) for d in dtypes]
    f = getattr(_sl(), name)
    if name in ("cho_solve", "lu_solve"):
        factor = (one[0], False) if name == "cho_solve" else (one[0], np.zeros(1, np.int32))
        return f(factor, one[-1]).dtype
    out = f(*one)
    return (out[0] if isinstance(out, tuple) else out).dtype


# -- checks -------------------------------------------------------------------------------------


def _check_square(name: str, a: Aval) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: expected a square matrix (or a stack of them), got {a.shape}")


def _check_rhs(name: str, a: Aval, b: Aval) -> None:
    """`b` is one vector (`a` one matrix) or a stack of matrices with `a`'s stack shape (the
    public functions broadcast the stacks first)."""
    if b.ndim == 1 and a.ndim == 2:
        ok = b.shape[0] == a.shape[-1]
    else:
        ok = b.ndim == a.ndim and b.shape[:-2] == a.shape[:-2] and b.shape[-2] == a.shape[-1]
    if not ok:
        raise ValueError(f"{name}: shapes of a {a.shape} and b {b.shape} are incompatible")


def _real_only(name: str, *xs) -> None:
    for x in xs:
        if x is not None and dtype_of(x).kind == "c":
            raise NotImplementedError(
                f"tracegrad: scipy.linalg.{name}: derivatives of complex matrices are not "
                "supported yet (the values are); differentiate real ones"
            )


def _real_series(name: str, series_in) -> None:
    """`_real_only` for a Taylor rule: every term of every moving input."""
    _real_only(name, *(t for s in series_in if s is not None for t in s))


# -- matrix helpers (tracegrad operations, so the rules differentiate again) ---------------------


@functools.lru_cache(maxsize=64)
def _tri_const(n: int, k: int, lower: bool, dtype: np.dtype) -> np.ndarray:
    # one array per mask, so that a trace records one constant and merges equal products
    m = np.tri(n, k=k, dtype=dtype)
    m = m if lower else m.T.copy()
    m.flags.writeable = False
    return m


def _mask(x, lower: bool, k: int = 0):
    """`x`'s lower (upper) triangle from diagonal `k` (`-k` for upper), zeros elsewhere."""
    return mul(x, _tri_const(shape_of(x)[-1], k, lower, np.dtype(dtype_of(x))))


def _tri(x, lower: bool, unit: bool):
    """The triangle a triangular solve reads (without the diagonal if `unit`)."""
    return _mask(x, lower, -1 if unit else 0)


def _column(x, vector: bool):
    return expand_dims(x, (1,)) if vector else x


def _uncolumn(x, vector: bool):
    return squeeze(x, (1,)) if vector else x


def _neg(x):
    return x * -1.0


def _flip(trans: int) -> int:
    """The `trans` of the transposed system (real matrices: 'C' is 'T')."""
    return 1 if trans == 0 else 0


def _batch(prim, vector_arg: int):
    """The batching rule of an operation on (a stack of) matrices with the right-hand side last:
    every input gets the batch axis in front (an unbatched one broadcast to it) and a 1-D
    right-hand side becomes one column, so the batched call is one call on a stack, which
    SciPy's functions loop over."""
    ref = weakref.ref(prim)

    def batch(args, dims, **params):
        size = next(shape_of(x)[d] for x, d in zip(args, dims) if d is not None)
        front = []
        for x, d in zip(args, dims):
            if d is None:
                front.append(broadcast_to(expand_dims(x, (0,)), (size, *shape_of(x))))
            else:
                front.append(move_to_front(x, d))
        b = front[vector_arg]
        vector = len(shape_of(b)) == 2 and len(shape_of(front[0])) == 3
        if vector:
            front[vector_arg] = expand_dims(b, (2,))
        out = bind(ref(), *front, **params)
        return (squeeze(out, (2,)) if vector else out), 0

    return batch
