"""`tracegrad.lax`: the `jax.lax` names users reach for, with JAX's signatures.

Structured control flow (`cond`, `switch`, `while_loop`, `fori_loop`, `scan`, `map`: see
`tracegrad.api.control_flow`), `stop_gradient`, and a few array operations JAX code expects:
`select`, `dynamic_slice`, `dynamic_update_slice` (start indices may be traced, and are clamped
so the slice stays in bounds, as JAX does) and `associative_scan` (JAX's parallel prefix,
written with slices, so it differentiates and batches like any composition).
"""

from __future__ import annotations

import operator
from collections.abc import Callable

import numpy as np

import tracegrad.numpy as tnp
from tracegrad import tree
from tracegrad.api.control_flow import cond, fori_loop, map, scan, switch, while_loop
from tracegrad.api.reverse import stop_gradient
from tracegrad.core import Boxed
from tracegrad.ir.types import dtype_of, shape_of

__all__ = [
    "associative_scan",
    "cond",
    "dynamic_slice",
    "dynamic_update_slice",
    "fori_loop",
    "map",
    "scan",
    "select",
    "stop_gradient",
    "switch",
    "while_loop",
]


def select(pred, on_true, on_false):
    """`on_true` where `pred`, else `on_false`, as `jax.lax.select`: the cases must have one
    shape and one dtype (no promotion: `tracegrad.numpy.where` promotes), `pred` must be bool
    and a scalar or of the cases' shape."""
    shapes = (shape_of(on_true), shape_of(on_false))
    if shapes[0] != shapes[1]:
        raise TypeError(f"select cases must have the same shapes, got {list(shapes)}.")
    dtypes = (dtype_of(on_true), dtype_of(on_false))
    if dtypes[0] != dtypes[1]:
        raise TypeError(
            f"lax.select requires arguments to have the same dtypes, got {dtypes[0].name}, "
            f"{dtypes[1].name}. (Tip: tracegrad.numpy.where is a similar function that does "
            "automatic type promotion on inputs)."
        )
    if dtype_of(pred) != np.bool_:
        raise TypeError(f"select `which` must be boolean type, got {dtype_of(pred).name}.")
    if shape_of(pred) not in ((), shapes[0]):
        raise TypeError(
            "select `which` must be scalar or have the same shape as cases, got `which` shape "
            f"{shape_of(pred)} but case shape {shapes[0]}."
        )
    return tnp.where(pred, on_true, on_false)


def _starts(operand, start_indices, sizes, allow_negative_indices, api: str) -> list:
    shape = shape_of(operand)
    if isinstance(start_indices, np.ndarray | Boxed):
        start_indices = [start_indices[i] for i in range(shape_of(start_indices)[0])]
    starts = list(start_indices)
    if len(starts) != len(shape):
        raise ValueError(
            f"Length of slice indices must match number of operand dimensions ({len(starts)} "
            f"vs {shape})"
        )
    flags = (
        [allow_negative_indices] * len(shape)
        if isinstance(allow_negative_indices, bool)
        else list(allow_negative_indices)
    )
    out = []
    for s, n, size, neg in zip(starts, shape, sizes, flags):
        if isinstance(s, Boxed):
            if dtype_of(s).kind not in "iu" or shape_of(s) != ():
                raise TypeError(f"{api}: start indices must be integer scalars, got {s!r}")
            if neg:
                s = tnp.where(s < 0, s + n, s)
            out.append(tnp.clip(s, 0, n - size))
        else:
            s = operator.index(s)
            if neg and s < 0:
                s += n
            out.append(min(max(s, 0), n - size))
    return out


def _index(starts, sizes) -> tuple:
    """Index arrays selecting the block at `starts` (traced or not) of `sizes`."""
    if all(not isinstance(s, Boxed) for s in starts):
        return tuple(slice(s, s + n) for s, n in zip(starts, sizes))
    rank = len(sizes)
    index = []
    for k, (s, n) in enumerate(zip(starts, sizes)):
        shape = [1] * rank
        shape[k] = n
        index.append((np.arange(n) + s).reshape(shape) if not isinstance(s, Boxed) else
                     tnp.reshape(tnp.arange(n) + s, shape))  # fmt: skip
    return tuple(index)


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
    """The block of `operand` of shape `slice_sizes` starting at `start_indices`, which may be
    traced; as `jax.lax.dynamic_slice`, negative starts count from the end and every start
    is clamped so the block lies inside `operand`."""
    shape = shape_of(operand)
    sizes = tuple(operator.index(n) for n in slice_sizes)
    if len(sizes) != len(shape) or any(n > d or n < 0 for n, d in zip(sizes, shape)):
        raise TypeError(
            "slice slice_sizes must be less than or equal to operand shape, got slice_sizes "
            f"{sizes} for operand shape {shape}."
        )
    starts = _starts(operand, start_indices, sizes, allow_negative_indices, "dynamic_slice")
    return tnp.at(operand)[_index(starts, sizes)].get()


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
    """`operand` with `update` written at `start_indices` (which may be traced; negative starts
    count from the end, and starts are clamped so the block fits), as
    `jax.lax.dynamic_update_slice`; a new array, differentiable in both."""
    shape, sizes = shape_of(operand), shape_of(update)
    if len(sizes) != len(shape) or any(n > d for n, d in zip(sizes, shape)):
        raise TypeError(
            f"dynamic_update_slice update shape {sizes} must be of the operand's rank and fit in "
            f"its shape {shape}"
        )
    starts = _starts(operand, start_indices, sizes, allow_negative_indices, "dynamic_update_slice")
    return tnp.at(operand)[_index(starts, sizes)].set(update)


# -- associative_scan -------------------------------------------------------------------------


def _slice(x, start, stop, step, axis):
    index = [slice(None)] * len(shape_of(x))
    index[axis] = slice(start, stop, step)
    return x[tuple(index)] if isinstance(x, Boxed) else tnp.asarray(x)[tuple(index)]


def _interleave(a, b, axis):
    """[a0, b0, a1, b1, ...] along `axis` (`a` has as many elements as `b`, or one more)."""
    n_b = shape_of(b)[axis]
    pairs = tnp.stack([_slice(a, 0, n_b, 1, axis), b], axis=axis + 1)
    shape = list(shape_of(a))
    shape[axis] = 2 * n_b
    out = tnp.reshape(pairs, shape)
    if shape_of(a)[axis] > n_b:
        out = tnp.concatenate([out, _slice(a, n_b, None, 1, axis)], axis=axis)
    return out


def associative_scan(fn: Callable, elems, reverse: bool = False, axis: int = 0):
    """All prefix combinations `fn(...fn(fn(e0, e1), e2)..., ek)` along `axis` of the pytree
    `elems`, for an associative `fn`, as `jax.lax.associative_scan` (its parallel algorithm:
    O(log n) levels of slices, each combining many pairs in one call of `fn`)."""
    flat, structure = tree.flatten(elems)
    if not flat:
        return elems
    flat = [tnp.asarray(x) if not isinstance(x, Boxed) else x for x in flat]
    axis = axis % len(shape_of(flat[0])) if shape_of(flat[0]) else axis
    sizes = [shape_of(x)[axis] for x in flat]
    if len(set(sizes)) > 1:
        raise ValueError(
            "Array inputs to associative_scan must have the same first dimension. (saw: "
            f"{[shape_of(x) for x in flat]})"
        )
    if reverse:
        flat = [tnp.flip(x, axis) for x in flat]

    def combine(a, b):
        out = fn(tree.unflatten(structure, a), tree.unflatten(structure, b))
        return tree.leaves(out)

    def scan_(xs):
        n = shape_of(xs[0])[axis]
        if n < 2:
            return xs
        reduced = combine(
            [_slice(x, 0, n - 1, 2, axis) for x in xs], [_slice(x, 1, None, 2, axis) for x in xs]
        )
        odd = scan_(reduced)
        if n % 2 == 0:
            even = combine(
                [_slice(o, 0, shape_of(o)[axis] - 1, 1, axis) for o in odd],
                [_slice(x, 2, None, 2, axis) for x in xs],
            )
        else:
            even = combine(odd, [_slice(x, 2, None, 2, axis) for x in xs])
        even = [tnp.concatenate([_slice(x, 0, 1, 1, axis), e], axis=axis) for x, e in zip(xs, even)]
        return [_interleave(e, o, axis) for e, o in zip(even, odd)]

    out = scan_(flat)
    if reverse:
        out = [tnp.flip(x, axis) for x in out]
    return tree.unflatten(structure, out)
