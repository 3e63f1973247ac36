"""How NumPy calls on tracers reach tracegrad: the ufunc, function and method tables.

`np.sin(t)` arrives through `Tracer.__array_ufunc__`, `np.sum(t)` through
`__array_function__`, `t.sum()` through `Tracer.__getattr__`; each looks the function up
here by NumPy's own object or name. The tables are built from `tracegrad.numpy`'s names, so
adding a function there is all it takes to make NumPy code reach it.
"""

from __future__ import annotations

import numpy as np

import tracegrad.numpy as namespace

UFUNCS: dict[np.ufunc, object] = {}
FUNCTIONS: dict[object, object] = {}

for _name in namespace.__all__:
    _ours = getattr(namespace, _name)
    _theirs = getattr(np, _name, None)
    if isinstance(_theirs, np.ufunc):
        UFUNCS[_theirs] = _ours
    elif _theirs is not None and callable(_theirs):
        FUNCTIONS[_theirs] = _ours

# ufunc methods that are reductions under another name
_REDUCE = {
    np.add: "sum",
    np.multiply: "prod",
    np.maximum: "max",
    np.minimum: "min",
    np.logical_and: "all",
    np.logical_or: "any",
}
_ACCUMULATE = {np.add: "cumsum", np.multiply: "cumprod"}


def _unsupported(what: str):
    return NotImplementedError(
        f"tracegrad: {what} has no tracegrad rule, so it cannot be traced or differentiated. "
        "Write it with supported tracegrad.numpy functions, or compute it outside the "
        "differentiated function and pass the result in (it is then a constant)."
    )


def array_ufunc(ufunc, method, inputs, kwargs):
    out = kwargs.pop("out", None)
    if out is not None and out != (None,) * len(out if isinstance(out, tuple) else (out,)):
        raise TypeError(
            f"tracegrad: np.{ufunc.__name__}(..., out=...) writes into an array in place, "
            "which a traced value cannot be; drop `out=` and use the result"
        )
    if method == "__call__":
        fn = UFUNCS.get(ufunc)
        if fn is None:
            raise _unsupported(f"np.{ufunc.__name__}")
        if kwargs:
            raise NotImplementedError(
                f"tracegrad: np.{ufunc.__name__} with arguments {sorted(kwargs)} is not supported"
            )
        return fn(*inputs)
    if method == "reduce" and ufunc in _REDUCE:
        fn = getattr(namespace, _REDUCE[ufunc], None)
        if fn is not None:
            kwargs.setdefault("axis", 0)
            return fn(*inputs, **kwargs)
    if method == "accumulate" and ufunc in _ACCUMULATE:
        fn = getattr(namespace, _ACCUMULATE[ufunc], None)
        if fn is not None:
            kwargs.setdefault("axis", 0)
            return fn(*inputs, **kwargs)
    raise _unsupported(f"np.{ufunc.__name__}.{method}")


def array_function(func, args, kwargs):
    fn = FUNCTIONS.get(func)
    if fn is None:
        mod = getattr(func, "__module__", "numpy") or "numpy"
        if mod.startswith("numpy"):  # np.sum, np.linalg.solve (not numpy._core.fromnumeric)
            public = [p for p in mod.split(".")[1:] if not p.startswith("_")]
            mod = ".".join(["np", *public])
        raise _unsupported(f"{mod}.{getattr(func, '__name__', func)}")
    return fn(*args, **kwargs)


# -- methods of traced arrays -----------------------------------------------------------------


def _reshape(self, *shape, order="C"):
    if order != "C":
        raise NotImplementedError("reshape: only order='C' is supported")
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        shape = tuple(shape[0])
    return namespace.reshape(self, shape)


def _transpose(self, *axes):
    if len(axes) == 1 and isinstance(axes[0], tuple | list):
        axes = tuple(axes[0])
    return namespace.transpose(self, axes or None)


def _flatten(self, order="C"):
    return namespace.reshape(self, (-1,))


def _copy(self, order="K"):
    return self  # traced values are immutable: a copy is the same value


_SAME_AS_FUNCTION = (
    "sum",
    "prod",
    "mean",
    "var",
    "std",
    "max",
    "min",
    "argmax",
    "argmin",
    "all",
    "any",
    "cumsum",
    "cumprod",
    "clip",
    "squeeze",
    "swapaxes",
    "ravel",
    "dot",
    "round",
    "astype",
    "take",
    "repeat",
    "trace",
    "diagonal",
    "ptp",
    "conj",
    "conjugate",
    "nonzero",
    "sort",
    "argsort",
    "partition",
    "argpartition",
    "searchsorted",
    "compress",
    "nonzero",
    "cumulative_sum",
    "cumulative_prod",
)

METHODS = {name: getattr(namespace, name) for name in _SAME_AS_FUNCTION if hasattr(namespace, name)}
METHODS.update(reshape=_reshape, transpose=_transpose, flatten=_flatten, copy=_copy)
