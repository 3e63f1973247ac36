"""The rules of the host primitives `pure_callback` and `debug_print`
(`tracegrad.primitives.control`): a host NumPy function called on arrays, with no derivative
unless the user gives one, batched as JAX's `vmap_method` says; and a print of values, which
passes them (and their derivatives) through unchanged.
"""

from __future__ import annotations

import numpy as np

from tracegrad import tree
from tracegrad.core import bind
from tracegrad.ir.types import Aval, shape_of
from tracegrad.primitives import control as cf
from tracegrad.primitives.batching import batch_size, materialize
from tracegrad.primitives.shape import concatenate
from tracegrad.primitives.slicing import slice_static
from tracegrad.primitives.views import move_to_front, reshape
from tracegrad.transforms.control_common import zeros

# -- host primitives --------------------------------------------------------------------------


def callback_impl(*args, callback, results, vmap_method, jvp_rule, vjp_rule):
    outs = callback(*args)
    checked = []
    for k, (o, a) in enumerate(zip(outs, results)):
        arr = np.asarray(o)
        if arr.shape != a.shape or arr.dtype != a.dtype:
            if not isinstance(o, np.ndarray | np.generic) and arr.shape == a.shape:
                arr = np.asarray(o, a.dtype)  # a Python number: NumPy's value of the dtype
            else:
                raise TypeError(
                    f"pure_callback: the callback returned a value of shape {arr.shape} and dtype "
                    f"{arr.dtype} for result {k}, but result_shape_dtypes says {a.str_short()}"
                )
        checked.append(arr)
    return tuple(checked)


def callback_jvp(primals, tangents, *, out, callback, results, vmap_method, jvp_rule, vjp_rule):
    if jvp_rule is None:
        raise ValueError(
            "pure_callback: the callback has no derivative (tracegrad cannot see into host "
            "code); give one with pure_callback(..., jvp=...) to differentiate it in forward mode"
        )
    return jvp_rule(primals, tangents)


def callback_vjp(cotangent, *primals, out, callback, results, vmap_method, jvp_rule, vjp_rule):
    if vjp_rule is None:
        raise ValueError(
            "pure_callback: the callback has no derivative (tracegrad cannot see into host "
            "code); give one with pure_callback(..., vjp=...) to differentiate it in reverse mode"
        )
    cts = tuple(zeros(a) if c is None else c for c, a in zip(cotangent, results))
    return vjp_rule(cts, primals)


VMAP_METHODS = (
    "sequential",
    "sequential_unrolled",
    "expand_dims",
    "broadcast_all",
    "legacy_vectorized",
    None,
)


def callback_batch(args, dims, *, callback, results, vmap_method, jvp_rule, vjp_rule):
    size = batch_size(args, dims)
    params = dict(callback=callback, vmap_method=vmap_method, jvp_rule=jvp_rule, vjp_rule=vjp_rule)
    if vmap_method is None:
        raise NotImplementedError(
            "vmap is only supported for pure_callback when vmap_method is one of 'sequential', "
            "'sequential_unrolled', 'expand_dims', 'broadcast_all', or 'legacy_vectorized'. "
            "Got vmap_method=None."
        )
    batched = tuple(Aval((size, *a.shape), a.dtype) for a in results)
    if vmap_method in ("sequential", "sequential_unrolled"):
        rows = []
        for i in range(size):
            ex = [a if d is None else _take(a, d, i) for a, d in zip(args, dims)]
            rows.append(bind(cf.pure_callback_p, *ex, results=results, **params))
        outs = [
            concatenate([reshape(r[k], (1, *a.shape)) for r in rows], 0) if size else zeros(b)
            for k, (a, b) in enumerate(zip(results, batched))
        ]
        return tuple(outs), (0,) * len(results)
    new = []
    for a, d in zip(args, dims):
        if d is not None:
            new.append(move_to_front(a, d))
        elif vmap_method == "broadcast_all":
            new.append(materialize(a, None, size))
        else:  # expand_dims (and JAX's legacy_vectorized): a size-1 batch axis
            new.append(reshape(a, (1, *shape_of(a))))
    outs = bind(cf.pure_callback_p, *new, results=batched, **params)
    return tuple(outs), (0,) * len(results)


def _take(x, d: int, i: int):
    """`x` at index `i` of axis `d` (a static slice, the axis dropped)."""
    s = shape_of(x)
    starts = tuple(i if k == d else 0 for k in range(len(s)))
    limits = tuple(i + 1 if k == d else n for k, n in enumerate(s))
    return reshape(slice_static(x, starts, limits), s[:d] + s[d + 1 :])


def print_impl(*args, fmt, treedef):
    a, k = tree.unflatten(treedef, list(args))
    print(fmt.format(*a, **k))
    return tuple(args)


def print_batch(args, dims, *, fmt, treedef):
    out = bind(cf.debug_print_p, *args, fmt=fmt, treedef=treedef)
    cf.keep_effect(out)
    return tuple(out), tuple(dims)


__all__ = [
    "VMAP_METHODS",
    "callback_batch",
    "callback_impl",
    "callback_jvp",
    "callback_vjp",
    "print_batch",
    "print_impl",
]
