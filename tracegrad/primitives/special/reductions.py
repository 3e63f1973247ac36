"""`scipy.special.logsumexp` as two primitives (with and without `return_sign`): SciPy's own
call, so its values, dtypes and edge cases are SciPy's; the derivative is the softmax, b
exp(a - out), taken as 0 where a whole slice sums to zero.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import Primitive, per_input
from tracegrad.ir.primitive import rule_for as _rule_for
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives.axes import check_axes, reduced_shape
from tracegrad.primitives.broadcasting import (
    broadcast_shapes,
    broadcast_to,
    keep_axes,
    sum,  # noqa: A004 - the sum primitive
    unbroadcast,
)
from tracegrad.primitives.series import of_function
from tracegrad.primitives.shape import ascontiguousarray
from tracegrad.primitives.special._base import (
    _call_text,
    _real_only,
    _scipy,
    exp,
    log,
    where,
)
from tracegrad.primitives.views import move_to_front, reshape

# scipy.special.logsumexp(a, axis, b, keepdims, return_sign) itself, on `a` (and `b`), with
# `axis` a sorted tuple of axes of their broadcast shape (at least 1-d: SciPy makes a 0-d `a`
# 1-d). Its derivative is the softmax: d out / d a = b exp(a - out) sign, d out / d b =
# exp(a - out) sign. Where the sum is 0 (out = -inf: every term is exp(-inf) or has weight 0)
# the weights are taken as 0, so an all -inf slice gives a zero gradient, not NaN.

_LSE = "scipy.special:logsumexp"


def logsumexp(a, b=None, *, axis, keepdims, return_sign=False):
    prim = logsumexp_sign_p if return_sign else logsumexp_p
    args = (a,) if b is None else (a, b)
    return bind(prim, *args, axis=tuple(axis), keepdims=bool(keepdims))


def _lse_base(shapes) -> tuple[int, ...]:
    return broadcast_shapes("logsumexp", *shapes) or (1,)


@functools.lru_cache(maxsize=256)
def _lse_dtypes(kinds: tuple, sign: bool):
    """The result dtype(s) of SciPy's logsumexp for inputs of these (dtype, weak) kinds (it
    promotes a and b, Python scalars weakly, and makes them floating), read off a call."""
    args = [d.type(1).item() if weak else np.ones((1,), d) for d, weak in kinds]
    b = args[1] if len(args) > 1 else None
    out = _scipy(_LSE)(args[0], b=b, return_sign=sign)
    return tuple(np.asarray(o).dtype for o in out) if sign else np.asarray(out).dtype


def _lse_shape(sign: bool):
    def shape(*avals: Aval, axis, keepdims):
        if len(avals) not in (1, 2):
            raise ValueError(f"logsumexp: takes a (and b), got {len(avals)} arrays")
        base = _lse_base([a.shape for a in avals])
        check_axes("logsumexp", Aval(base, avals[0].dtype), axis)
        out_shape = reduced_shape(base, axis, keepdims)
        if not axis and 0 in base:  # SciPy's `shape[axis] = 1` with axis=() sets every axis
            out_shape = (1,) * len(base)
        dtypes = _lse_dtypes(tuple((a.dtype, a.weak_type) for a in avals), sign)
        if sign:
            return tuple(Aval(out_shape, d) for d in dtypes)
        return Aval(out_shape, dtypes)

    return shape


def _lse_impl(sign: bool):
    def impl(*args, axis, keepdims):
        b = args[1] if len(args) > 1 else None
        return _scipy(_LSE)(args[0], axis=axis, b=b, keepdims=keepdims, return_sign=sign)

    return impl


def _lse_emit(sign: bool):
    def emit(*names, axis, keepdims):
        b = names[1] if len(names) > 1 else "None"
        kwargs = f", axis={axis!r}, b={b}, keepdims={keepdims!r}, return_sign={sign!r}"
        return _call_text(_LSE, names[:1], kwargs)

    return emit


def _lse_weights(primals, out, axis, keepdims):
    """(d out / d a, d out / d b), each of the inputs' broadcast shape."""
    sign = isinstance(out, tuple)
    o, s = out if sign else (out, None)
    _real_only("scipy.special.logsumexp", *primals)
    base = _lse_base([shape_of(p) for p in primals])
    o = keep_axes(o, base, axis, keepdims)
    empty = ew.equal(o, -math.inf)
    w = where(empty, 0.0, exp(primals[0] - where(empty, 0.0, o)))
    if s is not None:
        w = w * keep_axes(s, base, axis, keepdims)
    wa = w if len(primals) == 1 else w * primals[1]
    return _broadcast_to_shape(wa, base), _broadcast_to_shape(w, base)


def _broadcast_to_shape(x, shape):
    return x if shape_of(x) == shape else broadcast_to(x, shape)


def _lse_jvp(primals, tangents, *, out, axis, keepdims):
    if all(t is None for t in tangents):
        return (None, None) if isinstance(out, tuple) else None
    base = _lse_base([shape_of(p) for p in primals])
    o = out[0] if isinstance(out, tuple) else out
    if 0 in base:  # no terms: a constant
        total = np.zeros(shape_of(o), dtype_of(o))
    else:
        weights = _lse_weights(primals, out, axis, keepdims)
        total = None
        for t, w in zip(tangents, weights):
            if t is not None:
                term = t * w
                total = term if total is None else total + term
        total = sum(_broadcast_to_shape(total, base), axis, keepdims)
    return (total, None) if isinstance(out, tuple) else total


def _lse_vjp(i):
    def rule(bar, *primals, out, axis, keepdims):
        x = primals[i]
        bar = bar[0] if isinstance(out, tuple) else bar
        if bar is None or not carries_derivative(x):
            return None
        base = _lse_base([shape_of(p) for p in primals])
        if 0 in base:  # no terms
            return np.zeros(shape_of(x), dtype_of(x))
        weights = _lse_weights(primals, out, axis, keepdims)
        return unbroadcast(keep_axes(bar, base, axis, keepdims) * weights[i], shape_of(x))

    return rule


def _lse_taylor(primals, series_in, *, out, axis, keepdims):
    # log(sign sum(b exp(a - out))) + out, with the primal output held fixed: the sum is 1 at
    # t = 0, so its log's series is the output's; an empty slice (out = -inf) sums to 1
    # instead (a constant). The sign is piecewise constant: no series.
    sign = isinstance(out, tuple)
    base = _lse_base([shape_of(p) for p in primals])
    if 0 in base:
        return (None, None) if sign else None
    o, s = out if sign else (out, None)
    empty = ew.equal(o, -math.inf)
    shift = keep_axes(where(empty, 0.0, o), base, axis, keepdims)

    def shifted_log(*xs):
        w = exp(xs[0] - shift)
        w = _broadcast_to_shape(w if len(xs) == 1 else w * xs[1], base)
        total = sum(w, axis, keepdims)
        return log(where(empty, 1.0, total if s is None else total * s))

    terms = of_function(shifted_log, primals, series_in)
    return (terms, None) if sign else terms


def _lse_batch(prim):
    sign = prim.multiple_results

    def batch(args, dims, *, axis, keepdims):
        ranks = [len(shape_of(a)) - (d is not None) for a, d in zip(args, dims)]
        rank = max(max(ranks), 1)
        moved = []
        for a, d, r in zip(args, dims, ranks):
            if d is not None:
                # C order, so SciPy's sums add each example's terms as a loop over them would
                a = ascontiguousarray(move_to_front(a, d))
                s = shape_of(a)
                a = reshape(a, s[:1] + (1,) * (rank - r) + s[1:])
            moved.append(a)
        out = bind(prim, *moved, axis=tuple(k + 1 for k in axis), keepdims=keepdims)
        return out, ((0, 0) if sign else 0)

    return batch


def _logsumexp_primitive(name: str, sign: bool) -> Primitive:
    return Primitive(
        name,
        impl=_lse_impl(sign),
        shape=_lse_shape(sign),
        jvp=_lse_jvp,
        vjp=per_input(_lse_vjp),
        batch=_rule_for(_lse_batch),
        emit=_lse_emit(sign),
        multiple_results=sign,
        taylor=_lse_taylor,
    )


logsumexp_p = _logsumexp_primitive("scipy.special.logsumexp", False)
logsumexp_sign_p = _logsumexp_primitive("scipy.special.logsumexp_sign", True)


PRIMITIVES = (logsumexp_p, logsumexp_sign_p)
