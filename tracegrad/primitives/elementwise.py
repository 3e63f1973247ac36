"""Elementwise primitives: NumPy's ufuncs, `where`, `clip` and `astype`.

Each differentiable unary primitive is defined by one derivative, written with tracegrad's
own operations, from which both its jvp and its vjp follow (autograd's `defvjp`, JAX's
`defjvp`); the table below reads like a cheat sheet. Binary rules sum cotangents of
broadcast inputs back with `unbroadcast`. Ties of `maximum`/`minimum` split the gradient
evenly between equal inputs, as JAX does.
"""

from __future__ import annotations

import math

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import Primitive
from tracegrad.ir.types import Aval, aval_of, is_float
from tracegrad.primitives.batching import elementwise_batch
from tracegrad.primitives.broadcasting import broadcast_shapes, result_dtype, shape_of, unbroadcast

# -- unary ------------------------------------------------------------------------------------


def _unary_shape(ufunc):
    def shape(x: Aval):
        dtype, _ = result_dtype(ufunc, x)
        return Aval(x.shape, dtype)

    return shape


def unary(name: str, ufunc: np.ufunc, deriv=None, *, linear=None) -> Primitive:
    """A primitive for a unary ufunc.

    `deriv(x, out)` gives f'(x) (jvp: `x_dot * f'`, vjp: `bar * f'`); `linear(t)` instead
    applies a linear function to a tangent or cotangent directly (negative: `-t`). With
    neither, the primitive is not differentiable: its derivative is zero where defined
    (floor, sign, ...), and no cotangent flows back.
    """
    if linear is not None:

        def jvp(primals, tangents, *, out):
            (t,) = tangents
            return None if t is None else linear(t)

        def vjp(bar, x, *, out):
            return (linear(bar) if _carries_derivative(x) else None,)
    elif deriv is not None:

        def jvp(primals, tangents, *, out):
            (t,) = tangents
            return None if t is None else t * deriv(primals[0], out)

        def vjp(bar, x, *, out):
            return (bar * deriv(x, out) if _carries_derivative(x) else None,)
    else:
        jvp, vjp = _zero_jvp, _zero_vjp
    return Primitive(
        name,
        impl=ufunc,
        shape=_unary_shape(ufunc),
        jvp=jvp,
        vjp=vjp,
        batch=_elementwise_batch(name),
        emit=lambda x, _n=ufunc.__name__: f"np.{_n}({x})",
        differentiable=linear is not None or deriv is not None,
    )


def _zero_jvp(primals, tangents, **params):
    return None


def _zero_vjp(bar, *primals, **params):
    return (None,) * len(primals)


def _dtype(x):
    d = getattr(x, "dtype", None)
    if d is not None:
        return d
    return np.dtype(type(x)) if not isinstance(x, float) else np.dtype(np.float64)


def _carries_derivative(x) -> bool:
    """`is_float(_dtype(x))` without building a dtype: the vjp rules ask it per call."""
    d = getattr(x, "dtype", None)
    if d is not None:
        return d.kind in "fc"
    return isinstance(x, float | complex)


def _elementwise_batch(name):
    # The rule needs the primitive it batches, which does not exist yet when `unary` and
    # `binary` build it: look it up by name when the rule first runs.
    def batch(args, dims, **params):
        rule = _BATCH_RULES.get(name)
        if rule is None:
            rule = _BATCH_RULES[name] = elementwise_batch(_BY_NAME[name])
        return rule(args, dims, **params)

    return batch


_BATCH_RULES: dict = {}


def _u(name, ufunc=None, deriv=None, *, linear=None):
    return unary(name, ufunc if ufunc is not None else getattr(np, name), deriv, linear=linear)


_LN2 = math.log(2.0)
_LN10 = math.log(10.0)

# fmt: off
negative_p   = _u("negative", linear=lambda t: negative(t))
positive_p   = _u("positive", linear=lambda t: t)
exp_p        = _u("exp",      deriv=lambda x, out: out)
exp2_p       = _u("exp2",     deriv=lambda x, out: out * _LN2)
expm1_p      = _u("expm1",    deriv=lambda x, out: out + 1.0)
log_p        = _u("log",      deriv=lambda x, out: reciprocal(x))
log1p_p      = _u("log1p",    deriv=lambda x, out: reciprocal(x + 1.0))
log2_p       = _u("log2",     deriv=lambda x, out: reciprocal(x * _LN2))
log10_p      = _u("log10",    deriv=lambda x, out: reciprocal(x * _LN10))
sin_p        = _u("sin",      deriv=lambda x, out: cos(x))
cos_p        = _u("cos",      deriv=lambda x, out: negative(sin(x)))
tan_p        = _u("tan",      deriv=lambda x, out: out * out + 1.0)
arcsin_p     = _u("arcsin",   deriv=lambda x, out: reciprocal(sqrt(1.0 - x * x)))
arccos_p     = _u("arccos",   deriv=lambda x, out: negative(reciprocal(sqrt(1.0 - x * x))))
arctan_p     = _u("arctan",   deriv=lambda x, out: reciprocal(x * x + 1.0))
sinh_p       = _u("sinh",     deriv=lambda x, out: cosh(x))
cosh_p       = _u("cosh",     deriv=lambda x, out: sinh(x))
tanh_p       = _u("tanh",     deriv=lambda x, out: 1.0 - out * out)
arcsinh_p    = _u("arcsinh",  deriv=lambda x, out: reciprocal(sqrt(x * x + 1.0)))
arccosh_p    = _u("arccosh",  deriv=lambda x, out: reciprocal(sqrt(x * x - 1.0)))
arctanh_p    = _u("arctanh",  deriv=lambda x, out: reciprocal(1.0 - x * x))
sqrt_p       = _u("sqrt",     deriv=lambda x, out: 0.5 / out)
cbrt_p       = _u("cbrt",     deriv=lambda x, out: reciprocal(out * out * 3.0))
square_p     = _u("square",   deriv=lambda x, out: x * 2.0)
reciprocal_p = _u("reciprocal", deriv=lambda x, out: negative(out * out))
absolute_p   = _u("absolute", deriv=lambda x, out: sign(x))
fabs_p       = _u("fabs",     deriv=lambda x, out: sign(x))
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
# fmt: on


def _bind1(p):
    def f(x):
        return bind(p, x)

    f.__name__ = p.name
    f.__doc__ = f"Elementwise `np.{p.impl.__name__}` as a traceable operation."
    return f


negative = _bind1(negative_p)
exp = _bind1(exp_p)
log = _bind1(log_p)
sin = _bind1(sin_p)
cos = _bind1(cos_p)
sinh = _bind1(sinh_p)
cosh = _bind1(cosh_p)
sqrt = _bind1(sqrt_p)
reciprocal = _bind1(reciprocal_p)
sign = _bind1(sign_p)

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
)

# -- binary -----------------------------------------------------------------------------------


def _binary_shape(ufunc, name):
    def shape(x: Aval, y: Aval):
        out_shape = broadcast_shapes(name, x.shape, y.shape)
        dtype, weak = result_dtype(ufunc, x, y, op=name)
        return Aval(out_shape, dtype, weak)

    return shape


def binary(name: str, ufunc: np.ufunc, derivs=None, *, vjp=None, jvp=None) -> Primitive:
    """A primitive for a binary ufunc with broadcasting.

    `derivs(x, y, out)` returns the two partial derivatives (None for a structurally zero
    one); jvp and vjp follow. A primitive with a cheaper direct form passes `vjp`/`jvp`.
    """
    if derivs is not None and jvp is None:

        def jvp(primals, tangents, *, out):
            x, y = primals
            x_dot, y_dot = tangents
            dx, dy = derivs(x, y, out, x_dot is not None, y_dot is not None)
            terms = [
                t * d for t, d in ((x_dot, dx), (y_dot, dy)) if t is not None and d is not None
            ]
            if not terms:
                return None
            total = terms[0] if len(terms) == 1 else terms[0] + terms[1]
            return _broadcast_like(total, out)

    if derivs is not None and vjp is None:

        def vjp(bar, x, y, *, out):
            # thunks: a constant operand's cotangent is never computed (see transforms/vjp.py)
            def x_bar():
                dx = derivs(x, y, out, True, False)[0]
                return None if dx is None else unbroadcast(bar * dx, shape_of(x))

            def y_bar():
                dy = derivs(x, y, out, False, True)[1]
                return None if dy is None else unbroadcast(bar * dy, shape_of(y))

            return (
                x_bar if _carries_derivative(x) else None,
                y_bar if _carries_derivative(y) else None,
            )

    if derivs is None and vjp is None:
        jvp, vjp = _zero_jvp, _zero_vjp
    return Primitive(
        name,
        impl=ufunc,
        shape=_binary_shape(ufunc, name),
        jvp=jvp,
        vjp=vjp,
        batch=_elementwise_batch(name),
        emit=lambda x, y, _n=ufunc.__name__: f"np.{_n}({x}, {y})",
        differentiable=derivs is not None or vjp is not None,
    )


def _aval(x) -> Aval:
    a = getattr(x, "aval", None)
    return a if a is not None else aval_of(x)


def _broadcast_like(t, out):
    # A tangent must have the output's shape even when only a broadcast input moved.
    from tracegrad.primitives import shape as _shape

    s = shape_of(out)
    return t if shape_of(t) == s else _shape.broadcast_to(t, s)


def _add_vjp(bar, x, y, *, out):
    return (
        unbroadcast(bar, shape_of(x)) if is_float(_dtype(x)) else None,
        unbroadcast(bar, shape_of(y)) if is_float(_dtype(y)) else None,
    )


def _add_jvp(primals, tangents, *, out):
    x_dot, y_dot = tangents
    t = x_dot if y_dot is None else y_dot if x_dot is None else x_dot + y_dot
    return None if t is None else _broadcast_like(t, out)


def _sub_vjp(bar, x, y, *, out):
    return (
        unbroadcast(bar, shape_of(x)) if is_float(_dtype(x)) else None,
        unbroadcast(negative(bar), shape_of(y)) if is_float(_dtype(y)) else None,
    )


def _sub_jvp(primals, tangents, *, out):
    x_dot, y_dot = tangents
    if y_dot is None:
        t = x_dot
    else:
        t = negative(y_dot) if x_dot is None else x_dot - y_dot
    return None if t is None else _broadcast_like(t, out)


def _mul_derivs(x, y, out, need_x, need_y):
    return (y if need_x else None), (x if need_y else None)


def _div_derivs(x, y, out, need_x, need_y):
    return (reciprocal(y) if need_x else None), (negative(out / y) if need_y else None)


def _div_vjp(bar, x, y, *, out):
    # t = bar / y serves both: x_bar = t, y_bar = -t * x / y = -(t * out); sharing t keeps
    # nested derivatives of quotients small
    fx, fy = is_float(_dtype(x)), is_float(_dtype(y))
    t = bar / y
    return (
        unbroadcast(t, shape_of(x)) if fx else None,
        (lambda: unbroadcast(negative(t * out), shape_of(y))) if fy else None,
    )


def _pow_derivs(x, y, out, need_x, need_y):
    dx = dy = None
    if need_x:
        # y * x**(y-1); at x == 0 with y == 0 this is 0 * 0**-1: take 0, as JAX does.
        if _is_const_scalar(y):
            dx = _pow_const_deriv(x, y)
        else:
            dx = where(
                bind(logical_and_p, equal(y, 0.0), equal(x, 0.0)), 0.0, y * power(x, y - 1.0)
            )
    if need_y:
        # log(x) * out, defined as 0 where x == 0 (the limit of x**y * log x for y > 0)
        safe_x = where(equal(x, 0.0), 1.0, x)
        dy = where(equal(x, 0.0), 0.0, log(safe_x) * out)
    return dx, dy


def _is_const_scalar(y) -> bool:
    return isinstance(y, int | float) and not isinstance(y, bool)


def _pow_const_deriv(x, y):
    # x ** c for a Python number c (x ** 2 is the common case): no where, no log
    if y == 0:
        return None
    if y == 1:
        return 1.0
    if y == 2:
        return x * 2
    return power(x, y - 1) * y


def _max_derivs(x, y, out, need_x, need_y):
    # ties: each equal input gets half (JAX's balanced rule), so the sum is still 1
    x_eq, y_eq = equal(x, out), equal(y, out)
    dtype = _dtype(out)
    dx = astype(where(x_eq, where(y_eq, 0.5, 1.0), 0.0), dtype) if need_x else None
    dy = astype(where(y_eq, where(x_eq, 0.5, 1.0), 0.0), dtype) if need_y else None
    return dx, dy


def _arctan2_derivs(y, x, out, need_y, need_x):
    denom = x * x + y * y
    return (x / denom if need_y else None), (negative(y) / denom if need_x else None)


def _hypot_derivs(x, y, out, need_x, need_y):
    return (x / out if need_x else None), (y / out if need_y else None)


def _logaddexp_derivs(x, y, out, need_x, need_y):
    return (exp(x - out) if need_x else None), (exp(y - out) if need_y else None)


def _logaddexp2_derivs(x, y, out, need_x, need_y):
    return (bind(exp2_p, x - out) if need_x else None), (bind(exp2_p, y - out) if need_y else None)


def _remainder_derivs(x, y, out, need_x, need_y):
    # np.remainder(x, y) = x - floor(x / y) * y
    return (1.0 if need_x else None), (negative(bind(floor_p, x / y)) if need_y else None)


def _fmod_derivs(x, y, out, need_x, need_y):
    # np.fmod(x, y) = x - trunc(x / y) * y
    return (1.0 if need_x else None), (negative(bind(trunc_p, x / y)) if need_y else None)


def _copysign_derivs(x, y, out, need_x, need_y):
    return (sign(x) * sign(out) if need_x else None), None


# fmt: off
add_p          = binary("add", np.add, vjp=_add_vjp, jvp=_add_jvp)
subtract_p     = binary("subtract", np.subtract, vjp=_sub_vjp, jvp=_sub_jvp)
multiply_p     = binary("multiply", np.multiply, _mul_derivs)
divide_p       = binary("divide", np.divide, _div_derivs, vjp=_div_vjp)
power_p        = binary("power", np.power, _pow_derivs)
maximum_p      = binary("maximum", np.maximum, _max_derivs)
minimum_p      = binary("minimum", np.minimum, _max_derivs)
fmax_p         = binary("fmax", np.fmax, _max_derivs)
fmin_p         = binary("fmin", np.fmin, _max_derivs)
arctan2_p      = binary("arctan2", np.arctan2, _arctan2_derivs)
hypot_p        = binary("hypot", np.hypot, _hypot_derivs)
logaddexp_p    = binary("logaddexp", np.logaddexp, _logaddexp_derivs)
logaddexp2_p   = binary("logaddexp2", np.logaddexp2, _logaddexp2_derivs)
remainder_p    = binary("remainder", np.remainder, _remainder_derivs)
fmod_p         = binary("fmod", np.fmod, _fmod_derivs)
copysign_p     = binary("copysign", np.copysign, _copysign_derivs)
# not differentiable
floor_divide_p = binary("floor_divide", np.floor_divide)
equal_p        = binary("equal", np.equal)
not_equal_p    = binary("not_equal", np.not_equal)
less_p         = binary("less", np.less)
less_equal_p   = binary("less_equal", np.less_equal)
greater_p      = binary("greater", np.greater)
greater_equal_p = binary("greater_equal", np.greater_equal)
logical_and_p  = binary("logical_and", np.logical_and)
logical_or_p   = binary("logical_or", np.logical_or)
logical_xor_p  = binary("logical_xor", np.logical_xor)
# fmt: on

BINARY = (
    add_p,
    subtract_p,
    multiply_p,
    divide_p,
    power_p,
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


def _where_vjp(bar, cond, x, y, *, out):
    return (
        None,
        unbroadcast(where(cond, bar, 0.0), shape_of(x)) if is_float(_dtype(x)) else None,
        unbroadcast(where(cond, 0.0, bar), shape_of(y)) if is_float(_dtype(y)) else None,
    )


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
    vjp=_where_vjp,
    emit=lambda c, x, y: f"np.where({c}, {x}, {y})",
    batch=_elementwise_batch("where"),
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
    dm_dx, dm_dlo = _max_derivs(x, lo, m, True, True)
    dout_dm, dout_dhi = _max_derivs(m, hi, out, True, True)
    return dout_dm * dm_dx, dout_dm * dm_dlo, dout_dhi


def _clip_vjp(bar, x, lo, hi, *, out):
    dx, dlo, dhi = _clip_partials(x, lo, hi, out)
    return tuple(
        unbroadcast(bar * d, shape_of(v)) if is_float(_dtype(v)) else None
        for v, d in ((x, dx), (lo, dlo), (hi, dhi))
    )


def _clip_jvp(primals, tangents, *, out):
    if all(t is None for t in tangents):
        return None
    partials = _clip_partials(*primals, out)
    terms = [t * d for t, d in zip(tangents, partials) if t is not None]
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return _broadcast_like(total, out)


clip_p = Primitive(
    "clip",
    impl=np.clip,
    shape=_clip_shape,
    jvp=_clip_jvp,
    vjp=_clip_vjp,
    emit=lambda x, lo, hi: f"np.clip({x}, {lo}, {hi})",
    batch=_elementwise_batch("clip"),
)

# -- astype -----------------------------------------------------------------------------------


def astype(x, dtype):
    return bind(astype_p, x, dtype=np.dtype(dtype))


def _astype_vjp(bar, x, *, out, dtype):
    src = _dtype(x)
    if not (is_float(src) and is_float(dtype)):
        return (None,)
    return (astype(bar, src),)


def _astype_jvp(primals, tangents, *, out, dtype):
    (t,) = tangents
    if t is None or not is_float(dtype):
        return None
    return astype(t, dtype)


astype_p = Primitive(
    "astype",
    impl=lambda x, *, dtype: np.asarray(x).astype(dtype),
    shape=lambda x, *, dtype: Aval(x.shape, dtype),
    jvp=_astype_jvp,
    vjp=_astype_vjp,
    emit=lambda x, *, dtype: f"np.asarray({x}).astype(np.{np.dtype(dtype).name})",
    batch=_elementwise_batch("astype"),
)

PRIMITIVES = UNARY + BINARY + (where_p, clip_p, astype_p)

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
    emit=lambda x: x,
    batch=_elementwise_batch("stop_gradient"),
    differentiable=False,
)

PRIMITIVES = PRIMITIVES + (stop_gradient_p,)

_BY_NAME = {p.name: p for p in PRIMITIVES}
