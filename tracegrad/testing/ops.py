"""The op table `OPS`: one row per NumPy operation random programs may call, with the
integer-operand rows of every binary ufunc. Rows whose functions `tracegrad.numpy` does not
export yet are left out, so programs grow with tracegrad.
"""

from __future__ import annotations

import math
import re

import numpy as np

import tracegrad.numpy as tnp
from tracegrad.testing.operands import (
    _array_index,
    _basic_index,
    _binary,
    _bounded,
    _broadcast_target,
    _dot,
    _einsum_inner,
    _einsum_matmul,
    _einsum_outer,
    _expand_dims,
    _flip,
    _gram_bound,
    _gram_call,
    _gram_slope,
    _gram_text,
    _index_text,
    _join,
    _join_text,
    _kw_text,
    _log_bound,
    _matmul,
    _matmul_bound,
    _matmul_slope,
    _method_call,
    _np_call,
    _prod_bound,
    _prod_slope,
    _reduction,
    _reshape,
    _squeeze,
    _sum_bound,
    _sum_slope_red,
    _take,
    _transpose_perm,
    _two_axes,
    _unary,
    _where_mask,
)
from tracegrad.testing.row import (
    Op,
    _chain,
    _const_bound,
    _product_slope,
    _quotient_slope,
    _sum_slope,
)

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


# integer-operand rows complex programs may draw too (all holomorphic in x)
_COMPLEX_FORMS = frozenset(
    ("add", "radd", "subtract", "rsubtract", "multiply", "rmultiply", "divide", "power", "rpower")
)


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
        values="both" if form in _COMPLEX_FORMS else "real",
        holomorphic=form in _COMPLEX_FORMS,
    )


# -- complex values ---------------------------------------------------------------------------


def _cosh(b: float) -> float:
    # a bound, so inf past float64's range (math.cosh raises OverflowError there)
    return math.cosh(b) if b < 710.0 else math.inf


def _trig_bound(xs, p):
    # |sin z|, |cos z| <= cosh(|z|) for complex z (cosh(Im z) grows off the real axis)
    x = xs[0]
    return _cosh(x.bound) if x.dtype.kind == "c" else 1.0


def _trig_slope(xs, p):
    x = xs[0]
    return (_cosh(x.bound) if x.dtype.kind == "c" else 1.0) * x.slope


def _size(x) -> int:
    return math.prod(x.shape)


def _to_complex(b, x):
    """`astype` to a complex dtype: from a real value, or a complex one at the other precision."""
    single = x.dtype in (np.float32, np.complex64)
    choices = ["complex64", "complex128"] if x.dtype.kind != "c" else []
    choices = choices or ["complex128" if single else "complex64"]
    return [x], {"dtype": b.choice(choices) if len(choices) > 1 else choices[0]}


# -- the table --------------------------------------------------------------------------------
# One row per operation; rows whose `needs` are not all exported by tracegrad.numpy are left
# out, so programs grow with tracegrad. Rows shrink towards the top of the table. `**_H` marks
# rows complex programs may draw too, holomorphic ones; `**_C` the other rows they may draw
# (kinks, real parts, lexicographic comparisons as NumPy and jax.numpy make them).

_H = {"values": "both", "holomorphic": True}
_C = {"values": "both"}

# fmt: off
OPS: tuple[Op, ...] = (
    # elementwise, smooth, any finite input
    Op("sin", ("sin",), "np.sin({0})", lambda x: np.sin(x), _unary, _trig_bound,
       slope=_trig_slope, **_H),
    Op("add", ("add",), "{0} + {1}", lambda x, y: x + y, _binary,
       lambda xs, p: xs[0].bound + xs[1].bound, slope=_sum_slope, linear=True, **_H),
    Op("multiply", ("multiply",), "{0} * {1}", lambda x, y: x * y, _binary,
       lambda xs, p: xs[0].bound * xs[1].bound, slope=_product_slope, **_H),
    Op("subtract", ("subtract",), "{0} - {1}", lambda x, y: x - y, _binary,
       lambda xs, p: xs[0].bound + xs[1].bound, slope=_sum_slope, linear=True, **_H),
    Op("divide", ("divide", "add", "multiply"), "{0} / (1.0 + {1} * {1})",
       lambda x, y: x / (1.0 + y * y), _binary, slope=_quotient_slope),
    Op("cos", ("cos",), "np.cos({0})", lambda x: np.cos(x), _unary, _trig_bound,
       slope=_trig_slope, **_H),
    Op("tanh", ("tanh",), "np.tanh({0})", lambda x: np.tanh(x), _unary, _const_bound(1.0)),
    Op("exp", ("exp",), "np.exp({0})", lambda x: np.exp(x), _bounded(4.0),
       lambda xs, p: math.exp(xs[0].bound), slope=_chain(math.exp), **_H),
    Op("log", ("log", "multiply", "add"), "np.log({0} * {0} + 0.5)",
       lambda x: np.log(x * x + 0.5), _unary, _log_bound, slope=_chain(lambda b: 1.42)),
    Op("sqrt", ("sqrt", "multiply", "add"), "np.sqrt({0} * {0} + 0.25)",
       lambda x: np.sqrt(x * x + 0.25), _unary, lambda xs, p: xs[0].bound + 0.5),
    Op("square", ("square",), "np.square({0})", lambda x: np.square(x), _unary,
       lambda xs, p: xs[0].bound ** 2, slope=_chain(lambda b: 2 * b), **_H),
    Op("negative", ("negative",), "-{0}", lambda x: -x, _unary, linear=True, **_H),
    Op("scale", ("multiply",), "{0} * 0.5", lambda x: x * 0.5, _unary, linear=True, **_H),
    Op("shift", ("subtract",), "1.5 - {0}", lambda x: 1.5 - x, _unary,
       lambda xs, p: xs[0].bound + 1.5, linear=True, **_H),
    Op("arctan", ("arctan",), "np.arctan({0})", lambda x: np.arctan(x), _unary,
       _const_bound(1.6)),
    Op("arcsinh", ("arcsinh",), "np.arcsinh({0})", lambda x: np.arcsinh(x), _unary),
    Op("expm1", ("expm1",), "np.expm1({0})", lambda x: np.expm1(x), _bounded(4.0),
       lambda xs, p: math.exp(xs[0].bound), slope=_chain(math.exp), **_H),
    Op("log1p", ("log1p", "multiply"), "np.log1p({0} * {0})", lambda x: np.log1p(x * x),
       _unary, lambda xs, p: math.log1p(xs[0].bound ** 2)),
    Op("sinh", ("sinh",), "np.sinh({0})", lambda x: np.sinh(x), _bounded(4.0),
       lambda xs, p: math.cosh(xs[0].bound), slope=_chain(math.cosh), **_H),
    Op("cosh", ("cosh",), "np.cosh({0})", lambda x: np.cosh(x), _bounded(4.0),
       lambda xs, p: math.cosh(xs[0].bound), slope=_chain(math.cosh), **_H),
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
       lambda x, y, *, n: np.where(np.arange(n) % 2 == 0, x, y), _where_mask, linear=True,
       **_H),
    Op("astype", ("astype",), "{0}.astype(np.{dtype})",
       lambda x, *, dtype: x.astype(dtype),
       lambda b, x: ([x], {"dtype": "float32" if x.dtype == np.float64 else "float64"}),
       linear=True),
    # elementwise with kinks (forward checks only)
    Op("abs", ("abs",), "np.abs({0})", lambda x: np.abs(x), _unary, smooth=False, **_C),
    Op("relu", ("maximum",), "np.maximum({0}, 0.0)", lambda x: np.maximum(x, 0.0), _unary,
       smooth=False, **_C),
    Op("clip", ("clip",), "np.clip({0}, -1.0, 1.0)", lambda x: np.clip(x, -1.0, 1.0), _unary,
       _const_bound(1.0), smooth=False),
    Op("maximum", ("maximum",), "np.maximum({0}, {1})", lambda x, y: np.maximum(x, y), _binary,
       smooth=False, **_C),
    Op("minimum", ("minimum",), "np.minimum({0}, {1})", lambda x, y: np.minimum(x, y), _binary,
       smooth=False, **_C),
    Op("where", ("where", "greater"), "np.where({0} > {1}, {0}, {1})",
       lambda x, y: np.where(x > y, x, y), _binary, smooth=False, **_C),
    # reductions
    Op("sum", ("sum",), _kw_text("sum"), _np_call("sum"), _reduction(), _sum_bound,
       slope=_sum_slope_red, linear=True, **_H),
    Op("sum_method", ("sum",), _kw_text("sum", method=True), _method_call("sum"),
       _reduction(), _sum_bound, slope=_sum_slope_red, linear=True, **_H),
    Op("mean", ("mean",), _kw_text("mean"), _np_call("mean"), _reduction(nonempty=True),
       linear=True, **_H),
    Op("prod", ("prod",), _kw_text("prod"), _np_call("prod"), _reduction(), _prod_bound,
       slope=_prod_slope, **_H),
    Op("var", ("var",), _kw_text("var"), _np_call("var"), _reduction(nonempty=True),
       lambda xs, p: xs[0].bound ** 2, slope=lambda xs, p: 4 * xs[0].bound * xs[0].slope, **_C),
    Op("max", ("max",), _kw_text("max"), _np_call("max"), _reduction(nonempty=True),
       smooth=False, **_C),
    Op("min", ("min",), _kw_text("min"), _np_call("min"), _reduction(nonempty=True),
       smooth=False, **_C),
    Op("std", ("std",), _kw_text("std"), _np_call("std"), _reduction(nonempty=True),
       smooth=False, **_C),
    Op("cumsum", ("cumsum",), _kw_text("cumsum"), _np_call("cumsum"),
       _reduction(keepdims=False, tuple_=False), _sum_bound, slope=_sum_slope_red, linear=True,
       **_H),
    # shapes
    Op("reshape", ("reshape",), "np.reshape({0}, {shape!r})",
       lambda x, *, shape: np.reshape(x, shape), _reshape, linear=True, **_H),
    Op("reshape_method", ("reshape",), "{0}.reshape({shape!r})",
       lambda x, *, shape: x.reshape(shape), _reshape, linear=True, **_H),
    Op("T", ("transpose",), "{0}.T", lambda x: x.T, _unary, linear=True, **_H),
    Op("transpose", ("transpose",), "np.transpose({0}, {axes!r})",
       lambda x, *, axes: np.transpose(x, axes), _transpose_perm, linear=True, **_H),
    Op("broadcast_to", ("broadcast_to",), "np.broadcast_to({0}, {shape!r})",
       lambda x, *, shape: np.broadcast_to(x, shape), _broadcast_target, linear=True, **_H),
    Op("expand_dims", ("expand_dims",), "np.expand_dims({0}, {axis!r})",
       lambda x, *, axis: np.expand_dims(x, axis), _expand_dims, linear=True, **_H),
    Op("squeeze", ("squeeze",), "np.squeeze({0}, axis={axis!r})",
       lambda x, *, axis: np.squeeze(x, axis=axis), _squeeze, linear=True, **_H),
    Op("swapaxes", ("swapaxes",), "np.swapaxes({0}, {a}, {b})",
       lambda x, *, a, b: np.swapaxes(x, a, b), _two_axes, linear=True, **_H),
    Op("moveaxis", ("moveaxis",), "np.moveaxis({0}, {a}, {b})",
       lambda x, *, a, b: np.moveaxis(x, a, b), _two_axes, linear=True, **_H),
    Op("flip", ("flip",), _kw_text("flip"), _np_call("flip"), _flip, linear=True, **_H),
    Op("ravel", ("ravel",), "np.ravel({0})", lambda x: np.ravel(x), _unary, linear=True, **_H),
    Op("concatenate", ("concatenate",), _join_text("concatenate"),
       lambda x, y, *, axis: np.concatenate([x, y], axis=axis), _join(stack=False), linear=True,
       **_H),
    Op("stack", ("stack",), _join_text("stack"),
       lambda x, y, *, axis: np.stack([x, y], axis=axis), _join(stack=True), linear=True, **_H),
    # indexing
    Op("index", ("getitem",), lambda n, p: f"{n[0]}[{_index_text(p['index'])}]",
       lambda x, *, index: x[index], _basic_index, linear=True, **_H),
    Op("index_array", ("getitem", "take"), lambda n, p: f"{n[0]}[{_index_text(p['index'])}]",
       lambda x, *, index: x[index], _array_index, linear=True, **_H),
    Op("take", ("take",), "np.take({0}, {indices!r}, axis={axis})",
       lambda x, *, indices, axis: np.take(x, indices, axis=axis), _take, linear=True, **_H),
    # linear algebra
    Op("matmul", ("matmul",), "{0} @ {1}", lambda x, y: x @ y, _matmul, _matmul_bound,
       slope=_matmul_slope, **_H),
    Op("dot", ("dot",), "np.dot({0}, {1})", lambda x, y: np.dot(x, y), _dot, _matmul_bound,
       slope=_matmul_slope, **_H),
    Op("einsum_matmul", ("einsum",), "np.einsum('ij,jk->ik', {0}, {1})",
       lambda x, y: np.einsum("ij,jk->ik", x, y), _einsum_matmul, _matmul_bound,
       slope=_matmul_slope, **_H),
    Op("matmul_gram", ("matmul", "swapaxes"), _gram_text, _gram_call,
       lambda b, x: ([x], {}) if x.ndim >= 2 else None, _gram_bound, slope=_gram_slope, **_H),
    Op("einsum_gram", ("einsum",), "np.einsum('...ij,...kj->...ik', {0}, {0})",
       lambda x: np.einsum("...ij,...kj->...ik", x, x),
       lambda b, x: ([x], {}) if x.ndim >= 2 else None, _gram_bound, slope=_gram_slope, **_H),
    Op("einsum_outer", ("einsum",), "np.einsum('i,j->ij', {0}, {1})",
       lambda x, y: np.einsum("i,j->ij", x, y), _einsum_outer,
       lambda xs, p: xs[0].bound * xs[1].bound, slope=_product_slope, **_H),
    Op("einsum_inner", ("einsum",), "np.einsum('...i,...i->...', {0}, {1})",
       lambda x, y: np.einsum("...i,...i->...", x, y), _einsum_inner, _matmul_bound,
       slope=_matmul_slope, **_H),
    # complex values: made, taken apart, conjugated (complex programs only)
    Op("conj", ("conj",), "np.conj({0})", lambda x: np.conj(x), _unary, linear=True,
       values="complex"),
    Op("real", ("real",), "np.real({0})", lambda x: np.real(x), _unary, linear=True,
       values="complex"),
    Op("imag", ("imag",), "np.imag({0})", lambda x: np.imag(x), _unary, linear=True,
       values="complex"),
    Op("abs2", ("real", "conj", "multiply"), "np.real({0} * np.conj({0}))",
       lambda x: np.real(x * np.conj(x)), _unary, lambda xs, p: xs[0].bound ** 2,
       slope=_chain(lambda b: 2 * b), values="complex"),
    Op("exp_i", ("exp", "multiply"), "np.exp(1j * {0})", lambda x: np.exp(1j * x),
       _bounded(4.0), lambda xs, p: math.exp(xs[0].bound), slope=_chain(math.exp),
       values="complex", holomorphic=True),
    Op("rotate", ("multiply",), "{0} * (0.6 + 0.8j)", lambda x: x * (0.6 + 0.8j), _unary,
       linear=True, values="complex", holomorphic=True),
    Op("to_complex", ("astype",), "{0}.astype(np.{dtype})",
       lambda x, *, dtype: x.astype(dtype), _to_complex, linear=True, values="complex",
       holomorphic=True),
    Op("cdivide", ("divide", "add", "multiply", "conj"), "{0} / (2.0 + {1} * np.conj({1}))",
       lambda x, y: x / (2.0 + y * np.conj(y)), _binary, lambda xs, p: 0.5 * xs[0].bound,
       slope=lambda xs, p: 0.5 * xs[0].slope + 0.5 * xs[0].bound * xs[1].slope,
       values="complex"),
    Op("vdot", ("vdot",), "np.vdot({0}, {1})", lambda x, y: np.vdot(x, y), _einsum_inner,
       lambda xs, p: xs[0].bound * xs[1].bound * max(1, _size(xs[0])),
       slope=lambda xs, p: max(1, _size(xs[0])) * _product_slope(xs, p), values="complex"),
    # integer operands of every binary ufunc
    *(_int_operand(form) for form in _INT_FORMS),
)
# fmt: on

_BY_NAME = {op.name: op for op in OPS}
assert len(_BY_NAME) == len(OPS), "two rows of OPS share a name"


def available_ops(*, smooth: bool = False) -> list[str]:
    """Names of the rows whose functions `tracegrad.numpy` exports now (smooth ones only if
    `smooth`)."""
    return [op.name for op in OPS if op.available(tnp) and (op.smooth or not smooth)]
