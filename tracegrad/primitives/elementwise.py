"""Elementwise primitives: NumPy's ufuncs, `where`, `clip`, `astype` and `stop_gradient`.

Each differentiable unary primitive is defined by one derivative, written with tracegrad's
own operations, from which both its jvp and its vjp follow (autograd's `defvjp`, JAX's
`defjvp`); the table below reads like a cheat sheet. A binary primitive gives one partial
derivative per operand: its jvp sums the tangents times the partials, and its vjp is one
rule per operand, so a constant operand's cotangent is never computed. Cotangents of
broadcast operands are summed back with `unbroadcast`. Ties of `maximum`/`minimum` split the
gradient evenly between equal inputs, as JAX does.

Over 600 lines: one family of some fifty primitives, one short block each, sharing the
derivative table and the unary/binary constructors; split, every module would import the
other's constructors and the cheat sheet would be in two places.
"""

from __future__ import annotations

import math

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_ALL, READS_INDICES, READS_NOTHING, Primitive, rule_for
from tracegrad.ir.primitive import READS_INPUTS as _IN
from tracegrad.ir.primitive import READS_OUTPUT as _OUT
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import series
from tracegrad.primitives.batching import elementwise_batch
from tracegrad.primitives.broadcasting import (
    broadcast_shapes,
    broadcast_to,
    result_dtype,
    unbroadcast,
)

_BATCH = rule_for(elementwise_batch)


def _zero_jvp(primals, tangents, **params):
    return None


def _zero_vjp(bar, *primals, **params):
    return (None,) * len(primals)


def _broadcast_like(t, out):
    """A tangent with the output's shape, even when only a broadcast input moved."""
    s = shape_of(out)
    return t if shape_of(t) == s else broadcast_to(t, s)


# -- unary ------------------------------------------------------------------------------------


def _unary_shape(ufunc):
    def shape(x: Aval):
        dtype, _ = result_dtype(ufunc, x)
        return Aval(x.shape, dtype)

    return shape


def _unary_rules(deriv, linear, facts):
    """(jvp, vjp) from `deriv` or `linear`; zero rules (and the facts saying so) for neither."""
    if linear is not None:

        def jvp(primals, tangents, *, out):
            (t,) = tangents
            return None if t is None else linear(t)

        def vjp(bar, x, *, out):
            return (linear(bar) if carries_derivative(x) else None,)

        facts.setdefault("vjp_reads", READS_NOTHING)
        return jvp, vjp
    if deriv is not None:

        def jvp(primals, tangents, *, out):
            (t,) = tangents
            return None if t is None else t * deriv(primals[0], out)

        def vjp(bar, x, *, out):
            return (bar * deriv(x, out) if carries_derivative(x) else None,)

        return jvp, vjp
    facts.update(differentiable=False, vjp_reads=READS_NOTHING)
    return _zero_jvp, _zero_vjp


def unary(
    name: str, ufunc: np.ufunc, deriv=None, *, linear=None, jvp=None, vjp=None, **facts
) -> Primitive:
    """A primitive for a unary ufunc.

    `deriv(x, out)` gives f'(x) (jvp: `x_dot * f'`, vjp: `bar * f'`); `linear(t)` instead
    applies a linear function to a tangent or cotangent directly (negative: `-t`, reading no
    values). The Taylor rule follows from `linear`, or from a `deriv` that reads only `x`
    (`series.elementwise`); a `deriv` reading `out` passes its recurrence as `taylor`. With
    neither, the primitive is not differentiable: its derivative is zero where
    defined (floor, sign, ...), and no cotangent flows back. `facts` are the primitive's other
    fields (`vjp_reads` must say whether `deriv` reads `x`, `out` or both).

    On complex values `deriv` is the complex derivative of a holomorphic f, and `bar * f'` is
    JAX's cotangent (the transpose under Re(sum(a * b)): no conjugation). A function that is
    not holomorphic (`absolute`) passes its own `jvp` and `vjp`.
    """
    if facts.get("taylor") is None and jvp is None:
        if linear is not None:
            facts["taylor"] = series.LINEAR
        elif deriv is not None and "output" not in facts.get("vjp_reads", READS_ALL):
            facts["taylor"] = series.elementwise((deriv,))
    if jvp is None:
        jvp, vjp = _unary_rules(deriv, linear, facts)
    return Primitive(
        name,
        impl=ufunc,
        shape=_unary_shape(ufunc),
        jvp=jvp,
        vjp=vjp,
        batch=_BATCH,
        emit=lambda x, _n=ufunc.__name__: f"np.{_n}({x})",
        layout=Layout.ELEMENTWISE,
        **facts,
    )


def _u(name, deriv=None, **rules_and_facts):
    return unary(name, getattr(np, name), deriv, **rules_and_facts)


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_T = series.unary


def _exp_series(u, out):
    return series.exp_terms(u, out)


# fmt: off
negative_p   = _u("negative", linear=lambda t: negative(t), operator="-",
                  torch_name="NegBackward0")
positive_p   = _u("positive", linear=lambda t: t)
exp_p        = _u("exp",      lambda x, out: out, vjp_reads=_OUT, taylor=_T(_exp_series))
exp2_p       = _u("exp2",     lambda x, out: out * _LN2, vjp_reads=_OUT,
                  taylor=_T(lambda u, out: series.exp_terms(u, out, _LN2)))
expm1_p      = _u("expm1",    lambda x, out: out + 1.0, vjp_reads=_OUT,
                  taylor=_T(lambda u, out: series.exp_terms(u, out + 1.0)))
log_p        = _u("log",      lambda x, out: reciprocal(x), vjp_reads=_IN,
                  taylor=_T(lambda u, out: series.log_terms(u)))
log1p_p      = _u("log1p",    lambda x, out: reciprocal(x + 1.0), vjp_reads=_IN,
                  torch_name="Log1PBackward0",
                  taylor=_T(lambda u, out: series.log_terms([u[0] + 1.0, *u[1:]])))
log2_p       = _u("log2",     lambda x, out: reciprocal(x * _LN2), vjp_reads=_IN,
                  taylor=_T(lambda u, out: series.log_terms(u, 1.0 / _LN2)))
log10_p      = _u("log10",    lambda x, out: reciprocal(x * _LN10), vjp_reads=_IN,
                  taylor=_T(lambda u, out: series.log_terms(u, 1.0 / _LN10)))
sin_p        = _u("sin",      lambda x, out: cos(x), vjp_reads=_IN,
                  taylor=_T(lambda u, out: series.sincos_terms(u, out, cos(u[0]))[0]))
cos_p        = _u("cos",      lambda x, out: negative(sin(x)), vjp_reads=_IN,
                  taylor=_T(lambda u, out: series.sincos_terms(u, sin(u[0]), out)[1]))
tan_p        = _u("tan",      lambda x, out: out * out + 1.0, vjp_reads=_OUT,
                  taylor=_T(lambda u, out: series.tan_terms(u, out)))
arcsin_p     = _u("arcsin",   lambda x, out: reciprocal(sqrt(1.0 - x * x)), vjp_reads=_IN,
                  torch_name="AsinBackward0")
arccos_p     = _u("arccos",   lambda x, out: negative(reciprocal(sqrt(1.0 - x * x))),
                  vjp_reads=_IN, torch_name="AcosBackward0")
arctan_p     = _u("arctan",   lambda x, out: reciprocal(x * x + 1.0), vjp_reads=_IN,
                  torch_name="AtanBackward0")
sinh_p       = _u("sinh",     lambda x, out: cosh(x), vjp_reads=_IN,
                  taylor=_T(lambda u, out: series.sincos_terms(u, out, cosh(u[0]), True)[0]))
cosh_p       = _u("cosh",     lambda x, out: sinh(x), vjp_reads=_IN,
                  taylor=_T(lambda u, out: series.sincos_terms(u, sinh(u[0]), out, True)[1]))
tanh_p       = _u("tanh",     lambda x, out: 1.0 - out * out, vjp_reads=_OUT,
                  taylor=_T(lambda u, out: series.tan_terms(u, out, -1.0)))
arcsinh_p    = _u("arcsinh",  lambda x, out: reciprocal(sqrt(x * x + 1.0)), vjp_reads=_IN,
                  torch_name="AsinhBackward0")
arccosh_p    = _u("arccosh",  lambda x, out: reciprocal(sqrt(x * x - 1.0)), vjp_reads=_IN,
                  torch_name="AcoshBackward0")
arctanh_p    = _u("arctanh",  lambda x, out: reciprocal(1.0 - x * x), vjp_reads=_IN,
                  torch_name="AtanhBackward0")
sqrt_p       = _u("sqrt",     lambda x, out: 0.5 / out, vjp_reads=_OUT,
                  taylor=_T(lambda u, out: series.sqrt_terms(u, out)))
cbrt_p       = _u("cbrt",     lambda x, out: reciprocal(out * out * 3.0), vjp_reads=_OUT,
                  taylor=_T(lambda u, out: series.power_terms(u, 1.0 / 3.0, out)))
square_p     = _u("square",   lambda x, out: x * 2.0, vjp_reads=_IN, torch_name="PowBackward0",
                  taylor=_T(lambda u, out: series.integer_power_terms(u, 2, out)))
reciprocal_p = _u("reciprocal", lambda x, out: negative(out * out), vjp_reads=_OUT,
                  taylor=_T(lambda u, out: series.quotient_terms([1.0] + [None] * (len(u) - 1),
                                                                 u, out)))
absolute_p   = _u("absolute", jvp=lambda p, t, *, out: _abs_jvp(p, t, out=out),
                  vjp=lambda bar, x, *, out: _abs_vjp(bar, x, out=out), vjp_reads=_IN,
                  torch_name="AbsBackward0", taylor=lambda p, s, *, out: _abs_taylor(p, s, out))
fabs_p       = _u("fabs",     lambda x, out: sign(x), vjp_reads=_IN)
deg2rad_p    = _u("deg2rad",  linear=lambda t: t * (math.pi / 180.0))
rad2deg_p    = _u("rad2deg",  linear=lambda t: t * (180.0 / math.pi))
# not differentiable: piecewise constant, or bool-valued
sign_p       = _u("sign")
floor_p      = _u("floor")
ceil_p       = _u("ceil")
rint_p       = _u("rint")
trunc_p      = _u("trunc")
logical_not_p = _u("logical_not")
isfinite_p   = _u("isfinite")
isnan_p      = _u("isnan")
isinf_p      = _u("isinf")
signbit_p    = _u("signbit")
invert_p     = _u("invert")      # ~x: bitwise not of integers and bools
# fmt: on


def negative(x):
    return bind(negative_p, x)


def exp(x):
    return bind(exp_p, x)


def log(x):
    return bind(log_p, x)


def sin(x):
    return bind(sin_p, x)


def cos(x):
    return bind(cos_p, x)


def sinh(x):
    return bind(sinh_p, x)


def cosh(x):
    return bind(cosh_p, x)


def sqrt(x):
    return bind(sqrt_p, x)


def reciprocal(x):
    return bind(reciprocal_p, x)


def sign(x):
    return bind(sign_p, x)


def _abs_direction(x, out=None):
    """d|x| as a multiplier: sign(x) for real x; for complex x, conj(x) / |x| (0 at 0, as JAX),
    whose real pairing with a tangent is the tangent of |x| (|x| is not holomorphic). The vjp
    recomputes |x| from x rather than read the output, so a tensor saves x alone (PyTorch's
    AbsBackward0 saves only its input too)."""
    if dtype_of(x).kind != "c":
        return sign(x)
    size = bind(absolute_p, x) if out is None else out
    return conjugate(x) / where(equal(size, 0.0), 1.0, size)


def _abs_jvp(primals, tangents, *, out):
    (t,) = tangents
    if t is None:
        return None
    d = t * _abs_direction(primals[0], out)
    return real(d) if dtype_of(d).kind == "c" else d


def _abs_taylor(primals, series_in, out):
    # |x| is piecewise linear on the reals (sign(x) x_k); on complex values it is not
    # holomorphic, and its series is not a linear image of x's
    if dtype_of(primals[0]).kind == "c":
        raise NotImplementedError(
            "jet: absolute of a complex value has no Taylor rule (|z| is not holomorphic); "
            "take abs of the real and imaginary parts' series yourself, or differentiate with "
            "tg.jvp / tg.grad"
        )
    return series.linear(_abs_jvp)(primals, series_in, out=out)


def _abs_vjp(bar, x, *, out):
    # JAX's transpose of the jvp: bar * conj(x) / |x| (complex for complex x)
    return (bar * _abs_direction(x) if carries_derivative(x) else None,)


UNARY = (
    negative_p,
    positive_p,
    exp_p,
    exp2_p,
    expm1_p,
    log_p,
    log1p_p,
    log2_p,
    log10_p,
    sin_p,
    cos_p,
    tan_p,
    arcsin_p,
    arccos_p,
    arctan_p,
    sinh_p,
    cosh_p,
    tanh_p,
    arcsinh_p,
    arccosh_p,
    arctanh_p,
    sqrt_p,
    cbrt_p,
    square_p,
    reciprocal_p,
    absolute_p,
    fabs_p,
    deg2rad_p,
    rad2deg_p,
    sign_p,
    floor_p,
    ceil_p,
    rint_p,
    trunc_p,
    logical_not_p,
    isfinite_p,
    isnan_p,
    isinf_p,
    signbit_p,
    invert_p,
)

# -- binary -----------------------------------------------------------------------------------


def _binary_shape(ufunc, name):
    def shape(x: Aval, y: Aval):
        out_shape = broadcast_shapes(name, x.shape, y.shape)
        dtype, weak = result_dtype(ufunc, x, y, op=name)
        return Aval(out_shape, dtype, weak)

    return shape


def _partials_jvp(partials):
    """`sum_i t_i * d_i(x, y, out)` over the operands that move, shaped like the output."""

    def jvp(primals, tangents, *, out):
        total = None
        for t, d in zip(tangents, partials):
            if t is None:
                continue
            p = d(*primals, out)
            if p is None:
                continue
            term = t * p
            total = term if total is None else total + term
        return None if total is None else _broadcast_like(total, out)

    return jvp


def _partial_vjp(i, d):
    """Operand `i`'s rule: the cotangent times the partial, summed back to the operand's
    shape (None for an integer or bool operand, which takes no cotangent)."""

    def rule(bar, *primals, out):
        x = primals[i]
        if not carries_derivative(x):
            return None
        p = d(*primals, out)
        return None if p is None else _summed_to(bar * p, x)

    return rule


def _summed_to(g, x):
    """`unbroadcast(g, shape_of(x))`, with the common case (no broadcasting: the shapes are
    equal) decided without a call (every elementwise rule of every backward step asks; a
    shape that is not a tuple compares unequal and takes `unbroadcast`, which converts it)."""
    if getattr(g, "shape", ()) == getattr(x, "shape", ()):
        return g
    return unbroadcast(g, shape_of(x))


def binary(name: str, ufunc: np.ufunc, dx=None, dy=None, *, jvp=None, vjp=None, **facts):
    """A primitive for a binary ufunc with broadcasting.

    `dx(x, y, out)` and `dy(x, y, out)` are the partial derivatives (None for a structural
    zero); the jvp and the per-operand vjp rules follow from them, and the Taylor rule too
    when they read only the operands. A primitive with a cheaper
    direct form passes `jvp` and `vjp`; one with neither is not differentiable.
    """
    if dx is not None and facts.get("taylor") is None and facts.get("vjp_reads") == _IN:
        facts["taylor"] = series.elementwise((dx, dy), _broadcast_like)
    if dx is not None:
        jvp = jvp or _partials_jvp((dx, dy))
        vjp = vjp or (_partial_vjp(0, dx), _partial_vjp(1, dy))
    elif vjp is None:
        jvp, vjp = _zero_jvp, _zero_vjp
        facts.update(differentiable=False, vjp_reads=READS_NOTHING)
    return Primitive(
        name,
        impl=ufunc,
        shape=_binary_shape(ufunc, name),
        jvp=jvp,
        vjp=vjp,
        batch=_BATCH,
        emit=lambda x, y, _n=ufunc.__name__: f"np.{_n}({x}, {y})",
        layout=Layout.ELEMENTWISE,
        **facts,
    )


def _add_jvp(primals, tangents, *, out):
    x_dot, y_dot = tangents
    t = x_dot if y_dot is None else y_dot if x_dot is None else x_dot + y_dot
    return None if t is None else _broadcast_like(t, out)


def _sub_jvp(primals, tangents, *, out):
    x_dot, y_dot = tangents
    if y_dot is None:
        t = x_dot
    else:
        t = negative(y_dot) if x_dot is None else x_dot - y_dot
    return None if t is None else _broadcast_like(t, out)


def _summed_back(i, fn=None):
    """Operand `i`'s rule when its cotangent is `fn(bar)` (the bar itself by default)."""

    def rule(bar, *primals, out):
        x = primals[i]
        if not carries_derivative(x):
            return None
        return _summed_to(bar if fn is None else fn(bar), x)

    return rule


def _div_jvp(primals, tangents, *, out):
    # d(x / y) = (dx - out * dy) / y: divides by y, never takes 1 / y (an integer y's
    # reciprocal is integer division)
    x, y = primals
    x_dot, y_dot = tangents
    if y_dot is None:
        t = x_dot
    else:
        t = negative(out * y_dot) if x_dot is None else x_dot - out * y_dot
    return None if t is None else _broadcast_like(t / y, out)


def _div_x_bar(bar, x, y, *, out):
    return unbroadcast(bar / y, shape_of(x)) if carries_derivative(x) else None


def _div_y_bar(bar, x, y, *, out):
    # -bar * x / y**2 = -(bar / y) * out; bar / y is shared with x's rule under tracing (CSE)
    if not carries_derivative(y):
        return None
    return unbroadcast(negative((bar / y) * out), shape_of(y))


def _pow_dx(x, y, out):
    # y * x**(y-1); at x == 0 with y == 0 this is 0 * 0**-1: take 0, as JAX does.
    if isinstance(y, int | float) and not isinstance(y, bool):
        # x ** c for a Python number c (x ** 2 is the common case): no where, no log
        if y == 0:
            return None
        if y == 1:
            return 1.0
        if y == 2:
            return x * 2
        return power(x, y - 1) * y
    both_zero = bind(logical_and_p, equal(y, 0.0), equal(x, 0.0))
    return where(both_zero, 0.0, y * power(x, y - 1.0))


def _pow_dy(x, y, out):
    # log(x) * out, defined as 0 where x == 0 (the limit of x**y * log x for y > 0)
    safe_x = where(equal(x, 0.0), 1.0, x)
    return where(equal(x, 0.0), 0.0, log(safe_x) * out)


def _tie_weight(a, b, out):
    """d max(a, b) / d a: 1 where a alone is the result, 1/2 at a tie (JAX's balanced rule,
    so the two weights still sum to 1), 0 where b is."""
    a_eq, b_eq = equal(a, out), equal(b, out)
    return astype(where(a_eq, where(b_eq, 0.5, 1.0), 0.0), dtype_of(out))


def _max_dx(x, y, out):
    return _tie_weight(x, y, out)


def _max_dy(x, y, out):
    return _tie_weight(y, x, out)


def _div_taylor(primals, series_in, out):
    # q = a / b: b q = a, so q_k = (a_k - sum_{j>=1} b_j q_{k-j}) / b_0
    k = series.order_of(series_in)
    a, b = (series.full(v, t, k) for v, t in zip(primals, series_in))
    terms = series.quotient_terms(a, b, out)
    return [series.shaped(t, out, _broadcast_like) for t in terms]


def _pow_taylor(primals, series_in, out):
    """x ** y: a constant integer exponent by repeated squaring (exact at x = 0 and for
    negative x, as JAX's integer_pow); otherwise exp(y log x), as JAX's pow."""
    x, y = primals
    k = series.order_of(series_in)
    if series_in[1] is None and _small_int(y):
        n = int(y)
        u = series.full(x, series_in[0], k)
        if n < 0:
            u = [reciprocal(x), *series.quotient_terms([1.0] + [None] * k, u, reciprocal(x))]
        terms = series.integer_power_terms(u, abs(n), out)
    else:
        logs = series.of_function(lambda a, b: b * log(a), (x, y), series_in)
        terms = series.exp_terms([None, *logs], out)
    return [series.shaped(t, out, _broadcast_like) for t in terms]


def _small_int(y) -> bool:
    """y is a known integer-valued scalar (a Python number or a 0-d array, not a tracer
    without a value) small enough to square by."""
    try:
        v = np.asarray(y)
    except Exception:  # noqa: BLE001 - a tracer of an abstract trace: no value to test
        return False
    return v.shape == () and v.dtype.kind in "iuf" and float(v) == int(v) and abs(int(v)) <= 64


def _logaddexp_taylor(primals, series_in, out, exp_fn, log_fn):
    # log(e^x + e^y) = m + log(e^(x-m) + e^(y-m)) with m the larger primal, held constant
    m = bind(maximum_p, *primals)
    terms = series.of_function(
        lambda x, y: log_fn(exp_fn(x - m) + exp_fn(y - m)), primals, series_in
    )
    return [series.shaped(t, out, _broadcast_like) for t in terms]


def _pow_torch_name(x: Aval, y: Aval) -> str:
    # PyTorch's pow.Tensor_Scalar (a Python-number exponent) and pow.Tensor_Tensor
    return "PowBackward0" if y.weak_type else "PowBackward1"


# fmt: off
add_p          = binary("add", np.add, jvp=_add_jvp, vjp=(_summed_back(0), _summed_back(1)),
                        vjp_reads=READS_NOTHING, commutative=True, operator="+",
                        torch_name="AddBackward0", taylor=series.LINEAR)
subtract_p     = binary("subtract", np.subtract, jvp=_sub_jvp,
                        vjp=(_summed_back(0), _summed_back(1, lambda b: negative(b))),
                        vjp_reads=READS_NOTHING, operator="-", torch_name="SubBackward0",
                        taylor=series.LINEAR)
multiply_p     = binary("multiply", np.multiply, lambda x, y, out: y, lambda x, y, out: x,
                        vjp_reads=_IN, bilinear=True, commutative=True, operator="*",
                        torch_name="MulBackward0", taylor=series.MULTILINEAR)
divide_p       = binary("divide", np.divide, jvp=_div_jvp, vjp=(_div_x_bar, _div_y_bar),
                        vjp_reads=READS_ALL, operator="/", torch_name="DivBackward0",
                        taylor=lambda p, s, *, out: _div_taylor(p, s, out))
power_p        = binary("power", np.power, _pow_dx, _pow_dy, vjp_reads=READS_ALL,
                        torch_name=_pow_torch_name, torch_scalar_inputs=(1,),
                        taylor=lambda p, s, *, out: _pow_taylor(p, s, out))
float_power_p  = binary("float_power", np.float_power, _pow_dx, _pow_dy, vjp_reads=READS_ALL,
                        taylor=lambda p, s, *, out: _pow_taylor(p, s, out))
maximum_p      = binary("maximum", np.maximum, _max_dx, _max_dy, vjp_reads=READS_ALL,
                        taylor=series.LINEAR)
minimum_p      = binary("minimum", np.minimum, _max_dx, _max_dy, vjp_reads=READS_ALL,
                        taylor=series.LINEAR)
fmax_p         = binary("fmax", np.fmax, _max_dx, _max_dy, vjp_reads=READS_ALL,
                        taylor=series.LINEAR)
fmin_p         = binary("fmin", np.fmin, _max_dx, _max_dy, vjp_reads=READS_ALL,
                        taylor=series.LINEAR)
arctan2_p      = binary("arctan2", np.arctan2,  # arctan2(y, x): the operands are y and x
                        lambda y, x, out: x / (x * x + y * y),
                        lambda y, x, out: negative(y) / (x * x + y * y),
                        vjp_reads=_IN, torch_name="Atan2Backward0")
hypot_p        = binary("hypot", np.hypot, lambda x, y, out: x / out, lambda x, y, out: y / out,
                        vjp_reads=READS_ALL,
                        taylor=series.composite(lambda x, y: sqrt(x * x + y * y)))
logaddexp_p    = binary("logaddexp", np.logaddexp, lambda x, y, out: exp(x - out),
                        lambda x, y, out: exp(y - out), vjp_reads=READS_ALL,
                        taylor=lambda p, s, *, out: _logaddexp_taylor(p, s, out, exp, log))
logaddexp2_p   = binary("logaddexp2", np.logaddexp2, lambda x, y, out: bind(exp2_p, x - out),
                        lambda x, y, out: bind(exp2_p, y - out), vjp_reads=READS_ALL,
                        taylor=lambda p, s, *, out: _logaddexp_taylor(
                            p, s, out, lambda v: bind(exp2_p, v), lambda v: bind(log2_p, v)))
# np.remainder(x, y) = x - floor(x / y) * y; np.fmod(x, y) = x - trunc(x / y) * y
remainder_p    = binary("remainder", np.remainder, lambda x, y, out: 1.0,
                        lambda x, y, out: negative(bind(floor_p, x / y)), vjp_reads=_IN,
                        taylor=series.LINEAR)
fmod_p         = binary("fmod", np.fmod, lambda x, y, out: 1.0,
                        lambda x, y, out: negative(bind(trunc_p, x / y)), vjp_reads=_IN,
                        taylor=series.LINEAR)
copysign_p     = binary("copysign", np.copysign, lambda x, y, out: sign(x) * sign(out),
                        lambda x, y, out: None, vjp_reads=READS_ALL, taylor=series.LINEAR)
# not differentiable
floor_divide_p = binary("floor_divide", np.floor_divide)
equal_p        = binary("equal", np.equal, commutative=True)
not_equal_p    = binary("not_equal", np.not_equal, commutative=True)
less_p         = binary("less", np.less)
less_equal_p   = binary("less_equal", np.less_equal)
greater_p      = binary("greater", np.greater)
greater_equal_p = binary("greater_equal", np.greater_equal)
logical_and_p  = binary("logical_and", np.logical_and, commutative=True)
logical_or_p   = binary("logical_or", np.logical_or, commutative=True)
logical_xor_p  = binary("logical_xor", np.logical_xor, commutative=True)
# integers and bools only (x & y, x | y, x ^ y, x << n, x >> n)
bitwise_and_p  = binary("bitwise_and", np.bitwise_and, commutative=True)
bitwise_or_p   = binary("bitwise_or", np.bitwise_or, commutative=True)
bitwise_xor_p  = binary("bitwise_xor", np.bitwise_xor, commutative=True)
left_shift_p   = binary("left_shift", np.left_shift)
right_shift_p  = binary("right_shift", np.right_shift)
gcd_p          = binary("gcd", np.gcd, commutative=True)
lcm_p          = binary("lcm", np.lcm, commutative=True)
# a step function: derivative zero where it is defined
heaviside_p    = binary("heaviside", np.heaviside)
# ldexp(x, n) = x * 2**n: linear in x, no derivative in the integer n
ldexp_p        = binary("ldexp", np.ldexp,
                        lambda x, n, out: astype(bind(ldexp_p, 1.0, n), dtype_of(out)),
                        lambda x, n, out: None, vjp_reads=_IN, taylor=series.LINEAR)
# fmt: on

BINARY = (
    add_p,
    subtract_p,
    multiply_p,
    divide_p,
    power_p,
    float_power_p,
    maximum_p,
    minimum_p,
    fmax_p,
    fmin_p,
    arctan2_p,
    hypot_p,
    logaddexp_p,
    logaddexp2_p,
    remainder_p,
    fmod_p,
    copysign_p,
    floor_divide_p,
    equal_p,
    not_equal_p,
    less_p,
    less_equal_p,
    greater_p,
    greater_equal_p,
    logical_and_p,
    logical_or_p,
    logical_xor_p,
    bitwise_and_p,
    bitwise_or_p,
    bitwise_xor_p,
    left_shift_p,
    right_shift_p,
    gcd_p,
    lcm_p,
    heaviside_p,
    ldexp_p,
)


def power(x, y):
    return bind(power_p, x, y)


def equal(x, y):
    return bind(equal_p, x, y)


# -- where ------------------------------------------------------------------------------------


def where(cond, x, y):
    """`np.where(cond, x, y)`: x where cond, else y (all three broadcast)."""
    return bind(where_p, cond, x, y)


def _weak_example(a: Aval):
    # np.result_type treats Python scalars as weak (NEP 50): pass one of the right kind.
    if a.weak_type:
        return {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}[a.dtype.kind]
    return a.dtype


def _where_shape(cond: Aval, x: Aval, y: Aval):
    out_shape = broadcast_shapes("where", cond.shape, x.shape, y.shape)
    dtype = np.result_type(_weak_example(x), _weak_example(y))
    return Aval(out_shape, dtype)  # np.where always returns a NumPy array: never weak


def _where_x_bar(bar, cond, x, y, *, out):
    return unbroadcast(where(cond, bar, 0.0), shape_of(x)) if carries_derivative(x) else None


def _where_y_bar(bar, cond, x, y, *, out):
    return unbroadcast(where(cond, 0.0, bar), shape_of(y)) if carries_derivative(y) else None


def _where_jvp(primals, tangents, *, out):
    cond, x, y = primals
    _, x_dot, y_dot = tangents
    if x_dot is None and y_dot is None:
        return None
    return _broadcast_like(
        where(cond, 0.0 if x_dot is None else x_dot, 0.0 if y_dot is None else y_dot), out
    )


where_p = Primitive(
    "where",
    impl=np.where,
    shape=_where_shape,
    jvp=_where_jvp,
    vjp=(None, _where_x_bar, _where_y_bar),
    batch=_BATCH,
    emit=lambda c, x, y: f"np.where({c}, {x}, {y})",
    vjp_reads=READS_INDICES,
    taylor=series.LINEAR,
    layout=Layout.ELEMENTWISE,
)

# -- clip -------------------------------------------------------------------------------------


def clip(x, lo, hi):
    """`np.clip(x, lo, hi)` with both bounds given (one-sided clips are maximum/minimum)."""
    return bind(clip_p, x, lo, hi)


def _clip_shape(x: Aval, lo: Aval, hi: Aval):
    out_shape = broadcast_shapes("clip", x.shape, lo.shape, hi.shape)
    dtype, weak = result_dtype(np._core.umath.clip, x, lo, hi, op="clip")
    return Aval(out_shape, dtype, weak and x.weak_type)


def _clip_partials(x, lo, hi, out):
    # np.clip is minimum(maximum(x, lo), hi): differentiate that composition, with JAX's
    # balanced ties (an input equal to the bound it touches gets half).
    m = bind(maximum_p, x, lo)
    dout_dm = _tie_weight(m, hi, out)
    return dout_dm * _tie_weight(x, lo, m), dout_dm * _tie_weight(lo, x, m), _tie_weight(hi, m, out)


def _clip_bar(i):
    def rule(bar, x, lo, hi, *, out):
        v = (x, lo, hi)[i]
        if not carries_derivative(v):
            return None
        return unbroadcast(bar * _clip_partials(x, lo, hi, out)[i], shape_of(v))

    return rule


def _clip_jvp(primals, tangents, *, out):
    if all(t is None for t in tangents):
        return None
    partials = _clip_partials(*primals, out)
    total = None
    for t, d in zip(tangents, partials):
        if t is not None:
            total = t * d if total is None else total + t * d
    return _broadcast_like(total, out)


clip_p = Primitive(
    "clip",
    impl=np.clip,
    shape=_clip_shape,
    jvp=_clip_jvp,
    vjp=(_clip_bar(0), _clip_bar(1), _clip_bar(2)),
    batch=_BATCH,
    emit=lambda x, lo, hi: f"np.clip({x}, {lo}, {hi})",
    vjp_reads=READS_ALL,
    taylor=series.LINEAR,
    layout=Layout.ELEMENTWISE,
    torch_name="ClampBackward1",
)

# -- astype -----------------------------------------------------------------------------------


def astype(x, dtype, weak: bool = False):
    """`x` cast to `dtype`; with `weak`, a weakly typed result (a value that stands for a
    Python scalar and promotes as one): how a loop's derivative restores a weak residual that
    came back strong from a stacked array."""
    if weak:
        return bind(astype_p, x, dtype=np.dtype(dtype), weak=True)
    return bind(astype_p, x, dtype=np.dtype(dtype))


def convert(v, dtype):
    """`v` as `dtype` the way a derivative crosses a cast (JAX's convert_element_type): the
    real part of a complex value for a real dtype (a cast would warn and give the same), and
    no node when `v` has that dtype already."""
    dtype = np.dtype(dtype)
    if dtype_of(v).kind == "c" and dtype.kind != "c":
        v = real(v)
    return v if dtype_of(v) == dtype else astype(v, dtype)


def _astype_vjp(bar, x, *, out, dtype, weak=False):
    src = dtype_of(x)
    if not (src.kind in "fc" and np.dtype(dtype).kind in "fc"):
        return (None,)
    return (convert(bar, src),)


def _astype_jvp(primals, tangents, *, out, dtype, weak=False):
    (t,) = tangents
    if t is None or np.dtype(dtype).kind not in "fc":
        return None
    return convert(t, dtype)


astype_p = Primitive(
    "astype",
    impl=lambda x, *, dtype, weak=False: np.asarray(x).astype(dtype),
    shape=lambda x, *, dtype, weak=False: Aval(x.shape, dtype, weak_type=weak),
    jvp=_astype_jvp,
    vjp=_astype_vjp,
    batch=_BATCH,
    # (a weak 0-d result becomes a Python scalar in both executors, from its aval)
    emit=lambda x, *, dtype, weak=False: f"np.asarray({x}).astype(np.{np.dtype(dtype).name})",
    emit_array_api=lambda x, *, dtype, weak=False: (
        f"np.astype({x}, np.dtype({np.dtype(dtype).name!r}))"
    ),
    vjp_reads=READS_NOTHING,
    # a copy in its input's stride order (np.empty_like), which for a broadcast input
    # differs from the iterator's: C order only from C order
    layout=Layout.KEEPS_C,
    torch_name="ToCopyBackward0",
    taylor=series.LINEAR,
)

# -- sinc -------------------------------------------------------------------------------------
# np.sinc(x) = sin(pi x) / (pi x). Its k-th derivative is a primitive of its own,
# `sinc_derivative[order=k]`, exact at 0 to every order (where a composition of sin and divide
# would give 0 for the second derivative instead of -pi^2/3, as HIPS autograd's does): pi^k
# g^(k)(u) at u = pi x, g(u) = sin(u)/u, from its Maclaurin series for |u| < 1 and from Leibniz'
# rule beyond, sum_j C(k,j) sin(u + j pi/2) (-1)^(k-j) (k-j)! / u^(k-j+1). impl and emit run the
# same NumPy text, so the code generator gives the interpreter's bits.


def sinc(x):
    return bind(sinc_p, x)


def sinc_derivative(x, order: int):
    return bind(sinc_derivative_p, x, order=int(order))


def _sinc_shape(x: Aval):
    return Aval(x.shape, np.result_type(x.dtype, 1.0))


def _sinc_derivative_shape(x: Aval, *, order):
    if type(order) is not int or order < 1:
        raise ValueError(f"sinc_derivative: order must be a positive int, got {order!r}")
    return _sinc_shape(x)


_SERIES_TERMS = 12


def _sinc_derivative_text(x: str, order: int) -> str:
    k = order
    first = (k + 1) // 2
    fact = math.factorial
    series = " + ".join(
        f"{(-1) ** n * fact(2 * n) / (fact(2 * n - k) * fact(2 * n + 1))!r} * _u ** {2 * n - k}"
        for n in range(first, first + _SERIES_TERMS)
    )
    trig = ("_s", "_c", "(-_s)", "(-_c)")
    leibniz = " + ".join(
        f"{math.comb(k, j) * (-1) ** (k - j) * math.factorial(k - j)!r} * {trig[j % 4]}"
        f" * _r ** {k - j + 1}"
        for j in range(k + 1)
    )
    return (
        "(lambda _u: (lambda _small, _v: (lambda _s, _c, _r: "
        f"np.where(_small, {series}, {leibniz}))(np.sin(_v), np.cos(_v), 1.0 / _v))"
        "(np.abs(_u) < 1.0, np.where(np.abs(_u) < 1.0, 1.0, _u)))"
        f"(np.pi * {x}) * {math.pi**k!r}"
    )


_SINC_DERIVATIVE_IMPLS: dict[int, object] = {}


def _sinc_derivative_impl(x, *, order):
    fn = _SINC_DERIVATIVE_IMPLS.get(order)
    if fn is None:  # the emitted text, compiled once per order (our own text, no user input)
        code = compile(
            f"lambda x: {_sinc_derivative_text('x', order)}", "<sinc_derivative>", "eval"
        )
        fn = _SINC_DERIVATIVE_IMPLS[order] = eval(code, {"np": np})  # noqa: S307
    return fn(np.asarray(x))


def _sinc_rules(order: int):
    """(jvp, vjp) of the `order`-th derivative of sinc: the next one times the tangent."""

    def jvp(primals, tangents, *, out, **params):
        (t,) = tangents
        return None if t is None else t * sinc_derivative(primals[0], order + 1)

    def vjp(bar, x, *, out, **params):
        return (bar * sinc_derivative(x, order + 1) if carries_derivative(x) else None,)

    return jvp, vjp


def _sinc_derivative_jvp(primals, tangents, *, out, order):
    return _sinc_rules(order)[0](primals, tangents, out=out)


def _sinc_derivative_vjp(bar, x, *, out, order):
    return _sinc_rules(order)[1](bar, x, out=out)


_sinc_jvp, _sinc_vjp = _sinc_rules(0)

sinc_p = Primitive(
    "sinc",
    impl=np.sinc,
    shape=_sinc_shape,
    jvp=_sinc_jvp,
    vjp=_sinc_vjp,
    batch=_BATCH,
    emit=lambda x: f"np.sinc({x})",
    vjp_reads=_IN,
    taylor=series.elementwise((lambda x, out: sinc_derivative(x, 1),)),
    layout=Layout.ELEMENTWISE,
)
sinc_derivative_p = Primitive(
    "sinc_derivative",
    impl=_sinc_derivative_impl,
    shape=_sinc_derivative_shape,
    jvp=_sinc_derivative_jvp,
    vjp=_sinc_derivative_vjp,
    batch=_BATCH,
    emit=lambda x, *, order: _sinc_derivative_text(x, order),
    vjp_reads=_IN,
    taylor=lambda p, s, *, out, order: series.elementwise(
        (lambda x, out: sinc_derivative(x, order + 1),)
    )(p, s, out=out),
    layout=Layout.ELEMENTWISE,
)

# -- real, imag, conjugate -------------------------------------------------------------------
# The linear maps between complex numbers and their parts, with JAX's transposes (the cotangent
# of a complex input is the conjugate of PyTorch's): real's is `bar + 0j`, imag's `-1j * bar`,
# conjugate's `conj(bar)`. On real inputs real and conjugate are the identity and imag a
# constant zero.


def real(x):
    return bind(real_p, x)


def imag(x):
    return bind(imag_p, x)


def conjugate(x):
    return bind(conjugate_p, x)


def _part_shape(x: Aval):
    dtype = x.dtype if x.dtype.kind != "c" else np.dtype(f"f{x.dtype.itemsize // 2}")
    return Aval(x.shape, dtype, x.weak_type)


def _real_vjp(bar, x, *, out):
    if not carries_derivative(x):
        return (None,)
    return (astype(bar, dtype_of(x)) if dtype_of(x).kind == "c" else bar,)


def _imag_jvp(primals, tangents, *, out):
    (t,) = tangents
    return None if t is None or dtype_of(primals[0]).kind != "c" else imag(t)


def _imag_vjp(bar, x, *, out):
    if not carries_derivative(x) or dtype_of(x).kind != "c":
        return (None,)  # the imaginary part of a real number is a constant 0
    return (astype(bind(multiply_p, bar, -1j), dtype_of(x)),)


real_p = Primitive(
    "real",
    impl=np.real,
    shape=_part_shape,
    jvp=lambda primals, tangents, *, out: None if tangents[0] is None else real(tangents[0]),
    vjp=_real_vjp,
    batch=_BATCH,
    emit=lambda x: f"np.real({x})",
    vjp_reads=READS_NOTHING,
    taylor=series.LINEAR,
    layout=Layout.VIEW,  # the input itself when it is real, a strided view when complex
)
imag_p = Primitive(
    "imag",
    impl=np.imag,
    shape=_part_shape,
    jvp=_imag_jvp,
    vjp=_imag_vjp,
    batch=_BATCH,
    emit=lambda x: f"np.imag({x})",
    vjp_reads=READS_NOTHING,
    taylor=series.LINEAR,
)
conjugate_p = _u("conjugate", linear=lambda t: conjugate(t), torch_name="ConjBackward0")

# -- stop_gradient ----------------------------------------------------------------------------


def stop_gradient(x):
    """The value of `x`, treated as a constant by differentiation (as `jax.lax.stop_gradient`)."""
    return bind(stop_gradient_p, x)


stop_gradient_p = Primitive(
    "stop_gradient",
    impl=lambda x: x,
    shape=lambda x: x,
    jvp=_zero_jvp,
    vjp=_zero_vjp,
    batch=_BATCH,
    emit=lambda x: x,
    differentiable=False,
    vjp_reads=READS_NOTHING,
    layout=Layout.SAME,
)

PRIMITIVES = (
    UNARY
    + BINARY
    + (
        where_p,
        clip_p,
        astype_p,
        real_p,
        imag_p,
        conjugate_p,
        sinc_p,
        sinc_derivative_p,
        stop_gradient_p,
    )
)
