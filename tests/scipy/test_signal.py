"""tracegrad.scipy.signal: SciPy's bits (eager, traced, under jit; every mode, method and
dtype), derivatives against jax.scipy.signal (real and complex) and finite differences (second
order), vmap against a loop, HIPS autograd's convolve against autograd, and the refusals."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest
import scipy.signal as ss

import tracegrad as tg
import tracegrad.scipy.signal as tss
from tracegrad.testing import assert_bitwise_equal, check_grads, run_traced

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
jss = pytest.importorskip("jax.scipy.signal")

RNG = np.random.default_rng(17)
FUNCTIONS = ["convolve", "correlate", "fftconvolve", "convolve2d", "correlate2d"]
MODES = ["full", "same", "valid"]
BIG, SMALL = RNG.standard_normal((5, 6)), RNG.standard_normal((2, 3))  # 'same' even and odd


def _c(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def _bits(name, args, *rest, **kw):
    """SciPy's `name(*args, *rest, **kw)` bit for bit: eagerly, traced and under jit."""
    want = getattr(ss, name)(*args, *rest, **kw)

    def ours(*xs):
        return getattr(tss, name)(*xs, *rest, **kw)

    assert_bitwise_equal(ours(*args), want)
    assert_bitwise_equal(run_traced(ours, args), want)
    assert_bitwise_equal(tg.jit(ours)(*args), want)


# -- values -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("mode", MODES)
def test_values_2d(name, mode):
    _bits(name, (BIG, SMALL), mode)
    _bits(name, (SMALL, BIG), mode)  # 'valid' swaps, 'same' keeps in1's shape


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("method", ["auto", "direct", "fft"])
@pytest.mark.parametrize("mode", MODES)
def test_values_nd_and_methods(name, method, mode):
    _bits(name, (RNG.standard_normal(9), RNG.standard_normal(4)), mode, method)  # np.convolve
    _bits(name, (RNG.standard_normal(3), RNG.standard_normal(8)), mode, method)
    _bits(name, (RNG.standard_normal((4, 5, 3)), RNG.standard_normal((2, 3, 2))), mode, method)
    _bits(name, (RNG.standard_normal((30, 40)), RNG.standard_normal((9, 9))), mode, method)


def test_auto_is_scipys_choice():
    """method='auto' is passed through: SciPy chooses per call (fft for this large case)."""
    a, b = RNG.standard_normal((60, 70)), RNG.standard_normal((15, 15))
    assert ss.choose_conv_method(a, b) == "fft"
    _bits("convolve", (a, b))
    _bits("correlate", (a, b), "same")


@pytest.mark.parametrize("name", FUNCTIONS)
def test_values_across_dtypes(name):
    for d1, d2 in [
        (np.float32, np.float32),
        (np.float32, np.float64),
        (np.complex128, np.float64),
        (np.complex64, np.complex64),
        (np.int64, np.int64),
        (np.int32, np.float32),
    ]:
        a, b = np.round(BIG * 4).astype(d1), np.round(SMALL * 4).astype(d2)
        _bits(name, (a, b))
        _bits(name, (b, a), "valid")


@pytest.mark.parametrize("name", ["convolve", "correlate", "fftconvolve"])
def test_zero_dimensional(name):
    _bits(name, (np.array(2.5), np.array(-3.0)))
    got = tg.grad(lambda a, b: getattr(tss, name)(a, b), argnums=(0, 1))(np.array(2.0), 3.0)
    np.testing.assert_array_equal(got, (3.0, 2.0))


@pytest.mark.parametrize("mode", MODES)
def test_fftconvolve_axes(mode):
    a, b = RNG.standard_normal((3, 1, 6)), RNG.standard_normal((1, 4, 3))
    for axes in ([2], -1, [0, 2], [2, 0], None):
        if mode == "valid" and axes is None:
            continue  # SciPy refuses: neither input is the larger in every axis
        _bits("fftconvolve", (a, b), mode, axes)
        check_grads(lambda a, b, axes=axes: tss.fftconvolve(a, b, mode, axes), (a, b), order=2)


@pytest.mark.parametrize("boundary", ["fill", "wrap", "symm"])
@pytest.mark.parametrize("name", ["convolve2d", "correlate2d"])
def test_boundaries(name, boundary):
    """Every boundary and fill value: SciPy's bits, and derivatives (JAX has only 'fill' with
    0) against finite differences, second order, complex too, the kernel larger than the
    input as well (the extension then wraps or reflects more than once)."""
    for mode in MODES:
        _bits(name, (BIG, SMALL), mode, boundary, 1.5)
        _bits(name, (SMALL, BIG), mode, boundary, -2)
    f = getattr(tss, name)
    for mode in ("full", "same"):
        for x, y in [(BIG[:4, :5], SMALL), (SMALL, BIG[:3, :4])]:
            check_grads(lambda x, y, m=mode: f(x, y, m, boundary, 1.5), (x, y), order=2)
        check_grads(lambda x, y, m=mode: f(x, y, m, boundary), (_c(3, 4), _c(2, 2)), order=1)


def test_boundary_closed_form():
    """'wrap' in 'same' mode with an odd kernel is a circular convolution: its gradient in the
    image is the circular correlation of the cotangent, by FFTs."""
    img, k, w = (
        RNG.standard_normal((6, 7)),
        RNG.standard_normal((3, 3)),
        RNG.standard_normal((6, 7)),
    )
    g = tg.grad(lambda a: (tss.convolve2d(a, k, "same", "wrap") * w).sum())(img)
    kernel = np.zeros((6, 7))
    kernel[np.ix_([5, 0, 1], [6, 0, 1])] = k  # k centred at the origin, wrapped
    want = np.fft.ifft2(np.fft.fft2(w) * np.conj(np.fft.fft2(kernel))).real
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)


# -- derivatives -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("complex_", [False, True])
def test_grads_against_jax(name, mode, complex_):
    """Reverse mode against JAX, forward mode its adjoint; complex values with JAX's convention
    (the vjp is the transpose, conjugating only where an operand enters conjugated)."""
    for x, y in [(BIG, SMALL), (SMALL, BIG)]:
        if complex_:
            x, y = x + 1j * x[::-1], y - 0.5j * y[:, ::-1]
        w = RNG.standard_normal(getattr(ss, name)(x, y, mode).shape)

        def loss(m, x, y, w=w):
            # JAX's 'direct' (lax's convolution) compiles in a tenth of the time of its 'fft'
            kw = {"method": "direct"} if m is jss and name in ("convolve", "correlate") else {}
            return (getattr(m, name)(x, y, mode, **kw) * w).real.sum()

        got = tg.grad(lambda x, y: loss(tss, x, y), argnums=(0, 1))(x, y)
        want = jax.grad(lambda x, y: loss(jss, x, y), argnums=(0, 1))(x, y)
        for g, v in zip(got, want):
            np.testing.assert_allclose(g, v, rtol=1e-12, atol=1e-12)
        # forward mode: the adjoint of that vjp, <w, J t> == <J^T w, t> under Re(sum(u * v))
        t = (np.ones_like(x), np.cos(np.arange(y.size)).reshape(y.shape).astype(y.dtype))
        _, jt = tg.jvp(lambda x, y: getattr(tss, name)(x, y, mode), (x, y), t)
        lhs = (jt * w).real.sum()
        np.testing.assert_allclose(lhs, sum((g * u).real.sum() for g, u in zip(got, t)))


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("mode", MODES)
def test_second_derivatives(name, mode):
    for x, y in [(BIG[:4, :4], SMALL), (SMALL, BIG[:4, :4])]:
        check_grads(lambda x, y: getattr(tss, name)(x, y, mode), (x, y), order=2)
    check_grads(lambda x, y: getattr(tss, name)(x, y, mode), (_c(4, 3), _c(2, 2)), order=2)


def test_hessian_closed_form():
    """The Hessian of |T a|^2 with T the matrix of `a -> convolve(a, b, 'same')` (and of the
    same map through correlate with the flipped kernel) is 2 T^T T."""
    a, b = RNG.standard_normal(7), RNG.standard_normal(4)
    t = np.stack([ss.convolve(e, b, "same") for e in np.eye(7)], axis=1)
    for f in (
        lambda a: (tss.convolve(a, b, "same") ** 2).sum(),
        lambda a: (tss.correlate(a, b[::-1], "same", "fft") ** 2).sum(),
    ):
        np.testing.assert_allclose(tg.hessian(f)(a), 2 * t.T @ t, rtol=1e-12, atol=1e-12)


def test_integer_operand_has_no_derivative():
    """An integer kernel: the float operand's gradient of the sum of the full output is the
    kernel's sum at every entry, in the float operand's dtype."""
    k = np.array([1, -2, 4])
    x = RNG.standard_normal(8).astype(np.float32)
    for name in ("convolve", "correlate", "fftconvolve"):
        g = tg.grad(lambda x, name=name: getattr(tss, name)(x, k).sum())(x)
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, np.full(8, 3.0), rtol=1e-6)


def test_rules_are_convolutions():
    """The backward pass of convolve is convolve calls (no loop, no matrix of windows)."""
    f = tg.value_and_grad(lambda a, b: tss.convolve(a, b, "same").sum(), (0, 1))
    graph = tg.make_graph(f)(BIG, SMALL)
    names = [node.prim.name for node in graph.nodes]
    assert names.count("scipy.signal.convolve") == 3  # forward, and one per cotangent


# -- vmap -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("mode", MODES)
def test_vmap_matches_loop(name, mode):
    xs, ys = np.stack([BIG, BIG * 0.5 + 1, -BIG]), np.stack([SMALL, SMALL - 2, SMALL * 3])
    f = getattr(tss, name)
    for axes, args in [((0, None), (xs, SMALL)), ((None, 0), (BIG, ys)), ((0, 0), (xs, ys))]:
        got = tg.vmap(lambda x, y: f(x, y, mode), in_axes=axes)(*args)
        pick = [(lambda v, i, ax=ax: v if ax is None else v[i]) for ax in axes]
        want = np.stack(
            [getattr(ss, name)(pick[0](args[0], i), pick[1](args[1], i), mode) for i in range(3)]
        )
        assert_bitwise_equal(got, want)
    # the batch axis elsewhere, and under jit
    got = tg.jit(tg.vmap(lambda x: f(x, SMALL, mode), in_axes=2))(np.moveaxis(xs, 0, 2))
    assert_bitwise_equal(got, np.stack([getattr(ss, name)(x, SMALL, mode) for x in xs]))


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", MODES)
def test_vmap_by_fft_matches_loop(name, mode):
    """Where the method is (or 'auto' picks) 'fft', the stack is one fftconvolve: the bits of a
    loop, complex and integer values too."""
    f, g = getattr(tss, name), getattr(ss, name)
    cases = [
        ("fft", RNG.standard_normal((3, 12, 7)), RNG.standard_normal((4, 3))),
        ("auto", RNG.standard_normal((2, 60, 70)), RNG.standard_normal((15, 15))),
        ("fft", _c(3, 9), _c(4)),
        ("fft", RNG.integers(-9, 9, (3, 11)), RNG.integers(-9, 9, 4)),
    ]
    for method, xs, k in cases:
        ks = np.stack([k, k * 2, -k][: len(xs)])
        for axes, args in [((0, None), (xs, k)), ((None, 0), (xs[0], ks)), ((0, 0), (xs, ks))]:
            got = tg.vmap(lambda x, y, m=method: f(x, y, mode, m), in_axes=axes)(*args)
            pick = [(lambda v, i, ax=ax: v if ax is None else v[i]) for ax in axes]
            want = [g(pick[0](args[0], i), pick[1](args[1], i), mode, method) for i in range(2)]
            assert_bitwise_equal(got[:2], np.stack(want))


def test_per_example_gradients():
    xs = RNG.standard_normal((4, 9))
    k = RNG.standard_normal(3)

    def loss(x, k):
        return (tss.correlate(x, k, "valid") ** 2).sum()

    got = tg.vmap(tg.grad(loss, argnums=1), in_axes=(0, None))(xs, k)
    want = np.stack([tg.grad(loss, argnums=1)(x, k) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-13)


# -- HIPS autograd's convolve -----------------------------------------------------------------


AUTOGRAD_CASES = [
    ((5, 6), (2, 3), None, ((), ())),
    ((2, 3), (5, 6), None, ((), ())),
    ((3, 2, 7, 7), (2, 3, 3, 3), ([2, 3], [2, 3]), ([1], [0])),  # a conv layer
    ((3, 5), (4, 2), ([1], [0]), ((), ())),
    ((3, 4, 5), (2, 3), ([1, 2], [0, 1]), ((), ())),
]


@pytest.mark.parametrize("case", AUTOGRAD_CASES, ids=str)
@pytest.mark.parametrize("mode", MODES)
def test_autograd_convolve_against_autograd(case, mode):
    autograd = pytest.importorskip("autograd")
    asig = pytest.importorskip("autograd.scipy.signal")
    sa, sb, axes, dot_axes = case
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    kw = dict(axes=axes, dot_axes=dot_axes, mode=mode)
    want = asig.convolve(a, b, **kw)
    got = tss.autograd_convolve(a, b, **kw)
    assert got.shape == want.shape
    # the same sums as autograd's einsum over its strided view, in another order
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)
    w = RNG.standard_normal(want.shape)
    for i in (0, 1):
        g = tg.grad(lambda a, b: (tss.autograd_convolve(a, b, **kw) * w).sum(), argnums=i)(a, b)
        v = autograd.grad(lambda a, b: (asig.convolve(a, b, **kw) * w).sum(), i)(a, b)
        np.testing.assert_allclose(g, v, rtol=1e-12, atol=1e-13)


def test_autograd_convolve_is_scipys_convolution():
    np.testing.assert_allclose(
        tss.autograd_convolve(BIG, SMALL, mode="same"), ss.convolve(BIG, SMALL, "same"), atol=1e-14
    )
    check_grads(lambda a, b: tss.autograd_convolve(a, b, mode="valid"), (BIG, SMALL), order=2)


# -- refusals -------------------------------------------------------------------------------------


def _raises(match, f, *args, eager=True):
    """`f(*args)` raises `match`: under jit (tracegrad's shape rule, while tracing) and, with
    `eager`, eagerly (SciPy's own check; the messages agree)."""
    with pytest.raises(ValueError, match=match):
        tg.jit(f)(*args)
    if eager:
        with pytest.raises(ValueError, match=match):
            f(*args)


def test_bad_input():
    tall, wide = np.ones((5, 2)), np.ones((2, 5))
    for name in ("convolve", "correlate", "fftconvolve"):
        f = getattr(tss, name)
        _raises("same dimensionality", f, BIG, np.ones(3))
        _raises("at least as large as the other", lambda a, b, f=f: f(a, b, "valid"), tall, wide)
        _raises("(?i)acceptable mode flags", lambda a, b, f=f: f(a, b, "middle"), BIG, SMALL)
        _raises("cannot be empty", f, np.ones(0), np.ones(3), eager=False)
    for name in ("convolve", "correlate"):
        f = getattr(tss, name)
        _raises("(?i)acceptable method flags", lambda a, b, f=f: f(a, b, method="x"), BIG, SMALL)
    for name in ("convolve2d", "correlate2d"):
        f = getattr(tss, name)
        _raises("2-D arrays", f, np.ones(3), np.ones(2))
        _raises("at least as large as the other", lambda a, b, f=f: f(a, b, "valid"), tall, wide)
        with pytest.raises(ValueError, match="boundary flags"):
            tg.jit(lambda a, b, f=f: f(a, b, boundary="reflect"))(BIG, SMALL)
        with pytest.raises(ValueError, match="fillvalue must be a scalar"):
            f(BIG, SMALL, fillvalue=[1, 2])
    with pytest.raises(ValueError, match="axes cannot be empty"):
        tss.fftconvolve(BIG, SMALL, axes=[])
    with pytest.raises(ValueError, match="distinct axes"):
        tss.fftconvolve(BIG, SMALL, axes=[1, -1])
    _raises("incompatible shapes", lambda a, b: tss.fftconvolve(a, b, axes=[1]), BIG, SMALL[:, :1])
    with pytest.raises(ValueError, match="undefined"):
        tss.autograd_convolve(BIG, SMALL, mode="middle")
    with pytest.raises(ValueError, match="larger than the other"):
        tss.autograd_convolve(tall, wide, mode="valid")
    with pytest.raises(ValueError, match="pair axes"):
        tss.autograd_convolve(BIG, SMALL, axes=([0], [0, 1]))


def test_the_code_blocks_of_the_docs_run():
    page = pathlib.Path(__file__).resolve().parents[2] / "docs" / "scipy_signal.md"
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(page), "exec"), {})  # the blocks assert their results
