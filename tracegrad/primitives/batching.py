"""Helpers for batching rules: the batch size, giving a value a batch axis, and the rule of an
elementwise primitive.

A batching rule receives each argument with its batch axis (`dims[i]`, None for an
unbatched argument) and returns the output with its own batch axis. Most rules move batch
axes to the front, apply the primitive once to the whole batch, and report axis 0. Unbatched
arguments stay unbatched whenever broadcasting allows: vmap never copies a value just to
give it a batch axis it does not need. (`move_to_front` and `move_axis` are in `views`.)
"""

from __future__ import annotations

import weakref

from tracegrad.core import bind
from tracegrad.ir.types import shape_of
from tracegrad.primitives.broadcasting import broadcast_to
from tracegrad.primitives.views import move_to_front, reshape


def batch_size(args, dims) -> int:
    for a, d in zip(args, dims):
        if d is not None:
            return shape_of(a)[d]
    raise ValueError("batch_size: no argument is batched")


def materialize(x, dim: int | None, size: int):
    """`x` with a batch axis at the front: moved there, or broadcast in (copy-free view)."""
    if dim is not None:
        return move_to_front(x, dim)
    s = shape_of(x)
    return broadcast_to(reshape(x, (1,) + s), (size,) + s)


def elementwise_batch(prim):
    """The batching rule of an elementwise primitive with NumPy broadcasting (what
    `Primitive(..., elementwise=True)` gets when it has no rule of its own).

    Batched arguments get their batch axis first and size-1 axes so that their per-example
    axes line up with the output's; unbatched arguments broadcast as they are. The rule holds
    the primitive weakly: a primitive must not keep itself alive through its own rule.
    """
    ref = weakref.ref(prim)

    def batch(args, dims, **params):
        ranks = [len(shape_of(a)) - (d is not None) for a, d in zip(args, dims)]
        out_rank = max(ranks)
        new_args = []
        for a, d, r in zip(args, dims, ranks):
            if d is not None:
                a = move_to_front(a, d)
                if r < out_rank:
                    s = shape_of(a)
                    a = reshape(a, s[:1] + (1,) * (out_rank - r) + s[1:])
            new_args.append(a)
        return bind(ref(), *new_args, **params), 0

    return batch
