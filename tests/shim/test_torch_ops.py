"""`tracegrad.torch.ops` against PyTorch: values, dtypes, first and second derivatives.

Every function in `tt.__all__`, every method and operator `_METHODS` installs and every
in-place variant of `_INPLACE` is run on the same inputs in tracegrad and in PyTorch (the
oracle), comparing forward values (float64 within 1e-12 relative; float32 close, same dtype),
result dtypes, `requires_grad`, gradients through `backward()` and second derivatives through
`autograd.grad(create_graph=True)`. `test_every_name_is_covered` keeps the tables complete.
Type promotion is drawn with hypothesis; factories, conversions and NumPy functions applied to
tensors (NumPy semantics, gradients equal to the functional `tracegrad.grad`) have their own tests.
"""

from __future__ import annotations

import functools
import inspect
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad
import tracegrad.torch as tt
from tests.shim.torch_oracle import libraries, values
from tracegrad.torch import methods, ops
from tracegrad.torch.ops import matrices, selection, special_math
from tracegrad.torch.ops.out_argument import OUT_FUNCTIONS

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _torch_one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


_TORCH_TO_NP = {
    torch.bool: np.dtype(np.bool_),
    torch.uint8: np.dtype(np.uint8),
    torch.int8: np.dtype(np.int8),
    torch.int16: np.dtype(np.int16),
    torch.int32: np.dtype(np.int32),
    torch.int64: np.dtype(np.int64),
    torch.float16: np.dtype(np.float16),
    torch.float32: np.dtype(np.float32),
    torch.float64: np.dtype(np.float64),
    torch.complex64: np.dtype(np.complex64),
    torch.complex128: np.dtype(np.complex128),
}


def np_dtype(torch_dtype) -> np.dtype:
    return _TORCH_TO_NP[torch_dtype]


def quiet_if_xfail(request, check, *args) -> None:
    """Run `check(*args)`; in a test marked xfail, report a failure without a traceback.

    pytest re-parses this (long) module for every traceback entry it formats, about 0.3 s per
    failure: expected failures would dominate the run time otherwise."""
    if request.node.get_closest_marker("xfail") is None:
        check(*args)
        return
    try:
        check(*args)
    except Exception as e:  # noqa: BLE001 - any failure is the expected one
        pytest.fail(f"{type(e).__name__}: {e}", pytrace=False)


def known_bug(reason: str):
    """`xfail(strict=True)` whose failure is reported without a traceback (see above)."""

    def decorate(test):
        @functools.wraps(test)
        def run(*args, **kwargs):
            try:
                test(*args, **kwargs)
            except Exception as e:  # noqa: BLE001
                pytest.fail(f"{type(e).__name__}: {e}", pytrace=False)

        return pytest.mark.xfail(strict=True, reason=reason)(run)

    return decorate


# -- the case table --------------------------------------------------------------------------------


@dataclass(frozen=True)
class In:
    """One tensor input: random in [lo, hi] (kind f/i/b), or a fixed `value`."""

    shape: tuple = ()
    kind: str = "f"  # f: the case's float dtype; i: int64; b: bool
    lo: float = -2.0
    hi: float = 2.0
    value: object = None
    dtype: object = None  # overrides the case's dtype
    grad: bool = True


def F(*shape, lo=-2.0, hi=2.0, dtype=None):
    return In(shape, "f", lo, hi, dtype=dtype)


def P(*shape):  # positive, away from 0
    return In(shape, "f", 0.5, 2.0)


def U(*shape):  # inside (-1, 1)
    return In(shape, "f", -0.9, 0.9)


def K(*shape, lo=-2.0, hi=2.0, dtype=None):  # a float constant (no grad)
    return In(shape, "f", lo, hi, dtype=dtype, grad=False)


def I(*shape, lo=-3, hi=3, dtype=np.int64):  # noqa: E743 - I for integer input
    return In(shape, "i", lo, hi, dtype=dtype, grad=False)


def B(*shape):
    return In(shape, "b", grad=False)


def V(value, dtype=None, grad=True):  # fixed float values (ties, boundaries)
    return In(np.shape(value), "f", value=value, dtype=dtype, grad=grad)


def VI(value, dtype=np.int64):
    return In(np.shape(value), "i", value=value, dtype=dtype, grad=False)


@dataclass
class Case:
    id: str
    call: Callable  # call(M, *tensors) with M the module: tracegrad or torch
    inputs: tuple
    smooth: bool = True  # compare second derivatives
    grad: bool = True  # compare first derivatives
    f32: bool = True  # also compare a float32 run
    inplace: bool = False  # the result must be the tensor the method was called on
    xfail: dict = field(default_factory=dict)  # test kind -> reason


CASES: list[Case] = []
COVERED_FUNCS: set[str] = set()
COVERED_METHODS: set[str] = set()
BOTH_NAMES: set[str] = set()
_IDS: dict[str, int] = {}


def _fmt(args, kw) -> str:
    parts = [repr(a) if not isinstance(a, str) else a for a in args]
    parts += [f"{k}={v!r}" for k, v in kw.items()]
    return ",".join(parts)


def _shapes(inputs) -> str:
    return ",".join("x".join(map(str, i.shape)) or "0d" for i in inputs)


def _add(case: Case) -> Case:
    n = _IDS.get(case.id, 0)
    _IDS[case.id] = n + 1
    if n:
        case.id = f"{case.id}#{n}"
    CASES.append(case)
    return case


def case(id, call, *inputs, **opts):
    return _add(Case(id, call, tuple(inputs), **opts))


def fn(name, *inputs, args=(), kw=None, tm=False, **opts):
    """`M.name(*tensors, *args, **kw)`; with `tm`, torch runs the method (tracegrad also
    exports the function, or accepts arguments torch's function does not)."""
    kw = kw or {}
    COVERED_FUNCS.add(name)

    def call(M, *ts):
        if tm and M is torch:
            return getattr(ts[0], name)(*ts[1:], *args, **kw)
        return getattr(M, name)(*ts, *args, **kw)

    return case(f"tg.{name}({_shapes(inputs)};{_fmt(args, kw)})", call, *inputs, **opts)


def meth(name, *inputs, args=(), kw=None, **opts):
    """`tensors[0].name(*tensors[1:], *args, **kw)`."""
    kw = kw or {}
    COVERED_METHODS.add(name)

    def call(M, t, *ts):
        return getattr(t, name)(*ts, *args, **kw)

    return case(f"t.{name}({_shapes(inputs)};{_fmt(args, kw)})", call, *inputs, **opts)


def both(name, *inputs, args=(), kw=None, tm=False, **opts):
    """The function and the method; derivatives through the function only (`_METHODS` maps
    the method to the same function, and test_methods_are_the_functions checks that)."""
    BOTH_NAMES.add(name)
    fn(name, *inputs, args=args, kw=kw, tm=tm, **opts)
    meth(name, *inputs, args=args, kw=kw, **{**opts, "grad": False})


def inplace(name, *inputs, args=(), kw=None, **opts):
    """`(x + 0.0).name_(...)`: in place on a non-leaf, so the gradient flows through the rebase."""
    kw = kw or {}
    COVERED_METHODS.add(name + "_")

    def call(M, t, *ts):
        y = t + 0.0
        out = getattr(y, name + "_")(*ts, *args, **kw)
        assert out is y
        return out

    return case(
        f"t.{name}_({_shapes(inputs)};{_fmt(args, kw)})", call, *inputs, inplace=True, **opts
    )


# arithmetic, binary, with broadcasting
for _name in ("add", "sub", "mul", "maximum", "minimum"):
    both(_name, F(3, 4), F(4))
    both(_name, F(), F(2, 3))
both("div", F(3, 4), P(4))
both("div", F(2, 3), P())
both("pow", P(3, 4), F(4))
both("atan2", F(3, 4), P(3, 1))
both("remainder", F(3, 4), P(4), smooth=False)
both("floor_divide", F(3, 4), P(4), grad=False)  # torch: derivative not implemented
fn("rsub", F(3, 4), F(4))
fn("rsub", F(3), args=(2.0,))
fn("rsub", F(3), F(3), kw={"alpha": 2.0})
both("add", F(3, 4), F(4), kw={"alpha": 2.0})
both("sub", F(3, 4), F(3, 1), kw={"alpha": 0.5})
both("add", F(2, 3), args=(2,))
both("mul", F(2, 3), args=(1.5,))
both("div", F(2, 3), args=(4,))
both("div", F(2, 3), P(3), kw={"rounding_mode": "floor"}, grad=False)
both("div", F(2, 3), P(3), kw={"rounding_mode": "trunc"}, grad=False)
both("div", I(2, 3), VI([2, 3, -4]), kw={"rounding_mode": "floor"}, grad=False)
both("div", I(2, 3), VI([2, 3, -4]), kw={"rounding_mode": "trunc"}, grad=False)
both("div", I(2, 3), VI([2, 3, -4]), grad=False)
both("pow", F(2, 3), args=(2,))
both("pow", P(2, 3), args=(0.5,))
both("pow", F(2, 3), args=(3.0,))
case("tg.pow(2.0,x)", lambda M, x: M.pow(2.0, x), F(3))
both("maximum", V([1.0, 2.0, 3.0]), V([1.0, 0.0, 3.0]))  # ties: half each
both("minimum", V([1.0, 2.0, 3.0]), V([1.0, 0.0, 3.0]))
both("lerp", F(3, 4), F(4), F(3, 4))
both("lerp", F(3, 4), F(4), args=(0.25,))
both("addcmul", F(3), F(3), F(3))
both("addcmul", F(3), F(2, 3), F(3), kw={"value": 0.5})
both("addcdiv", F(3), F(3), P(3))
both("addcdiv", F(3), F(2, 3), P(3), kw={"value": -2.0})
both("matmul", F(3, 4), F(4, 2))
both("matmul", F(2, 3, 4), F(4))
both("matmul", F(4), F(2, 4, 3))
both("matmul", F(4), F(4))
both("matmul", F(2, 1, 3, 4), F(5, 4, 2))
both("mm", F(3, 4), F(4, 2))
both("bmm", F(2, 3, 4), F(2, 4, 5))
both("mv", F(3, 4), F(4))
both("dot", F(4), F(4))
both("outer", F(3), F(4))
both("neg", F(2, 3))
both("negative", F(2, 3))
both("neg", I(2, 3))

# unary
for _name in (
    "exp",
    "exp2",
    "expm1",
    "sin",
    "cos",
    "tan",
    "sinh",
    "cosh",
    "tanh",
    "atan",
    "arctan",
    "asinh",
    "arcsinh",
    "sigmoid",
    "square",
    "abs",
    "absolute",
):
    both(_name, F(2, 3))
for _name in ("log", "log2", "log10", "log1p", "sqrt", "rsqrt", "reciprocal"):
    both(_name, P(2, 3))
for _name in ("asin", "arcsin", "acos", "arccos", "atanh", "arctanh"):
    both(_name, U(2, 3))
for _name in ("acosh", "arccosh"):
    both(_name, F(2, 3, lo=1.5, hi=3.0))
for _name in ("sign", "floor", "ceil", "trunc", "relu"):
    both(_name, F(2, 3), smooth=False)
both("round", V([0.5, 1.5, 2.5, -0.5, -1.4, 2.6]), smooth=False)  # half to even
both("relu", V([-1.0, 0.0, 2.0]))  # gradient 0 at 0
both("abs", V([-1.0, 0.0, 2.0]))  # gradient 0 at 0
both("sign", V([-1.0, 0.0, 2.0]), smooth=False)
for _name in ("exp", "sqrt", "sin", "log", "sigmoid", "tanh", "reciprocal", "rsqrt"):
    both(_name, I(2, 3, lo=1, hi=4))  # integer -> default float dtype
for _name in ("abs", "sign", "square", "neg", "floor", "ceil", "round", "trunc", "relu"):
    both(_name, I(2, 3))  # integer stays integer
both("exp", V(1000.0, grad=False))  # overflow to inf, as torch

# clamp
both("clamp", F(3, 4), args=(-0.5, 0.5))
both("clamp", F(3, 4), kw={"min": -0.5})
both("clamp", F(3, 4), kw={"max": 0.5})
both("clamp", V([-1.0, -0.5, 0.0, 0.5, 1.0]), args=(-0.5, 0.5))  # boundaries: gradient 1
both("clamp", F(3, 4), V([-0.5, 0.0, -1.0, 0.5]), V([0.5, 1.0, 0.0, 1.5]))  # tensor bounds
both("clip", F(3, 4), args=(-0.5, 0.5))
both("clamp_min", V([-1.0, 0.0, 1.0]), args=(0.0,))
both("clamp_max", V([-1.0, 0.0, 1.0]), args=(0.0,))
both("clamp", I(2, 3), args=(-1, 1))
both("clamp", I(2, 3), args=(-0.5, 0.5))

# where / masked_fill
fn("where", B(3, 4), F(3, 4), F(4))
fn("where", B(3, 4), F(3, 4), args=(0.0,))
fn("where", B(3, 4), I(3, 4), F(4))
meth("where", F(3, 4), B(3, 4), F(3, 4))
both("masked_fill", F(3, 4), B(3, 4), args=(0.5,))
both("masked_fill", F(3, 4), B(4), args=(-1,))

# comparisons and predicates
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    both(_name, V([1.0, 2.0, 3.0]), V([1.0, 0.0, 4.0]))
    both(_name, I(2, 3), args=(0.5,))
for _name in ("isnan", "isfinite", "isinf"):
    both(_name, V([1.0, np.nan, np.inf, -np.inf], grad=False))
for _name in ("logical_and", "logical_or"):
    both(_name, B(3, 4), B(4))
    both(_name, F(3, 4), I(4, lo=0, hi=1))
both("logical_not", B(3, 4))
both("logical_not", F(3, 4))
both("equal", V([1.0, 2.0]), V([1.0, 2.0]))
both("equal", V([1.0, 2.0]), V([1.0, 2.5]))
both("equal", V([1.0, 2.0]), V([[1.0, 2.0]]))
both("allclose", V([1.0, 2.0]), V([1.0, 2.0 + 1e-9]))
both("allclose", V([1.0, 2.0]), V([1.0, 2.1]))
both("isclose", V([1.0, 2.0, np.nan]), V([1.0, 2.1, np.nan]))
both("isclose", V([1.0, 2.0, np.nan]), V([1.0, 2.1, np.nan]), kw={"equal_nan": True})

# reductions
both("sum", F(3, 4))
both("sum", F(3, 4), args=(1,))
both("sum", F(3, 4), args=(-1, True))
both("sum", F(2, 3, 4), args=((0, 2),))
both("sum", F(2, 3, 4), kw={"dim": (2, 0), "keepdim": True})
both("sum", F(2, 0, 3), args=(1,))
both("sum", F(), args=(0,))
both("sum", I(3, 4), args=(0,))
both("sum", B(3, 4))
both("sum", I(3, 4, dtype=np.int8), args=(1,))
both("sum", I(3, 4, dtype=np.uint8, lo=0), args=(1,))
case("t.sum(dtype=float64)", lambda M, x: x.sum(dtype=M.float64), F(3, 4))
case("t.sum(int, dtype=float32)", lambda M, x: x.sum(1, dtype=M.float32), I(3, 4))
both("mean", F(3, 4))
both("mean", F(3, 4), args=(0,))
both("mean", F(2, 3, 4), args=((0, 2), True))
both("mean", F(3, 4), kw={"dim": -1, "keepdim": True})
both("prod", F(3, 4))
both("prod", F(3, 4), args=(1,))
both("prod", F(3, 4), args=(0, True))
for _name in ("var", "std"):
    both(_name, F(3, 4))
    both(_name, F(3, 4), args=(1,))
    both(_name, F(3, 4), args=(0,), kw={"keepdim": True})
    both(_name, F(3, 4), kw={"correction": 0})
    both(_name, F(3, 4), kw={"dim": 1, "correction": 2})
    both(_name, F(3, 4), kw={"unbiased": False})
    both(_name, F(3, 4), kw={"dim": (0, 1), "unbiased": True})
for _name in ("max", "min"):
    both(_name, F(3, 4))
    both(_name, V([[1.0, 3.0, 3.0], [0.0, 3.0, -1.0]]))  # all-reduce ties: even split
    both(_name, V([[1.0, -3.0, -3.0], [0.0, -3.0, 1.0]]))
    both(_name, F(3, 4), args=(1,))
    both(_name, F(3, 4), args=(0, True))
    both(_name, F(3, 4), kw={"dim": -1})
    both(_name, V([[1.0, 2.0, 2.0], [5.0, 5.0, 0.0]]), args=(1,))  # ties: to the index
    both(_name, F(), args=(0,))
    both(_name, F(3, 4), F(4))  # torch.max(a, b) is maximum
    both(_name, I(3, 4), args=(1,))
for _name in ("amax", "amin"):
    both(_name, F(3, 4))
    both(_name, F(3, 4), args=(1,))
    both(_name, F(2, 3, 4), args=((0, 2), True))
    both(_name, V([[1.0, 3.0, 3.0], [0.0, 3.0, -1.0]]), args=(1,))  # ties: even split
    both(_name, V([[1.0, -3.0, -3.0], [0.0, -3.0, 1.0]]))
for _name in ("argmax", "argmin"):
    both(_name, F(3, 4))
    both(_name, F(3, 4), args=(1,))
    both(_name, F(3, 4), args=(0, True))
    both(_name, V([[1.0, 3.0, 3.0], [-1.0, -1.0, 0.0]]), args=(1,))  # first of ties
both("logsumexp", F(3, 4), args=(1,))
both("logsumexp", F(3, 4), args=(0, True))
both("logsumexp", F(2, 3, 4), args=((0, 2),))
both("logsumexp", V([[1000.0, 1000.0, -1000.0], [1.0, 2.0, 3.0]]), args=(1,))
both("logsumexp", V([[-np.inf, -np.inf], [1.0, 2.0]], grad=False), args=(1,))
for _name in ("softmax", "log_softmax"):
    both(_name, F(3, 4), args=(1,))
    both(_name, F(3, 4), args=(0,))
    both(_name, F(2, 3, 4), kw={"dim": -2})
    both(_name, V([[1000.0, 999.0, -1000.0], [-1000.0, 0.0, 1000.0]]), args=(1,))
case("softmax(int?dtype=float64)", lambda M, x: M.softmax(x, 1, dtype=M.float64), F(3, 4))
both("norm", F(3, 4))
both("norm", F(3, 4), kw={"p": 1})
both("norm", F(3, 4), kw={"p": float("inf")})
both("norm", F(3, 4), kw={"p": 3})
both("norm", F(3, 4), kw={"dim": 1})
both("norm", F(3, 4), kw={"p": 2, "dim": 0, "keepdim": True})
both("norm", F(3, 4), kw={"p": 1, "dim": 1})
for _name in ("all", "any"):
    both(_name, B(3, 4))
    both(_name, B(3, 4), args=(1,))
    both(_name, B(3, 4), args=(0, True))
    both(_name, F(3, 4))
    both(_name, I(3, 4, lo=0, hi=1), args=(1,))
both("cumsum", F(3, 4), args=(1,))
both("cumsum", F(3, 4), args=(-2,))
both("cumsum", I(3, 4), args=(0,))
case("cumsum(dtype=float64)", lambda M, x: M.cumsum(x, 0, dtype=M.float64), I(3, 4))
both("cumprod", F(3, 4), args=(1,))
both("cumprod", P(3, 4), args=(0,))
both("cumprod", I(3, 4), args=(1,))

# shapes
both("reshape", F(3, 4), args=((4, 3),), tm=True)
both("reshape", F(3, 4), args=(2, -1), tm=True)
both("reshape", F(3, 4), args=(-1,), tm=True)
both("reshape", F(), args=((1, 1),), tm=True)
both("view", F(3, 4), args=(12,), tm=True)
both("view", F(3, 4), args=((2, 2, 3),), tm=True)
both("view_as", F(3, 4), K(2, 6), tm=True)
both("reshape_as", F(3, 4), K(6, 2), tm=True)
both("flatten", F(2, 3, 4))
both("flatten", F(2, 3, 4), args=(1,))
both("flatten", F(2, 3, 4, 5), args=(1, 2))
both("flatten", F(2, 3, 4), kw={"start_dim": 0, "end_dim": -2})
both("flatten", F())
both("t", F(3, 4))
both("t", F(3))
both("transpose", F(2, 3, 4), args=(0, 2))
both("transpose", F(2, 3, 4), args=(-1, 1))
both("swapaxes", F(2, 3, 4), args=(0, 1))
both("swapdims", F(2, 3, 4), args=(2, 1))
both("permute", F(2, 3, 4), args=(2, 0, 1), tm=True)
both("permute", F(2, 3, 4), args=((1, 2, 0),), tm=True)
both("permute", F(2, 3, 4), args=(-1, 0, -2), tm=True)
both("unsqueeze", F(3, 4), args=(0,))
both("unsqueeze", F(3, 4), args=(-1,))
both("unsqueeze", F(3, 4), args=(1,))
both("unsqueeze", F(), args=(0,))
both("squeeze", F(1, 3, 1))
both("squeeze", F(1, 3, 1), args=(0,))
both("squeeze", F(1, 3, 1), args=(1,))
both("squeeze", F(1, 3, 1), args=(-1,))
both("squeeze", F(1, 3, 1), args=((0, 2),))
both("expand", F(3, 1), args=(3, 4), tm=True)
both("expand", F(3, 1), args=(2, -1, 4), tm=True)
both("expand", F(3, 1), args=((2, 3, 5),), tm=True)
both("expand", F(), args=(2, 2), tm=True)
both("expand_as", F(3, 1), K(2, 3, 4), tm=True)
both("repeat", F(2, 3), args=(2, 2), tm=True)  # tiles
both("repeat", F(2, 3), args=(2, 1, 3), tm=True)
both("repeat", F(3), args=((2, 2),), tm=True)
both("flip", F(2, 3, 4), args=(0,), tm=True)
both("flip", F(2, 3, 4), args=((0, 2),), tm=True)
both("flip", F(2, 3, 4), kw={"dims": [-1]}, tm=True)
for _name in ("cat", "concat", "concatenate"):
    case(f"tg.{_name}([2x3,1x3])", lambda M, a, b, n=_name: getattr(M, n)([a, b]), F(2, 3), F(1, 3))
    COVERED_FUNCS.add(_name)
case("tg.cat(dim=1)", lambda M, a, b: M.cat((a, b), dim=1), F(2, 3), F(2, 1))
case("tg.cat(dim=-1, 3)", lambda M, a, b, c: M.cat([a, b, c], -1), F(2, 3), K(2, 2), F(2, 1))
case("tg.cat(float, int)", lambda M, a, b: M.cat([a, b]), F(2, 3), I(1, 3))
case("tg.cat(int, bool)", lambda M, a, b: M.cat([a, b]), I(2, 3), B(1, 3))
case(
    "tg.cat(f32, f64)",
    lambda M, a, b: M.cat([a, b]),
    F(2, 3, dtype=np.float32),
    F(1, 3, dtype=np.float64),
)
case("tg.stack", lambda M, a, b: M.stack([a, b]), F(2, 3), F(2, 3))
case("tg.stack(dim=2)", lambda M, a, b: M.stack([a, b], dim=2), F(2, 3), F(2, 3))
case("tg.stack(dim=-1, 0d)", lambda M, a, b: M.stack([a, b], -1), F(), F())
case("tg.stack(float, int)", lambda M, a, b: M.stack([a, b], 1), F(2, 3), I(2, 3))
case(
    "tg.stack(f64, f32)",
    lambda M, a, b: M.stack([a, b]),
    F(2, 3, dtype=np.float64),
    F(2, 3, dtype=np.float32),
)
COVERED_FUNCS.add("stack")
both("chunk", F(7, 2), args=(3,))
both("chunk", F(6, 2), args=(3,))
both("chunk", F(2, 5), args=(2, 1))
both("chunk", F(2, 5), kw={"chunks": 5, "dim": -1})
both("split", F(7, 2), args=(3,))
both("split", F(7, 2), args=([2, 5],))
both("split", F(2, 7), args=(2, 1))
both("split", F(2, 7), args=((1, 0, 6), -1))
both("unbind", F(3, 2))
both("unbind", F(3, 2), args=(1,))
both("select", F(3, 4), args=(0, 1))
both("select", F(3, 4), args=(1, -1))
both("narrow", F(3, 5), args=(1, 1, 3))
both("narrow", F(3, 5), args=(0, 0, 2))
both("narrow", F(3, 5), args=(1, -2, 2))  # start from the end
both("narrow", F(3, 5), args=(-1, -5, 0))
case("tg.gather(dim=1)", lambda M, x, i: M.gather(x, 1, i), F(3, 4), VI([[0, 3], [1, 1], [2, 0]]))
case("t.gather(dim=0)", lambda M, x, i: x.gather(0, i), F(3, 4), VI([[0, 2, 2, 1]]))
COVERED_FUNCS.add("gather")
COVERED_METHODS.add("gather")
case("tg.index_select(dim=1)", lambda M, x, i: M.index_select(x, 1, i), F(3, 4), VI([2, 0, 2]))
case("t.index_select(dim=0)", lambda M, x, i: x.index_select(0, i), F(3, 4), VI([1, 1]))
COVERED_FUNCS.add("index_select")
COVERED_METHODS.add("index_select")
both("triu", F(4, 3))
both("triu", F(4, 3), args=(1,))
both("tril", F(3, 4), args=(-1,))
case("tg.einsum(ij,jk)", lambda M, a, b: M.einsum("ij,jk->ik", a, b), F(2, 3), F(3, 4))
case("tg.einsum([bi,bi->b])", lambda M, a, b: M.einsum("bi,bi->b", [a, b]), F(3, 4), F(3, 4))
case("tg.einsum(ii->i)", lambda M, a: M.einsum("ii->i", a), F(3, 3))
COVERED_FUNCS.add("einsum")
both("clone", F(3, 4))
both("contiguous", F(3, 4), tm=True)

# method-only names and conversions
meth("subtract", F(3, 4), F(4))
meth("multiply", F(3, 4), F(4))
meth("divide", F(3, 4), P(4))
meth("true_divide", I(3, 4), VI([1, 2, 3, 4]))
for _name in ("float", "double", "half", "int", "long", "bool", "cpu"):
    meth(_name, F(2, 3), grad=_name in ("float", "double", "cpu"))
case("t.to(float32)", lambda M, x: x.to(M.float32), F(2, 3))
case("t.to(dtype=float64)", lambda M, x: x.to(dtype=M.float64), F(2, 3, dtype=np.float32))
case("t.to(int32)", lambda M, x: x.to(M.int32), F(2, 3), grad=False)
case("t.to('cpu')", lambda M, x: x.to("cpu"), F(2, 3))
case("t.to(other)", lambda M, x, y: x.to(y), F(2, 3), K(1, dtype=np.float64))
case("t.type_as", lambda M, x, y: x.type_as(y), I(2, 3), K(1, dtype=np.float32))
COVERED_METHODS.update(("to", "type_as"))
meth("is_floating_point", F(2))
meth("is_floating_point", I(2))
case("t.new_zeros", lambda M, x: x.new_zeros(2, 3), F(1, dtype=np.float64), grad=False)
case("t.new_ones", lambda M, x: x.new_ones((2, 3)), I(1), grad=False)
case("t.new_empty.shape", lambda M, x: x.new_empty(2, 3).shape, F(1))
case("t.new_full", lambda M, x: x.new_full((2, 3), 7), F(1, dtype=np.float64), grad=False)
case("t.new_tensor", lambda M, x: x.new_tensor([1, 2]), F(1, dtype=np.float64), grad=False)
COVERED_METHODS.update(("new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"))

# properties
case("t.T", lambda M, x: x.T, F(2, 3))
case("t.mT", lambda M, x: x.mT, F(4, 2, 3))
COVERED_METHODS.update(("T", "mT"))

# operators
for _op in ("__add__", "__sub__", "__mul__", "__radd__", "__rsub__", "__rmul__"):
    meth(_op, F(3, 4), F(4))
    meth(_op, F(3, 4), args=(2,))
    meth(_op, I(3, 4), args=(1.5,))
meth("__truediv__", F(3, 4), P(4))
meth("__truediv__", I(3, 4), args=(2,))  # int / int -> float32
meth("__rtruediv__", P(3, 4), args=(2,))
meth("__rtruediv__", I(3, 4, lo=1, hi=3), args=(2,))
meth("__floordiv__", F(3, 4), P(4), grad=False)
meth("__floordiv__", I(3, 4), args=(2,))
meth("__rfloordiv__", P(3, 4), args=(7.0,), grad=False)
meth("__mod__", F(3, 4), P(4), smooth=False)
meth("__mod__", I(3, 4), args=(2,))
meth("__rmod__", P(3, 4), args=(7.0,), grad=False)  # torch: not implemented
meth("__pow__", P(3, 4), F(4))
meth("__pow__", F(3, 4), args=(2,))
meth("__pow__", I(3, 4), args=(2,))
meth("__rpow__", F(3, 4), args=(2.0,))
meth("__rpow__", F(3, 4), args=(2,))
meth("__matmul__", F(3, 4), F(4, 2))
meth("__rmatmul__", F(4, 2), F(3, 4))
meth("__neg__", F(3))
meth("__pos__", F(3))
meth("__abs__", F(3))
for _op in ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"):
    meth(_op, V([1.0, 2.0, 3.0]), V([1.0, 0.0, 4.0]))
    meth(_op, I(3), args=(0,))
meth("__and__", B(3, 4), B(4))
meth("__or__", B(3, 4), B(4))
meth("__invert__", B(3, 4))
meth("__getitem__", F(3, 4), args=(1,))
meth("__getitem__", F(3, 4), args=((slice(None), 2),))
meth("__getitem__", F(3, 4), args=((slice(0, 2), slice(None, None, 2)),))
meth("__getitem__", F(3, 4), args=((None, Ellipsis, -1),))
case("t[bool mask]", lambda M, x, m: x[m], F(3, 4), B(3, 4))
case("t[int tensor]", lambda M, x, i: x[i], F(3, 4), VI([2, 0, 2]))
case("t[list]", lambda M, x: x[[0, 2, 2]], F(3, 4))


def _setitem(M, x, v, index):
    y = x + 0.0
    y[index] = v
    return y


COVERED_METHODS.add("__setitem__")
case("t[1]=v", lambda M, x, v: _setitem(M, x, v, 1), F(3, 4), F(4))
case("t[:,1]=v", lambda M, x, v: _setitem(M, x, v, (slice(None), 1)), F(3, 4), F(3))
case("t[0]=v(bcast)", lambda M, x, v: _setitem(M, x, v, 0), F(3, 4), F(1))
case(
    "t[1:,::2]=2.5",
    lambda M, x: _setitem(M, x, 2.5, (slice(1, None), slice(None, None, 2))),
    F(3, 4),
)
case("t[int]=i(no grad)", lambda M, x, v: _setitem(M, x, v, 2), K(3, 4), I(4))

# in-place methods and operators on a non-leaf
for _name in ("neg", "exp", "sin", "cos", "tanh", "sigmoid", "square", "abs", "relu"):
    inplace(_name, F(2, 3))
for _name in ("log", "sqrt", "reciprocal"):
    inplace(_name, P(2, 3))
for _name in ("floor", "ceil", "round", "sign"):
    inplace(_name, F(2, 3), smooth=False)
for _name in ("add", "sub", "mul"):
    inplace(_name, F(2, 3), F(3))
    inplace(_name, F(2, 3), args=(2.0,))
inplace("add", F(2, 3), F(3), kw={"alpha": 3.0})
inplace("div", F(2, 3), P(3))
inplace("pow", P(2, 3), args=(3.0,))
inplace("pow", P(2, 3), F(3))
inplace("remainder", F(2, 3), args=(0.75,), smooth=False)
inplace("clamp", F(2, 3), args=(-0.5, 0.5))
inplace("clamp_min", F(2, 3), args=(0.0,))
inplace("clamp_max", F(2, 3), args=(0.0,))
inplace("lerp", F(2, 3), F(3), args=(0.3,))
inplace("addcmul", F(2, 3), F(3), F(2, 3), kw={"value": 2.0})
inplace("addcdiv", F(2, 3), F(3), P(2, 3))
inplace("masked_fill", F(2, 3), B(2, 3), args=(1.5,))
for _op, _name in (
    ("__iadd__", "add"),
    ("__isub__", "sub"),
    ("__imul__", "mul"),
    ("__itruediv__", "div"),
    ("__ipow__", "pow"),
    ("__imod__", "remainder"),
):

    def _iop(M, x, y, op=_op):
        z = x + 0.0
        out = getattr(z, op)(y)
        assert out is z
        return out

    case(f"t.{_op}", _iop, P(2, 3), P(3), smooth=_name != "remainder", inplace=True)
    COVERED_METHODS.add(_op)


def _fresh(M, x, name, *args):
    y = x + 0.0
    out = getattr(y, name)(*args)
    assert out is y
    return out


case("t.zero_", lambda M, x: _fresh(M, x, "zero_"), F(2, 3), inplace=True)
case("t.fill_(2.5)", lambda M, x: _fresh(M, x, "fill_", 2.5), F(2, 3), inplace=True)
case("t.fill_(0d tensor)", lambda M, x, v: _fresh(M, x, "fill_", v), F(2, 3), F(), inplace=True)
case("t.copy_", lambda M, x, v: _fresh(M, x, "copy_", v), F(2, 3), F(2, 3), inplace=True)
case("t.copy_(bcast)", lambda M, x, v: _fresh(M, x, "copy_", v), F(2, 3), F(3), inplace=True)
case("t.copy_(int)", lambda M, x, v: _fresh(M, x, "copy_", v), F(2, 3), I(2, 3), inplace=True)
COVERED_METHODS.update(("zero_", "fill_", "copy_"))


# dim=0 / dim=-1 on a 0-d tensor (PyTorch treats a 0-d tensor as having one dimension there)
ZERO_D_DIMS = [
    fn("sum", F(), args=(-1,)),
    fn("mean", F(), args=(0,)),
    fn("prod", F(), args=(0,)),
    fn("std", F(), args=(0,), kw={"correction": 0}),
    fn("softmax", F(), args=(0,)),
    fn("log_softmax", F(), args=(-1,)),
    fn("logsumexp", F(), args=(0,)),
    fn("cumsum", F(), args=(0,)),
    fn("cumprod", F(), args=(0,)),
    fn("amax", F(), args=(0,)),
    fn("all", F(), args=(0,)),
    fn("flip", F(), args=((0,),)),
    fn("norm", F(), kw={"dim": 0}),
]
fn("argmax", F(), args=(0,))
fn("unsqueeze", F(), args=(-1,))
fn("squeeze", F(), args=(0,))


# -- known differences from torch (strict xfails; the report lists them) ---------------------------

_R_WARN = "NumPy RuntimeWarning (overflow, log of 0) escapes where torch is silent"
_R_LOG_SOFTMAX = (
    "log_softmax is x - logsumexp(x): float32 loses digits at |x| ~ 1000; torch computes "
    "(x - max) - log(sum(exp(x - max)))"
)
_R_INPLACE_CONST = (
    "an in-place op whose result has no grad_fn (zero_, fill_(2.5), floor_, copy_(int src)) keeps "
    "the tensor's old grad_fn: the gradient flows through the overwritten value"
)
XFAILS = {
    **{f"{p}.{n}": {"fwd": _R_WARN} for p in ("tg", "t") for n in ("exp(0d;)", "logsumexp(2x2;1)")},
}
_BY_ID = {c.id: c for c in CASES}
for _id, _marks in XFAILS.items():
    _BY_ID[_id].xfail.update(_marks)


# -- running one case in one library ---------------------------------------------------------------


def _seed(text: str) -> int:
    return zlib.crc32(text.encode())


def _arrays(c: Case, dtype) -> list[np.ndarray]:
    rng = np.random.default_rng(_seed(c.id))
    out = []
    for spec in c.inputs:
        if not isinstance(spec, In):
            raise TypeError(f"{c.id}: inputs must be In specs")
        dt = np.dtype(spec.dtype or (dtype if spec.kind == "f" else np.int64))
        if spec.value is not None:
            a = np.array(spec.value, dtype=dt)
        elif spec.kind == "f":
            a = rng.uniform(spec.lo, spec.hi, spec.shape).astype(dt)
        elif spec.kind == "i":
            a = rng.integers(int(spec.lo), int(spec.hi) + 1, spec.shape).astype(dt)
        else:
            a = rng.random(spec.shape) < 0.5
        out.append(a)
    return out


def _make(M, c: Case, arrays):
    ts = []
    for spec, a in zip(c.inputs, arrays):
        grad = spec.grad and a.dtype.kind == "f"
        if M is torch:
            ts.append(torch.tensor(a, requires_grad=grad))
        else:
            ts.append(tt.tensor(a, requires_grad=grad))
    return ts


def _leaves(out) -> list:
    if isinstance(out, tuple | list):
        return [y for x in out for y in _leaves(x)]
    return [out]


def _value(x):
    """A NumPy array (tensors), or the plain Python value (bool, int, shapes)."""
    if isinstance(x, torch.Tensor):
        return x.detach().numpy(force=True)  # force: torch's ZeroTensor gradients
    if isinstance(x, tt.Tensor):
        return x.detach().numpy()
    if isinstance(x, torch.Size):
        return tuple(x)
    return x


def _assert_close(ours, theirs, dtype, what: str, *, grad=False) -> None:
    if not isinstance(theirs, np.ndarray):
        assert type(ours) is type(theirs) and ours == theirs, (what, ours, theirs)
        return
    assert isinstance(ours, np.ndarray), (what, type(ours))
    assert ours.shape == theirs.shape, (what, ours.shape, theirs.shape)
    assert ours.dtype == theirs.dtype, (what, ours.dtype, theirs.dtype)
    if theirs.dtype.kind in "biu":
        np.testing.assert_array_equal(ours, theirs, err_msg=what)
    elif np.dtype(dtype) == np.float64 and theirs.dtype == np.float64:
        rtol, atol = (1e-10, 1e-12) if grad else (1e-12, 1e-14)
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, err_msg=what)
    else:
        rtol, atol = (1e-4, 1e-5) if grad else (1e-5, 1e-6)
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, err_msg=what)


def _params(kind: str, *, dtypes=(np.float64, np.float32)):
    out = []
    for c in CASES:
        if kind in ("grad", "grad2") and not (
            c.grad and any(s.kind == "f" and s.grad for s in c.inputs)
        ):
            continue
        if kind == "grad2" and not c.smooth:
            continue
        for dt in dtypes:
            if dt == np.float32 and not c.f32:
                continue
            marks = []
            reason = c.xfail.get(f"{kind}{np.dtype(dt).itemsize * 8}") or c.xfail.get(kind)
            if reason:
                marks.append(pytest.mark.xfail(strict=True, reason=reason))
            out.append(pytest.param(c, np.dtype(dt), id=f"{c.id}-{np.dtype(dt).name}", marks=marks))
    return out


def _run(M, c: Case, arrays):
    ts = _make(M, c, arrays)
    return ts, c.call(M, *ts)


# -- forward, first and second order ---------------------------------------------------------------


@pytest.mark.parametrize(("c", "dtype"), _params("fwd"))
def test_forward(c: Case, dtype, request):
    quiet_if_xfail(request, _check_forward, c, dtype)


def _check_forward(c: Case, dtype):
    arrays = _arrays(c, dtype)
    _, expected = _run(torch, c, arrays)
    _, got = _run(tt, c, arrays)
    exp_leaves, got_leaves = _leaves(expected), _leaves(got)
    assert type(got) is tuple or not isinstance(expected, tuple) or isinstance(got, tuple | list)
    assert len(got_leaves) == len(exp_leaves)
    for i, (g, e) in enumerate(zip(got_leaves, exp_leaves)):
        assert isinstance(g, tt.Tensor) == isinstance(e, torch.Tensor), (i, type(g), type(e))
        if isinstance(e, torch.Tensor):
            assert g.requires_grad == e.requires_grad, (i, "requires_grad")
            assert g.is_leaf == e.is_leaf, (i, "is_leaf")
        _assert_close(_value(g), _value(e), dtype, f"{c.id} output {i}")
    if hasattr(expected, "_fields") or type(expected).__name__ in ("max", "min"):
        assert got.values is got_leaves[0] and got.indices is got_leaves[1]


def _seed_grads(outs, rng):
    """Cotangents for the torch outputs that require grad (same arrays for both libraries)."""
    return [
        rng.uniform(-1.0, 1.0, o.shape).astype(np_dtype(o.dtype))
        if isinstance(o, torch.Tensor) and o.requires_grad
        else None
        for o in outs
    ]


def _grads_of(M, ts):
    out = []
    for t in ts:
        if not t.requires_grad:
            out.append(None)
            continue
        g = t.grad
        out.append(None if g is None else _value(g))
    return out


def _as_zero(g, t):
    return np.zeros(tuple(t.shape), _value(t.detach()).dtype) if g is None else g


@pytest.mark.parametrize(("c", "dtype"), _params("grad"))
def test_backward(c: Case, dtype, request):
    quiet_if_xfail(request, _check_backward, c, dtype)


def _check_backward(c: Case, dtype):
    arrays = _arrays(c, dtype)
    rng = np.random.default_rng(_seed(c.id) + 1)
    t_in, t_out = _run(torch, c, arrays)
    t_outs = _leaves(t_out)
    cts = _seed_grads(t_outs, rng)
    pairs = [(o, ct) for o, ct in zip(t_outs, cts) if ct is not None]
    g_in, g_out = _run(tt, c, arrays)
    g_outs = _leaves(g_out)
    if not pairs:  # nothing to differentiate: tracegrad agrees
        assert not any(isinstance(o, tt.Tensor) and o.requires_grad for o in g_outs)
        return
    torch.autograd.backward([o for o, _ in pairs], [torch.tensor(ct) for _, ct in pairs])
    g_pairs = [(g_outs[i], ct) for i, ct in enumerate(cts) if ct is not None]
    tt.autograd.backward([o for o, _ in g_pairs], [tt.tensor(ct) for _, ct in g_pairs])
    for i, (t_ref, gt) in enumerate(zip(t_in, g_in)):
        if not t_ref.requires_grad:
            continue
        exp = _as_zero(_grads_of(torch, [t_ref])[0], t_ref)
        got = _as_zero(_grads_of(tt, [gt])[0], gt)
        _assert_close(got, exp, dtype, f"{c.id}: d/d input {i}", grad=True)


def _second(M, c: Case, arrays, cts, vs):
    """<v, d/dx <ct, f'(x)>>: the Hessian-vector products through autograd.grad(create_graph)."""
    ts, out = _run(M, c, arrays)
    outs = _leaves(out)
    pairs = [(outs[i], ct) for i, ct in enumerate(cts) if ct is not None]
    wrt = [t for t in ts if t.requires_grad]
    mk = torch.tensor if M is torch else tt.tensor
    gs = M.autograd.grad(
        [o for o, _ in pairs],
        wrt,
        [mk(ct) for _, ct in pairs],
        create_graph=True,
        allow_unused=True,
    )
    terms = [(g * mk(v)).sum() for g, v in zip(gs, vs) if g is not None and g.requires_grad]
    if not terms:
        return [np.zeros(t.shape, np.float64) for t in wrt]
    total = terms[0]
    for term in terms[1:]:
        total = total + term
    hs = M.autograd.grad(total, wrt, allow_unused=True)
    return [_as_zero(None if h is None else _value(h), t) for h, t in zip(hs, wrt)]


@pytest.mark.parametrize(("c", "dtype"), _params("grad2", dtypes=(np.float64,)))
def test_second_order(c: Case, dtype, request):
    quiet_if_xfail(request, _check_second_order, c, dtype)


def _check_second_order(c: Case, dtype):
    arrays = _arrays(c, dtype)
    rng = np.random.default_rng(_seed(c.id) + 2)
    _, t_out = _run(torch, c, arrays)
    cts = _seed_grads(_leaves(t_out), rng)
    if all(ct is None for ct in cts):
        _, g_out = _run(tt, c, arrays)
        assert not any(isinstance(o, tt.Tensor) and o.requires_grad for o in _leaves(g_out))
        return
    wrt = [a for a, s in zip(arrays, c.inputs) if s.grad and a.dtype.kind == "f"]
    vs = [rng.uniform(-1.0, 1.0, a.shape).astype(a.dtype) for a in wrt]
    expected = _second(torch, c, arrays, cts, vs)
    got = _second(tt, c, arrays, cts, vs)
    for i, (g, e) in enumerate(zip(got, expected)):
        _assert_close(
            g, e.astype(g.dtype) if e.dtype != g.dtype else e, dtype, f"{c.id}: {i}", grad=True
        )


# -- the tables cover every name -------------------------------------------------------------------


def test_methods_are_the_functions():
    """Derivatives are checked through `tt.name`; the methods `both()` adds are the same (a
    function taking `out=` is a wrapper that calls the method's function when `out` is None:
    methods take no `out=`, as PyTorch's)."""
    for name in BOTH_NAMES:
        if name in methods.METHODS:
            fn = getattr(tt, name)
            fn = fn.__wrapped__ if name in OUT_FUNCTIONS else fn
            assert methods.METHODS[name] is fn, name
            assert getattr(tt.Tensor, name) is fn, name


# names checked by the dedicated tests below rather than by the case table
_ELSEWHERE_MATH = set(  # test_torch_math_extra
    (
        "aminmax bincount bitwise_and bitwise_not bitwise_or bitwise_xor bucketize copysign "
        "corrcoef count_nonzero cov cumulative_trapezoid deg2rad diff float_power fmax fmin fmod "
        "frac frexp gcd gradient heaviside histc igamma igammac is_floating_point is_nonzero isin "
        "isneginf isposinf isreal lcm ldexp logaddexp logaddexp2 logical_xor logit mvlgamma "
        "nan_to_num nanmean nanquantile nansum nextafter quantile rad2deg searchsorted signbit "
        "std_mean trapezoid trapz unique_consecutive unravel_index var_mean "
    ).split()
)
_ELSEWHERE = {
    "manual_seed",
    "zeros",
    "ones",
    "empty",
    "full",
    "randn",
    "rand",
    "randint",
    "randperm",
    "arange",
    "linspace",
    "eye",
    "zeros_like",
    "ones_like",
    "empty_like",
    "randn_like",
    "rand_like",
    "full_like",
    # sampling: tests/shim/test_torch_device_random.py
    "bernoulli",
    "multinomial",
    "normal",
    "poisson",
    "randint_like",
    # the global stream's state: tests/shim/test_global_rng.py
    "seed",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "as_tensor",
    "from_numpy",
    "is_tensor",
    "numel",
    "result_type",
    # scatter and index updates: tests/shim/test_torch_scatter.py
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "index_add",
    "index_copy",
    "index_fill",
    "index_put",
    "masked_scatter",
    "take",
    "take_along_dim",
    # complex numbers: tests/shim/test_complex.py
    "real",
    "imag",
    "conj",
    "conj_physical",
    "resolve_conj",
    "is_conj",
    "is_complex",
    "angle",
    "sgn",
    "view_as_real",
    "view_as_complex",
    "complex",
    "polar",
    # sorting and selection: tests/shim/test_torch_selection.py
    "sort",
    "argsort",
    "msort",
    "topk",
    "kthvalue",
    "median",
    "nanmedian",
    "mode",
    "cummax",
    "cummin",
    "logcumsumexp",
    "masked_select",
    "nonzero",
    "argwhere",
    "unique",
    # special functions and matrix functions: tests/shim/test_torch_math.py
    *special_math.__all__,
    *matrices.__all__,
    *{*ops.shapes_extra.__all__, *ops.products_extra.__all__},  # test_torch_ops_extra.py
}
# cuda: test_cuda_is_refused_clearly; backward: every gradient above; _bind_eager: internal;
# the complex methods: tests/shim/test_complex.py
_METHODS_ELSEWHERE = (
    {"normal_", "uniform_", "cuda", "backward", "_bind_eager"}
    | {"bernoulli", "multinomial", "device", "is_cpu", "is_cuda"}  # test_torch_device_random
    | {"type"}  # test_tensor_basics
    | {"bernoulli_", "exponential_", "random_"}  # test_global_rng
    | set(methods._EXTRA_MATH)  # test_torch_math_extra.py::test_tensor_methods
    | {
        "real",
        "imag",
        "conj",
        "conj_physical",
        "resolve_conj",
        "is_conj",
        "is_complex",
        "angle",
        "sgn",
        "cfloat",
        "cdouble",
    }
    | {"det", "inverse"}
    # scatter and index updates: tests/shim/test_torch_scatter.py
    | {"scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_fill"}
    | {"index_put", "masked_scatter", "take", "take_along_dim"}
    | {"scatter_", "scatter_add_", "scatter_reduce_", "index_add_", "index_copy_"}
    | {"index_fill_", "index_put_", "masked_scatter_"}
    | {*special_math.__all__, *matrices.__all__, "unfold"}  # tests/shim/test_torch_math.py
    | {f"{n}_" for n in (*special_math.__all__, "addmm", "addmv", "addbmm", "baddbmm")}
    | set(selection.__all__)  # tests/shim/test_torch_selection.py
    | {*ops.shapes_extra.__all__, *ops.products_extra.__all__}  # test_torch_ops_extra.py
)  # torch.linalg's, against torch: tests/shim/test_torch_linalg_fft.py


def test_cuda_is_refused_clearly():
    with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled$"):
        tt.ones(2).cuda()


def test_every_name_is_covered():
    missing = set(ops.__all__) - COVERED_FUNCS - _ELSEWHERE - _ELSEWHERE_MATH
    assert not missing, f"functions without a case: {sorted(missing)}"
    names = set(methods.METHODS) | {n + "_" for n in methods._INPLACE}
    missing = names - COVERED_METHODS - _METHODS_ELSEWHERE
    assert not missing, f"methods without a case: {sorted(missing)}"
    for name in _ELSEWHERE:
        assert hasattr(tt, name), name


def test_inplace_on_the_output_of_mul_rebases():
    """`y = x * 2; y.add_(1)`: mul saves its inputs, not its output, so torch allows it."""
    grads = []
    for M in (torch, tt):
        x = M.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.add_(1)
        (y * y).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[1] == grads[0] == [12.0, 20.0]


# -- type promotion --------------------------------------------------------------------------------

_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")
_SCALARS = {"bool": True, "int": 2, "float": 1.5}


def _operand(kind, dtype, zero_dim):
    """(tracegrad operand, torch operand) of small positive values (no overflow, no 0 / 0)."""
    if kind == "s":
        value = _SCALARS[dtype]
        return value, value
    a = np.array(2 if zero_dim else [1, 2]).astype(dtype)
    return tt.tensor(a), torch.tensor(a)


_operands = st.one_of(
    st.tuples(st.just("t"), st.sampled_from(_DTYPES), st.booleans()),
    st.tuples(st.just("s"), st.sampled_from(tuple(_SCALARS)), st.just(True)),
)


@given(a=_operands, b=_operands)
def test_promotion_matches_torch(a, b):
    if a[0] == "s" and b[0] == "s":
        b = ("t", "float32", False)
    (ga, ta), (gb, tb) = _operand(*a), _operand(*b)
    expected = np_dtype(torch.result_type(ta, tb))
    assert tt.result_type(ga, gb) == expected, (a, b)
    ops = {
        "+": lambda x, y: x + y,
        "*": lambda x, y: x * y,
        "/": lambda x, y: x / y,
        "<": lambda x, y: x < y,
    }
    if "bool" not in (a[1], b[1]):  # torch refuses `-` with a bool: test_bool_subtraction
        ops["-"] = lambda x, y: x - y
    for name, op in ops.items():
        want, got = op(ta, tb), op(ga, gb)
        assert got.dtype == np_dtype(want.dtype), (name, a, b, got.dtype, want.dtype)
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(
            got.numpy().astype(np.float64), want.numpy().astype(np.float64), rtol=1e-3, err_msg=name
        )


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda M: M.ones(2) + M.tensor(1.0, dtype=M.float64), "float32"),  # 0-d loses to n-d
        (lambda M: M.tensor(1.0) + M.tensor([1.0], dtype=M.float64), "float64"),
        (lambda M: M.ones(2, dtype=M.float32) + M.ones(2, dtype=M.float64), "float64"),
        (lambda M: M.arange(3) * 1.5, "float32"),
        (lambda M: M.arange(3) / M.arange(1, 4), "float32"),
        (lambda M: M.arange(3) // 2, "int64"),
        (lambda M: M.tensor([True, False]) + M.tensor([1, 2]), "int64"),
        (lambda M: M.tensor([True, False]) + 1, "int64"),
        (lambda M: M.tensor([True, False]) * 2.5, "float32"),
        (lambda M: M.ones(2, dtype=M.uint8) + M.ones(2, dtype=M.int8), "int16"),
        (lambda M: M.ones(2, dtype=M.uint8) + M.tensor(-1, dtype=M.int64), "uint8"),
        (lambda M: M.ones(2, dtype=M.int32) + M.tensor(1.0, dtype=M.float64), "float64"),
        (lambda M: M.ones(2, dtype=M.float16) + 1.5, "float16"),
        (lambda M: M.sum(M.ones(2, dtype=M.int32)), "int64"),
        (lambda M: M.where(M.tensor([True, False]), M.ones(2), 2), "float32"),
        (lambda M: M.where(M.tensor([True, False]), M.ones(2, dtype=M.int32), 2.5), "float32"),
        (lambda M: M.cat([M.ones(2, dtype=M.int8), M.ones(2, dtype=M.uint8)]), "int16"),
    ],
    ids=lambda v: _src(v) if callable(v) else str(v),
)
def test_promotion_examples(make, expected):
    want = make(torch)
    assert np_dtype(want.dtype) == np.dtype(expected)
    got = make(tt)
    assert got.dtype == np.dtype(expected)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize(
    ("dtype", "scalar"),
    [("float32", np.float64(1.5)), ("int8", np.int64(2)), ("int8", np.float32(1.5))],
    ids=["f32+np.float64", "i8+np.int64", "i8+np.float32"],
)
def test_numpy_scalars_promote_like_python_scalars(dtype, scalar):
    a = np.ones(2, dtype)
    want = np_dtype((torch.tensor(a) + scalar).dtype)
    assert np_dtype(torch.result_type(torch.tensor(a), scalar)) == want
    assert tt.result_type(tt.tensor(a), scalar) == want
    assert (tt.tensor(a) + scalar).dtype == want


@known_bug(
    "a NumPy scalar on the left (`np.float64(1.5) * t`) calls NumPy first, which dispatches "
    "through __array_ufunc__ and promotes as NumPy does (a documented difference)"
)
def test_numpy_scalar_on_the_left_promotes_like_torch():
    a = tt.tensor(np.ones(2, np.float32))
    assert (np.float64(1.5) * a).dtype == np.float32


_BOOL_SUB = (
    "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
    "invert a mask, use the `~` or `logical_not()` operator instead."
)


@pytest.mark.parametrize(
    "make",
    [
        lambda M: M.tensor([True, False]) - M.tensor([True, True]),
        lambda M: M.tensor([True, False]) - M.tensor([1, 2], dtype=M.uint8),
        lambda M: M.tensor([True, False]) - 1,
        lambda M: 1.5 - M.tensor([True, False]),
        lambda M: M.sub(M.ones(2), M.tensor([True, False])),
    ],
    ids=["bool-bool", "bool-uint8", "bool-int", "float-bool", "sub(f32,bool)"],
)
def test_bool_subtraction(make):
    with pytest.raises(RuntimeError) as want:
        make(torch)
    assert str(want.value).startswith("Subtraction, the `-` operator, with")
    with pytest.raises(RuntimeError) as got:
        make(tt)
    assert str(got.value) == str(want.value)


def test_numpy_arrays_are_constant_tensors():
    a = np.arange(3.0)
    x = tt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = tt.mul(x, a)  # a float64 n-d array against a float32 tensor: float64, as two tensors
    assert y.dtype == np_dtype((torch.ones(3) * torch.tensor(a)).dtype)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), a.astype(np.float32))
    assert x.grad.dtype == np.float32


@known_bug(
    "a Python int out of the tensor dtype's range: NumPy 2 raises OverflowError, torch wraps"
)
@pytest.mark.parametrize(
    "make",
    [lambda M: M.ones(2, dtype=M.int8) + 300, lambda M: M.ones(2, dtype=M.uint8) + (-1)],
    ids=["int8+300", "uint8+(-1)"],
)
def test_out_of_range_python_ints_wrap(make):
    want = make(torch)
    got = make(tt)
    assert got.dtype == np_dtype(want.dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


# -- factories -------------------------------------------------------------------------------------


def _src(f) -> str:
    """A test id from a one-line lambda's source."""
    text = inspect.getsource(f).strip()
    m = re.search(r'lambda M: (.*?)(?:, "\w+"\))?,?(?:\s*#.*)?$', text)
    return m.group(1) if m else text


def _same(got, want, *, exact=True):
    assert isinstance(got, tt.Tensor)
    assert got.dtype == np_dtype(want.dtype), (got.dtype, want.dtype)
    assert got.shape == tuple(want.shape)
    assert got.requires_grad == want.requires_grad
    assert got.is_leaf and want.is_leaf
    if exact:
        np.testing.assert_array_equal(got.numpy(force=True), want.detach().numpy())
    else:
        np.testing.assert_allclose(got.numpy(force=True), want.detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    "make",
    [
        lambda M: M.zeros(2, 3),
        lambda M: M.zeros((2, 3)),
        lambda M: M.zeros([2, 3], dtype=M.float64),
        lambda M: M.zeros(()),
        lambda M: M.zeros(0, 2),
        lambda M: M.ones(3, dtype=M.int32),
        lambda M: M.ones((2, 1), requires_grad=True),
        lambda M: M.empty(2, 3).shape,
        lambda M: M.empty((2,), dtype=M.int64).dtype,
        lambda M: M.full((2, 3), 1.5),
        lambda M: M.full((2,), 7),
        lambda M: M.full((2,), True),
        lambda M: M.full([2], 7, dtype=M.float64),
        lambda M: M.full((2,), 2.5, requires_grad=True),
        lambda M: M.arange(5),
        lambda M: M.arange(-1, 5, 2),
        lambda M: M.arange(0, 1, 0.25),
        lambda M: M.arange(2.5),
        lambda M: M.arange(1, 4, dtype=M.float64),
        lambda M: M.arange(0.0, 3),
        lambda M: M.arange(5, 0, -1.5),
        lambda M: M.linspace(0, 1, 5),
        lambda M: M.linspace(-1, 1, 4, dtype=M.float64),
        lambda M: M.linspace(2, 3, 1),
        lambda M: M.eye(3),
        lambda M: M.eye(2, 3),
        lambda M: M.eye(3, dtype=M.int64),
        lambda M: M.zeros_like(M.ones(2, 3, dtype=M.float64)),
        lambda M: M.ones_like(M.arange(3)),
        lambda M: M.ones_like(M.arange(3), dtype=M.float32),
        lambda M: M.zeros_like(M.ones(2), requires_grad=True),
        lambda M: M.full_like(M.arange(3), 2),
        lambda M: M.full_like(M.ones(2, dtype=M.float64), 0.5),
        lambda M: M.empty_like(M.ones(2, 3, dtype=M.int16)).dtype,
        lambda M: M.randn(2, 3).dtype,
        lambda M: M.randn((4,)).shape,
        lambda M: M.randn(2, dtype=M.float64).dtype,
        lambda M: M.randn(2, requires_grad=True).requires_grad,
        lambda M: M.rand(3, 2).shape,
        lambda M: M.rand(3, dtype=M.float64).dtype,
        lambda M: M.randn_like(M.ones(2, 3, dtype=M.float64)).dtype,
        lambda M: M.rand_like(M.ones(2, 3)).shape,
        lambda M: M.randint(0, 10, (3,)).dtype,
        lambda M: M.randint(3, 10, (2, 2)).shape,
        lambda M: M.randperm(5).dtype,
        lambda M: M.as_tensor(np.arange(3, dtype=np.int32)),
        lambda M: M.as_tensor([1.0, 2.0]),
        lambda M: M.as_tensor([1, 2], dtype=M.float64),
        lambda M: M.from_numpy(np.arange(3.0)),
        lambda M: M.from_numpy(np.ones((2, 2), np.float32)),
        lambda M: M.is_tensor(M.ones(1)),
        lambda M: M.is_tensor(np.ones(1)),
        lambda M: M.numel(M.ones(2, 3)),
        lambda M: M.numel(M.ones(())),
    ],
    ids=_src,
)
def test_factories_match_torch(make):
    want = make(torch)
    got = make(tt)
    if isinstance(want, torch.Tensor):
        _same(got, want, exact=not want.dtype.is_floating_point)
    elif isinstance(want, torch.dtype):
        assert got == np_dtype(want)
    elif isinstance(want, torch.Size):
        assert got == tuple(want)
    else:
        assert type(got) is type(want) and got == want


def test_random_factories_draw_the_right_values():
    tt.manual_seed(0)
    a = tt.randn(1000)
    tt.manual_seed(0)
    assert np.array_equal(tt.randn(1000).numpy(), a.numpy())  # manual_seed reproduces
    assert abs(float(a.mean())) < 0.2 and abs(float(a.std()) - 1.0) < 0.1
    u = tt.rand(1000).numpy()
    assert u.dtype == np.float32 and u.min() >= 0.0 and u.max() < 1.0
    r = tt.randint(3, 7, (1000,)).numpy()
    assert set(np.unique(r)) == {3, 4, 5, 6}
    p = tt.randperm(6).numpy()
    assert p.dtype == np.int64 and sorted(p.tolist()) == list(range(6))
    t = tt.ones(2000, dtype=tt.float64)
    assert t.normal_(1.0, 2.0) is t and t.dtype == np.float64 and t._version == 1
    assert abs(float(t.mean()) - 1.0) < 0.2 and abs(float(t.std()) - 2.0) < 0.2
    assert t.uniform_(-1.0, 3.0) is t and t._version == 2
    assert t.numpy().min() >= -1.0 and t.numpy().max() < 3.0
    w = tt.zeros(3, requires_grad=True)
    with tt.no_grad():  # the initialisation of parameters
        w.normal_()
        w.uniform_(0.5, 1.0)
    assert w.requires_grad and w.is_leaf and w._version == 2 and w.numpy(force=True).min() >= 0.5


def test_randint_with_high_and_size():
    assert tuple(torch.randint(10, (3,)).shape) == (3,)
    r = tt.randint(10, (3,))
    assert r.shape == (3,) and r.dtype == np.int64 and 0 <= r.numpy().min() <= r.numpy().max() < 10


@pytest.mark.parametrize(
    "make",
    [
        lambda M: M.tensor([1.5, 2.0]),
        lambda M: M.tensor(1.5),
        lambda M: M.zeros(2),
        lambda M: M.randn(2).dtype,
        lambda M: M.arange(0.5, 2),
        lambda M: M.arange(3) * 1.5,
        lambda M: M.arange(3) / 2,
        lambda M: M.full((2,), 0.5),
        lambda M: M.linspace(0, 1, 3),
        lambda M: M.tensor([1, 2]).exp(),
        lambda M: M.tensor([1.0], dtype=M.float32) + 1.5,
        lambda M: M.tensor(1 + 2j),
    ],
    ids=_src,
)
def test_set_default_dtype(make):
    torch.set_default_dtype(torch.float64)
    tt.set_default_dtype(np.float64)
    try:
        want = make(torch)
        got = make(tt)
    finally:
        torch.set_default_dtype(torch.float32)
        tt.set_default_dtype(np.float32)
    assert tt.get_default_dtype() == np.float32
    if isinstance(want, torch.dtype):
        assert got == np_dtype(want)
    else:
        _same(got, want, exact=False)


def test_set_default_dtype_rejects_integers():
    with pytest.raises(TypeError):
        torch.set_default_dtype(torch.int64)
    with pytest.raises(TypeError, match="float"):
        tt.set_default_dtype(np.int64)
    assert tt.get_default_dtype() == np.float32


# -- tensor(): dtype inference, copies -------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        1.5,
        2,
        True,
        [1.0, 2.0],
        [1, 2],
        [True, False],
        [1, 2.5],
        [True, 2],
        [[1.0, 2.0], [3.0, 4.0]],
        [],
        1 + 2j,
        np.float64(1.5),
        np.float32(1.5),
        np.int32(3),
        np.arange(3, dtype=np.int16),
        np.ones(2, np.float64),
        np.ones((2, 2), np.float16),
        np.array([True]),
        np.array(2.5),
    ],
    ids=repr,
)
def test_tensor_infers_dtype_like_torch(data):
    want = torch.tensor(data)
    got = tt.tensor(data)
    _same(got, want)


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool", "float16"])
def test_tensor_with_dtype(dtype):
    want = torch.tensor([0.0, 1.0, 2.5], dtype=getattr(torch, dtype))
    got = tt.tensor([0.0, 1.0, 2.5], dtype=getattr(tt, dtype))
    _same(got, want)


def test_tensor_copies_and_detaches():
    a = np.array([1.0, 2.0])
    t = tt.tensor(a)
    a[0] = 5.0
    assert t.tolist() == [1.0, 2.0]  # a copy, as torch.tensor
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    y = tt.tensor(x * 2)
    assert y.is_leaf and not y.requires_grad and y.tolist() == [2.0, 4.0]
    z = tt.tensor([tt.tensor(1.0), tt.tensor(2.0)])
    assert z.dtype == np.float32 and z.tolist() == [1.0, 2.0]
    assert tt.as_tensor(x) is x  # as_tensor shares
    assert tt.from_numpy(a).tolist() == [5.0, 2.0]


def test_tensor_rejects_non_numeric_data():
    with pytest.raises((TypeError, ValueError)):
        torch.tensor(["a"])
    with pytest.raises(TypeError, match="tensor"):
        tt.tensor(["a"])


# -- conversions: item, tolist, numpy, np.asarray --------------------------------------------------


@pytest.mark.parametrize(
    "data", [[1.5], 2.5, [[3]], True, [[1.0, 2.5], [3.0, -1.0]], [1, 2], [True, False], []]
)
def test_item_and_tolist(data):
    want, got = torch.tensor(data), tt.tensor(data)
    expected = want.tolist()
    assert got.tolist() == expected
    assert [type(v) for v in np.ravel(np.array(got.tolist(), dtype=object))] == [
        type(v) for v in np.ravel(np.array(expected, dtype=object))
    ]
    if want.numel() == 1:
        assert got.item() == want.item() and type(got.item()) is type(want.item())
        assert float(got) == float(want) and int(got) == int(want)
    else:
        with pytest.raises(RuntimeError) as t_err:
            want.item()
        with pytest.raises(RuntimeError) as g_err:
            got.item()
        assert str(g_err.value).splitlines()[0] == str(t_err.value).splitlines()[0]


def test_item_of_a_tensor_that_requires_grad():
    x = tt.tensor([2.5], requires_grad=True)
    assert x.item() == torch.tensor([2.5], requires_grad=True).item() == 2.5
    assert (x * 2).tolist() == [5.0]


def test_numpy_is_read_only():
    t = tt.tensor([1.0, 2.0])
    a = t.numpy()
    assert a.dtype == np.float32 and a.tolist() == [1.0, 2.0]
    assert not a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        a[0] = 5.0
    assert t.tolist() == [1.0, 2.0]
    t.add_(1.0)  # an in-place method rebinds the tensor; the array handed out is unchanged
    assert t.tolist() == [2.0, 3.0] and a.tolist() == [1.0, 2.0]


def test_numpy_of_a_tensor_that_requires_grad_raises_torchs_message():
    with pytest.raises(RuntimeError) as want:
        torch.ones(2, requires_grad=True).numpy()
    x = tt.ones(2, requires_grad=True)
    for call in (x.numpy, lambda: np.asarray(x), lambda: (x * 2).numpy()):
        with pytest.raises(RuntimeError) as got:
            call()
        assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]
    assert x.detach().numpy().tolist() == [1.0, 1.0]
    assert not x.detach().numpy().flags.writeable
    assert x.numpy(force=True).tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError) as want_asarray:
        np.asarray(torch.ones(2, requires_grad=True))
    assert str(want_asarray.value) == str(want.value)


def test_np_asarray():
    t = tt.tensor([[1, 2], [3, 4]], dtype=tt.int32)
    a = np.asarray(t)
    assert type(a) is np.ndarray and a.dtype == np.int32 and a.tolist() == [[1, 2], [3, 4]]
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    b = np.array(t)  # np.array copies: writable
    assert b.flags.writeable and np.array_equal(b, a)
    want = np.asarray(torch.tensor([[1, 2], [3, 4]], dtype=torch.int32))
    assert np.array_equal(a, want) and a.dtype == want.dtype


# -- NumPy functions applied to tensors follow NumPy -----------------------------------------------

_NUMPY_PROGRAMS = [
    lambda x: np.std(x),
    lambda x: np.std(x, axis=0, ddof=1),
    lambda x: np.var(x, axis=1, keepdims=True),
    lambda x: np.sum(x, axis=0),
    lambda x: np.sum(x),
    lambda x: np.mean(x, axis=-1),
    lambda x: np.exp(x),
    lambda x: np.sin(x) * np.cos(x) + x**2,
    lambda x: np.tanh(x) @ x.T,
    lambda x: np.maximum(x, 0.25),
    lambda x: np.max(x, axis=1),
    lambda x: np.where(x > 0, x, 0.5 * x),
    lambda x: np.reshape(x, (4, 3)).T,
    lambda x: np.concatenate([x, 2 * x], axis=1),
    lambda x: np.sqrt(np.sum(x * x, axis=0)),
    lambda x: np.abs(x) + np.clip(x, -0.5, 0.5),
    lambda x: np.cumsum(x, axis=1),
    lambda x: np.log(np.sum(np.exp(x), axis=0)),
    lambda x: np.prod(x[:, :2], axis=1),
]


@pytest.mark.parametrize("f", _NUMPY_PROGRAMS, ids=lambda f: inspect.getsource(f).strip()[10:-1])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_numpy_functions_on_tensors_follow_numpy(f, dtype):
    a = np.random.default_rng(0).uniform(-2.0, 2.0, (3, 4)).astype(dtype)
    want = f(a)
    got = f(tt.tensor(a))
    assert isinstance(got, tt.Tensor)
    assert got.dtype == np.asarray(want).dtype and got.shape == np.shape(want)
    assert np.array_equal(got.numpy(), want), "not bit for bit NumPy's"
    x = tt.tensor(a, requires_grad=True)
    y = f(x)
    assert y.requires_grad and not y.is_leaf
    w = np.random.default_rng(1).uniform(-1.0, 1.0, np.shape(want)).astype(dtype)

    def loss(v):
        return np.sum(f(v) * w)

    loss(x).backward()
    expected = tracegrad.grad(loss)(a)
    assert x.grad.dtype == expected.dtype == dtype
    rtol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=rtol, atol=rtol)


def test_numpy_std_is_biased_and_the_method_is_not():
    a = np.random.default_rng(2).normal(size=(4, 5))
    t = tt.tensor(a)
    assert np.array_equal(np.std(t).numpy(), np.std(a))
    np.testing.assert_allclose(t.std().numpy(), torch.tensor(a).std().numpy(), rtol=1e-12)
    np.testing.assert_allclose(t.std().numpy(), np.std(a, ddof=1), rtol=1e-12)
    assert np.array_equal(np.sum(t, axis=0).numpy(), np.sum(a, axis=0))
    np.testing.assert_allclose(tt.sum(t, 0).numpy(), torch.sum(torch.tensor(a), 0).numpy())
    # NumPy's sum of int32 is int64 on this platform, and so is torch's: both agree here
    i = np.arange(6, dtype=np.int8).reshape(2, 3)
    assert np.sum(tt.tensor(i), axis=1).dtype == np.sum(i, axis=1).dtype
    assert tt.tensor(i).sum(1).dtype == np_dtype(torch.tensor(i).sum(1).dtype)


def test_cumprod_gradient_at_a_zero_matches_torch():
    for M in libraries():
        x = M.tensor([2.0, 0.0, 3.0], dtype=M.float64, requires_grad=True)
        x.cumprod(0).sum().backward()
        np.testing.assert_array_equal(values(x.grad), [1.0, 8.0, 0.0])


def test_fill_and_full_take_a_constant_0d_tensor_as_torch():
    """A 0-d tensor without grad is a number to `fill_` and `full` (torch's dtype rules: a
    float tensor fills with the default dtype in `full`); other tensors are refused with
    torch's messages."""
    for lib in (torch, tt):
        x = lib.zeros(3, dtype=lib.float64)
        x.fill_(lib.tensor(2.5))
        assert x.tolist() == [2.5] * 3 and x.dtype == lib.float64
    for value in (3.0, 3, True):
        want = torch.full((2,), torch.tensor(value))
        got = tt.full((2,), tt.tensor(value))
        assert got.tolist() == want.tolist() and str(got.dtype) == str(want.dtype).split(".")[1]
    messages = []
    for lib in (torch, tt):
        with pytest.raises(RuntimeError) as fill_err:
            lib.zeros(3).fill_(lib.tensor([1.0, 2.0]))
        with pytest.raises(TypeError) as full_err:
            lib.full((2,), lib.tensor(2.0, requires_grad=True))
        messages.append((str(fill_err.value), str(full_err.value)))
    assert messages[0] == messages[1]


@pytest.mark.parametrize(
    "shape, args",
    [((2, 5), (1, -6, 2)), ((2, 5), (1, 4, 2)), ((2, 5), (1, 0, 6)), ((2, 5), (2, 0, 1)),
     ((2, 5), (1, 0, -1)), ((), (0, 0, 1))],
)  # fmt: skip
def test_narrow_refuses_a_window_that_does_not_fit_as_torch(shape, args):
    with pytest.raises((RuntimeError, IndexError)) as want:
        torch.narrow(torch.zeros(shape), *args)
    with pytest.raises(want.type) as got:
        tt.narrow(tt.zeros(shape), *args)
    assert str(got.value) == str(want.value)


_JOINS = {
    "cat 0-d": lambda M: M.cat([M.zeros(()), M.zeros(())]),
    "cat ranks": lambda M: M.cat([M.zeros(2, 3), M.zeros(2, 3, 1)], dim=1),
    "cat sizes": lambda M: M.cat([M.zeros(2, 3), M.zeros(4, 3), M.zeros(2, 5)]),
    "cat dim": lambda M: M.cat([M.zeros(2, 3)], dim=5),
    "cat empty list": lambda M: M.cat([], dim=0),
    "stack empty list": lambda M: M.stack([]),
    "stack sizes": lambda M: M.stack([M.zeros(2, 3), M.zeros(3, 2)]),
    "stack dim": lambda M: M.stack([M.zeros(2), M.zeros(2)], dim=-3),
}


@pytest.mark.parametrize("name", list(_JOINS))
def test_cat_and_stack_refuse_as_torch(name):
    with pytest.raises((RuntimeError, IndexError, ValueError)) as want:
        _JOINS[name](torch)
    with pytest.raises(want.type) as got:
        _JOINS[name](tt)
    assert str(got.value) == str(want.value)


def test_cat_skips_legacy_empty_vectors_as_torch():
    grads = []
    for M in (torch, tt):
        e = M.zeros(0, requires_grad=True)
        y = M.arange(6.0).reshape(2, 3).requires_grad_()
        out = M.cat([e, y, e], dim=1) * M.arange(6.0).reshape(2, 3)
        out.sum().backward()
        grads.append((tuple(out.shape), y.grad.tolist(), e.grad.tolist(), out.grad_fn.name()))
        assert tuple(M.cat([M.zeros(0), M.zeros(0)]).shape) == (0,)
    assert grads[1] == grads[0]
