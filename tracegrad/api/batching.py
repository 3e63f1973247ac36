"""`vmap`: run a function written for one example over a batch.

`f` is traced once, abstractly, on one example's shapes; `batch_pass` then runs the graph on
the batched arguments, each node applying its primitive's batching rule (or the primitive
itself when nothing it reads is batched). On arrays this computes; on tracers it records, so
`vmap` composes with `grad`, `jvp`, `jit` and itself. As in JAX, Python control flow on
per-example values is not possible inside `vmap` (the values are abstract while tracing).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import optree

from tracegrad import tree
from tracegrad.api.common import name_of, trace_flat
from tracegrad.core import Tracer
from tracegrad.ir.types import Aval, aval_of
from tracegrad.primitives.batching import materialize
from tracegrad.primitives.views import move_axis
from tracegrad.transforms.vmap import batch_pass


def _axis_leaves(spec, value, what: str, fname: str) -> list:
    """One axis (int or None) per leaf of `value`, from `spec` (an int, None, or a pytree
    prefix of `value` whose leaves are ints or None)."""
    n = len(tree.leaves(value))
    if spec is None or isinstance(spec, int):
        return [spec] * n
    try:
        axes = optree.broadcast_prefix(spec, value, none_is_leaf=True, namespace=tree.NAMESPACE)
    except ValueError as err:
        raise ValueError(
            f"vmap({fname}): {what} {spec!r} does not match the structure of the value it "
            f"describes: {err}"
        ) from None
    leaves_with_none = optree.tree_leaves(value, none_is_leaf=True, namespace=tree.NAMESPACE)
    axes = [a for a, leaf in zip(axes, leaves_with_none) if leaf is not None]
    for a in axes:
        if a is not None and not isinstance(a, int):
            raise ValueError(f"vmap({fname}): {what} entries must be ints or None, got {a!r}")
    return axes


def _in_axes(in_axes, args, fname):
    if isinstance(in_axes, list):
        in_axes = tuple(in_axes)
    if isinstance(in_axes, tuple):
        if len(in_axes) != len(args):
            raise ValueError(
                f"vmap({fname}): in_axes must be an int, None, or a tuple with one entry per "
                f"positional argument, but got len(in_axes)={len(in_axes)} for "
                f"{len(args)} arguments"
            )
        return [
            a for spec, arg in zip(in_axes, args) for a in _axis_leaves(spec, arg, "in_axes", fname)
        ]
    if in_axes is not None and not isinstance(in_axes, int):
        raise ValueError(f"vmap({fname}): in_axes must be an int, None or a tuple, got {in_axes!r}")
    return [in_axes] * len(tree.leaves(tuple(args)))


def vmap(
    f: Callable, in_axes=0, out_axes=0, axis_name=None, axis_size: int | None = None
) -> Callable:
    """Vectorize `f` over a batch axis of its arguments (as `jax.vmap`).

    Args:
      f: a function of arrays (pytrees of them).
      in_axes: an int, None, or a tuple with one entry per positional argument, each an int,
        None or a pytree prefix of that argument; None means "not batched". Keyword arguments
        are batched along axis 0.
      out_axes: where the batch axis goes in each output (an int, None, or a pytree prefix).
      axis_name: JAX's name for collective operations over the batch axis; tracegrad has no
        collectives, so nothing refers to it (accepted, as JAX code passes it).
      axis_size: the batch size; needed when no argument is batched (in_axes all None: the
        outputs are then broadcast along a new axis of this size), and checked against the
        arguments' batch size otherwise.
    """
    fname = name_of(f)
    if axis_size is not None and (
        isinstance(axis_size, bool) or not isinstance(axis_size, int) or axis_size < 0
    ):
        raise TypeError(f"vmap({fname}): axis_size must be a non-negative int, got {axis_size!r}")

    @functools.wraps(f, updated=())  # not f.__dict__: a Jitted keeps its state there
    def vmapped(*args, **kwargs):
        flat, in_tree = tree.flatten((tuple(args), dict(kwargs)))
        axes = _in_axes(in_axes, args, fname) + [0] * len(tree.leaves(dict(kwargs)))
        sizes, avals, dims = [], [], []
        for i, (x, ax) in enumerate(zip(flat, axes)):
            aval = x.aval if isinstance(x, Tracer) else aval_of(x)
            if ax is None:
                avals.append(aval)
                dims.append(None)
                continue
            if not -aval.ndim <= ax < aval.ndim:
                raise ValueError(
                    f"vmap({fname}) was asked to map leaf {i} of its arguments along axis {ax}, "
                    f"which needs a rank of at least {ax + 1 if ax >= 0 else -ax}, but the value "
                    f"has shape {aval.shape}"
                )
            ax %= aval.ndim
            sizes.append((i, aval.shape, ax, aval.shape[ax]))
            avals.append(Aval(aval.shape[:ax] + aval.shape[ax + 1 :], aval.dtype))
            dims.append(ax)
        if not sizes and axis_size is None:
            raise ValueError(
                f"vmap({fname}) needs at least one batched argument (in_axes is None for all) "
                "or axis_size= to say how many copies to make"
            )
        if len({s for *_, s in sizes} | ({axis_size} if axis_size is not None else set())) > 1:
            shown = "; ".join(
                f"leaf {i} of shape {shape} mapped along axis {ax} has size {s}"
                for i, shape, ax, s in sizes
            )
            if axis_size is not None:
                shown = f"axis_size is {axis_size}; {shown}"
            raise ValueError(f"vmap({fname}) got inconsistent batch sizes: {shown}")
        size = sizes[0][3] if sizes else axis_size

        def flat_fn(*tracers):
            a, k = tree.unflatten(in_tree, tracers)
            return f(*a, **k)

        traced, out_tree = trace_flat(flat_fn, avals, concrete=False, name=fname)
        outs, out_dims = batch_pass(
            traced.graph, list(flat) + list(traced.captured), dims + [None] * len(traced.captured)
        )
        out_struct = tree.unflatten(out_tree, list(range(len(outs))))
        o_axes = _axis_leaves(out_axes, out_struct, "out_axes", fname)
        results = []
        for o, d, oa in zip(outs, out_dims, o_axes):
            if oa is None:
                if d is not None:
                    raise ValueError(
                        f"vmap({fname}): out_axes is None for an output that depends on the "
                        "batch; give it an axis"
                    )
                results.append(o)
                continue
            o = materialize(o, d, size)
            n = len(o.shape) if hasattr(o, "shape") else 0
            if not -n <= oa < n:
                raise ValueError(
                    f"vmap({fname}): out_axes {oa} is out of range for an output of rank {n}"
                )
            results.append(move_axis(o, 0, oa % n))
        return tree.unflatten(out_tree, results)

    return vmapped
