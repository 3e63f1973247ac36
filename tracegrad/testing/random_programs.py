"""Random NumPy programs for hypothesis: `Program` (whose `fn` calls NumPy directly, so
running it on arrays is an oracle independent of tracegrad), the builder that draws one
operation at a time from the op table, and the strategy `programs()`. Programs may be complex:
complex inputs, or real inputs through complex intermediates (`exp(1j * x)`, `astype`) back to
a real loss. Hypothesis is imported only inside the functions that build strategies.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
import numpy as np

import tracegrad.numpy as tnp
from tracegrad.ir.types import Aval
from tracegrad.testing.gradcheck import _DEFAULT_TOL
from tracegrad.testing.operands import _MAX_SIZE, _try
from tracegrad.testing.ops import _BY_NAME, OPS
from tracegrad.testing.row import Op, _Var

_CAP = 1e4  # largest magnitude an intermediate value may reach: outputs stay finite
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_COMPLEX = (np.dtype(np.complex64), np.dtype(np.complex128))
# Rows that multiply complex values with `*`. On two NumPy scalars (0-d values a step made;
# program inputs are 0-d arrays) NumPy's operator runs its scalar math, whose complex product
# rounds unlike np.multiply's loop, which tracegrad's interpreter calls: a known issue
# (tests/complex/test_programs.py::test_known_issue_scalar_complex_products), so programs do
# not draw these rows on 0-d complex values.
_SCALAR_PRODUCTS = frozenset(
    ("multiply", "rotate", "exp_i", "abs2", "cdivide", "int_multiply", "int_rmultiply")
)


@attrs.frozen
class InputSpec:
    """One argument of a program: shape, dtype and the interval its values are drawn from
    (both parts of a complex value)."""

    shape: tuple[int, ...] = attrs.field(converter=tuple)
    dtype: np.dtype = attrs.field(converter=np.dtype)
    lo: float = -2.0
    hi: float = 2.0

    @property
    def bound(self) -> float:
        """The largest magnitude a value may have."""
        b = max(abs(self.lo), abs(self.hi))
        return math.hypot(b, b) if self.dtype.kind == "c" else b

    def strategy(self):
        """A hypothesis strategy of arrays in the domain."""
        from hypothesis import strategies as st
        from hypothesis.extra import numpy as hnp

        complex_ = self.dtype.kind == "c"
        width = self.dtype.itemsize * 8 // (2 if complex_ else 1)
        part = st.floats(self.lo, self.hi, allow_nan=False, allow_infinity=False, width=width)
        elems = st.builds(complex, part, part) if complex_ else part
        return hnp.arrays(self.dtype, self.shape, elements=elems)

    def example(self, rng: np.random.Generator) -> np.ndarray:
        x = rng.uniform(self.lo, self.hi, self.shape)
        if self.dtype.kind == "c":
            x = x + 1j * rng.uniform(self.lo, self.hi, self.shape)
        return x.astype(self.dtype)


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
    #: a complex program's scalar output: "real" (Re(sum) + Im(sum) / 2, a real loss of both
    #: parts) or "complex" (the sum, for holomorphic programs); "" for a real program
    loss: str = ""

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
            if self.loss == "real":
                return np.real(total) + 0.5 * np.imag(total)
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
            if self.loss == "real":
                lines.append(f"    total = {ret}")
                ret = "np.real(total) + 0.5 * np.imag(total)"
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
        """The least precise float dtype of any input or intermediate value (float32 for a
        complex64 one)."""
        dts = [s.dtype for s in self.inputs] + [s.dtype for s in self.steps]
        return np.dtype(np.finfo(max(dts, key=lambda d: np.finfo(d).eps)).dtype)

    @property
    def is_complex(self) -> bool:
        """Whether any input or intermediate value is complex."""
        return any(s.dtype.kind == "c" for s in self.inputs + self.steps)

    @property
    def grad_tolerances(self) -> dict:
        """`atol`/`rtol` for `check_grads`: float32 ones if any value is float32 (an
        `astype` inside a float64 program loses precision check_grads cannot see)."""
        tol = _DEFAULT_TOL[self.least_precise_dtype]
        return {"atol": tol, "rtol": tol}

    @property
    def avals(self):
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


class _Builder:
    """The state of one program being drawn: the pool of variables and the inputs."""

    def __init__(
        self, draw, st, *, max_inputs, allow_size_zero, max_side, dtype_policy, max_slope, mixed
    ):
        self.draw = draw
        self.mixed = mixed  # the dtypes "mixed" draws from
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
            return self.choice(self.mixed)
        return self.dtype_policy

    def new_input(self, shape) -> _Var:
        spec = InputSpec(shape, self.input_dtype())
        name = f"x{len(self.inputs)}"
        self.inputs.append(spec)
        self.input_names.append(name)
        var = _Var(name, spec.shape, spec.dtype, spec.bound)
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
    complex_values: bool | None = None,
    holomorphic: bool = False,
):
    """A hypothesis strategy of random `Program`s: DAGs of NumPy calls over broadcastable shapes.

    Args:
      dtype: the inputs' dtype; None draws float32 or float64 per program, "mixed" per input
        (complex64 and complex128 too with `complex_values`).
      complex_values: complex values may flow: complex inputs, or real ones made complex
        (`exp(1j * x)`, `x * (0.6 + 0.8j)`, `astype`) and taken apart again (`real`, `abs`);
        only rows that mean the same on complex values in NumPy and jax.numpy are drawn, and a
        scalar output is the real loss Re(sum) + Im(sum) / 2. Default: when `dtype` is
        complex, or every row of `ops` is meant for complex programs only.
      holomorphic: complex inputs, holomorphic rows only, and a complex scalar output (for
        `grad(..., holomorphic=True)`).
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
        if dtype not in _FLOATS + _COMPLEX:
            raise ValueError(
                f"programs: dtype must be float32 or float64 (or complex64, complex128), got "
                f"{dtype}"
            )
    complex_dtype = dtype not in (None, "mixed") and dtype.kind == "c"
    if holomorphic and dtype not in _COMPLEX + (None, "mixed"):
        raise ValueError(f"programs: holomorphic programs take complex inputs, not {dtype}")
    if complex_values is None:
        only_complex = all(op.values == "complex" for op in rows)
        complex_values = holomorphic or complex_dtype or only_complex
    elif complex_dtype and not complex_values:
        raise ValueError(f"programs: a {dtype} program needs complex_values=True")
    rows = _rows_for(rows, complex_values, holomorphic)
    if not rows:
        raise ValueError(f"programs: none of the ops {ops} applies to these programs")
    dtypes = _COMPLEX if holomorphic else _FLOATS + _COMPLEX if complex_values else _FLOATS
    loss = "complex" if holomorphic else "real" if complex_values else ""
    min_side = 0 if allow_size_zero else 1
    slope_cap = max_slope if max_slope is not None else (4.0 if smooth else math.inf)

    @st.composite
    def draw_program(draw):
        policy = dtype if dtype is not None else draw(st.sampled_from(dtypes), label="dtype")
        b = _Builder(
            draw,
            st,
            max_slope=slope_cap,
            max_inputs=max_inputs,
            allow_size_zero=allow_size_zero,
            max_side=max_side,
            dtype_policy=policy,
            mixed=dtypes,
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
        return Program(
            tuple(b.inputs),
            tuple(steps),
            tuple(b.input_names),
            outputs,
            scalar_output,
            loss if scalar_output else "",
        )

    return draw_program()


def _rows_for(rows, complex_values: bool, holomorphic: bool):
    """The rows a program of this kind may draw: real programs never draw complex-only rows,
    complex ones only rows meant for complex values, holomorphic ones only holomorphic rows."""
    if holomorphic:
        return [op for op in rows if op.holomorphic]
    if complex_values:
        return [op for op in rows if op.values in ("both", "complex")]
    return [op for op in rows if op.values != "complex"]


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
        if op.name in _SCALAR_PRODUCTS and res[1].kind == "c" and not any(v.shape for v in xs):
            continue
        names = tuple(v.name for v in xs)
        step = _Step(out_name, op, names, params, np.dtype(res[1]), tuple(v.shape for v in xs))
        return step, _Var(out_name, res[0], res[1], float(bound), float(op.slope(xs, params)))
    return None
