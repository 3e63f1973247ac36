"""SAMPLES rows for the primitives of tracegrad.primitives.calculus.

correlate is bilinear and smooth everywhere: any values, any lengths (either operand the
longer), batch axes included. interp is piecewise linear with kinks at the knots: knots sit on
odd multiples of 0.25, at least 0.5 apart (so the 10% changes of the batching test keep them
increasing), and points on the other multiples of 0.125 (integers included), at least 0.125
from any knot, inside and outside the knots' range.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests import strategies as S
from tests.primitives.samples.row import REAL_OF, Sample, with_imaginary
from tracegrad.primitives import calculus as calc

_KNOTS = np.arange(-7, 8, 2) * 0.25  # -1.75 .. 1.75
_POINTS = np.array([k * 0.125 for k in range(-24, 25) if k % 4 != 2])  # -3 .. 3, no knot


def _correlate(data, dtype):
    batch = S.shapes(data, max_dims=2, max_side=3)
    n1 = data.draw(st.integers(1, 6), label="len(a)")
    n2 = data.draw(st.integers(1, 6), label="len(v)")
    a = S.array(data, batch + (n1,), dtype)
    v = S.array(data, batch + (n2,), dtype)
    return (a, v), {"mode": data.draw(st.integers(0, 2), label="mode")}


def _knots(data, dtype):
    picked = data.draw(st.sets(st.sampled_from(range(len(_KNOTS))), min_size=1), label="knots")
    return _KNOTS[sorted(picked)].astype(dtype)


def _points(data, dtype):
    shape = S.shapes(data, max_dims=2)
    values = data.draw(
        st.lists(
            st.sampled_from(_POINTS), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))
        ),
        label="points",
    )
    return np.asarray(values, np.float64).reshape(shape).astype(dtype)


def _interp(data, dtype):
    xp = _knots(data, dtype)
    fp = S.array(data, xp.shape, dtype)
    left, right = (S.array(data, (), dtype) for _ in range(2))
    return (_points(data, dtype), xp, fp, left, right), {}


def _interp_complex(data, dtype):
    """Complex values fp (x and xp stay real); left and right complex or real (NumPy takes a
    complex left/right only with a complex fp)."""
    (x, xp, fp, left, right), params = _interp(data, REAL_OF[dtype])
    fp = with_imaginary(data, fp, dtype)
    left, right = (
        with_imaginary(data, v, dtype) if data.draw(st.booleans(), label="complex end") else v
        for v in (left, right)
    )
    return (x, xp, fp, left, right), params


SAMPLES = {
    calc.correlate_p: Sample(_correlate, complex=(0, 1)),  # one dtype (the front end casts)
    calc.interp_p: Sample(
        _interp,
        ints=((0, -3, 3, True), (2, -2, 2, False), (3, -2, 2, True), (4, -2, 2, True)),
        complex=_interp_complex,
    ),
}
