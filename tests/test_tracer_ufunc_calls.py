"""`np.sin(t)`, `np.multiply(t, 2.0)` on tracers bind the primitive directly
(tracegrad/numpy/_operators.py) and give what the dispatcher's route gives: the same
primitive, values, dtypes and errors bit for bit, and the same gradients; calls with keywords
or other operand types still take the route."""

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.core import _numpy_dispatch
from tracegrad.numpy._dispatch import UFUNCS
from tracegrad.numpy._operators import ufunc_primitives

TABLE = ufunc_primitives()
OPERANDS = [2.5, 3, True, np.float32(1.5), np.int64(2), np.array([0.5, -1.0, 2.0])]


def _slow(ufunc, *inputs, **kwargs):
    return _numpy_dispatch().array_ufunc(ufunc, "__call__", inputs, kwargs)


def test_the_table_binds_what_the_dispatcher_calls():
    assert len(TABLE) > 60
    for ufunc, prim in TABLE.items():
        assert UFUNCS[ufunc].primitive is prim, ufunc


def _outcome(fn):
    try:
        with np.errstate(all="ignore"):
            out = fn()
    except Exception as err:  # noqa: BLE001 - the error is compared
        return type(err), str(err)
    value = np.asarray(out.val)  # (a concrete tracer: its aval and its value's bits)
    return out.aval, value.dtype, value.tobytes()


def _both(ufunc, x, other):
    """(the direct call's outcome, the route's) on a concrete tracer of `x` inside tg.vjp."""
    seen = []

    def f(t):
        args = (t,) if ufunc.nin == 1 else (t, other)
        seen.append(_outcome(lambda: ufunc(*args)))
        seen.append(_outcome(lambda: _slow(ufunc, *args)))
        return t

    tg.vjp(f, x)
    return seen


@pytest.mark.parametrize("ufunc", sorted(TABLE, key=lambda u: u.__name__), ids=lambda u: u.__name__)
def test_direct_calls_equal_the_route(ufunc):
    x = np.array([0.75, 2.0, -1.5])
    for dtype in (np.float32, np.float64, np.int64, np.bool_):
        for other in OPERANDS[: 1 if ufunc.nin == 1 else None]:
            fast, slow = _both(ufunc, x.astype(dtype), other)
            assert fast == slow, (ufunc, dtype, other)


def test_gradients_through_direct_calls_equal_the_routes():
    x = np.array([0.3, 1.2, -0.7])

    def fast(x):
        return np.sum(np.sin(np.multiply(x, 2.0)) * np.exp(np.negative(x)))

    def slow(x):
        m = _slow(np.multiply, x, 2.0)
        return np.sum(_slow(np.sin, m) * _slow(np.exp, _slow(np.negative, x)))

    np.testing.assert_array_equal(tg.grad(fast)(x), tg.grad(slow)(x))
    np.testing.assert_array_equal(
        tg.grad(tg.grad(lambda x: np.sum(np.sin(x) ** 2)))(0.4),
        tg.grad(tg.grad(lambda x: np.sum(_slow(np.sin, x) ** 2)))(0.4),
    )


def test_keywords_and_other_operands_take_the_route():
    def f(x):
        with pytest.raises(TypeError, match=r"np.add\(..., out=...\) would write a traced"):
            np.add(x, 1.0, out=np.empty(3))
        with pytest.raises(NotImplementedError, match=r"np.add with the arguments \['dtype'\]"):
            np.add(x, 1.0, dtype=np.float64)
        return np.sum(np.add(x, [1.0, 2.0, 3.0]) ** 2)  # a list: the route converts it

    np.testing.assert_allclose(tg.grad(f)(np.ones(3)), 2 * (np.ones(3) + [1.0, 2.0, 3.0]))
