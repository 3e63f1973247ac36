"""Axis bookkeeping shared by the primitive families: normalized axes, reduced shapes, and
where a per-example axis sits once a batch axis is inserted.

Reductions take `axis` as a sorted tuple of distinct non-negative axes and a `keepdims` flag
(the `tracegrad.numpy` wrappers normalize NumPy-style axes), and `reducer` builds one such
primitive with its binding function; batching rules receive the whole batch with its batch
axis at `dim` and per-example params.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import Primitive
from tracegrad.ir.types import Aval, int_tuple


def as_axes(axis) -> tuple[int, ...]:
    """One int or an iterable of axes as a sorted tuple (the binding functions' input)."""
    if isinstance(axis, int | np.integer):
        return (int(axis),)
    return tuple(sorted(int_tuple(axis)))


def reduced_shape(shape, axis, keepdims) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if i in axis else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axis)


def check_axes(name: str, x: Aval, axis, *, single: bool = False) -> None:
    """Raise unless `axis` is a sorted tuple of distinct axes of `x` (one axis if `single`)."""
    ok = (
        isinstance(axis, tuple)
        and all(type(a) is int for a in axis)
        and list(axis) == sorted(set(axis))
        and all(0 <= a < x.ndim for a in axis)
    )
    if ok and (not single or len(axis) == 1):
        return
    want = "a one-axis tuple (a,)" if single else "a sorted tuple of distinct axes"
    raise ValueError(
        f"{name}: axis {axis!r} does not fit an array of shape {x.shape} (ndim {x.ndim}); "
        f"pass {want} with every axis in [0, {x.ndim}) (tracegrad.numpy.{name} normalizes "
        "NumPy-style axes)"
    )


def check_nonempty(name: str, x: Aval, axis, why: str) -> None:
    empty = [a for a in axis if x.shape[a] == 0]
    if empty:
        raise ValueError(
            f"{name}: {why}: axis {empty[0]} of an array of shape {x.shape} has size 0; "
            "reduce only over non-empty axes"
        )


def at(axis: int, dim: int) -> int:
    """Where per-example axis `axis` sits in a batched value whose batch axis is `dim`."""
    return axis if axis < dim else axis + 1


def shift_axes(axis, dim) -> tuple[int, ...]:
    """Per-example axes as axes of the batched array whose batch axis is `dim`."""
    return tuple(at(a, dim) for a in axis)


def insert(seq: tuple, dim: int, item) -> tuple:
    return tuple(seq[:dim]) + (item,) + tuple(seq[dim:])


def reduce_batch(fn):
    """The batching rule of a reduction whose binding function is `fn(x, axis, keepdims)`.

    JAX's reducer batching: the batch axis stays where it is and the per-example axes at or
    after it shift up by one, so no transpose is needed; without keepdims the output's batch
    axis moves left by the number of reduced axes before it.
    """

    def batch(args, dims, *, axis, keepdims):
        (x,), (d,) = args, dims
        if d is None:
            return fn(x, axis, keepdims), None
        out_dim = d if keepdims else d - sum(1 for a in axis if a < d)
        return fn(x, shift_axes(axis, d), keepdims), out_dim

    return batch


def reduce_emit(fname: str):
    return lambda x, *, axis, keepdims: f"np.{fname}({x}, axis={axis!r}, keepdims={keepdims!r})"


def reducer(name: str, np_fn, doc: str, **rules_and_facts):
    """A reduction over sorted axes with `keepdims` (NumPy's `np_fn`), and the function that
    binds it, `fn(x, axis, keepdims=False)`: the primitive's impl, batching and emit rules
    follow from `np_fn` (an `impl` or `emit` given replaces the one written from `np_fn` or
    the name; `np_fn` is None when `impl` is given); the rest (shape, jvp, vjp, facts) are
    given."""

    def fn(x, axis, keepdims=False):
        return bind(prim, x, axis=as_axes(axis), keepdims=bool(keepdims))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    rules_and_facts.setdefault("emit", reduce_emit(name))
    if np_fn is not None:  # called as np_fn(x, axis=axis, keepdims=keepdims): no wrapper
        rules_and_facts["impl"] = np_fn
    prim = Primitive(
        name,
        batch=reduce_batch(fn),
        layout=Layout.KEEPS_C,
        **rules_and_facts,
    )
    return prim, fn
