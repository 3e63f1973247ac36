"""How rows of the op table draw their operands and params, write their text and bound
their output: each `draw(builder, x)` picks the other operands and the params for a first
operand `x`, or returns None when the row does not apply to it.
"""

from __future__ import annotations

import math

import numpy as np

from tracegrad.testing.row import Op, _product_slope, _Var

_MAX_SIZE = 256  # largest number of elements of an intermediate value: programs stay fast


def _dummy(v: _Var):
    return np.full(v.shape, 0.5, v.dtype)


def _try(op: Op, xs, params):
    """Shape and dtype of `op` on these operands (NumPy run on stand-ins), or None."""
    try:
        with np.errstate(all="ignore"):
            out = np.asarray(op.call(*(_dummy(x) for x in xs), **params))
    except (ValueError, IndexError, TypeError, np.exceptions.AxisError):
        return None
    return out.shape, out.dtype


def _unary(b, x):
    return [x], {}


def _fits(op, params=None):
    # `v` fits as the second operand of `op(x, v)` when NumPy accepts the pair
    return lambda x: lambda v: _try(op, [x, v], params or {}) is not None


def _binary(b, x):
    op = b.current_op
    return [x, b.partner(x, _fits(op)(x))], {}


def _bounded(limit):
    """A unary draw that applies only to values with |x| <= limit (exp, sinh, ...)."""

    def draw(b, x):
        return ([x], {}) if x.bound <= limit else None

    return draw


def _reduced_count(shape, axis) -> int:
    if axis is None:
        return math.prod(shape)
    axes = (axis,) if isinstance(axis, int) else axis
    return math.prod(shape[a] for a in axes)


def _reduction(*, nonempty=False, keepdims=True, tuple_=True):
    def draw(b, x):
        axis = b.axis(x.ndim, tuple_=tuple_)
        if nonempty and _reduced_count(x.shape, axis) == 0:
            return None
        params = {"axis": axis}
        if keepdims and b.boolean():
            params["keepdims"] = True
        return [x], params

    return draw


def _sum_bound(xs, p):
    return xs[0].bound * max(1, _reduced_count(xs[0].shape, p.get("axis")))


def _sum_slope_red(xs, p):
    return xs[0].slope * max(1, _reduced_count(xs[0].shape, p.get("axis")))


def _prod_slope(xs, p):
    n = max(1, _reduced_count(xs[0].shape, p.get("axis")))
    return n * max(1.0, xs[0].bound) ** (n - 1) * xs[0].slope


def _prod_bound(xs, p):
    return max(1.0, xs[0].bound) ** max(1, _reduced_count(xs[0].shape, p.get("axis")))


def _kw_text(fname, *, method=False, defaults=None):
    """`np.f(x, axis=1)` (or `x.f(axis=1)`), leaving out params equal to their default."""
    defaults = {"keepdims": False, **(defaults or {})}

    def text(names, params):
        kws = [f"{k}={v!r}" for k, v in params.items() if not (k in defaults and defaults[k] == v)]
        if method:
            return f"{names[0]}.{fname}({', '.join(kws)})"
        return f"np.{fname}({', '.join(list(names) + kws)})"

    return text


def _np_call(fname):
    return lambda *xs, **p: getattr(np, fname)(*xs, **p)


def _method_call(fname):
    return lambda x, **p: getattr(x, fname)(**p)


def _new_shape(b, shape):
    """A shape with the same number of elements as `shape`."""
    size = math.prod(shape)
    moves = ["flat", "reverse"]
    if len(shape) < 4:
        moves.append("insert1")
    if 1 in shape:
        moves.append("drop1")
    if len(shape) >= 2:
        moves.append("merge")
    if any(d % 2 == 0 and d > 0 for d in shape) and len(shape) < 4:
        moves.append("split")
    move = b.choice(moves)
    if move == "flat":
        return (size,)
    if move == "reverse":
        return tuple(reversed(shape))
    if move == "insert1":
        k = b.integer(0, len(shape))
        return shape[:k] + (1,) + shape[k:]
    if move == "drop1":
        k = b.choice([i for i, d in enumerate(shape) if d == 1])
        return shape[:k] + shape[k + 1 :]
    if move == "merge":
        k = b.integer(0, len(shape) - 2)
        return shape[:k] + (shape[k] * shape[k + 1],) + shape[k + 2 :]
    k = b.choice([i for i, d in enumerate(shape) if d % 2 == 0 and d > 0])
    return shape[:k] + (2, shape[k] // 2) + shape[k + 1 :]


def _reshape(b, x):
    return [x], {"shape": _new_shape(b, x.shape)}


def _transpose_perm(b, x):
    return [x], {"axes": tuple(b.draw(b.st.permutations(range(x.ndim))))}


def _broadcast_target(b, x):
    shape = x.shape
    ones = [i for i, d in enumerate(shape) if d == 1]
    if ones and b.boolean():
        k = b.choice(ones)
        shape = shape[:k] + (b.side(),) + shape[k + 1 :]
    elif len(shape) < 4:
        shape = (b.side(),) + shape
    return [x], {"shape": shape}


def _expand_dims(b, x):
    if x.ndim >= 4:
        return None
    return [x], {"axis": b.integer(-x.ndim - 1, x.ndim)}


def _squeeze(b, x):
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    if not ones:
        return None
    return [x], {"axis": b.choice(ones)}


def _two_axes(b, x):
    if x.ndim < 2:
        return None
    return [x], {"a": b.integer(-x.ndim, x.ndim - 1), "b": b.integer(-x.ndim, x.ndim - 1)}


def _join(stack):
    def draw(b, x):
        if x.ndim == 0 and not stack:
            return None
        n = x.ndim + 1 if stack else x.ndim
        params = {"axis": b.integer(-n, n - 1)}
        op = b.current_op

        def fresh():
            if stack:
                return x.shape
            ax = params["axis"] % x.ndim
            return x.shape[:ax] + (b.side(),) + x.shape[ax + 1 :]

        return [x, b.partner(x, _fits(op, params)(x), fresh)], params

    return draw


def _join_text(fname):
    return lambda names, p: f"np.{fname}([{', '.join(names)}], axis={p['axis']})"


def _flip(b, x):
    return [x], {"axis": b.axis(x.ndim, tuple_=x.ndim > 0)}


# -- indexing ---------------------------------------------------------------------------------


def _slice_text(s: slice) -> str:
    text = ("" if s.start is None else str(s.start)) + ":" + ("" if s.stop is None else str(s.stop))
    if s.step is not None:
        text += f":{s.step}"
    return text


def _index_text(index) -> str:
    parts = []
    for item in index:
        if item is None:
            parts.append("None")
        elif item is Ellipsis:
            parts.append("...")
        elif isinstance(item, slice):
            parts.append(_slice_text(item))
        elif isinstance(item, np.ndarray):
            dtype = "" if item.size else ", dtype=np.intp"  # an empty list would be float
            parts.append(f"np.array({item.tolist()!r}{dtype})")
        else:
            parts.append(str(item))
    if not parts:
        return "()"
    return ", ".join(parts)


def _basic_index(b, x, *, arrays=False):
    """A basic index (ints, slices with any step, None, Ellipsis) for an array of shape x."""
    items = []
    n_axes = b.integer(0, x.ndim)
    array_used = False
    for d in x.shape[:n_axes]:
        kinds = ["slice", "full"] + (["int"] if d > 0 else [])
        if arrays and not array_used:
            kinds.append("array")
        kind = b.choice(kinds)
        if kind == "int":
            items.append(b.integer(-d, d - 1))
        elif kind == "full":
            items.append(slice(None))
        elif kind == "array":
            array_used = True
            n = b.integer(0, 3) if d > 0 else 0
            idx = [b.integer(-d, d - 1) for _ in range(n)]
            items.append(np.array(idx, dtype=np.intp))
        else:
            start = b.choice([None, *range(-d - 1, d + 2)])
            stop = b.choice([None, *range(-d - 1, d + 2)])
            items.append(slice(start, stop, b.choice([None, 1, 2, -1, -2])))
    if b.boolean() and len(items) < x.ndim:
        items.append(Ellipsis)
    if x.ndim < 4 and b.boolean():
        items.insert(b.integer(0, len(items)), None)
    return [x], {"index": tuple(items)}


def _array_index(b, x):
    if x.ndim == 0:
        return None
    r = _basic_index(b, x, arrays=True)
    if not any(isinstance(i, np.ndarray) for i in r[1]["index"]):
        return None
    return r


def _take(b, x):
    if x.ndim == 0:
        return None
    axis = b.integer(-x.ndim, x.ndim - 1)
    d = x.shape[axis]
    n = b.integer(0, 3) if d > 0 else 0
    return [x], {"indices": [b.integer(-d, d - 1) for _ in range(n)], "axis": axis}


# -- linear algebra ---------------------------------------------------------------------------


def _matmul(b, x):
    if x.ndim == 0:
        return None
    op = b.current_op
    n = x.shape[-1]

    def fresh():
        return (n,) if b.boolean() else (n, b.side())

    y = b.partner(x, _fits(op)(x), fresh)
    return None if y is None else ([x, y], {})


def _matmul_bound(xs, p):
    return xs[0].bound * xs[1].bound * max(1, xs[0].shape[-1])


def _matmul_slope(xs, p):
    return max(1, xs[0].shape[-1]) * _product_slope(xs, p)


def _dot(b, x):
    if x.ndim not in (1, 2):
        return None
    op = b.current_op
    n = x.shape[-1]
    y = b.partner(
        x,
        lambda v: v.ndim in (1, 2) and _fits(op)(x)(v),
        lambda: (n,) if b.boolean() else (n, b.side()),
    )
    return None if y is None else ([x, y], {})


def _einsum_matmul(b, x):
    if x.ndim != 2:
        return None
    op = b.current_op
    y = b.partner(x, lambda v: v.ndim == 2 and _fits(op)(x)(v), lambda: (x.shape[1], b.side()))
    return None if y is None else ([x, y], {})


def _einsum_inner(b, x):
    if x.ndim == 0:
        return None
    op = b.current_op
    y = b.partner(x, lambda v: v.shape == x.shape and _fits(op)(x)(v), lambda: x.shape)
    return None if y is None else ([x, y], {})


# -- where ------------------------------------------------------------------------------------


def _gram_text(names, p):
    return f"{names[0]} @ np.swapaxes({names[0]}, -1, -2)"


def _gram_call(x):
    return x @ np.swapaxes(x, -1, -2)


def _gram_bound(xs, p):
    return xs[0].bound ** 2 * max(1, xs[0].shape[-1])


def _gram_slope(xs, p):
    return 2 * max(1, xs[0].shape[-1]) * xs[0].bound * xs[0].slope


def _einsum_outer(b, x):
    if x.ndim != 1:
        return None
    y = b.partner(
        x, lambda v: v.ndim == 1 and v.shape[0] * x.shape[0] <= _MAX_SIZE, lambda: (b.side(),)
    )
    return None if y is None else ([x, y], {})


def _where_mask(b, x):
    y = b.partner(x, lambda v: _broadcastable(x.shape, v.shape))
    shape = np.broadcast_shapes(x.shape, y.shape)
    if not shape:
        return None
    return [x, y], {"n": shape[-1]}


def _broadcastable(s1, s2) -> bool:
    try:
        np.broadcast_shapes(s1, s2)
    except ValueError:
        return False
    return True


def _log_bound(xs, p):
    return max(abs(math.log(0.5)), math.log(xs[0].bound ** 2 + 0.5))
