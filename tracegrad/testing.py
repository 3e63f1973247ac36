"""Testing helpers: random NumPy programs, bitwise comparison, and finite-difference checks.

`programs()` draws whole random programs whose `fn` calls NumPy directly, so running it on
arrays is an oracle independent of tracegrad; `run_traced` runs the same program through
`make_graph`. `check_grads` compares tracegrad's derivatives with central finite differences,
as `jax.test_util.check_grads` does. Hypothesis is imported only by the functions that build
strategies, so it stays a test dependency.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence

import attrs
import numpy as np

__all__ = [
    "OPS",
    "Op",
    "InputSpec",
    "Program",
    "assert_bitwise_equal",
    "available_ops",
    "check_grads",
    "numerical_jvp",
    "programs",
    "run_numpy",
    "run_traced",
]

# =============================================================================================
# Random programs
# =============================================================================================

_CAP = 1e4  # largest magnitude an intermediate value may reach: outputs stay finite
_MAX_SIZE = 256  # largest number of elements of an intermediate value: programs stay fast
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


@attrs.frozen
class InputSpec:
    """One argument of a program: shape, dtype and the interval its values are drawn from."""

    shape: tuple[int, ...] = attrs.field(converter=tuple)
    dtype: np.dtype = attrs.field(converter=np.dtype)
    lo: float = -2.0
    hi: float = 2.0

    def strategy(self):
        """A hypothesis strategy of arrays in the domain."""
        from hypothesis import strategies as st
        from hypothesis.extra import numpy as hnp

        elems = st.floats(
            self.lo, self.hi, allow_nan=False, allow_infinity=False, width=self.dtype.itemsize * 8
        )
        return hnp.arrays(self.dtype, self.shape, elements=elems)

    def example(self, rng: np.random.Generator) -> np.ndarray:
        return rng.uniform(self.lo, self.hi, self.shape).astype(self.dtype)


@attrs.frozen
class _Var:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    bound: float  # |value| <= bound for every input in the domain
    slope: float = 1.0  # |derivative along any direction with entries in [-1, 1]| <= slope

    @property
    def ndim(self) -> int:
        return len(self.shape)


@attrs.frozen
class _Step:
    out: str
    op: Op
    args: tuple[str, ...]
    params: dict = attrs.field(eq=False)
    dtype: np.dtype = None  # of the output
    arg_shapes: tuple = ()  # of the operands


@attrs.frozen(eq=False, repr=False)
class Program:
    """A random NumPy program: `fn(*arrays)` calls NumPy directly; `source` is the same program
    as Python text (`exec` it with `np` in scope to get a function `program`)."""

    inputs: tuple[InputSpec, ...]
    steps: tuple[_Step, ...]
    input_names: tuple[str, ...]
    outputs: tuple[str, ...]
    scalar_output: bool

    @property
    def ops(self) -> tuple[str, ...]:
        """The names of the table rows the program uses, in order."""
        return tuple(s.op.name for s in self.steps)

    def fn(self, *args):
        if len(args) != len(self.inputs):
            raise TypeError(f"program takes {len(self.inputs)} arguments, got {len(args)}")
        env = dict(zip(self.input_names, args))
        for s in self.steps:
            env[s.out] = s.op.call(*(env[a] for a in s.args), **s.params)
        outs = [env[n] for n in self.outputs]
        if self.scalar_output:
            total = np.sum(outs[0])
            for o in outs[1:]:
                total = total + np.sum(o)
            return total
        return outs[0] if len(outs) == 1 else tuple(outs)

    @property
    def source(self) -> str:
        lines = [
            f"# {n}: {s.dtype.name}{list(s.shape)} in [{s.lo}, {s.hi}]"
            for n, s in zip(self.input_names, self.inputs)
        ]
        lines.append(f"def program({', '.join(self.input_names)}):")
        for s in self.steps:
            lines.append(f"    {s.out} = {s.op.render(s.args, s.params)}")
        if self.scalar_output:
            ret = " + ".join(f"np.sum({n})" for n in self.outputs)
        else:
            ret = ", ".join(self.outputs)
        lines.append(f"    return {ret}")
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return "Program:\n" + self.source

    def _repr_pretty_(self, printer, cycle) -> None:  # hypothesis' and IPython's printer
        printer.text(repr(self))

    @property
    def least_precise_dtype(self) -> np.dtype:
        """The least precise float dtype of any input or intermediate value."""
        dts = [s.dtype for s in self.inputs] + [s.dtype for s in self.steps]
        return max(dts, key=lambda d: np.finfo(d).eps)

    @property
    def grad_tolerances(self) -> dict:
        """`atol`/`rtol` for `check_grads`: float32 ones if any value is float32 (an
        `astype` inside a float64 program loses precision check_grads cannot see)."""
        tol = _DEFAULT_TOL[self.least_precise_dtype]
        return {"atol": tol, "rtol": tol}

    @property
    def avals(self):
        from tracegrad.ir.types import Aval

        return [Aval(s.shape, s.dtype) for s in self.inputs]

    def inputs_strategy(self):
        """A hypothesis strategy of argument tuples, every value inside its input's domain."""
        from hypothesis import strategies as st

        return st.tuples(*(s.strategy() for s in self.inputs))

    def draw_inputs(self, data) -> list[np.ndarray]:
        """Arguments drawn with hypothesis' `st.data()` object."""
        return list(data.draw(self.inputs_strategy(), label="program inputs"))

    def example_inputs(self, seed: int = 0) -> list[np.ndarray]:
        """Arguments drawn from NumPy's generator (no hypothesis needed)."""
        rng = np.random.default_rng(seed)
        return [s.example(rng) for s in self.inputs]


def _same_bound(xs, p):
    return max(x.bound for x in xs)


def _const_bound(c):
    return lambda xs, p: c


def _same_slope(xs, p):
    return max(x.slope for x in xs)


def _sum_slope(xs, p):
    return sum(x.slope for x in xs)


def _product_slope(xs, p):
    return xs[1].bound * xs[0].slope + xs[0].bound * xs[1].slope


def _quotient_slope(xs, p):
    # x / (1 + y*y) and arctan2(x, 1 + y*y): |d/dx| <= 1, |d/dy| <= 0.65 |x|
    return xs[0].slope + 0.65 * xs[0].bound * xs[1].slope


def _chain(deriv):
    """Slope of f(x) for a unary f with |f'| <= deriv(bound of x)."""
    return lambda xs, p: deriv(xs[0].bound) * xs[0].slope


@attrs.frozen(eq=False, repr=False)
class Op:
    """One row of the op table.

    `call(*operands, **params)` runs the operation on values (NumPy, called directly) and
    `text` writes it: a format string over the operand names (`{0}`, `{1}`) and params, or
    a callable `(names, params) -> str`. `draw(builder, x)` picks the other operands and the
    params for a first operand `x` (or returns None when the row does not apply to `x`);
    `bound(operands, params)` bounds the output's magnitude and `slope(operands, params)`
    its derivative's (along directions with entries in [-1, 1]); `linear` rows (sums, shapes,
    indexing) may take operands of any slope, the others only up to the program's
    `max_slope`, so finite differences resolve smooth programs. `needs` lists the
    `tracegrad.numpy` names the row uses: a row is offered only when all are exported.
    `smooth=False` marks rows with kinks, excluded from programs meant for differentiation.
    """

    name: str
    needs: tuple[str, ...]
    text: object
    call: Callable
    draw: Callable = None
    bound: Callable = _same_bound
    smooth: bool = True
    slope: Callable = _same_slope
    linear: bool = False

    def __repr__(self) -> str:
        return f"Op({self.name})"

    def render(self, names, params) -> str:
        if callable(self.text):
            return self.text(names, params)
        return self.text.format(*names, **params)

    def available(self, namespace) -> bool:
        return all(hasattr(namespace, n) for n in self.needs)


# -- operand and parameter drawing ------------------------------------------------------------


class _Builder:
    """The state of one program being drawn: the pool of variables and the inputs."""

    def __init__(self, draw, st, *, max_inputs, allow_size_zero, max_side, dtype_policy, max_slope):
        self.draw = draw
        self.st = st
        self.max_inputs = max_inputs
        self.min_side = 0 if allow_size_zero else 1
        self.max_side = max_side
        self.dtype_policy = dtype_policy
        self.max_slope = max_slope
        self.pool: list[_Var] = []
        self.current_op: Op | None = None  # the row being drawn (its draw may try it out)
        self.inputs: list[InputSpec] = []
        self.input_names: list[str] = []

    def integer(self, lo, hi, label=None) -> int:
        return self.draw(self.st.integers(lo, hi), label=label)

    def choice(self, seq):
        return self.draw(self.st.sampled_from(list(seq)))

    def boolean(self) -> bool:
        return self.draw(self.st.booleans())

    def side(self) -> int:
        return self.integer(self.min_side, self.max_side)

    def input_dtype(self) -> np.dtype:
        if self.dtype_policy == "mixed":
            return self.choice(_FLOATS)
        return self.dtype_policy

    def new_input(self, shape) -> _Var:
        spec = InputSpec(shape, self.input_dtype())
        name = f"x{len(self.inputs)}"
        self.inputs.append(spec)
        self.input_names.append(name)
        var = _Var(name, spec.shape, spec.dtype, max(abs(spec.lo), abs(spec.hi)))
        self.pool.append(var)
        return var

    def pick(self, cands: list[_Var]) -> _Var:
        # shrinks towards the most recent variable: long chains stay readable
        return cands[-1 - self.integer(0, len(cands) - 1)]

    def partner(self, x: _Var, fits: Callable, fresh: Callable | None = None) -> _Var | None:
        """A second operand for `x`: a variable `v` of the pool with `fits(v)`, or a new
        input of shape `fresh()` while the program may take more inputs."""
        cands = [v for v in self.pool if fits(v)]
        if (
            fresh is not None
            and len(self.inputs) < self.max_inputs
            and (not cands or self.boolean())
        ):
            shape = fresh()
            if shape is not None:
                return self.new_input(shape)
        return self.pick(cands) if cands else None

    def axis(self, ndim: int, *, none=True, tuple_=True):
        """An `axis` argument: None, an int (maybe negative) or a tuple of distinct ints."""
        kinds = (["none"] if none or ndim == 0 else []) + (["int"] if ndim else [])
        kinds += ["tuple"] if tuple_ and ndim else []
        kind = self.choice(kinds)
        if kind == "none":
            return None
        if kind == "int":
            return self.integer(-ndim, ndim - 1)
        axes = self.draw(self.st.lists(self.st.integers(0, ndim - 1), unique=True, max_size=ndim))
        return tuple(axes)


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


# -- integer operands -------------------------------------------------------------------------
# A float value meets an integer operand: a Python int, a NumPy integer scalar, or an integer
# array, on either side, for every binary ufunc. (Forward mode once divided by an integer
# with `np.reciprocal`, which is integer division; these rows keep that class of bug found.)
# Each entry: the integers the operand may take, the text with {x} for the float value and
# {k} for the integer operand, and bound / slope of the result from x's bound b, slope s and
# the largest |k|.

_INT_KINDS = ("int", "np.int64", "np.int32", "array")
# fmt: off
_INT_FORMS = {
    # name: (integers, text, bound(b, k), slope(b, s, k), smooth)
    "add":        ((-3, 3), "{x} + {k}", lambda b, k: b + k, lambda b, s, k: s, True),
    "radd":       ((-3, 3), "{k} + {x}", lambda b, k: b + k, lambda b, s, k: s, True),
    "subtract":   ((-3, 3), "{x} - {k}", lambda b, k: b + k, lambda b, s, k: s, True),
    "rsubtract":  ((-3, 3), "{k} - {x}", lambda b, k: b + k, lambda b, s, k: s, True),
    "multiply":   ((-3, 3), "{x} * {k}", lambda b, k: b * k, lambda b, s, k: s * k, True),
    "rmultiply":  ((-3, 3), "{k} * {x}", lambda b, k: b * k, lambda b, s, k: s * k, True),
    "divide":     ((1, 3), "{x} / {k}", lambda b, k: b, lambda b, s, k: s, True),
    "rdivide":    ((1, 3), "{k} / (1.0 + {x} * {x})", lambda b, k: k,
                   lambda b, s, k: k * s, True),
    "power":      ((2, 3), "np.power({x}, {k})", lambda b, k: b**k,
                   lambda b, s, k: k * b ** (k - 1) * s, True),
    "rpower":     ((1, 2), "np.power({k}, {x})", lambda b, k: k**b,
                   lambda b, s, k: k**b * s, True),
    "arctan2":    ((1, 3), "np.arctan2({x}, {k})", lambda b, k: 1.6, lambda b, s, k: s, True),
    "rarctan2":   ((1, 3), "np.arctan2({k}, 1.0 + {x} * {x})", lambda b, k: 1.6,
                   lambda b, s, k: b * s, True),
    "hypot":      ((1, 3), "np.hypot({x}, {k})", lambda b, k: b + k, lambda b, s, k: s, True),
    "logaddexp":  ((-2, 2), "np.logaddexp({k}, {x})", lambda b, k: max(b, k) + 0.7,
                   lambda b, s, k: s, True),
    "logaddexp2": ((-2, 2), "np.logaddexp2({x}, {k})", lambda b, k: max(b, k) + 1.0,
                   lambda b, s, k: s, True),
    "maximum":    ((-2, 2), "np.maximum({x}, {k})", lambda b, k: max(b, k),
                   lambda b, s, k: s, False),
    "minimum":    ((-2, 2), "np.minimum({k}, {x})", lambda b, k: max(b, k),
                   lambda b, s, k: s, False),
    "fmax":       ((-2, 2), "np.fmax({x}, {k})", lambda b, k: max(b, k), lambda b, s, k: s, False),
    "fmin":       ((-2, 2), "np.fmin({x}, {k})", lambda b, k: max(b, k), lambda b, s, k: s, False),
    "remainder":  ((2, 3), "np.remainder({x}, {k})", lambda b, k: k, lambda b, s, k: s, False),
    "fmod":       ((2, 3), "np.fmod({x}, {k})", lambda b, k: b, lambda b, s, k: s, False),
    "copysign":   ((-2, 2), "np.copysign({x}, {k})", lambda b, k: b, lambda b, s, k: s, False),
    "floor_divide": ((1, 3), "np.floor_divide({x}, {k})", lambda b, k: b + 1,
                     lambda b, s, k: 0.0, False),
    # comparisons and logical ufuncs give masks: `where` turns them back into float values
    **{name: ((-2, 2), f"np.where(np.{name}({{x}}, {{k}}), {{x}}, 0.5 * {{x}})",
              lambda b, k: b, lambda b, s, k: s, False)
       for name in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")},
    **{name: ((0, 1), f"np.where(np.{name}({{x}} > 0.0, {{k}}), {{x}}, 0.5 * {{x}})",
              lambda b, k: b, lambda b, s, k: s, False)
       for name in ("logical_and", "logical_or", "logical_xor")},
}
# fmt: on


def _int_operand_text(kind: str, k: int, n: int, lo: int, hi: int) -> str:
    """Python text of an integer operand: a literal, a NumPy integer scalar, or an integer
    array with values in [lo, hi] (of length n, broadcast along the last axis)."""
    if kind == "int":
        return repr(k)
    if kind in ("np.int64", "np.int32"):
        return f"{kind}({k})"
    return f"(np.arange({n}) % {hi - lo + 1} + {lo})"


def _int_operand(form: str):
    ints, text, bound, slope, smooth = _INT_FORMS[form]
    lo, hi = ints

    def draw(b, x):
        if form == "rpower" and x.bound > 4.0:
            return None
        kind = b.choice(_INT_KINDS)
        k = b.integer(lo, hi)
        n = x.shape[-1] if x.shape else b.integer(1, 3)
        if kind == "array" and n == 0:
            return None
        return [x], {"kind": kind, "k": k, "n": n}

    def render(names, p):
        k_text = _int_operand_text(p["kind"], p["k"], p["n"], lo, hi)
        return text.format(x=names[0], k=k_text)

    def call(x, *, kind, k, n):
        return eval(render(["x"], {"kind": kind, "k": k, "n": n}), {"np": np, "x": x})

    big = max(abs(lo), abs(hi))
    ufunc = form[1:] if form.startswith("r") and form[1:] in _INT_FORMS else form
    operators = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", ">": "greater"}
    needs = {ufunc, *re.findall(r"np\.(\w+)\(", text)} - {"arange", "int64", "int32"}
    needs |= {name for sym, name in operators.items() if sym in text.replace("->", "")}
    return Op(
        f"int_{form}",
        tuple(sorted(needs)),
        render,
        call,
        draw,
        bound=lambda xs, p: float(bound(xs[0].bound, big)),
        slope=lambda xs, p: float(slope(xs[0].bound, xs[0].slope, big)),
        smooth=smooth,
        linear=form in ("add", "radd", "subtract", "rsubtract", "multiply", "rmultiply"),
    )


# -- the table --------------------------------------------------------------------------------
# One row per operation; rows whose `needs` are not all exported by tracegrad.numpy are left
# out, so programs grow with tracegrad. Rows shrink towards the top of the table.

# fmt: off
OPS: tuple[Op, ...] = (
    # elementwise, smooth, any finite input
    Op("sin", ("sin",), "np.sin({0})", lambda x: np.sin(x), _unary, _const_bound(1.0)),
    Op("add", ("add",), "{0} + {1}", lambda x, y: x + y, _binary,
       lambda xs, p: xs[0].bound + xs[1].bound, slope=_sum_slope, linear=True),
    Op("multiply", ("multiply",), "{0} * {1}", lambda x, y: x * y, _binary,
       lambda xs, p: xs[0].bound * xs[1].bound, slope=_product_slope),
    Op("subtract", ("subtract",), "{0} - {1}", lambda x, y: x - y, _binary,
       lambda xs, p: xs[0].bound + xs[1].bound, slope=_sum_slope, linear=True),
    Op("divide", ("divide", "add", "multiply"), "{0} / (1.0 + {1} * {1})",
       lambda x, y: x / (1.0 + y * y), _binary, slope=_quotient_slope),
    Op("cos", ("cos",), "np.cos({0})", lambda x: np.cos(x), _unary, _const_bound(1.0)),
    Op("tanh", ("tanh",), "np.tanh({0})", lambda x: np.tanh(x), _unary, _const_bound(1.0)),
    Op("exp", ("exp",), "np.exp({0})", lambda x: np.exp(x), _bounded(4.0),
       lambda xs, p: math.exp(xs[0].bound), slope=_chain(math.exp)),
    Op("log", ("log", "multiply", "add"), "np.log({0} * {0} + 0.5)",
       lambda x: np.log(x * x + 0.5), _unary, _log_bound, slope=_chain(lambda b: 1.42)),
    Op("sqrt", ("sqrt", "multiply", "add"), "np.sqrt({0} * {0} + 0.25)",
       lambda x: np.sqrt(x * x + 0.25), _unary, lambda xs, p: xs[0].bound + 0.5),
    Op("square", ("square",), "np.square({0})", lambda x: np.square(x), _unary,
       lambda xs, p: xs[0].bound ** 2, slope=_chain(lambda b: 2 * b)),
    Op("negative", ("negative",), "-{0}", lambda x: -x, _unary, linear=True),
    Op("scale", ("multiply",), "{0} * 0.5", lambda x: x * 0.5, _unary, linear=True),
    Op("shift", ("subtract",), "1.5 - {0}", lambda x: 1.5 - x, _unary,
       lambda xs, p: xs[0].bound + 1.5, linear=True),
    Op("arctan", ("arctan",), "np.arctan({0})", lambda x: np.arctan(x), _unary,
       _const_bound(1.6)),
    Op("arcsinh", ("arcsinh",), "np.arcsinh({0})", lambda x: np.arcsinh(x), _unary),
    Op("expm1", ("expm1",), "np.expm1({0})", lambda x: np.expm1(x), _bounded(4.0),
       lambda xs, p: math.exp(xs[0].bound), slope=_chain(math.exp)),
    Op("log1p", ("log1p", "multiply"), "np.log1p({0} * {0})", lambda x: np.log1p(x * x),
       _unary, lambda xs, p: math.log1p(xs[0].bound ** 2)),
    Op("sinh", ("sinh",), "np.sinh({0})", lambda x: np.sinh(x), _bounded(4.0),
       lambda xs, p: math.cosh(xs[0].bound), slope=_chain(math.cosh)),
    Op("cosh", ("cosh",), "np.cosh({0})", lambda x: np.cosh(x), _bounded(4.0),
       lambda xs, p: math.cosh(xs[0].bound), slope=_chain(math.cosh)),
    Op("sigmoid", ("divide", "add", "exp", "negative"), "1.0 / (1.0 + np.exp(-{0}))",
       lambda x: 1.0 / (1.0 + np.exp(-x)), _bounded(30.0), _const_bound(1.0)),
    Op("power", ("power", "multiply", "add"), "np.power({0} * {0} + 0.5, 1.5)",
       lambda x: np.power(x * x + 0.5, 1.5), _unary,
       lambda xs, p: (xs[0].bound ** 2 + 0.5) ** 1.5,
       slope=_chain(lambda b: 3 * b * math.sqrt(b * b + 0.5))),
    Op("logaddexp", ("logaddexp",), "np.logaddexp({0}, {1})", lambda x, y: np.logaddexp(x, y),
       _binary, lambda xs, p: max(x.bound for x in xs) + 0.7, slope=_sum_slope),
    Op("arctan2", ("arctan2", "add", "multiply"), "np.arctan2({0}, 1.0 + {1} * {1})",
       lambda x, y: np.arctan2(x, 1.0 + y * y), _binary, _const_bound(1.6), slope=_quotient_slope),
    Op("where_mask", ("where",), "np.where(np.arange({n}) % 2 == 0, {0}, {1})",
       lambda x, y, *, n: np.where(np.arange(n) % 2 == 0, x, y), _where_mask, linear=True),
    Op("astype", ("astype",), "{0}.astype(np.{dtype})",
       lambda x, *, dtype: x.astype(dtype),
       lambda b, x: ([x], {"dtype": "float32" if x.dtype == np.float64 else "float64"}),
       linear=True),
    # elementwise with kinks (forward checks only)
    Op("abs", ("abs",), "np.abs({0})", lambda x: np.abs(x), _unary, smooth=False),
    Op("relu", ("maximum",), "np.maximum({0}, 0.0)", lambda x: np.maximum(x, 0.0), _unary,
       smooth=False),
    Op("clip", ("clip",), "np.clip({0}, -1.0, 1.0)", lambda x: np.clip(x, -1.0, 1.0), _unary,
       _const_bound(1.0), smooth=False),
    Op("maximum", ("maximum",), "np.maximum({0}, {1})", lambda x, y: np.maximum(x, y), _binary,
       smooth=False),
    Op("minimum", ("minimum",), "np.minimum({0}, {1})", lambda x, y: np.minimum(x, y), _binary,
       smooth=False),
    Op("where", ("where", "greater"), "np.where({0} > {1}, {0}, {1})",
       lambda x, y: np.where(x > y, x, y), _binary, smooth=False),
    # reductions
    Op("sum", ("sum",), _kw_text("sum"), _np_call("sum"), _reduction(), _sum_bound,
       slope=_sum_slope_red, linear=True),
    Op("sum_method", ("sum",), _kw_text("sum", method=True), _method_call("sum"),
       _reduction(), _sum_bound, slope=_sum_slope_red, linear=True),
    Op("mean", ("mean",), _kw_text("mean"), _np_call("mean"), _reduction(nonempty=True),
       linear=True),
    Op("prod", ("prod",), _kw_text("prod"), _np_call("prod"), _reduction(), _prod_bound,
       slope=_prod_slope),
    Op("var", ("var",), _kw_text("var"), _np_call("var"), _reduction(nonempty=True),
       lambda xs, p: xs[0].bound ** 2, slope=lambda xs, p: 4 * xs[0].bound * xs[0].slope),
    Op("max", ("max",), _kw_text("max"), _np_call("max"), _reduction(nonempty=True),
       smooth=False),
    Op("min", ("min",), _kw_text("min"), _np_call("min"), _reduction(nonempty=True),
       smooth=False),
    Op("std", ("std",), _kw_text("std"), _np_call("std"), _reduction(nonempty=True),
       smooth=False),
    Op("cumsum", ("cumsum",), _kw_text("cumsum"), _np_call("cumsum"),
       _reduction(keepdims=False, tuple_=False), _sum_bound, slope=_sum_slope_red, linear=True),
    # shapes
    Op("reshape", ("reshape",), "np.reshape({0}, {shape!r})",
       lambda x, *, shape: np.reshape(x, shape), _reshape, linear=True),
    Op("reshape_method", ("reshape",), "{0}.reshape({shape!r})",
       lambda x, *, shape: x.reshape(shape), _reshape, linear=True),
    Op("T", ("transpose",), "{0}.T", lambda x: x.T, _unary, linear=True),
    Op("transpose", ("transpose",), "np.transpose({0}, {axes!r})",
       lambda x, *, axes: np.transpose(x, axes), _transpose_perm, linear=True),
    Op("broadcast_to", ("broadcast_to",), "np.broadcast_to({0}, {shape!r})",
       lambda x, *, shape: np.broadcast_to(x, shape), _broadcast_target, linear=True),
    Op("expand_dims", ("expand_dims",), "np.expand_dims({0}, {axis!r})",
       lambda x, *, axis: np.expand_dims(x, axis), _expand_dims, linear=True),
    Op("squeeze", ("squeeze",), "np.squeeze({0}, axis={axis!r})",
       lambda x, *, axis: np.squeeze(x, axis=axis), _squeeze, linear=True),
    Op("swapaxes", ("swapaxes",), "np.swapaxes({0}, {a}, {b})",
       lambda x, *, a, b: np.swapaxes(x, a, b), _two_axes, linear=True),
    Op("moveaxis", ("moveaxis",), "np.moveaxis({0}, {a}, {b})",
       lambda x, *, a, b: np.moveaxis(x, a, b), _two_axes, linear=True),
    Op("flip", ("flip",), _kw_text("flip"), _np_call("flip"), _flip, linear=True),
    Op("ravel", ("ravel",), "np.ravel({0})", lambda x: np.ravel(x), _unary, linear=True),
    Op("concatenate", ("concatenate",), _join_text("concatenate"),
       lambda x, y, *, axis: np.concatenate([x, y], axis=axis), _join(stack=False), linear=True),
    Op("stack", ("stack",), _join_text("stack"),
       lambda x, y, *, axis: np.stack([x, y], axis=axis), _join(stack=True), linear=True),
    # indexing
    Op("index", ("getitem",), lambda n, p: f"{n[0]}[{_index_text(p['index'])}]",
       lambda x, *, index: x[index], _basic_index, linear=True),
    Op("index_array", ("getitem", "take"), lambda n, p: f"{n[0]}[{_index_text(p['index'])}]",
       lambda x, *, index: x[index], _array_index, linear=True),
    Op("take", ("take",), "np.take({0}, {indices!r}, axis={axis})",
       lambda x, *, indices, axis: np.take(x, indices, axis=axis), _take, linear=True),
    # linear algebra
    Op("matmul", ("matmul",), "{0} @ {1}", lambda x, y: x @ y, _matmul, _matmul_bound,
       slope=_matmul_slope),
    Op("dot", ("dot",), "np.dot({0}, {1})", lambda x, y: np.dot(x, y), _dot, _matmul_bound,
       slope=_matmul_slope),
    Op("einsum_matmul", ("einsum",), "np.einsum('ij,jk->ik', {0}, {1})",
       lambda x, y: np.einsum("ij,jk->ik", x, y), _einsum_matmul, _matmul_bound,
       slope=_matmul_slope),
    Op("matmul_gram", ("matmul", "swapaxes"), _gram_text, _gram_call,
       lambda b, x: ([x], {}) if x.ndim >= 2 else None, _gram_bound, slope=_gram_slope),
    Op("einsum_gram", ("einsum",), "np.einsum('...ij,...kj->...ik', {0}, {0})",
       lambda x: np.einsum("...ij,...kj->...ik", x, x),
       lambda b, x: ([x], {}) if x.ndim >= 2 else None, _gram_bound, slope=_gram_slope),
    Op("einsum_outer", ("einsum",), "np.einsum('i,j->ij', {0}, {1})",
       lambda x, y: np.einsum("i,j->ij", x, y), _einsum_outer,
       lambda xs, p: xs[0].bound * xs[1].bound, slope=_product_slope),
    Op("einsum_inner", ("einsum",), "np.einsum('...i,...i->...', {0}, {1})",
       lambda x, y: np.einsum("...i,...i->...", x, y), _einsum_inner, _matmul_bound,
       slope=_matmul_slope),
    # integer operands of every binary ufunc
    *(_int_operand(form) for form in _INT_FORMS),
)
# fmt: on

_BY_NAME = {op.name: op for op in OPS}
assert len(_BY_NAME) == len(OPS), "two rows of OPS share a name"


def available_ops(*, smooth: bool = False) -> list[str]:
    """Names of the rows whose functions `tracegrad.numpy` exports now (smooth ones only if
    `smooth`)."""
    import tracegrad.numpy as tnp

    return [op.name for op in OPS if op.available(tnp) and (op.smooth or not smooth)]


def programs(
    dtype=None,
    max_inputs: int = 3,
    max_ops: int = 12,
    ops=None,
    *,
    scalar_output: bool = False,
    smooth: bool = False,
    allow_size_zero: bool = False,
    max_dims: int = 3,
    max_side: int = 4,
    min_ops: int = 1,
    max_slope: float | None = None,
):
    """A hypothesis strategy of random `Program`s: DAGs of NumPy calls over broadcastable shapes.

    Args:
      dtype: the inputs' dtype; None draws float32 or float64 per program, "mixed" per input.
      max_inputs, max_ops: size limits (programs take 1..max_inputs arrays, min_ops..max_ops
        operations; matmul/concatenate partners may add inputs up to max_inputs).
      ops: names of rows of `OPS` to draw from (default: every row tracegrad supports now).
      scalar_output: end in a sum of the unused values, so `grad` applies.
      smooth: only operations without kinks, for finite-difference checks.
      allow_size_zero: shapes may have size-0 axes (size-1 axes are always drawn).
      max_slope: curved operations (all but sums, shapes, indexing...) apply only to values
        whose derivative is bounded by this (default 4 when `smooth`, else no limit), so
        finite differences resolve the program: sin(x) is fine, sin(sum of 100 values) not.
    """
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    import tracegrad.numpy as tnp

    if ops is None:
        rows = [op for op in OPS if op.available(tnp)]
    else:
        unknown = sorted(set(ops) - set(_BY_NAME))
        if unknown:
            raise ValueError(f"programs: unknown ops {unknown}; the rows are {sorted(_BY_NAME)}")
        rows = [_BY_NAME[n] for n in ops if _BY_NAME[n].available(tnp)]
    if smooth:
        rows = [op for op in rows if op.smooth]
    if not rows:
        raise ValueError(f"programs: none of the ops {ops} is supported by tracegrad.numpy yet")
    if dtype not in (None, "mixed"):
        dtype = np.dtype(dtype)
        if dtype not in _FLOATS:
            raise ValueError(f"programs: dtype must be float32 or float64, got {dtype}")
    min_side = 0 if allow_size_zero else 1
    slope_cap = max_slope if max_slope is not None else (4.0 if smooth else math.inf)

    @st.composite
    def draw_program(draw):
        policy = dtype if dtype is not None else draw(st.sampled_from(_FLOATS), label="dtype")
        b = _Builder(
            draw,
            st,
            max_slope=slope_cap,
            max_inputs=max_inputs,
            allow_size_zero=allow_size_zero,
            max_side=max_side,
            dtype_policy=policy,
        )
        n_in = draw(st.integers(1, max_inputs), label="number of inputs")
        shapes = draw(
            hnp.mutually_broadcastable_shapes(
                num_shapes=n_in, min_dims=0, max_dims=max_dims, min_side=min_side, max_side=max_side
            ),
            label="input shapes",
        ).input_shapes
        for s in shapes:
            b.new_input(s)
        steps = []
        used: set[str] = set()
        for k in range(draw(st.integers(min_ops, max_ops), label="number of ops")):
            step = _draw_step(b, rows, f"v{k}")
            if step is None:
                continue
            steps.append(step[0])
            used.update(step[0].args)
            b.pool.append(step[1])
        outputs = tuple(v.name for v in b.pool if v.name not in used)
        return Program(tuple(b.inputs), tuple(steps), tuple(b.input_names), outputs, scalar_output)

    return draw_program()


def _draw_step(b: _Builder, rows, out_name):
    """One operation on variables of the pool, or None after a few rejected draws."""
    for _ in range(4):
        x = b.pick(b.pool)
        op = b.draw(b.st.sampled_from(rows), label="op")
        b.current_op = op
        drawn = op.draw(b, x)
        if drawn is None:
            continue
        xs, params = drawn
        if any(v is None for v in xs):
            continue
        res = _try(op, xs, params)
        if res is None or math.prod(res[0]) > _MAX_SIZE:
            continue
        bound = op.bound(xs, params)
        if not bound <= _CAP:
            continue
        if not op.linear and not max(v.slope for v in xs) <= b.max_slope:
            continue
        names = tuple(v.name for v in xs)
        step = _Step(out_name, op, names, params, np.dtype(res[1]), tuple(v.shape for v in xs))
        return step, _Var(out_name, res[0], res[1], float(bound), float(op.slope(xs, params)))
    return None


# =============================================================================================
# Running programs and comparing results
# =============================================================================================


def run_numpy(program, args):
    """The program run as plain NumPy (the oracle)."""
    fn = getattr(program, "fn", program)
    return fn(*args)


def run_traced(program, args):
    """The program traced with `tracegrad.make_graph` and run by the interpreter."""
    import tracegrad

    fn = getattr(program, "fn", program)
    graph = tracegrad.make_graph(fn)(*args)
    return graph(*args)


def _leaf_text(x) -> str:
    x = np.asarray(x)
    if x.dtype.kind == "f" and x.ndim == 0:
        return f"{x.item()!r} ({float(x).hex()})"
    return repr(x.item()) if x.ndim == 0 else repr(x)


def assert_bitwise_equal(actual, expected, err_msg: str = "", *, nan_payloads: bool = True) -> None:
    """Equal pytree structure, and per leaf equal shape, dtype and bits (signed zeros and NaN
    payloads included). NumPy scalars and 0-d arrays compare alike; Python scalars compare as
    the NumPy values they promote like (float64, int64, bool).

    `nan_payloads=False` accepts any NaN for a NaN: when two NaNs meet, NumPy's scalar path
    (`a + b` on NumPy scalars) and its array path (`np.add`) keep different ones, so code that
    may take either (the code generator writes 0-d arithmetic as operators) agrees on every
    bit except which NaN survives."""
    from tracegrad import tree

    prefix = f"{err_msg}: " if err_msg else ""
    a_leaves, a_tree = tree.flatten(actual)
    e_leaves, e_tree = tree.flatten(expected)
    if a_tree != e_tree:
        raise AssertionError(f"{prefix}structures differ: got {a_tree}, expected {e_tree}")
    for k, (a, e) in enumerate(zip(a_leaves, e_leaves)):
        where = f"leaf {k}: " if len(a_leaves) > 1 else ""
        a, e = np.asarray(a), np.asarray(e)
        if a.shape != e.shape:
            raise AssertionError(f"{prefix}{where}shapes differ: got {a.shape}, expected {e.shape}")
        if a.dtype != e.dtype:
            raise AssertionError(f"{prefix}{where}dtypes differ: got {a.dtype}, expected {e.dtype}")
        mask = _bits(a) != _bits(e)
        if a.dtype.kind == "c":
            mask = mask.any(axis=-1)
        if not nan_payloads and a.dtype.kind in "fc":
            mask &= ~(np.isnan(a) & np.isnan(e))
        if mask.any():
            first = np.unravel_index(int(np.flatnonzero(mask)[0]), a.shape)
            idx = tuple(int(i) for i in first)
            raise AssertionError(
                f"{prefix}{where}values differ at {int(mask.sum())} of {a.size} elements; first "
                f"at index {idx}: got {_leaf_text(a[idx])}, expected {_leaf_text(e[idx])}"
            )


def _bits(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x)
    if x.dtype.kind in "fc" and x.dtype.itemsize in (2, 4, 8):
        return x.view(f"u{x.dtype.itemsize}")
    if x.dtype.kind == "c":
        return x.view(f"u{x.dtype.itemsize // 2}").reshape(*x.shape, 2)
    return x


# =============================================================================================
# Finite differences and check_grads
# =============================================================================================

# eps and tolerances by the least precise float dtype in play. The stencil below is 4th order,
# so eps can be large enough that float32 rounding stays small: 2**-6 -> error ~ 1e-5 * |f|.
_DEFAULT_EPS = {
    np.dtype(np.float16): 2.0**-3,
    np.dtype(np.float32): 2.0**-6,
    np.dtype(np.float64): 2.0**-10,
}
_DEFAULT_TOL = {np.dtype(np.float16): 5e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5}
_LOCATE_LIMIT = 256  # largest argument whose worst element a failure report looks for


def _is_float(x) -> bool:
    if isinstance(x, float):
        return True
    d = getattr(x, "dtype", None)
    return d is not None and np.dtype(d).kind in "fc"


def _dtype_of(x) -> np.dtype:
    if isinstance(x, float):
        return np.dtype(np.float64)
    return np.dtype(x.dtype)


def _least_precise(values) -> np.dtype:
    dts = [_dtype_of(v) for v in values if _is_float(v)]
    if not dts:
        return np.dtype(np.float64)
    return max(dts, key=lambda d: np.finfo(d).eps)


def _perturb(x, t, step):
    if isinstance(x, float):
        return x + step * float(t)
    x64 = np.asarray(x, dtype=np.float64)
    return (x64 + step * np.asarray(t, dtype=np.float64)).astype(x.dtype)


def _as64(x):
    return np.asarray(x, dtype=np.float64) if _is_float(x) else np.zeros(np.shape(x))


# 4th-order central differences: f' ~ (f(-2h) - 8 f(-h) + 8 f(h) - f(2h)) / 12h
_STENCIL = ((-2, 1.0), (-1, -8.0), (1, 8.0), (2, -1.0))


def numerical_jvp(f: Callable, args: Sequence, tangents: Sequence, eps: float | None = None):
    """The directional derivative of `f` at `args` along `tangents` by central differences.

    `args` and `tangents` are tuples of pytrees with the same structure (tangents of
    non-float leaves are ignored). Perturbed arguments are computed in float64 and rounded
    to each argument's dtype; the outputs are combined in float64 with the 4th-order central
    stencil, so the result is a pytree like `f`'s output, of float64 arrays. `eps` defaults
    to 2**-10 for float64 arguments and 2**-6 when a float32 argument is present.
    """
    from tracegrad import tree

    leaves, treedef = tree.flatten(tuple(args))
    t_leaves, _ = tree.flatten(tuple(tangents))
    if len(t_leaves) != len(leaves):
        raise ValueError(
            f"numerical_jvp: args have {len(leaves)} leaves but tangents have "
            f"{len(t_leaves)}; give one tangent per argument leaf"
        )
    if eps is None:
        eps = _DEFAULT_EPS.get(_least_precise(leaves), 2.0**-10)
    total = None
    for s, w in _STENCIL:
        moved = [_perturb(x, t, s * eps) if _is_float(x) else x for x, t in zip(leaves, t_leaves)]
        out = f(*tree.unflatten(treedef, moved))
        out_leaves, out_tree = tree.flatten(out)
        vals = [_as64(o) * w for o in out_leaves]
        total = vals if total is None else [a + v for a, v in zip(total, vals)]
    return tree.unflatten(out_tree, [v / (12.0 * eps) for v in total])


@attrs.frozen
class _Settings:
    eps: float | None
    atol: float | None
    rtol: float | None
    rng: np.random.Generator

    def resolve(self, values):
        dt = _least_precise(values)
        default = _DEFAULT_TOL.get(dt, 1e-5)
        eps = self.eps if self.eps is not None else _DEFAULT_EPS.get(dt, 2.0**-10)
        atol = self.atol if self.atol is not None else default
        rtol = self.rtol if self.rtol is not None else default
        return eps, atol, rtol

    def direction(self, x):
        """A random direction like `x`: multiples of 1/8 in [-1, 1], so with a power-of-two
        eps the perturbed argument is exact even in float32."""
        v = self.rng.integers(-8, 9, size=np.shape(x)) / 8.0
        if isinstance(x, float):
            return float(v)
        return v.astype(_dtype_of(x))


def _mode_text(path) -> str:
    order = len(path)
    text = f"order {order}, mode {path[-1]!r}"
    if order > 1:
        inner = " of the ".join(f"{m!r}-mode derivative" for m in reversed(path[:-1]))
        text += f" (applied to the {inner})"
    return text


def check_grads(
    f: Callable,
    args,
    order: int = 2,
    modes=("fwd", "rev"),
    eps=None,
    atol=None,
    rtol=None,
    *,
    seed: int = 0,
) -> None:
    """Check `f`'s derivatives up to `order` against central finite differences.

    As `jax.test_util.check_grads`: "rev" compares `<u, J v>` from finite differences with
    `<vjp(u), v>` for random `u`, `v`; "fwd" compares `jvp(v)` with finite differences
    elementwise. For order 2 and more, the same checks run on the first-derivative functions
    (`x -> vjp(f, x)(u)` and `x -> jvp(f, x, v)`), recursively. Each argument is checked
    separately, so a failure names it.

    Args:
      f: the function; `args` a tuple of its positional arguments (pytrees). Only float
        leaves are differentiated; the others stay fixed. Only float outputs are compared.
      eps: step of the differences (default by dtype: 2**-10 float64, 2**-6 float32).
      atol, rtol: an element passes when |got - expected| <= atol * scale + rtol * |expected|,
        scale = max(1, |f(x)|, |expected|) (largest elements); defaults 1e-5 for float64 and
        2e-3 when a float32 value is involved.
      seed: seeds the random directions.

    Raises:
      AssertionError naming the order, the mode, the argument and the worst element.
    """
    from tracegrad import tree

    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    bad = [m for m in modes if m not in ("fwd", "rev")]
    if bad or not modes:
        raise ValueError(f"check_grads: modes must be a subset of ('fwd', 'rev'), got {modes}")
    if not isinstance(order, int) or order < 1:
        raise ValueError(f"check_grads: order must be a positive int, got {order!r}")
    if not isinstance(args, list | tuple):
        args = (args,)
    leaves, treedef = tree.flatten(tuple(args))
    diff = [k for k, x in enumerate(leaves) if _is_float(x)]
    labels = []
    for k in diff:
        arg_i, leaf_i, n_leaves = _arg_of_leaf(args, k)
        labels.append(
            f"argument {arg_i}" + (f" (leaf {leaf_i} of its pytree)" if n_leaves > 1 else "")
        )

    def flat_f(*xs):
        full = list(leaves)
        for k, x in zip(diff, xs):
            full[k] = x
        out = f(*tree.unflatten(treedef, full))
        return [o for o in tree.leaves(out) if _is_float(o)]

    settings = _Settings(eps, atol, rtol, np.random.default_rng(seed))
    _check_rec(flat_f, [leaves[k] for k in diff], labels, order, modes, (), settings)


def _arg_of_leaf(args, k):
    from tracegrad import tree

    start = 0
    for i, a in enumerate(args):
        n = len(tree.leaves(a))
        if k < start + n:
            return i, k - start, n
        start += n
    raise IndexError(k)


def _check_rec(fn, primals, labels, order, modes, path, settings):
    if not primals:
        return
    for mode in modes:
        p = path + (mode,)
        if mode == "rev":
            _check_rev(fn, primals, labels, p, settings)
        else:
            _check_fwd(fn, primals, labels, p, settings)
        if order > 1:
            deriv = _rev_derivative if mode == "rev" else _fwd_derivative
            _check_rec(deriv(fn, primals, settings), primals, labels, order - 1, modes, p, settings)


def _zeros_like(x):
    if isinstance(x, float):
        return 0.0
    return np.zeros(x.shape, x.dtype)


def _eval(fn, primals):
    return [np.asarray(o) for o in fn(*primals)]


def _rev_derivative(fn, primals, settings):
    """x -> vjp(fn, x)(u) for a fixed random u: its derivative is fn's second derivative."""
    import tracegrad

    us = [settings.direction(o) for o in _eval(fn, primals)]

    def grad_fn(*xs):
        _, vjp_fn = tracegrad.vjp(fn, *xs)
        cts = vjp_fn(us)
        return [_zeros_like(x) if c is None else c for x, c in zip(xs, cts)]

    return grad_fn


def _fwd_derivative(fn, primals, settings):
    """x -> (fn(x), jvp(fn, x, v)) for a fixed random v."""
    import tracegrad
    from tracegrad import tree

    vs = [settings.direction(x) for x in primals]

    def jvp_fn(*xs):
        out, t_out = tracegrad.jvp(fn, tuple(xs), tuple(vs))
        out = tree.leaves(out)
        t_out = [t for t in (t_out if isinstance(t_out, list | tuple) else [t_out])]
        t_out = [_zeros_like(o) if t is None else t for o, t in zip(out, t_out)]
        return list(out) + list(t_out)

    return jvp_fn


def _fail(path, label, x, lines, eps, atol, rtol):
    shape = f"{_dtype_of(x).name}{list(np.shape(x))}"
    head = (
        f"check_grads: {_mode_text(path)}: the derivative with respect to {label} "
        f"({shape}) disagrees with finite differences"
    )
    tail = f"  (eps={eps:g}, atol={atol:g}, rtol={rtol:g})"
    raise AssertionError("\n".join([head, *lines, tail]))


def _check_primal(out_ad, expected, path, atol, rtol):
    from tracegrad import tree

    got = [np.asarray(o) for o in tree.leaves(out_ad)]
    if len(got) != len(expected) or any(
        g.shape != e.shape or not np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
        for g, e in zip(got, expected)
    ):
        head = (
            f"check_grads: {_mode_text(path)}: the primal output of the transform differs "
            f"from the function's own output"
        )
        raise AssertionError(f"{head}\n  got {got}\n  expected {expected}")


def _scale(*arrays) -> float:
    m = [float(np.max(np.abs(a))) for a in arrays if np.size(a)]
    return max([1.0, *m])


def _check_rev(fn, primals, labels, path, settings):
    import tracegrad

    out = _eval(fn, primals)
    eps, atol, rtol = settings.resolve(list(primals) + out)
    out_ad, vjp_fn = tracegrad.vjp(fn, *primals)
    _check_primal(out_ad, out, path, atol, rtol)
    us = [settings.direction(o) for o in out]
    cts = vjp_fn(us)
    if not isinstance(cts, tuple) or len(cts) != len(primals):
        raise AssertionError(
            f"check_grads: {_mode_text(path)}: vjp_fn returned {type(cts).__name__} of "
            f"{len(cts) if isinstance(cts, tuple | list) else 1} cotangents for "
            f"{len(primals)} primals; it must return a tuple with one per primal"
        )
    for i, (x, ct) in enumerate(zip(primals, cts)):
        ct = np.zeros(np.shape(x)) if ct is None else np.asarray(ct)
        if ct.shape != np.shape(x) or ct.dtype != _dtype_of(x):
            _fail(
                path,
                labels[i],
                x,
                [
                    f"  the cotangent has shape {ct.shape} and dtype {ct.dtype}; expected "
                    f"{np.shape(x)} and {_dtype_of(x)}"
                ],
                eps,
                atol,
                rtol,
            )
        v = settings.direction(x)
        fd = _fd_one(fn, primals, i, v, eps)
        ufd = [np.asarray(u, np.float64) * d for u, d in zip(us, fd)]
        expected = float(sum(np.sum(a) for a in ufd))
        got = float(np.sum(ct.astype(np.float64) * np.asarray(v, np.float64)))
        scale = _scale(*out, *fd)
        tol = float(
            sum(
                np.sum(np.abs(np.asarray(u, np.float64)) * (atol * scale + rtol * abs(d)))
                for u, d in zip(us, fd)
            )
        )
        tol += rtol * float(np.sum(np.abs(ct.astype(np.float64) * np.asarray(v, np.float64))))
        if not abs(got - expected) <= tol:
            lines = [
                f"  <u, J v>: finite differences {expected!r}, vjp {got!r} "
                f"(difference {abs(got - expected):.3g}, tolerance {tol:.3g})"
            ]
            lines.append(_locate_rev(fn, primals, i, us, ct, eps, atol, rtol, scale))
            _fail(path, labels[i], x, lines, eps, atol, rtol)


def _fd_one(fn, primals, i, v, eps):
    """Finite differences of `fn` along direction `v` in argument `i` only."""
    tangents = [v if j == i else _zeros_like(x) for j, x in enumerate(primals)]
    return [np.asarray(d) for d in numerical_jvp(lambda *xs: fn(*xs), primals, tangents, eps)]


def _locate_rev(fn, primals, i, us, ct, eps, atol, rtol, scale) -> str:
    x = primals[i]
    size = int(np.size(x))
    if size > _LOCATE_LIMIT:
        return f"  (argument too large, {size} elements, to locate the worst element)"
    worst = None
    for j in range(size):
        e = np.zeros(size)
        e[j] = 1.0
        e = float(e[0]) if isinstance(x, float) else e.reshape(np.shape(x)).astype(_dtype_of(x))
        fd = _fd_one(fn, primals, i, e, eps)
        expected = float(sum(np.sum(np.asarray(u, np.float64) * d) for u, d in zip(us, fd)))
        got = float(ct.reshape(-1)[j])
        ratio = abs(got - expected) / (atol * scale + rtol * abs(expected))
        if worst is None or ratio > worst[0]:
            worst = (ratio, j, expected, got)
    if worst is None:
        return "  (the argument has no elements)"
    _, j, expected, got = worst
    idx = np.unravel_index(j, np.shape(x)) if np.ndim(x) else ()
    return (
        f"  worst element of the cotangent at index {tuple(int(k) for k in idx)}: "
        f"expected {expected!r} (finite differences), got {got!r}"
    )


def _check_fwd(fn, primals, labels, path, settings):
    import tracegrad

    out = _eval(fn, primals)
    eps, atol, rtol = settings.resolve(list(primals) + out)
    for i, x in enumerate(primals):
        v = settings.direction(x)
        tangents = tuple(v if j == i else _zeros_like(p) for j, p in enumerate(primals))
        out_ad, t_out = tracegrad.jvp(fn, tuple(primals), tangents)
        _check_primal(out_ad, out, path, atol, rtol)
        t_out = list(t_out) if isinstance(t_out, list | tuple) else [t_out]
        if len(t_out) != len(out):
            _fail(
                path,
                labels[i],
                x,
                [f"  jvp returned {len(t_out)} output tangents for {len(out)} outputs"],
                eps,
                atol,
                rtol,
            )
        fd = _fd_one(fn, primals, i, v, eps)
        scale = _scale(*out, *fd)
        worst = None
        for k, (o, t, d) in enumerate(zip(out, t_out, fd)):
            t = np.zeros(o.shape) if t is None else np.asarray(t)
            if t.shape != o.shape:
                _fail(
                    path,
                    labels[i],
                    x,
                    [f"  output {k}: the tangent has shape {t.shape}, the output {o.shape}"],
                    eps,
                    atol,
                    rtol,
                )
            t64 = t.astype(np.float64)
            err = np.abs(t64 - d) / (atol * scale + rtol * np.abs(d))
            if err.size and (worst is None or err.max() > worst[0]):
                j = np.unravel_index(int(np.argmax(err)), err.shape)
                worst = (float(err.max()), k, j, float(d[j]), float(t64[j]))
        if worst is not None and not worst[0] <= 1.0:
            _, k, j, expected, got = worst
            where = f"output {k}, " if len(out) > 1 else ""
            _fail(
                path,
                labels[i],
                x,
                [
                    f"  worst element of the output tangent at {where}index "
                    f"{tuple(int(a) for a in j)}: expected {expected!r} (finite differences), "
                    f"got {got!r} ({worst[0]:.3g} times the tolerance)"
                ],
                eps,
                atol,
                rtol,
            )
