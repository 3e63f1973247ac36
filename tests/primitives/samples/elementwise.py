"""SAMPLES rows for the elementwise primitives: domains away from singular points and kinks."""

from __future__ import annotations

import numpy as np

from tests import strategies as S
from tests.primitives.samples.row import REAL_OF, Sample, with_imaginary
from tracegrad.primitives import elementwise as ew


def _unary(lo, hi, tol=1e-6, fd=True, away_from_zero=False, cplx=True, imag=0.5):
    """A unary row with real parts in [lo, hi] (and, for complex dtypes, imaginary parts in
    [-imag, imag]; `cplx=False` where NumPy has no complex loop)."""

    def draw(data, dtype):
        x = S.array(data, S.shapes(data), dtype, lo, hi)
        if away_from_zero:  # |x| >= 0.1: abs and sign have a kink at 0
            x = np.where(np.abs(x) < 0.1, np.asarray(0.5, dtype), x).astype(dtype)
        return (x,), {}

    return Sample(draw, tol=tol, fd=fd, complex=(0,) if cplx else (), imag=imag)


def _binary(
    lo=-2.0,
    hi=2.0,
    lo2=None,
    hi2=None,
    tol=1e-6,
    fd=True,
    distinct=False,
    ints=((-3, 3), (-3, 3)),
    cplx=True,
):
    """A binary row; for complex dtypes either operand or both are complex (`cplx=False`
    where NumPy has no complex loop)."""
    lo2 = lo if lo2 is None else lo2
    hi2 = hi if hi2 is None else hi2

    def draw(data, dtype):
        s1, s2 = S.broadcast_shapes(data, 2)
        x = S.array(data, s1, dtype, lo, hi)
        y = S.array(data, s2, dtype, lo2, hi2)
        if distinct:
            # on two offset grids |x - y| >= 0.1: no ties, where max/min's derivative jumps
            x = (np.round(x * 4) / 4 + 0.05).astype(dtype)
            y = (np.round(y * 4) / 4 - 0.05).astype(dtype)
        return (x, y), {}

    spans = tuple((i, a, b, True) for i, span in enumerate(ints) if span for a, b in [span])
    return Sample(draw, tol=tol, fd=fd, ints=spans, complex=(0, 1) if cplx else (), mixed=True)


def _where(data, dtype):
    sc, sx, sy = S.broadcast_shapes(data, 3)
    cond = S.array(data, sc, np.bool_)
    return (cond, S.array(data, sx, dtype), S.array(data, sy, dtype)), {}


def _clip(data, dtype):
    sx, slo, shi = S.broadcast_shapes(data, 3)
    x = S.array(data, sx, dtype, -3, 3)
    lo = S.array(data, slo, dtype, -1.0, -0.5)
    hi = S.array(data, shi, dtype, 0.5, 1.0)
    # keep x off the bounds (the derivative jumps there)
    for b in (lo, hi):
        if x.size and b.size:
            bb = np.broadcast_to(b, np.broadcast_shapes(x.shape, b.shape))
            xx = np.broadcast_to(x, bb.shape)
            if np.abs(xx - bb).min() < 0.05:
                x = (x + np.asarray(0.11, dtype)).astype(dtype)
    return (x, lo, hi), {}


def _astype(data, dtype):
    x = S.array(data, S.shapes(data), dtype)
    # float64 -> float32 is covered by the adjoint test; finite differences through a float32
    # rounding would be noise
    targets = [np.float32, np.float64] if np.dtype(dtype) == np.float32 else [np.float64]
    target = data.draw(S.st.sampled_from(targets), label="target dtype")
    return (x,), {"dtype": np.dtype(target)}


def _astype_complex(data, dtype):
    """Casts across the complex boundary: real to complex, complex to complex, complex to real
    (NumPy warns and keeps the real part); complex128 rows keep 64-bit parts, so finite
    differences are not lost to a float32 rounding."""
    real = REAL_OF[dtype]
    source = data.draw(S.st.sampled_from([real, dtype]), label="source dtype")
    x = S.array(data, S.shapes(data), real)
    if np.dtype(source).kind == "c":
        x = with_imaginary(data, x, source)
    wide = [np.complex128, np.float64]
    targets = wide + [np.complex64, np.float32] if dtype == np.complex64 else wide
    targets = [t for t in targets if np.dtype(source).kind == "c" or np.dtype(t).kind == "c"]
    target = data.draw(S.st.sampled_from(targets), label="target dtype")
    return (x,), {"dtype": np.dtype(target)}


def _integers(arity, lo=-8, hi=8, *, unsigned_second=False, bools=True):
    """Integer operands (the bitwise primitives take no floats), any of NumPy's int widths or
    bool; a shift count in [0, 5]."""
    types = [np.int8, np.int32, np.int64] + ([np.bool_] if bools else [])

    def draw(data, dtype):
        shapes = S.broadcast_shapes(data, arity)
        itype = data.draw(S.st.sampled_from(types), label="int")
        args = []
        for k, shape in enumerate(shapes):
            lo_k, hi_k = (0, 5) if (unsigned_second and k == 1) else (lo, hi)
            values = data.draw(
                S.st.lists(
                    S.st.integers(lo_k, hi_k),
                    min_size=int(np.prod(shape)),
                    max_size=int(np.prod(shape)),
                ),
                label="ints",
            )
            t = np.int64 if itype is np.bool_ and unsigned_second else itype
            args.append(np.asarray(values).reshape(shape).astype(t))
        return tuple(args), {}

    return Sample(draw, fd=False)


def _ldexp(data, dtype):
    sx, sn = S.broadcast_shapes(data, 2)
    x = S.array(data, sx, dtype, -2, 2)
    n = np.asarray(
        data.draw(
            S.st.lists(S.st.integers(-3, 3), min_size=int(np.prod(sn)), max_size=int(np.prod(sn))),
            label="n",
        )
    ).reshape(sn)
    return (x, n.astype(np.int32)), {}


def _sinc_derivative(data, dtype):
    (x,), _ = _unary(-2.5, 2.5).draw(data, dtype)
    return (x,), {"order": data.draw(S.st.integers(1, 4), label="order")}


SAMPLES = {
    ew.negative_p: _unary(-2, 2),
    ew.positive_p: _unary(-2, 2),
    ew.exp_p: _unary(-2, 2),
    ew.exp2_p: _unary(-2, 2),
    ew.expm1_p: _unary(-2, 2),
    ew.log_p: _unary(0.2, 3),
    ew.log1p_p: _unary(-0.5, 3),
    ew.log2_p: _unary(0.2, 3),
    ew.log10_p: _unary(0.2, 3),
    ew.sin_p: _unary(-3, 3),
    ew.cos_p: _unary(-3, 3),
    ew.tan_p: _unary(-1.2, 1.2),
    ew.arcsin_p: _unary(-0.8, 0.8),
    ew.arccos_p: _unary(-0.8, 0.8),
    ew.arctan_p: _unary(-3, 3),
    ew.sinh_p: _unary(-2, 2),
    ew.cosh_p: _unary(-2, 2),
    ew.tanh_p: _unary(-2, 2),
    ew.arcsinh_p: _unary(-3, 3),
    ew.arccosh_p: _unary(1.2, 3),
    ew.arctanh_p: _unary(-0.8, 0.8),
    ew.sqrt_p: _unary(0.2, 3),
    ew.cbrt_p: _unary(0.2, 3, cplx=False),
    ew.square_p: _unary(-2, 2),
    ew.reciprocal_p: _unary(0.3, 3),
    ew.absolute_p: _unary(-2, 2, away_from_zero=True),
    ew.fabs_p: _unary(-2, 2, away_from_zero=True, cplx=False),
    ew.deg2rad_p: _unary(-90, 90, cplx=False),
    ew.rad2deg_p: _unary(-2, 2, cplx=False),
    ew.sign_p: _unary(-2, 2, fd=False),
    ew.floor_p: _unary(-2, 2, fd=False, cplx=False),
    ew.ceil_p: _unary(-2, 2, fd=False, cplx=False),
    ew.rint_p: _unary(-2, 2, fd=False),
    ew.trunc_p: _unary(-2, 2, fd=False, cplx=False),
    ew.logical_not_p: _unary(-2, 2, fd=False),
    ew.isfinite_p: _unary(-2, 2, fd=False),
    ew.isnan_p: _unary(-2, 2, fd=False),
    ew.isinf_p: _unary(-2, 2, fd=False),
    ew.signbit_p: _unary(-2, 2, fd=False, cplx=False),
    ew.add_p: _binary(),
    ew.subtract_p: _binary(),
    ew.multiply_p: _binary(),
    ew.divide_p: _binary(-2, 2, 0.5, 2, ints=((-3, 3), (1, 3))),
    ew.power_p: _binary(0.5, 2, -2, 2, ints=((1, 3), (-2, 2))),
    ew.float_power_p: _binary(0.5, 2, -2, 2, ints=((1, 3), (-2, 2))),
    ew.maximum_p: _binary(distinct=True, ints=((-2, 2), (-2, 2))),
    ew.minimum_p: _binary(distinct=True, ints=((-2, 2), (-2, 2))),
    ew.fmax_p: _binary(distinct=True, ints=((-2, 2), (-2, 2))),
    ew.fmin_p: _binary(distinct=True, ints=((-2, 2), (-2, 2))),
    ew.arctan2_p: _binary(0.5, 2, 0.5, 2, ints=((1, 3), (1, 3)), cplx=False),
    ew.hypot_p: _binary(0.5, 2, 0.5, 2, ints=((1, 3), (1, 3)), cplx=False),
    ew.logaddexp_p: _binary(cplx=False),
    ew.logaddexp2_p: _binary(cplx=False),
    ew.remainder_p: _binary(0.1, 0.9, 1.0, 1.5, ints=(None, (2, 3)), cplx=False),
    ew.fmod_p: _binary(0.1, 0.9, 1.0, 1.5, ints=(None, (2, 3)), cplx=False),
    ew.copysign_p: _binary(0.5, 2, 0.5, 2, ints=((1, 3), (1, 3)), cplx=False),
    ew.floor_divide_p: _binary(fd=False, lo2=0.5, hi2=2, cplx=False),
    ew.equal_p: _binary(fd=False),
    ew.not_equal_p: _binary(fd=False),
    ew.less_p: _binary(fd=False),
    ew.less_equal_p: _binary(fd=False),
    ew.greater_p: _binary(fd=False),
    ew.greater_equal_p: _binary(fd=False),
    ew.logical_and_p: _binary(fd=False),
    ew.logical_or_p: _binary(fd=False),
    ew.logical_xor_p: _binary(fd=False),
    ew.where_p: Sample(
        _where, ints=((1, -2, 2, True), (2, -2, 2, True)), complex=(1, 2), mixed=True
    ),
    ew.clip_p: Sample(_clip, complex=(0, 1, 2), mixed=True),  # lexicographic (JAX refuses)
    ew.astype_p: Sample(_astype, tol=1e-5, complex=_astype_complex),
    ew.real_p: _unary(-2, 2),
    ew.imag_p: _unary(-2, 2, fd=False),
    ew.conjugate_p: _unary(-2, 2),
    ew.sinc_p: _unary(-2.5, 2.5),
    ew.sinc_derivative_p: Sample(_sinc_derivative, complex=(0,)),
    ew.invert_p: _integers(1),
    ew.bitwise_and_p: _integers(2),
    ew.bitwise_or_p: _integers(2),
    ew.bitwise_xor_p: _integers(2),
    ew.left_shift_p: _integers(2, 0, 8, unsigned_second=True),
    ew.right_shift_p: _integers(2, -8, 8, unsigned_second=True),
    ew.gcd_p: _integers(2, 1, 20, bools=False),
    ew.lcm_p: _integers(2, 1, 20, bools=False),
    ew.heaviside_p: _binary(fd=False, cplx=False),
    ew.ldexp_p: Sample(_ldexp),
    ew.stop_gradient_p: _unary(-2, 2, fd=False),
}
