"""Forward values of tracegrad.numpy.fft, bit for bit against NumPy's own call.

For every transform, hypothesis draws a call (shape, axis or axes, n or s, norm, dtype: float,
complex where NumPy takes it, integers and bools) and the result must equal `np.fft.<name>`'s
in shape, dtype and every bit: outside any trace, traced by `make_graph` and run by the
interpreter, under `jit` (the generated NumPy source), and under `vmap` against a loop
(the batch axis anywhere). Then the cases the draw does not reach: repeated axes (NumPy's
step-by-step loop), float16, zero-size batches, `s` with -1 and None, the generated source.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
import tracegrad.numpy as tnp
import tracegrad.numpy.fft as tfft
from tests.fft import cases
from tracegrad.testing import assert_bitwise_equal


def _check_bits(name: str, a, kwargs) -> None:
    ours = getattr(tfft, name)
    expected = getattr(np.fft, name)(a, **kwargs)
    label = f"{name}({a.dtype.name}{list(a.shape)}, {kwargs})"
    assert_bitwise_equal(ours(a, **kwargs), expected, f"{label}: eager")
    graph = tg.make_graph(lambda x: ours(x, **kwargs))(a)
    (aval,) = graph.out_avals  # the shape rules' dtype and shape are NumPy's too
    assert (aval.shape, aval.dtype) == (expected.shape, expected.dtype), (label, aval)
    assert_bitwise_equal(graph(a), expected, f"{label}: make_graph + interpreter")
    assert_bitwise_equal(tg.jit(lambda x: ours(x, **kwargs))(a), expected, f"{label}: jit")


@pytest.mark.parametrize("name", cases.NAMES)
@given(data=st.data())
def test_forward_bits_match_numpy(name, data):
    a, kwargs = cases.draw_call(data, name, cases.dtypes_for(name, ints=True))
    _check_bits(name, a, kwargs)


@pytest.mark.parametrize("name", cases.NAMES)
@given(data=st.data())
def test_vmap_matches_a_loop(name, data):
    a, kwargs = cases.draw_call(data, name, cases.dtypes_for(name))
    where = data.draw(st.integers(0, a.ndim), label="batch axis")
    batch = np.stack([a, (a * 0.5 + 0.25).astype(a.dtype), -a], axis=where)
    ours = getattr(tfft, name)
    got = tg.vmap(lambda x: ours(x, **kwargs), in_axes=where)(batch)
    want = np.stack([ours(np.take(batch, k, axis=where), **kwargs) for k in range(3)])
    assert_bitwise_equal(got, want, f"{name}({kwargs}) under vmap(in_axes={where})")


@pytest.mark.parametrize(
    ("name", "shape", "kwargs"),
    [
        ("fftn", (3, 4), dict(axes=(0, 0))),
        ("fftn", (3, 4), dict(axes=(1, 0, 1), s=(5, 2, 3))),
        ("ifftn", (3, 4), dict(axes=(-1, 1), s=(6, None))),
        ("rfftn", (3, 4), dict(axes=(1, 1))),
        ("rfftn", (3, 6), dict(axes=(0, 1, 0), s=(4, 5, 2), norm="ortho")),
        ("irfftn", (4, 3), dict(axes=(0, 0))),
        ("irfftn", (4, 3), dict(axes=(1, 0, 1), s=(3, 4, 5), norm="forward")),
        ("fft2", (3, 4), dict(axes=(1, 1))),
    ],
)
def test_repeated_axes_follow_numpys_loop(name, shape, kwargs):
    # NumPy accepts repeated axes and transforms along each entry in turn; so do we
    for dtype in (np.float64, np.complex128):
        if name.startswith("rfft") and dtype == np.complex128:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # None in s
            _check_bits(name, cases.values(3, shape, dtype), kwargs)


def test_s_with_minus_one_and_none_as_numpy():
    a = cases.values(0, (3, 5), np.complex128)
    _check_bits("fftn", a, dict(s=(-1, 3), axes=(0, 1)))
    _check_bits("irfftn", a, dict(s=(2, -1), axes=(0, 1)))  # -1 is the input's length
    for name in ("fftn", "irfftn"):
        with pytest.warns(DeprecationWarning, match="containing `None`"):
            ours = getattr(tfft, name)(a, s=(None, 4), axes=(0, 1))
        with pytest.warns(DeprecationWarning):
            expected = getattr(np.fft, name)(a, s=(None, 4), axes=(0, 1))
        assert_bitwise_equal(ours, expected, name)


def test_s_without_axes_warns_as_numpy():
    a = cases.values(1, (2, 3, 4), np.float64)
    with pytest.warns(DeprecationWarning, match="`axes` should not be `None`"):
        ours = tfft.rfftn(a, s=(2, 5))
    with pytest.warns(DeprecationWarning):
        expected = np.fft.rfftn(a, s=(2, 5))
    assert_bitwise_equal(ours, expected)


@pytest.mark.parametrize("name", cases.NAMES)
def test_float16_and_empty_batches(name):
    # float16 runs in single precision; irfft keeps float16 as NumPy's result_type does
    shape = (2, 4) if name in cases.N_D else (4,)
    _check_bits(name, cases.values(2, shape, np.float16), {})
    _check_bits(name, np.zeros((0, 3, 4)), {} if name in cases.ONE_D else dict(axes=(1, 2)))


def test_empty_axes_transform_nothing():
    # NumPy's fftn over no axes returns its input unchanged (real stays real)
    a = cases.values(0, (2, 3), np.float32)
    for name in ("fftn", "ifftn"):
        _check_bits(name, a, dict(axes=()))


def test_lists_and_fortran_order():
    assert_bitwise_equal(tfft.fft([1.0, 2.0, 0.5]), np.fft.fft([1.0, 2.0, 0.5]))
    a = np.asfortranarray(cases.values(4, (3, 4, 5), np.float64))
    for name in ("rfftn", "fftn", "irfft"):
        _check_bits(name, a, {})


def test_generated_source_calls_numpys_functions():
    import tracegrad.codegen as cg

    def f(x):
        return tfft.irfft(tfft.rfft2(x, norm="ortho") * 2.0, n=6, axis=0)

    graph = tg.make_graph(f)(np.ones((4, 6)))
    text = cg.source(graph)
    assert "np.fft.rfftn(a, s=(4, 6), axes=(0, 1), norm='ortho')" in text
    assert "np.fft.irfft(" in text and "n=6, axis=0, norm='backward')" in text


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@given(data=st.data())
def test_shifts_match_numpy(name, data):
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    axes = data.draw(
        st.one_of(
            st.none(),
            st.integers(-len(shape), len(shape) - 1),
            st.lists(st.integers(0, len(shape) - 1), max_size=3).map(tuple),
        )
    )
    dtype = data.draw(st.sampled_from(cases.FLOATS + cases.COMPLEX))
    _check_bits(name, cases.values(data.draw(st.integers(0, 99)), shape, dtype), dict(axes=axes))


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_frequencies_are_numpys(name):
    for n, d in [(1, 1.0), (4, 0.1), (7, 2), (8, np.float32(0.5))]:
        assert_bitwise_equal(getattr(tfft, name)(n, d), getattr(np.fft, name)(n, d))
        # a traced spacing: the same bits, and a derivative
        got = tg.jit(lambda d, n=n: getattr(tfft, name)(n, d))(np.float64(d))
        assert_bitwise_equal(got, getattr(np.fft, name)(n, np.float64(d)))
    freq = getattr(np.fft, name)(6, 1.0)
    g = tg.grad(lambda d: tnp.sum(getattr(tfft, name)(6, d)))(0.5)
    np.testing.assert_allclose(g, -np.sum(freq) / 0.25)
    assert getattr(tfft, name)(5, device="cpu").shape == getattr(np.fft, name)(5).shape
