"""Bad arguments to tracegrad.numpy.fft: NumPy's error type, a message naming the function
and the argument, outside a trace and on tracers alike.

Each row is one bad call; the test runs it on `np.fft` first to read NumPy's error type, then
on ours: the error must be an instance of NumPy's (an out-of-range axis is NumPy's AxisError,
an IndexError as NumPy's plain one is) and say which function and which argument. NumPy
accepts repeated axes (it transforms along each entry in turn), so they are no error here
either (tests/fft/test_forward.py). The primitives' shape rules refuse params the public
functions never produce.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy.fft as tfft
from tracegrad.core import bind
from tracegrad.primitives import fft as prim

X = np.ones((3, 4))
Z = X + 1j

# (call on a namespace F and an input, its input, the function's name, words of the message)
ROWS = [
    (lambda F, a: F.fft(a, norm="bad"), X, "fft", ["norm='bad'", "ortho"]),
    (lambda F, a: F.ifftn(a, norm="Ortho"), Z, "ifftn", ["norm='Ortho'"]),
    (lambda F, a: F.hfft(a, norm="unitary"), Z, "hfft", ["norm='unitary'"]),
    (lambda F, a: F.ihfft(a, norm=1), X, "ihfft", ["norm=1"]),
    (lambda F, a: F.rfft2(a, norm=""), X, "rfft2", ["norm=''"]),
    (lambda F, a: F.fft(a, n=0), X, "fft", ["(0)", "by n"]),
    (lambda F, a: F.irfft(a, n=-2), Z, "irfft", ["(-2)", "by n"]),
    (lambda F, a: F.irfft(a[:, :1]), Z, "irfft", ["(0)", "by n"]),  # default n = 2 * (1 - 1)
    (lambda F, a: F.hfft(a, n=0), Z, "hfft", ["(0)", "by n"]),
    (lambda F, a: F.rfftn(a, s=(0, 2), axes=(0, 1)), X, "rfftn", ["(0)", "by s"]),
    (lambda F, a: F.fft(a, n=2.0), X, "fft", ["n must be an integer"]),
    (lambda F, a: F.fftn(a, s=(2.0, 1), axes=(0, 1)), X, "fftn", ["s entry", "integer"]),
    (lambda F, a: F.fftn(a, s=(2,), axes=(0, 1)), X, "fftn", ["s=(2,)", "axes=(0, 1)"]),
    (lambda F, a: F.irfft2(a, s=(1, 2, 3)), Z, "irfft2", ["s=(1, 2, 3)", "different lengths"]),
    (lambda F, a: F.fft(a, axis=2), X, "fft", ["axis 2", "dimension 2"]),
    (lambda F, a: F.rfft(a, axis=-3), X, "rfft", ["axis -3"]),
    (lambda F, a: F.fft(a[0, 0]), X, "fft", ["axis -1", "dimension 0"]),
    (lambda F, a: F.fftn(a, axes=(0, 5)), X, "fftn", ["axes entry 5"]),
    (lambda F, a: F.ifft2(a[0]), Z, "ifft2", ["axes entry -2"]),
    (lambda F, a: F.fft(a, axis=1.0), X, "fft", ["axis must be an integer"]),
    (lambda F, a: F.fftn(a, axes=0), X, "fftn", ["axes must be a sequence"]),
    (lambda F, a: F.rfft(a), Z, "rfft", ["must be real", "complex128"]),
    (lambda F, a: F.rfftn(a), Z, "rfftn", ["must be real"]),
    (lambda F, a: F.ihfft(a), Z, "ihfft", ["must be real"]),
    (lambda F, a: F.rfftn(a, axes=()), X, "rfftn", ["axes is empty"]),
    (lambda F, a: F.irfftn(a, axes=()), Z, "irfftn", ["axes is empty"]),
    (lambda F, a: F.fftshift(a, axes=3), X, "fftshift", ["axes 3"]),
]


def _numpy_error(call, a) -> type:
    with pytest.raises(Exception) as info:
        call(np.fft, a)
    return info.type


@pytest.mark.parametrize(("call", "a", "name", "words"), ROWS)
def test_bad_arguments_raise_numpys_error_type(call, a, name, words):
    expected = _numpy_error(call, a)
    with pytest.raises(expected) as info:
        call(tfft, a)
    message = str(info.value)
    assert f"tracegrad.numpy.fft.{name}:" in message
    for word in words:
        assert word in message, (word, message)
    # the same on a traced input: nothing is checked later than outside a trace
    with pytest.raises(expected):
        tg.make_graph(lambda v: call(tfft, v))(a)


def test_out_is_refused_with_a_clear_error():
    for call in (
        lambda: tfft.fft(X, out=np.empty((3, 4), complex)),
        lambda: tfft.rfftn(X, None, None, None, np.empty((3, 3), complex)),  # out positional
        lambda: tfft.ihfft(X, out=np.empty((3, 3), complex)),
    ):
        with pytest.raises(TypeError, match=r"out= would write a traced result"):
            call()


def test_frequency_arguments():
    for name in ("fftfreq", "rfftfreq"):
        with pytest.raises(ValueError, match=f"{name}: n should be an integer"):
            getattr(tfft, name)(4.0)
        with pytest.raises(ValueError, match='Only "cpu" is allowed'):
            getattr(tfft, name)(4, device="gpu")


def test_primitives_refuse_unnormalized_params():
    # the public functions normalize; a direct bind with NumPy-style params is refused by name
    x = np.ones((3, 4))
    bad = [
        (prim.fft_p, x, dict(axes=(0, 0), s=(3, 3), norm="backward", inverse=False), "distinct"),
        (prim.fft_p, x, dict(axes=(-1,), s=(4,), norm="backward", inverse=False), "non-negative"),
        (prim.fft_p, x, dict(axes=(1,), s=(0,), norm="backward", inverse=False), "lengths >= 1"),
        (prim.rfft_p, x, dict(axes=(1,), s=(4,), norm=None), "norm=None"),
        (prim.irfft_p, x, dict(axes=(0, 1), s=(4,), norm="ortho"), "as many"),
    ]
    for p, arg, params, words in bad:
        with pytest.raises(ValueError, match=words):
            tg.make_graph(lambda v, p=p, params=params: bind(p, v, **params))(arg)
    with pytest.raises(TypeError, match="rfft: the input must be real"):
        tg.make_graph(lambda v: bind(prim.rfft_p, v, axes=(1,), s=(4,), norm="forward"))(x + 1j)
