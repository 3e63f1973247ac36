"""Tracer's direct operators (`t + 1` binding the primitive, tracegrad/numpy/_dispatch.py) give
what NumPy's operator mixin gives through `__array_ufunc__`: values, dtypes (NEP 50 weak
Python scalars included) and errors bit for bit, and the same gradients, on every operand
kind."""

import itertools
import operator
import re

import numpy as np
import pytest
from numpy.lib.mixins import NDArrayOperatorsMixin as Mixin

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.core import Tracer

BINARY = ["add", "sub", "mul", "truediv", "pow", "matmul", "lt", "le", "gt", "ge", "eq", "ne"]
REFLECTED = ["add", "sub", "mul", "truediv", "pow", "matmul"]

OPERANDS = [
    3,
    -2,
    0,
    2.5,
    -0.5,
    1 + 2j,
    True,
    False,
    np.float16(1.5),
    np.float32(1.5),
    np.float64(-2.25),
    np.int8(3),
    np.int32(-4),
    np.int64(2),
    np.uint8(2),
    np.bool_(True),
    np.complex64(1 - 1j),
    np.complex128(0.5 + 2j),
    np.array(2.0),
    np.array(3, dtype=np.int32),
    np.array([1.5, -2.0, 0.25]),
    np.array([1.5, -2.0, 0.25], dtype=np.float32),
    np.array([1, 2, 3]),
    np.array([True, False, True]),
    np.array([[1.0], [2.0]]),
]
DTYPES = [np.float32, np.float64, np.int64, np.int32, np.bool_, np.complex128]
X = np.array([0.75, 2.0, -1.5])


def _forward(name):
    return getattr(operator, name if name != "truediv" else "truediv")


def _run(dtype, shape, fn):
    """fn applied to a concrete tracer of `dtype` inside tg.vjp: the result's value, or the
    exception's type and message."""
    got = []

    def f(x):
        t = x if dtype == np.float64 else tnp.astype(x, dtype)
        if shape == ():
            t = t[1]
        try:
            r = fn(t)
        except Exception as e:  # noqa: BLE001 - compared between the two routes
            got.append((type(e), str(e)))
        else:
            got.append(r.val if isinstance(r, Tracer) else r)
        return tnp.sum(x)

    with np.errstate(all="ignore"):
        tg.vjp(f, X)
    return got[0]


def _same(a, b):
    if isinstance(a, tuple):
        assert a == b
        return
    assert type(a) is type(b)
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def _numpy(dtype, shape, fn):
    x = X.astype(dtype)
    if shape == ():
        x = x[1]
    try:
        with np.errstate(all="ignore"):
            return fn(x)
    except Exception as e:  # noqa: BLE001
        return (type(e), str(e))


def test_tracer_has_direct_operators():
    # each binds the primitive NumPy's route reaches (the function the ufunc table maps to)
    from tracegrad.numpy import _dispatch, _operators

    ops = {**_operators._BINARY_OPERATORS, **_operators._COMPARISONS, **_operators._UNARY_OPERATORS}
    for ufunc in ops.values():
        assert _operators._operator_primitive(ufunc) is not None, ufunc
        assert _dispatch.UFUNCS[ufunc].primitive is _operators._operator_primitive(ufunc)
    for name in BINARY + ["neg"]:
        assert getattr(Tracer, f"__{name}__") is not getattr(Mixin, f"__{name}__"), name
    for name in REFLECTED:
        assert getattr(Tracer, f"__r{name}__") is not getattr(Mixin, f"__r{name}__"), name


@pytest.mark.parametrize("shape", [(3,), ()])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", BINARY)
def test_binary_matches_mixin_and_numpy(name, dtype, shape):
    for other in OPERANDS:
        fast = _run(dtype, shape, lambda t, other=other: getattr(t, f"__{name}__")(other))
        slow = _run(dtype, shape, lambda t, other=other: getattr(Mixin, f"__{name}__")(t, other))
        _same(fast, slow)
        expected = _numpy(dtype, shape, lambda x, other=other: getattr(operator, name)(x, other))
        if not isinstance(fast, tuple) and not isinstance(expected, tuple):
            a, b = np.asarray(fast), np.asarray(expected)
            assert a.dtype == b.dtype, (name, dtype, other)
            assert a.tobytes() == b.tobytes(), (name, dtype, other)


@pytest.mark.parametrize("shape", [(3,), ()])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", REFLECTED)
def test_reflected_matches_mixin_and_numpy(name, dtype, shape):
    for other in OPERANDS:
        fast = _run(dtype, shape, lambda t, other=other: getattr(t, f"__r{name}__")(other))
        slow = _run(dtype, shape, lambda t, other=other: getattr(Mixin, f"__r{name}__")(t, other))
        _same(fast, slow)
        # as Python evaluates `other op t` (NumPy operands reach __array_ufunc__ themselves)
        spelled = _run(dtype, shape, lambda t, other=other: getattr(operator, name)(other, t))
        _same(fast, spelled)
        expected = _numpy(dtype, shape, lambda x, other=other: getattr(operator, name)(other, x))
        if not isinstance(fast, tuple) and not isinstance(expected, tuple):
            a, b = np.asarray(fast), np.asarray(expected)
            assert a.dtype == b.dtype, (name, dtype, other)
            assert a.tobytes() == b.tobytes(), (name, dtype, other)


@pytest.mark.parametrize("shape", [(3,), ()])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_negative_matches_mixin(dtype, shape):
    _same(_run(dtype, shape, operator.neg), _run(dtype, shape, Mixin.__neg__))


class _Refuses:
    __array_ufunc__ = None

    def __radd__(self, other):
        return "refused"

    __rmul__ = __rsub__ = __rtruediv__ = __rpow__ = __radd__


class _Custom:
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return ("custom", ufunc.__name__)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "truediv", "pow"])
def test_other_operands_take_the_mixins_route(name):
    for other in (_Refuses(), _Custom(), [1.0, 2.0, 3.0], (2, 3, 4)):
        for method in (f"__{name}__", f"__r{name}__"):
            fast = _run(np.float64, (3,), lambda t, m=method, o=other: getattr(t, m)(o))
            slow = _run(np.float64, (3,), lambda t, m=method, o=other: getattr(Mixin, m)(t, o))
            if isinstance(fast, np.ndarray):
                _same(fast, slow)
            else:
                assert fast == slow
        spelled = _run(np.float64, (3,), lambda t, other=other: getattr(operator, name)(t, other))
        if isinstance(other, _Refuses):
            assert spelled == "refused"


def _slow(name):
    def op(a, b):
        if isinstance(a, Tracer):
            return getattr(Mixin, f"__{name}__")(a, b)
        return getattr(Mixin, f"__r{name}__")(b, a)

    return op


def _program(add, sub, mul, div, pw, neg):
    def f(x, y):
        z = add(mul(x, 1.0001), 0.1)
        z = sub(div(z, y), mul(2, x))
        z = add(pw(z, 2), div(3.0, y))
        z = mul(neg(z), np.float32(0.5))
        z = add(z, mul(np.array([0.5, 1.5, -1.0]), y))
        return tnp.sum(sub(1, div(z, add(x, 4))))

    return f


FAST = _program(
    operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, operator.neg
)
SLOW = _program(
    _slow("add"), _slow("sub"), _slow("mul"), _slow("truediv"), _slow("pow"), Mixin.__neg__
)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_gradients_match_mixin(dtype):
    x = np.array([0.5, -1.25, 2.0], dtype=dtype)
    y = np.array([1.5, 0.75, -3.0], dtype=dtype)
    for argnums in (0, 1, (0, 1)):
        fast = tg.grad(FAST, argnums=argnums)(x, y)
        slow = tg.grad(SLOW, argnums=argnums)(x, y)
        for a, b in zip(
            np.atleast_1d(fast) if argnums != (0, 1) else fast,
            np.atleast_1d(slow) if argnums != (0, 1) else slow,
        ):
            _same(np.asarray(a), np.asarray(b))


def test_nested_gradients_match_mixin():
    """Tracers of two traces meet in one operator (the outer one is lifted)."""

    def outer(prog):
        def f(x):
            return tg.grad(lambda y: prog(x, y))(x * 0.5 + 1.0).sum()

        return f

    x = np.array([0.5, -1.25, 2.0])
    _same(np.asarray(tg.grad(outer(FAST))(x)), np.asarray(tg.grad(outer(SLOW))(x)))
    fast = tg.grad(lambda a: tg.grad(lambda b: a * b + b / a - (a - b) ** 2)(3.0))(2.0)
    slow = tg.grad(
        lambda a: tg.grad(
            lambda b: _slow("sub")(
                _slow("add")(_slow("mul")(a, b), _slow("truediv")(b, a)),
                _slow("pow")(_slow("sub")(a, b), 2),
            )
        )(3.0)
    )(2.0)
    _same(np.asarray(fast), np.asarray(slow))


def test_jit_and_escaped_tracers():
    f = tg.jit(FAST)
    x, y = np.array([0.5, -1.25, 2.0]), np.array([1.5, 0.75, -3.0])
    _same(np.asarray(f(x, y)), np.asarray(tg.jit(SLOW)(x, y)))
    leaked = []
    tg.grad(lambda x: leaked.append(x) or x * 2.0)(1.0)
    with pytest.raises(Exception) as fast:
        leaked[0] + 1.0
    with pytest.raises(Exception) as slow:
        Mixin.__add__(leaked[0], 1.0)
    assert type(fast.value) is type(slow.value)
    # both name the user's line (this file), not a tracegrad or NumPy frame
    assert "test_tracer_operators.py:" in str(fast.value)
    line = re.compile(r"test_tracer_operators\.py:\d+")
    assert line.sub("", str(fast.value)) == line.sub("", str(slow.value))


# -- Python floats: a concrete trace computes + - * and unary - with Python's operators ---------

_FLOAT_OPS = {
    "add": (lambda t, b: t + b, np.add),
    "radd": (lambda t, b: b + t, lambda a, b: np.add(b, a)),
    "sub": (lambda t, b: t - b, np.subtract),
    "rsub": (lambda t, b: b - t, lambda a, b: np.subtract(b, a)),
    "mul": (lambda t, b: t * b, np.multiply),
    "rmul": (lambda t, b: b * t, lambda a, b: np.multiply(b, a)),
    "neg": (lambda t, b: -t, lambda a, b: np.negative(a)),
}
_EDGE_FLOATS = [0.0, -0.0, 1.5, -2.25, 5e-324, -5e-324, 1e308, -1e308, np.inf, -np.inf, np.nan]


def _value_in_a_trace(traced, a, b):
    """The value `traced(t, b)` computes inside a concrete trace (`tg.vjp`) of `t = a`."""
    seen = []

    def f(t):
        out = traced(t, b)
        seen.append(out.val)
        return out

    with np.errstate(all="ignore"):
        tg.vjp(f, a)
    (got,) = seen
    return got


@pytest.mark.parametrize("name", sorted(_FLOAT_OPS))
def test_python_float_arithmetic_gives_numpys_bits(name):
    # Python's operator (Primitive.float_impl) where NumPy's ufunc ran before: the same bits
    # on every edge case (signed zeros, subnormals, overflow to inf, inf - inf, NaN), and the
    # value stays a Python float (a weak scalar), as `.item()` of NumPy's result was
    traced, numpy_op = _FLOAT_OPS[name]
    for a in _EDGE_FLOATS:
        for b in _EDGE_FLOATS:
            got = _value_in_a_trace(traced, a, b)
            with np.errstate(all="ignore"):
                want = numpy_op(a, b).item()
            assert type(got) is float, (name, a, b)
            assert np.float64(got).tobytes() == np.float64(want).tobytes(), (name, a, b, got)


_SCALAR_TYPES = [float, np.float64, np.float32, np.float16]


@pytest.mark.parametrize("name", sorted(_FLOAT_OPS))
def test_numpy_scalar_arithmetic_gives_the_ufuncs_bits_and_type(name):
    # NumPy's scalar arithmetic (Primitive.float_impl) on a traced NumPy real scalar with a
    # Python float or another NumPy scalar: the ufunc's bits and result type on every edge
    # case and mix of precisions (NEP 50: a Python float takes the scalar's precision)
    traced, numpy_op = _FLOAT_OPS[name]
    for a, b in itertools.product(_EDGE_FLOATS, _EDGE_FLOATS):
        for ta, tb in itertools.product(_SCALAR_TYPES[1:], _SCALAR_TYPES):
            with np.errstate(all="ignore"):
                x, y = ta(a), tb(b)
                got = _value_in_a_trace(traced, x, y)
                want = numpy_op(x, y)
            assert type(got) is type(want), (name, ta, tb, a, b)
            assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (name, x, y, got)


def test_float_constants_keep_their_sign_and_are_shared():
    # constants are keyed by value (0.0 and -0.0 by their bits): x * 0.0 and x * -0.0 differ
    def f(x):
        return x * 0.0, x * -0.0, x * 2.5, x * 2.5

    graph = tg.make_graph(f)(-1.0)
    assert graph.stats()["multiply"] == 3  # the two x * 2.5 are one node
    zero, negative_zero, _, _ = tg.vjp(f, -1.0)[0]
    assert np.signbit(zero) and not np.signbit(negative_zero)
