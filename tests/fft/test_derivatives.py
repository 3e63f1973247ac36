"""Derivatives of tracegrad.numpy.fft: finite differences to second order, JAX, closed forms.

Every transform is checked on hypothesis-drawn calls (shapes, axes, n or s, all three norms,
float32/float64 and complex64/complex128 where NumPy takes complex): `check_grads` to order 2
in reverse mode and order 1 in forward mode (the vjp rules are written with the transforms
themselves, so a second derivative runs the rules of the rules), and JAX's grad, jvp and
vmap-of-grad on the same call (JAX's complex convention is ours). JAX compiles each new
shape, so its test draws fewer examples; the finite-difference test covers the draw space.
Then closed forms: the spectral loss's handwritten adjoint, Parseval, the zero derivative of
the imaginary parts irfft ignores, and the shifts (rolls: the transpose is the opposite one).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracegrad as tg
import tracegrad.numpy as tnp
import tracegrad.numpy.fft as tfft
from tests.fft import cases
from tracegrad.testing import check_grads

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)  # float64, as NumPy (for the whole process)

# the lowest XLA optimization level compiles in about half the time (tests/complex does too)
_FAST = {"xla_backend_optimization_level": 0}


@pytest.mark.parametrize("name", cases.NAMES)
@given(data=st.data())
def test_second_order_against_finite_differences(name, data):
    a, kwargs = cases.draw_call(data, name, cases.dtypes_for(name))

    def f(x):
        return getattr(tfft, name)(x, **kwargs)

    # reverse mode to order 2 runs the vjp rules' own vjp rules; the jvp rules are the
    # transforms themselves (linear), so first order covers them
    check_grads(f, (a,), order=2, modes=("rev",))
    check_grads(f, (a,), order=1, modes=("fwd",))


def _tolerance(*arrays) -> float:
    single = any(np.asarray(a).dtype in (np.float32, np.complex64) for a in arrays)
    return 2e-4 if single else 1e-10


def _close(got, want, tol, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.dtype, want.dtype)
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale, err_msg=what)


@pytest.mark.parametrize("name", cases.NAMES)
@settings(max_examples=3)
@given(data=st.data())
def test_grad_jvp_and_vmap_against_jax(name, data):
    a, kwargs = cases.draw_call(data, name, cases.dtypes_for(name))
    ours, theirs = getattr(tfft, name), getattr(jnp.fft, name)
    out = ours(a, **kwargs)
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    w = cases.cotangent_like(out, seed)
    t = cases.values(seed + 1, a.shape, a.dtype)
    batch = np.stack([a, t])

    def loss(xp, fn):
        return lambda x: xp.real(xp.sum(fn(x, **kwargs) * w))

    @jax.jit
    def jax_numbers(x, t, batch):
        # one program (one compilation): the batch's first member is `a` itself, so the
        # vmapped gradient holds the plain one
        _, tangent = jax.jvp(lambda x: theirs(x, **kwargs), (x,), (t,))
        return tangent, jax.vmap(jax.grad(loss(jnp, theirs)))(batch)

    tangent, grads = jax_numbers.lower(a, t, batch).compile(_FAST)(a, t, batch)
    want = (grads[0], tangent, grads)
    got = (
        tg.grad(loss(tnp, ours))(a),
        tg.jvp(lambda x: ours(x, **kwargs), (a,), (t,))[1],
        tg.vmap(tg.grad(loss(tnp, ours)))(batch),
    )
    tol = _tolerance(a)
    for what, g, j in zip(("grad", "jvp", "vmap of grad"), got, want):
        _close(g, j, tol, f"{name}({a.dtype.name}{list(a.shape)}, {kwargs}): {what}")


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("fftn", dict(axes=(1, 0, 1), s=(5, 2, 3))),
        ("rfftn", dict(axes=(0, 1, 0), s=(4, 5, 2), norm="ortho")),
        ("irfftn", dict(axes=(1, 0, 1), s=(3, 4, 5), norm="forward")),
    ],
)
def test_repeated_axes_differentiate(name, kwargs):
    for dtype in (np.float64, np.complex128):
        if name == "rfftn" and dtype == np.complex128:
            continue
        a = cases.values(5, (3, 4), dtype)
        check_grads(lambda x: getattr(tfft, name)(x, **kwargs), (a,), order=2)


def _spectral_adjoint(x, w):
    """The handwritten gradient of sum(|rfft(x)|**2 * w): 2 n irfft(w X h), h halving the
    interior bins (irfft counts each twice)."""
    n = x.shape[-1]
    spectrum = np.fft.rfft(x)
    h = np.full(spectrum.shape[-1], 0.5)
    h[0] = 1.0
    if n % 2 == 0:
        h[-1] = 1.0
    return 2 * n * np.fft.irfft(w * spectrum * h, n)


@pytest.mark.parametrize("n", [1, 2, 7, 16, 33])
def test_spectral_loss_gradient_is_the_handwritten_adjoint(n):
    x = cases.values(n, (3, n), np.float64)
    w = np.linspace(0.5, 2.0, n // 2 + 1)

    def loss(x):
        return np.sum(np.abs(tfft.rfft(x)) ** 2 * w)

    expected = _spectral_adjoint(x, w)
    np.testing.assert_allclose(tg.grad(loss)(x), expected, rtol=1e-12, atol=1e-12 * n)
    np.testing.assert_allclose(tg.jit(tg.grad(loss))(x), expected, rtol=1e-12, atol=1e-12 * n)


@pytest.mark.parametrize("norm", ["ortho", None, "forward"])
def test_parseval_gradients(norm):
    # with norm="ortho" the transform is unitary: sum |fft(z)|^2 = sum |z|^2, gradient 2 conj(z)
    # in JAX's convention; the other norms scale it by n or 1/n
    z = cases.values(0, (4, 6), np.complex128)
    scale = {"ortho": 1.0, None: 24.0, "forward": 1 / 24}[norm]
    g = tg.grad(lambda z: tnp.sum(tnp.abs(tfft.fft2(z, norm=norm)) ** 2))(z)
    np.testing.assert_allclose(g, 2 * scale * np.conj(z), rtol=1e-12)
    x = z.real
    g = tg.grad(lambda x: tnp.sum(tfft.irfft(tfft.rfft(x, norm=norm), 6, norm=norm) * x))(x)
    np.testing.assert_allclose(g, 2 * x, rtol=1e-12, atol=1e-12)


def test_ignored_imaginary_parts_get_zero_derivative():
    # irfft reads only the real part of the zero-frequency bin (and of the Nyquist bin for an
    # even n): the imaginary parts there have derivative zero, as JAX says
    y = cases.values(1, (5,), np.complex128)
    g = tg.grad(lambda y: tnp.sum(tfft.irfft(y, 8) * np.arange(8.0)))(y)
    assert g[0].imag == 0 and g[4].imag == 0
    assert np.all(g[1:4].imag != 0)
    g_odd = tg.grad(lambda y: tnp.sum(tfft.irfft(y, 9) * np.arange(9.0)))(y)
    assert g_odd[0].imag == 0 and g_odd[4].imag != 0


def test_cotangent_dtypes_follow_the_inputs():
    # float32 stays single precision through the backward pass; float16 too, as NumPy computes
    # its transforms in float32 and the cotangent is cast back
    for dtype in (np.float16, np.float32, np.complex64):
        a = cases.values(2, (6,), dtype)
        for name in ("fft", "ifft", "irfft", "hfft") + (
            () if dtype == np.complex64 else ("rfft", "ihfft")
        ):
            g = tg.grad(lambda x, name=name: tnp.real(tnp.sum(getattr(tfft, name)(x))))(a)
            assert g.dtype == a.dtype, (name, dtype, g.dtype)
    ints = np.arange(6)
    g = tg.grad(lambda x, y: tnp.sum(tfft.rfft(x + y).real), argnums=1)(ints, 1.0)
    assert g == 6.0  # only the DC bin's real part: the sum of the six ones


def test_grad_through_numpys_own_names():
    # np.fft.<name> on tracers reaches tracegrad.numpy.fft (the dispatch tables)
    x = cases.values(0, (8,), np.float64)
    g = tg.grad(lambda x: np.sum(np.abs(np.fft.fft(x)) ** 2))(x)
    np.testing.assert_allclose(g, 2 * 8 * x, rtol=1e-12)


@pytest.mark.parametrize("name", ["fftshift", "ifftshift"])
@given(data=st.data())
def test_shifts_differentiate_as_rolls(name, data):
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3), label="shape"))
    axes = data.draw(
        st.one_of(st.none(), st.lists(st.integers(0, len(shape) - 1), max_size=3).map(tuple)),
        label="axes",
    )
    dtype = data.draw(st.sampled_from((np.float64, np.complex128)), label="dtype")
    a = cases.values(data.draw(st.integers(0, 99), label="seed"), shape, dtype)
    ours = getattr(tfft, name)
    check_grads(lambda x: ours(x, axes=axes), (a,), order=2)
    # a roll's transpose is the opposite roll: the other shift of the weights, exactly
    w = cases.values(7, shape, dtype)
    other = np.fft.ifftshift if name == "fftshift" else np.fft.fftshift
    got = tg.grad(lambda x: tnp.real(tnp.sum(ours(x, axes=axes) * w)))(a)
    np.testing.assert_array_equal(got, other(w, axes=axes))
