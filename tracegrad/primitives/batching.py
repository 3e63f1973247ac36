"""Helpers for batching rules: where a value's batch axis is, and moving it.

A batching rule receives each argument with its batch axis (`dims[i]`, None for an
unbatched argument) and returns the output with its own batch axis. Most rules move batch
axes to the front, apply the primitive once to the whole batch, and report axis 0. Unbatched
arguments stay unbatched whenever broadcasting allows: vmap never copies a value just to
give it a batch axis it does not need.
"""

from __future__ import annotations

from tracegrad.primitives.broadcasting import shape_of


def move_to_front(x, dim: int | None):
    """`x` with its batch axis first (a transpose, so a view); unbatched values unchanged."""
    if dim is None or dim == 0:
        return x
    from tracegrad.primitives import shape

    n = len(shape_of(x))
    perm = (dim,) + tuple(i for i in range(n) if i != dim)
    return shape.transpose(x, perm)


def move_axis(x, src: int, dst: int):
    """`np.moveaxis(x, src, dst)` as a transpose."""
    if src == dst:
        return x
    from tracegrad.primitives import shape

    n = len(shape_of(x))
    order = [i for i in range(n) if i != src]
    order.insert(dst, src)
    return shape.transpose(x, tuple(order))


def batch_size(args, dims) -> int:
    for a, d in zip(args, dims):
        if d is not None:
            return shape_of(a)[d]
    raise ValueError("batch_size: no argument is batched")


def materialize(x, dim: int | None, size: int):
    """`x` with a batch axis at the front: moved there, or broadcast in (copy-free view)."""
    if dim is not None:
        return move_to_front(x, dim)
    from tracegrad.primitives import shape

    s = shape_of(x)
    return shape.broadcast_to(shape.reshape(x, (1,) + s), (size,) + s)


def elementwise_batch(prim):
    """The batching rule of an elementwise primitive with NumPy broadcasting.

    Batched arguments get their batch axis first and size-1 axes so that their per-example
    axes line up with the output's; unbatched arguments broadcast as they are.
    """
    from tracegrad.core import bind

    def batch(args, dims, **params):
        ranks = [len(shape_of(a)) - (d is not None) for a, d in zip(args, dims)]
        out_rank = max(ranks)
        new_args = []
        for a, d, r in zip(args, dims, ranks):
            if d is None:
                new_args.append(a)
                continue
            a = move_to_front(a, d)
            if r < out_rank:
                from tracegrad.primitives import shape

                s = shape_of(a)
                a = shape.reshape(a, s[:1] + (1,) * (out_rank - r) + s[1:])
            new_args.append(a)
        return bind(prim, *new_args, **params), 0

    return batch
