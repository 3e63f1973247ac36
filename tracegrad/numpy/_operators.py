"""Tracer's arithmetic and comparison operators, and its NumPy ufunc calls, binding the
primitive directly; and its ndarray methods (tracegrad.numpy._methods)."""

from __future__ import annotations

import numpy as np

from tracegrad import core
from tracegrad.numpy import _elementwise, _methods, _products

# NumPy's operator mixin (which Boxed inherits) routes `t + 1` through np.add and back into
# `Tracer.__array_ufunc__`, then `array_ufunc` and the elementwise function: five Python frames
# before `Trace.bind`, on every traced op. The operators below bind the primitive directly,
# for the operands whose route is known to end in `bind(prim, a, b)` in that order: another
# tracer (of any trace: `Trace.bind` lifts it, as on the slow route), a Python or NumPy scalar,
# a NumPy array. Anything else (lists, shim Tensors, objects with their own `__array_ufunc__`
# or `__array_ufunc__ = None`) takes the mixin's method, unchanged. In-place operators
# (`x += 1`) stay the mixin's: `_augmented_assignment` reads their caller's frame.

_DIRECT = frozenset({int, float, complex, bool, np.ndarray, *np.sctypeDict.values()})

_BINARY_OPERATORS = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "truediv": np.true_divide,
    "pow": np.power,
    "matmul": np.matmul,
}
_COMPARISONS = {
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
}
_UNARY_OPERATORS = {"neg": np.negative}


def _operator_primitive(ufunc):
    """The primitive that tracegrad.numpy's function of `ufunc`'s name binds and nothing else
    (the function `_dispatch.UFUNCS` maps the ufunc to), or None."""
    module = _products if ufunc is np.matmul else _elementwise
    return getattr(getattr(module, ufunc.__name__, None), "primitive", None)


def _forward(prim, slow, tracer_type, direct):
    current = core._current_trace.get

    def method(self, other):
        cls = type(other)
        if cls in direct or cls is tracer_type:
            trace = current()
            if trace is not None:
                return trace.bind(prim, (self, other), {})
            return core.bind_eager(prim, (self, other), {})
        return slow(self, other)

    return method


def _reflected(prim, slow, tracer_type, direct):
    current = core._current_trace.get

    def method(self, other):
        cls = type(other)
        if cls in direct or cls is tracer_type:
            trace = current()
            if trace is not None:
                return trace.bind(prim, (other, self), {})
            return core.bind_eager(prim, (other, self), {})
        return slow(self, other)

    return method


def _unary(prim):
    current = core._current_trace.get

    def method(self):
        trace = current()
        if trace is not None:
            return trace.bind(prim, (self,), {})
        return core.bind_eager(prim, (self,), {})

    return method


def _install_operators(cls) -> None:
    mixin = np.lib.mixins.NDArrayOperatorsMixin
    methods = {}
    for name, ufunc in {**_BINARY_OPERATORS, **_COMPARISONS}.items():
        prim = _operator_primitive(ufunc)
        if prim is None:
            continue
        methods[f"__{name}__"] = _forward(prim, getattr(mixin, f"__{name}__"), cls, _DIRECT)
        if name in _BINARY_OPERATORS:
            slow = getattr(mixin, f"__r{name}__")
            methods[f"__r{name}__"] = _reflected(prim, slow, cls, _DIRECT)
    for name, ufunc in _UNARY_OPERATORS.items():
        prim = _operator_primitive(ufunc)
        if prim is not None:
            methods[f"__{name}__"] = _unary(prim)
    for name, method in methods.items():
        method.__name__ = name
        method.__qualname__ = f"{cls.__name__}.{name}"
        setattr(cls, name, method)


def ufunc_primitives() -> dict:
    """{ufunc: the primitive tracegrad.numpy's function of that ufunc binds and nothing else}
    (the elementwise functions and matmul, whose primitives' impls are the ufuncs themselves)."""
    table = {}
    for fn in [getattr(_elementwise, name) for name in _elementwise.__all__] + [_products.matmul]:
        prim = getattr(fn, "primitive", None)
        if prim is not None and isinstance(prim.impl, np.ufunc):
            table[prim.impl] = prim
    return table


def _install_ufunc_call(cls) -> None:
    """`np.sin(t)`, `np.multiply(t, 2.0)`: NumPy calls `cls.__array_ufunc__`, whose route is
    `array_ufunc` -> the elementwise function -> `bind` -> `Trace.bind`. A plain call (no
    keywords) of a ufunc whose function binds its primitive and nothing else, on the operands
    the operators take directly, binds it here; everything else (`out=`, `where=`, methods such
    as `reduce`, SciPy's ufuncs, other operand types) takes that route, unchanged."""
    table = ufunc_primitives()
    current = core._current_trace.get
    dispatch = core._numpy_dispatch  # (the route's frames as before: `x += t` reads them)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:
            prim = table.get(ufunc)
            if prim is not None and len(inputs) == ufunc.nin:
                for a in inputs:
                    t = type(a)
                    if t is not cls and t not in _DIRECT:
                        break
                else:
                    trace = current()
                    if trace is not None:
                        return trace.bind(prim, inputs, {})
                    return core.bind_eager(prim, inputs, {})
        return dispatch().array_ufunc(ufunc, method, inputs, kwargs)

    __array_ufunc__.__qualname__ = f"{cls.__name__}.__array_ufunc__"
    cls.__array_ufunc__ = __array_ufunc__


_install_operators(core.Tracer)
_install_ufunc_call(core.Tracer)
_methods.install(core.Tracer)  # `t.sum()`, `t.astype(...)`
