"""Full Jacobians and Hessians, each built as one batched pass over a basis with `vmap`.

`jacrev` pulls back every output basis vector through one `vjp` (a batched backward graph),
`jacfwd` pushes every input basis vector through `jvp`, and `hessian` is `jacfwd(jacrev(f))`.
Hessian-vector products need no Hessian: forward-over-reverse,
`jvp(grad(f), (x,), (v,))[1]`, costs about two gradients.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np

import tracegrad.numpy as tnp
from tracegrad import tree
from tracegrad.api.batching import vmap
from tracegrad.api.common import (
    argnums_tuple,
    check_float_inputs,
    check_output_dtype,
    name_of,
    per_argnum,
)
from tracegrad.api.forward import jvp
from tracegrad.api.reverse import vjp
from tracegrad.core import Tracer
from tracegrad.ir.types import aval_of, is_float


def _aval(x):
    return x.aval if isinstance(x, Tracer) else aval_of(x)


def _basis(avals) -> list[np.ndarray]:
    """Rows of the identity over all elements of `avals`, one stacked block per value:
    block k has shape (total,) + avals[k].shape."""
    sizes = [a.size for a in avals]
    total = sum(sizes)
    blocks, offset = [], 0
    for a, n in zip(avals, sizes):
        eye = np.zeros((total, n), a.strengthen().dtype)
        eye[np.arange(offset, offset + n), np.arange(n)] = 1
        blocks.append(eye.reshape((total,) + a.shape))
        offset += n
    return blocks


def _split_rows(stacked, avals) -> list:
    """Cut the leading axis of `stacked` into one piece per value of `avals`."""
    pieces, offset = [], 0
    for a in avals:
        pieces.append(stacked[offset : offset + a.size])
        offset += a.size
    return pieces


def _partial(f, args, kwargs, nums):
    def g(*diff):
        vals = list(args)
        for i, v in zip(nums, diff):
            vals[i] = v
        return f(*vals, **kwargs)

    return g


def _prepare(f, args, kwargs, argnums, fname: str, api: str, holomorphic: bool):
    """(differentiated args, f of those only, their tree, their avals, and `lay_out`, which
    puts per-argument blocks in argnums' order), checked. A repeated argnum is differentiated
    once (see `per_argnum`)."""
    nums = argnums_tuple(argnums, len(args), fname, api)
    check_float_inputs(args, nums, fname, api, holomorphic)
    unique = tuple(dict.fromkeys(nums))
    diff = tuple(args[i] for i in unique)
    in_flat, in_tree = tree.flatten(diff)

    def lay_out(blocks):
        return per_argnum(tuple(blocks), argnums, nums, unique)

    return diff, _partial(f, args, kwargs, unique), in_tree, [_aval(x) for x in in_flat], lay_out


def _check_float_outputs(out_flat, fname, api, holomorphic):
    for k, o in enumerate(out_flat):
        dtype = _aval(o).dtype
        if api == "jacrev":  # JAX's reverse-mode check: real outputs, complex if holomorphic
            check_output_dtype(dtype, api, holomorphic)
        elif holomorphic and dtype.kind != "c":
            raise TypeError(
                f"{api} with holomorphic=True requires outputs with complex dtype, but got "
                f"{dtype.name}."
            )
        if not is_float(dtype):
            raise TypeError(
                f"{api}({fname}) requires float outputs, but output leaf {k} has dtype "
                f"{_aval(o).dtype.name}"
            )


def jacrev(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable:
    """The Jacobian of `f` by reverse mode: one `vjp`, pulled back over all output basis
    vectors at once with `vmap`. Each block has shape `out.shape + in.shape`; the result
    nests the inputs' structure inside the outputs' (as `jax.jacrev`). Outputs must be real
    unless `holomorphic` (complex inputs and outputs; the blocks are then f'(z))."""
    fname = name_of(f)

    @functools.wraps(f, updated=())  # not f.__dict__: a Jitted keeps its state there
    def jac(*args, **kwargs):
        diff, g, in_tree, in_avals, lay_out = _prepare(
            f, args, kwargs, argnums, fname, "jacrev", holomorphic
        )
        if has_aux:
            out, vjp_fn, aux = vjp(g, *diff, has_aux=True)
        else:
            out, vjp_fn = vjp(g, *diff)
        out_flat, out_tree = tree.flatten(out)
        _check_float_outputs(out_flat, fname, "jacrev", holomorphic)
        out_avals = [_aval(o) for o in out_flat]
        rows = vmap(lambda *ct: vjp_fn(tree.unflatten(out_tree, ct)))(*_basis(out_avals))
        rows_flat = tree.leaves(rows)  # one (n_out_total,) + in.shape array per input leaf
        per_input = [_split_rows(r, out_avals) for r in rows_flat]
        blocks = []
        for k, oa in enumerate(out_avals):
            leaves = [
                tnp.reshape(per_input[j][k], oa.shape + ia.shape) for j, ia in enumerate(in_avals)
            ]
            sub = tree.unflatten(in_tree, leaves)
            blocks.append(lay_out(sub))
        result = tree.unflatten(out_tree, blocks)
        return (result, aux) if has_aux else result

    return jac


def jacfwd(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable:
    """The Jacobian of `f` by forward mode: `jvp` pushed over all input basis vectors at once
    with `vmap`. Blocks have shape `out.shape + in.shape`, nested as in `jacrev`. Inputs must
    be real unless `holomorphic` (complex inputs and outputs; the blocks are then f'(z))."""
    fname = name_of(f)

    @functools.wraps(f, updated=())  # not f.__dict__: a Jitted keeps its state there
    def jac(*args, **kwargs):
        diff, g, in_tree, in_avals, lay_out = _prepare(
            f, args, kwargs, argnums, fname, "jacfwd", holomorphic
        )

        def push(*t):
            tangents = tree.unflatten(in_tree, t)
            if has_aux:
                _, t_out, aux = jvp(g, diff, tangents, has_aux=True)
                return t_out, aux
            return jvp(g, diff, tangents)[1]

        # aux does not depend on the tangents: vmap returns it once (out_axes None), so `f`
        # runs once per call, as in JAX.
        pushed = vmap(push, out_axes=(0, None) if has_aux else 0)(*_basis(in_avals))
        cols, aux = pushed if has_aux else (pushed, None)
        cols_flat, out_tree = tree.flatten(cols)  # one (n_in_total,) + out.shape per output
        _check_float_outputs(cols_flat, fname, "jacfwd", holomorphic)
        blocks = []
        for c in cols_flat:
            out_shape = _aval(c).shape[1:]
            leaves = []
            for piece, ia in zip(_split_rows(c, in_avals), in_avals):
                # (in.size,) + out.shape -> out.shape + in.shape
                moved = tnp.moveaxis(piece, 0, -1)
                leaves.append(tnp.reshape(moved, out_shape + ia.shape))
            sub = tree.unflatten(in_tree, leaves)
            blocks.append(lay_out(sub))
        result = tree.unflatten(out_tree, blocks)
        return (result, aux) if has_aux else result

    return jac


def hessian(
    f: Callable,
    argnums: int | Sequence[int] = 0,
    has_aux: bool = False,
    holomorphic: bool = False,
) -> Callable:
    """The Hessian of a scalar `f`: `jacfwd(jacrev(f))`, forward-over-reverse (`holomorphic`
    passed to both, as `jax.hessian`)."""
    return jacfwd(
        jacrev(f, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic=holomorphic
    )
