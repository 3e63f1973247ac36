"""What the SciPy primitives share: SciPy's objects resolved by path on first use, the emitted
import-and-call text (which exported modules can run), the derivative markers (`Refused`,
`ZERO`), the elementwise constructor `special` (names `scipy.special.<name>`), and helpers for
rules written with tracegrad's operations, so the rules differentiate again.
"""

from __future__ import annotations

import functools
import importlib
import math

import attrs
import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_ALL, READS_INPUTS, READS_OUTPUT, Primitive, per_input
from tracegrad.ir.primitive import rule_for as _rule_for
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives import series
from tracegrad.primitives.batching import elementwise_batch
from tracegrad.primitives.broadcasting import (
    broadcast_shapes,
    broadcast_to,
    result_dtype,
    unbroadcast,
)

# -- SciPy, resolved by path ------------------------------------------------------------------


@functools.cache
def _scipy(path: str):
    """The SciPy object at `path`, "module:attribute.chain" ("scipy.special:erf"), imported on
    first use: the core package never imports SciPy itself."""
    module, _, chain = path.partition(":")
    obj = importlib.import_module(module)
    for name in chain.split("."):
        obj = getattr(obj, name)
    return obj


def _alias(module: str) -> str:
    # a local name no graph value takes (generated names are letters only)
    return "_" + module.replace(".", "_")


def _call_text(path: str, args, kwargs: str = "") -> list[str]:
    """The emitted statements of a call of the SciPy object at `path`: an import (a local name
    in the generated function, so an exported module needs no header of ours), then the call."""
    module, _, chain = path.partition(":")
    alias = _alias(module)
    return [f"import {module} as {alias}", f"{alias}.{chain}({', '.join(args)}{kwargs})"]


# -- derivative markers -----------------------------------------------------------------------


@attrs.frozen
class Refused:
    """An argument whose derivative tracegrad does not compute, and why (a clause)."""

    why: str


ZERO = "zero"  # an integer-valued argument (an order, a count): its derivative is zero


def _refuse(label: str, why: str):
    return NotImplementedError(
        f"tracegrad: {label}: {why}, so tracegrad does not differentiate with respect to it "
        "rather than return a wrong number. Differentiate with respect to the other arguments "
        "only: pass this one as a constant (or through tg.stop_gradient)."
    )


def _real_only(label: str, *values) -> None:
    for v in values:
        if v is not None and dtype_of(v).kind == "c":
            raise NotImplementedError(
                f"tracegrad: {label}: derivatives of complex arguments are not supported yet "
                "(the values are; differentiate real arguments)"
            )


# -- the elementwise constructor --------------------------------------------------------------


def _broadcast_like(t, out):
    s = shape_of(out)
    return t if shape_of(t) == s else broadcast_to(t, s)


def _elementwise_jvp(label, partials):
    def jvp(primals, tangents, *, out):
        total = None
        for x, t, d in zip(primals, tangents, partials):
            if t is None or d is ZERO or not carries_derivative(x):
                continue
            if isinstance(d, Refused):
                raise _refuse(label, d.why)
            _real_only(label, x, out)
            term = t * d(*primals, out)
            total = term if total is None else total + term
        return None if total is None else _broadcast_like(total, out)

    return jvp


def _elementwise_vjp(label, i, d):
    def rule(bar, *primals, out):
        x = primals[i]
        if not carries_derivative(x) or d is ZERO:
            return None
        if isinstance(d, Refused):
            raise _refuse(label, d.why)
        _real_only(label, x, out)
        return unbroadcast(bar * d(*primals, out), shape_of(x))

    return rule


def _elementwise_shape(path, name, dtype):
    def shape(*avals: Aval):
        out_shape = broadcast_shapes(name, *(a.shape for a in avals))
        if dtype is not None:
            return Aval(out_shape, dtype)
        # a SciPy ufunc picks its loop as NumPy's do; its result is never weak
        return Aval(out_shape, result_dtype(_scipy(path), *avals, op=name)[0])

    return shape


def _taylor_partial(label, d):
    """A partial derivative as the Taylor rule takes it: None for ZERO, a refusal raised when
    that argument's series is asked for."""
    if d is ZERO:
        return None
    if isinstance(d, Refused):

        def refused(*args):
            raise _refuse(label, d.why)

        return refused
    return d


def special(
    name, path, *partials, reads=READS_ALL, dtype=None, label=None, ceil=False, taylor=None
):
    """A primitive named `name` (SciPy's namespace first, `scipy.special.erf`: primitive names
    are shared with users' own, who may well call theirs `erf` or `logsumexp`) for the
    elementwise SciPy function at `path` (a ufunc, or a broadcasting function of fixed result
    `dtype`), with one partial derivative per argument: `d(*args, out)` in tracegrad's
    operations, `ZERO`, or `Refused(why)`. With `ceil`, the result is rounded up (np.ceil) in
    the same step. The Taylor rule integrates the partials (`series.elementwise`) unless a
    recurrence is given as `taylor`."""
    label = label or name
    if ceil:
        impl = lambda *args, _path=path: np.ceil(_scipy(_path)(*args))  # noqa: E731
    else:
        impl = lambda *args, _path=path: _scipy(_path)(*args)  # noqa: E731
    # an argument tracegrad refuses to differentiate still has a derivative: only integer-valued
    # functions (every argument ZERO) are not differentiable
    differentiable = any(d is not ZERO for d in partials)
    return Primitive(
        name,
        impl=impl,
        shape=_elementwise_shape(path, name, dtype),
        jvp=_elementwise_jvp(label, partials),
        vjp=per_input(lambda i: _elementwise_vjp(label, i, partials[i])),
        batch=_rule_for(elementwise_batch),
        emit=lambda *args, _path=path: _emit_text(_path, args, ceil),
        differentiable=differentiable,
        vjp_reads=reads if differentiable else frozenset(),
        taylor=taylor
        or series.elementwise(
            tuple(_taylor_partial(label, d) for d in partials),
            _broadcast_like,
            reads_output="output" in reads,
        ),
        # a ufunc's result is allocated as NumPy's are; scipy.stats' own functions promise less
        layout=Layout.ELEMENTWISE if dtype is None else Layout.UNKNOWN,
    )


def _emit_text(path, args, ceil):
    *imports, call = _call_text(path, args)
    return [*imports, f"np.ceil({call})" if ceil else call]


def _u(name, *partials, **kw):
    return special(f"scipy.special.{name}", f"scipy.special:{name}", *partials, **kw)


def _private(name, *partials, used_by, **kw):
    """A private SciPy ufunc (scipy.special._ufuncs) that scipy.stats calls."""
    label = f"scipy.special._ufuncs.{name} ({used_by})"
    path = f"scipy.special._ufuncs:{name}"
    return special(f"scipy.special.{name}", path, *partials, label=label, **kw)


# -- helpers for the rules (tracegrad operations, so they differentiate again) ----------------

_SQRT_PI = math.sqrt(math.pi)
_SQRT_2PI = math.sqrt(2 * math.pi)
_LOG_SQRT_2PI = math.log(_SQRT_2PI)


def exp(x):
    return ew.exp(x)


def log(x):
    return ew.log(x)


def log1p(x):
    return bind(ew.log1p_p, x)


def where(c, x, y):
    return ew.where(c, x, y)


def floor(x):
    return bind(ew.floor_p, x)


def _both(a, b):
    return bind(ew.logical_and_p, a, b)


def _greater(x, y):
    return bind(ew.greater_p, x, y)


def _greater_equal(x, y):
    return bind(ew.greater_equal_p, x, y)


def _scaled_exp(c, e):
    """`c * exp(e)`, 0 where c == 0 even when e is +inf there (a power x**(c-1) at x = 0);
    its derivative in c stays exp(e)."""
    blowup = _both(ew.equal(c, 0), ew.equal(e, math.inf))
    return c * exp(where(blowup, 0.0, e))


def _xdivy(x, y):
    """`x / y`, 0 where x == y == 0 (the derivative of xlogy in y: xlogy(0, y) is 0)."""
    both_zero = _both(ew.equal(x, 0), ew.equal(y, 0))
    return x / where(both_zero, 1.0, y)


def _not_tiny(x):
    """`x`, with |x| < 1e-300 taken as 0: SciPy's iv and ive return NaN there."""
    return where(bind(ew.less_p, bind(ew.absolute_p, x), 1e-300), 0.0, x)


_IN, _OUT = READS_INPUTS, READS_OUTPUT
