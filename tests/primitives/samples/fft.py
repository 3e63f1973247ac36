"""SAMPLES rows for the fft primitives (tracegrad.primitives.fft), for
tests/primitives/test_rules.py: normalized params (distinct non-negative axes in any order,
lengths that crop or pad, a norm), float inputs, and complex ones for `fft` and `irfft`
(`rfft` refuses complex input, as NumPy does). Transforms are linear: any finite values are
away from kinks.
"""

from __future__ import annotations

from hypothesis import strategies as st

from tests import strategies as S
from tests.primitives.samples.row import Sample
from tracegrad.primitives import fft as prim


def _call(data, dtype):
    shape = S.shapes(data, min_dims=1, max_dims=3, min_side=1, max_side=4)
    ndim = len(shape)
    axes = data.draw(
        st.permutations(range(ndim)).flatmap(
            lambda p: st.integers(1, ndim).map(lambda k: tuple(p[:k]))
        ),
        label="axes",
    )
    s = tuple(data.draw(st.integers(1, 5), label="length") for _ in axes)
    norm = data.draw(st.sampled_from(prim.NORMS), label="norm")
    return S.array(data, shape, dtype), dict(axes=axes, s=s, norm=norm)


def _fft(data, dtype):
    x, params = _call(data, dtype)
    return (x,), dict(params, inverse=data.draw(st.booleans(), label="inverse"))


def _transform(data, dtype):
    x, params = _call(data, dtype)
    return (x,), params


SAMPLES = {
    prim.fft_p: Sample(_fft, complex=(0,)),
    prim.rfft_p: Sample(_transform),
    prim.irfft_p: Sample(_transform, complex=(0,)),
}
