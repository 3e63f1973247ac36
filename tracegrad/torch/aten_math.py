"""The floating-point arithmetic of ATen's CPU samplers, in NumPy, bit for bit.

PyTorch's x86-64 wheels run the samplers' AVX2 kernels, compiled with FMA, and GCC fuses
`a * b + c` there into one rounding (`uniform_`'s `u * (to - from) + from`, `normal_`'s
`z * std + mean`): `fma64` and `fma32` round a * b + c once. `normal_fill_16` is ATen's
Box-Muller on blocks of 16 uniforms: float64 through the C library's log, cos and sin (NumPy's),
float32 through the Cephes log and sincos of avx_mathfun.h, in float32, with the steps GCC fuses.
"""

from __future__ import annotations

import numpy as np

__all__ = ["fma32", "fma64", "normal_fill_16"]

_F32 = np.float32
_SPLITTER = np.float64(2.0**27 + 1)  # Veltkamp: a double as a sum of two 26-bit halves


def _two_sum(a, b):
    """s, e with s = fl(a + b) and s + e = a + b exactly (Knuth)."""
    s = a + b
    b_virtual = s - a
    return s, (a - (s - b_virtual)) + (b - b_virtual)


def _two_product(a, b):
    """p, e with p = fl(a * b) and p + e = a * b exactly (Dekker)."""
    p = a * b
    a_big = _SPLITTER * a
    a_hi = a_big - (a_big - a)
    a_lo = a - a_hi
    b_big = _SPLITTER * b
    b_hi = b_big - (b_big - b)
    b_lo = b - b_hi
    return p, ((a_hi * b_hi - p) + a_hi * b_lo + a_lo * b_hi) + a_lo * b_lo


def _add_rounded_to_odd(a, b):
    """a + b rounded to odd: where the sum is inexact, the neighbour with an odd last bit."""
    s, e = _two_sum(a, b)
    even = (s.view(np.uint64) & np.uint64(1)) == 0
    nudge = (e != 0) & even
    if nudge.any():
        s = np.where(nudge, np.nextafter(s, np.where(e > 0, np.inf, -np.inf)), s)
    return s


def fma64(a, b, c) -> np.ndarray:
    """a * b + c in float64, rounded once (Boldo and Melquiond, "Emulation of FMA and correctly
    rounded sums: proved algorithms using rounding to odd", 2008)."""
    a, b, c = np.broadcast_arrays(*(np.asarray(v, np.float64) for v in (a, b, c)))
    product, product_error = _two_product(a, b)
    high, low = _two_sum(c, product)
    return high + _add_rounded_to_odd(low, product_error)


def fma32(a, b, c) -> np.ndarray:
    """a * b + c of float32 numbers, rounded once to float32. The product is exact in float64,
    so s = fl64(a * b + c) is off by less than half its last place; rounding s to float32 is
    then right unless s lies exactly halfway between two floats and was rounded onto that
    point, where the lost part `e` decides the direction."""
    product, c = np.broadcast_arrays(np.asarray(a, np.float64) * np.asarray(b, np.float64), c)
    c = c.astype(np.float64, copy=False)
    s = np.atleast_1d(product + c)
    halfway = np.flatnonzero((s.view(np.uint64) & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000))
    if halfway.size:  # rare for random data, common for short mantissas: only those
        flat = s.reshape(-1)
        s_h, p_h, c_h = flat[halfway], product.reshape(-1)[halfway], c.reshape(-1)[halfway]
        e = (p_h - (s_h - (s_h - p_h))) + (c_h - (s_h - p_h))  # p + c - s, exactly (Knuth)
        flat[halfway] = np.where(e != 0, np.nextafter(s_h, np.where(e > 0, np.inf, -np.inf)), s_h)
        s = flat.reshape(s.shape)
    s = s.reshape(product.shape)
    return s.astype(_F32)


# -- avx_mathfun.h in float32 ------------------------------------------------------------------
_LOG_P = tuple(
    _F32(v)
    for v in (
        7.0376836292e-2,
        -1.1514610310e-1,
        1.1676998740e-1,
        -1.2420140846e-1,
        1.4249322787e-1,
        -1.6668057665e-1,
        2.0000714765e-1,
        -2.4999993993e-1,
        3.3333331174e-1,
    )
)
_LOG_Q1, _LOG_Q2 = _F32(-2.12194440e-4), _F32(0.693359375)
_SQRTHF = _F32(0.707106781186547524)
_MIN_NORM = np.array(0x00800000, np.int32).view(_F32)
_FOPI = _F32(1.27323954473516)  # 4 / pi
# -pi/4 in three parts
_DP1, _DP2, _DP3 = (
    _F32(-0.78515625),
    _F32(-2.4187564849853515625e-4),
    _F32(-3.77489497744594108e-8),
)
_COS_P = tuple(_F32(v) for v in (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2))
_SIN_P = tuple(_F32(v) for v in (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1))
_ONE, _HALF = _F32(1.0), _F32(0.5)


def _log_avx2(x: np.ndarray) -> np.ndarray:
    """`log256_ps` of positive float32 numbers: exponent and mantissa in [sqrt(1/2), sqrt(2)),
    Cephes' polynomial in the mantissa, Horner's steps fused."""
    x = np.maximum(x, _MIN_NORM)
    bits = x.view(np.int32)
    e = ((bits.view(np.uint32) >> 23).astype(np.int32) - 0x7F).astype(_F32) + _ONE
    x = (bits & np.int32(~0x7F800000) | _HALF.view(np.int32)).view(_F32)
    small = x < _SQRTHF
    e = e - np.where(small, _ONE, _F32(0))
    x = (x - _ONE) + np.where(small, x, _F32(0))
    z = x * x
    y = np.full_like(x, _LOG_P[0])
    for p in _LOG_P[1:]:
        y = fma32(y, x, p)
    y = y * x
    y = fma32(y, z, e * _LOG_Q1)
    y = y - z * _HALF  # z / 2 is exact: fused or not, the same
    return (x + y) + e * _LOG_Q2  # e * q2 is exact (an 8-bit integer times 9 bits)


def _sincos_avx2(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`sincos256_ps` of non-negative float32 numbers (Box-Muller's angles): reduction by
    multiples of pi/4 in three parts, then Cephes' two polynomials, Horner's steps fused."""
    j = ((x * _FOPI).astype(np.int32) + 1) & ~1
    y = j.astype(_F32)
    sin_sign = ((j & 4) << 29).view(np.uint32)
    cos_sign = ((~(j - 2) & 4) << 29).view(np.uint32)
    use_sine_poly = (j & 2) == 0
    x = fma32(y, _DP3, fma32(y, _DP2, fma32(y, _DP1, x)))
    z = x * x
    cos_poly = fma32(fma32(np.full_like(x, _COS_P[0]), z, _COS_P[1]), z, _COS_P[2])
    cos_poly = fma32(cos_poly * z, z, -(z * _HALF)) + _ONE
    sin_poly = fma32(fma32(np.full_like(x, _SIN_P[0]), z, _SIN_P[1]), z, _SIN_P[2])
    sin_poly = fma32(sin_poly * z, x, x)
    sine = np.where(use_sine_poly, sin_poly, cos_poly)
    cosine = np.where(use_sine_poly, cos_poly, sin_poly)
    # the kernel's select by masks and subtraction leaves exactly the chosen polynomial
    # (adding 0.0), which turns -0.0 into +0.0
    sine, cosine = sine + _F32(0), cosine + _F32(0)
    return (sine.view(np.uint32) ^ sin_sign).view(_F32), (cosine.view(np.uint32) ^ cos_sign).view(
        _F32
    )


def normal_fill_16(data: np.ndarray, mean: float, std: float) -> np.ndarray:
    """ATen's `NormalFill16` on each row of 16 uniforms in [0, 1) (`data`, float32 or float64):
    the first 8 give radii, the last 8 angles, and the row becomes
    `fma(radius * cos, std, mean)` then `fma(radius * sin, std, mean)`."""
    u1, u2 = 1 - data[:, :8], data[:, 8:]
    if data.dtype == np.float64:
        radius = np.sqrt(-2 * np.log(u1))
        theta = (2.0 * np.pi) * u2
        normals = np.concatenate([radius * np.cos(theta), radius * np.sin(theta)], axis=1)
        return normals + 0.0 if std == 1 and mean == 0 else fma64(normals, std, mean)
    with np.errstate(invalid="ignore"):  # the kernel's log NaNs x <= 0, which never comes
        radius = np.sqrt(_F32(-2) * _log_avx2(u1))
    sine, cosine = _sincos_avx2(_F32(2.0 * np.pi) * u2)
    normals = np.concatenate([radius * cosine, radius * sine], axis=1)
    if _F32(std) == 1 and _F32(mean) == 0:  # fma(z, 1, 0) is z + 0
        return normals + _F32(0)
    return fma32(normals, _F32(std), _F32(mean))
