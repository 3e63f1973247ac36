"""Complex numbers in the functional API: JAX's convention, JAX's numbers, JAX's errors.

`grad` of a real `f` of complex `z` is df/dx - i df/dy (the conjugate of PyTorch's `.grad`;
HIPS autograd's too); `holomorphic=True` gives f'(z); a real input through complex
intermediates gets the real part of its complex cotangent. Each case is checked against JAX
(jax.grad / jax.vjp / jax.jvp / jacfwd / jacrev / hessian on the same function) and, for the
real -> complex -> real programs, against finite differences. Every error of the complex API is
JAX's, word for word (with `tracegrad.vjp` / `tracegrad.jvp` for `jax.vjp` / `jax.jvp`), read
here beside JAX's own.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.testing import check_grads

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)  # float64, as NumPy (for the whole process)

Z = np.array([0.3 + 0.7j, -1.2 + 0.4j, 0.8 - 0.5j])
X = np.array([1.0, -2.0, 3.0])


def _jit(transform, f, **kw):
    """A JAX transform of `f`, jitted (one XLA compilation beats op-by-op dispatch)."""
    return jax.jit(transform(f, **kw))


def _close(ours, theirs, rtol=1e-12, atol=1e-13):
    theirs = np.asarray(theirs)
    assert np.asarray(ours).dtype == theirs.dtype, (np.asarray(ours).dtype, theirs.dtype)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


@pytest.fixture(autouse=True)
def no_complex_warning():
    """No derivative may drop an imaginary part with a warning: ComplexWarning is an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        yield


# -- the examples ---------------------------------------------------------------------


def test_grad_of_a_real_function_of_complex_is_jax_convention():
    def f(xp):
        return lambda z: xp.real(z * xp.conj(z))

    assert tg.grad(f(np))(1 + 1j) == 2 - 2j
    assert _jit(jax.grad, f(jnp))(1 + 1j) == 2 - 2j
    autograd = pytest.importorskip("autograd")
    anp = pytest.importorskip("autograd.numpy")
    assert autograd.grad(f(anp))(1 + 1j) == 2 - 2j  # HIPS autograd agrees


def test_holomorphic_grad_is_the_complex_derivative():
    assert tg.grad(lambda z: z * z, holomorphic=True)(1 + 1j) == 2 + 2j
    names = ("sin", "exp", "tanh", "sqrt", "log", "arctan", "reciprocal", "square")

    @jax.jit
    def theirs(z):
        return [jax.grad(getattr(jnp, name), holomorphic=True)(z) for name in names]

    for z in (np.complex128(0.3 + 0.7j), np.complex64(0.8 - 0.5j)):
        for name, t in zip(names, theirs(z)):
            _close(tg.grad(getattr(np, name), holomorphic=True)(z), t, 1e-6)


def test_value_and_grad_holomorphic():
    value, g = tg.value_and_grad(lambda z: np.sum(z**2), holomorphic=True)(Z)
    j_value, j_g = _jit(jax.value_and_grad, lambda z: jnp.sum(z**2), holomorphic=True)(Z)
    _close(value, j_value)
    _close(g, j_g)


def test_real_through_complex_and_back():
    """grad of sum |x (1 + i)| is sqrt(2) sign(x) (it was 0 without a word); exp(1j x) and
    astype(complex) too, against JAX and finite differences."""
    g = tg.grad(lambda x: np.sum(np.abs(x * (1 + 1j))))(X)
    np.testing.assert_allclose(g, np.sqrt(2) * np.sign(X), rtol=1e-15)
    assert g.dtype == np.float64
    cases = [
        (lambda xp: lambda x: xp.sum(xp.abs(x * (1 + 1j)))),
        (lambda xp: lambda x: xp.sum(xp.real(xp.exp(1j * x) * (0.3 - 2j)))),
        (lambda xp: lambda x: xp.sum(xp.imag(xp.exp(1j * x) ** 2))),
        (lambda xp: lambda x: xp.sum(xp.abs(x.astype(xp.complex128) * (2 - 1j) + 1j) ** 2)),
        (lambda xp: lambda x: xp.real(xp.sum(x.astype(xp.complex64) * (1 - 1j) * x))),
    ]
    for make in cases:
        ours = tg.grad(make(np))(X)
        _close(ours, _jit(jax.grad, make(jnp))(X), 1e-6)
        check_grads(make(np), (X,), order=2)


def test_complex_sign_has_the_derivative_of_z_over_abs_z():
    """np.sign(z) is z / |z| for complex z: JAX gives it a zero derivative (a wrong number),
    tracegrad that of z / |z| (0 at 0 and at infinities) while keeping NumPy's bits."""
    z = np.array([0.3 - 0.7j, -1.5 + 0.2j, 2j])
    check_grads(lambda z: np.real(np.sign(z) * (1 - 2j)).sum(), (z,), order=2)
    check_grads(lambda x: np.imag(np.sign(x * (2 + 1j) + 0.5j)).sum(), (z.real,), order=2)
    edges = np.array([0j, -0.0 - 0.0j, np.inf + 0j, complex(1, -np.inf), -1 - 0j, 1e300 + 1e300j])
    for f in (np.sign, tg.jit(np.sign)):
        np.testing.assert_array_equal(f(edges).view(np.float64), np.sign(edges).view(np.float64))
        assert (
            np.signbit(f(edges).view(np.float64)).tolist()
            == np.signbit(np.sign(edges).view(np.float64)).tolist()
        )
    g = tg.grad(lambda z: np.real(np.sign(z)).sum())(edges)
    np.testing.assert_array_equal(g[:4], 0)
    assert np.all(np.isfinite(g))
    x = np.array([-2.0, 0.0, 3.0])  # real sign keeps its zero derivative (and converts)
    assert tg.grad(lambda x: float(np.sign(x).sum()) + np.sum(x))(x).tolist() == [1, 1, 1]


def test_complex64_and_mixed_dtypes():
    z = Z.astype(np.complex64)
    g = tg.grad(lambda z: np.sum(np.abs(z) ** 2))(z)
    assert g.dtype == np.complex64
    _close(g, _jit(jax.grad, lambda z: jnp.sum(jnp.abs(z) ** 2))(z), 1e-6, 1e-6)
    x = X.astype(np.float32)
    g = tg.grad(lambda x: np.sum(np.abs(x * z)))(x)  # float32 with complex64 is complex64
    assert g.dtype == np.float32
    _close(g, _jit(jax.grad, lambda x: jnp.sum(jnp.abs(x * z)))(x), 1e-6, 1e-6)


def test_python_complex_tangents_and_cotangents():
    """Python numbers as primals, tangents and seeds keep their imaginary parts."""

    def square(z):
        return z * z

    out, t = tg.jvp(square, (1 + 1j,), (1j,))
    j_out, j_t = jax.jit(lambda: jax.jvp(square, (1 + 1j,), (1j,)))()
    assert (out, t) == (j_out, j_t) == (2j, -2 + 2j)
    _, vjp_fn = tg.vjp(square, 1 + 1j)
    assert vjp_fn(1j) == jax.jit(lambda: jax.vjp(square, 1 + 1j)[1](1j))() == (-2 + 2j,)
    _, jvp_fn = tg.linearize(square, 1 + 1j)
    assert jvp_fn(1j) == -2 + 2j


# -- vjp, jvp, jacobians against JAX ----------------------------------------------------------


def _pairs(xp):
    """(name, function, arguments): complex, non-holomorphic, and mixed real/complex."""
    return [
        ("abs", lambda z: xp.abs(z), (Z,)),
        ("real", lambda z: xp.real(z) * 2.0, (Z,)),
        ("imag", lambda z: xp.imag(z) * 2.0, (Z,)),
        ("conj", lambda z: xp.conj(z) * (1 + 2j), (Z,)),
        ("angle", lambda z: xp.angle(z), (Z,)),
        ("mixed multiply", lambda x, z: x * z, (X, Z)),
        ("mixed divide", lambda x, z: z / (x + 5.0), (X, Z)),
        ("abs of product", lambda x, z: xp.abs(x * z) + xp.sin(z), (X, Z)),
        ("vdot", lambda a, b: xp.vdot(a, b), (Z, Z[::-1] * 1j)),
        ("var", lambda z: xp.var(z), (Z,)),
        ("matmul", lambda a, b: a @ b, (np.outer(Z, X), np.outer(X, Z))),
    ]


@pytest.mark.parametrize("k", range(len(_pairs(np))), ids=[p[0] for p in _pairs(np)])
def test_vjp_and_jvp_match_jax(k):
    name, f, args = _pairs(np)[k]
    _, jf, _ = _pairs(jnp)[k]
    rng = np.random.default_rng(k)

    def like(a):
        a = np.asarray(a)
        v = rng.standard_normal(a.shape)
        if a.dtype.kind == "c":
            v = v + 1j * rng.standard_normal(a.shape)
        return v.astype(a.dtype)

    out, vjp_fn = tg.vjp(f, *args)
    ct, tangents = like(out), tuple(like(a) for a in args)

    @jax.jit
    def theirs(args, ct, tangents):
        j_out, j_vjp_fn = jax.vjp(jf, *args)
        return j_out, j_vjp_fn(ct), jax.jvp(jf, args, tangents)[1]

    j_out, j_bars, j_t = theirs(args, ct, tangents)
    _close(out, j_out)
    for ours, bar in zip(vjp_fn(ct), j_bars):
        _close(ours, bar)
    _close(tg.jvp(f, args, tangents)[1], j_t)


def test_jacobians_match_jax():
    def holo(xp):
        return lambda z: xp.sin(z) * z[::-1] + xp.cumsum(z) ** 2

    for api, j_api in ((tg.jacfwd, jax.jacfwd), (tg.jacrev, jax.jacrev)):
        _close(api(holo(np), holomorphic=True)(Z), _jit(j_api, holo(jnp), holomorphic=True)(Z))

    def loss(xp):
        return lambda z: xp.sum(xp.abs(xp.sin(z)) ** 2)

    _close(tg.hessian(lambda z: np.sum(z**3), holomorphic=True)(Z), 6 * np.diag(Z))
    _close(
        tg.hessian(lambda z: np.sum(np.sin(z) * z), holomorphic=True)(Z),
        _jit(jax.hessian, lambda z: jnp.sum(jnp.sin(z) * z), holomorphic=True)(Z),
    )
    _close(tg.jacrev(loss(np))(Z), _jit(jax.jacrev, loss(jnp))(Z))  # complex input, real output
    _close(tg.grad(loss(np))(Z), _jit(jax.grad, loss(jnp))(Z))
    _close(tg.jacfwd(_exp_i(np))(X), _jit(jax.jacfwd, _exp_i(jnp))(X))  # real in, complex out
    _close(tg.hessian(_real_loss(np))(X), _jit(jax.hessian, _real_loss(jnp))(X))


def _exp_i(xp):
    return lambda x: xp.exp(1j * x) * x


def _real_loss(xp):
    return lambda x: xp.sum(xp.abs(xp.exp(1j * x) * x + 1j) ** 2)


# -- errors: JAX's, word for word -------------------------------------------------------------


def _jax_message(call) -> str:
    with pytest.raises(TypeError) as info:
        call()
    return str(info.value).replace("jax.vjp", "tracegrad.vjp").replace("jax.jvp", "tracegrad.jvp")


def _square(xp):
    return lambda z: z * z


def _sum_square(xp):
    return lambda z: xp.sum(z * z)


def _real(xp):
    return lambda z: xp.real(z)


ERRORS = {
    "grad of a complex output": lambda g: g.grad(_square(g.numpy))(1 + 1j),
    "value_and_grad of a complex output": lambda g: g.value_and_grad(_square(g.numpy))(1 + 1j),
    "jacrev of a complex output": lambda g: g.jacrev(_square(g.numpy))(Z),
    "grad holomorphic, real input": lambda g: g.grad(_square(g.numpy), holomorphic=True)(1.0),
    "jacrev holomorphic, real input": lambda g: g.jacrev(_square(g.numpy), holomorphic=True)(X),
    "jacfwd holomorphic, real input": lambda g: g.jacfwd(_square(g.numpy), holomorphic=True)(X),
    "hessian holomorphic, real input": (
        lambda g: g.hessian(_sum_square(g.numpy), holomorphic=True)(X)
    ),
    "grad holomorphic, real output": lambda g: g.grad(_real(g.numpy), holomorphic=True)(1 + 1j),
    "jacrev holomorphic, real output": lambda g: g.jacrev(_real(g.numpy), holomorphic=True)(Z),
    "jacfwd holomorphic, real output": lambda g: g.jacfwd(_real(g.numpy), holomorphic=True)(Z),
    "jacfwd of a complex input": lambda g: g.jacfwd(_square(g.numpy))(Z),
    "hessian of a complex input": lambda g: g.hessian(_sum_square(g.numpy))(Z),
    "grad of an integer output": lambda g: g.grad(lambda x: (x > 0).astype(int))(1.0),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_are_jaxs(case):
    call = ERRORS[case]
    theirs = _jax_message(lambda: call(jax))
    with pytest.raises(TypeError) as info:
        call(tg)
    assert str(info.value) == theirs


def test_a_complex_cotangent_or_tangent_for_a_real_value_is_refused():
    """A cast would drop the imaginary part silently; JAX refuses too."""
    _, vjp_fn = tg.vjp(lambda x: x * 2.0, X)
    with pytest.raises(ValueError, match="a cotangent of dtype complex128 for an output of dtype"):
        vjp_fn(X * 1j)
    with pytest.raises(TypeError, match="a real primal takes a real tangent"):
        tg.jvp(lambda x: x * 2.0, (X,), (X * 1j,))
    _, jvp_fn = tg.linearize(lambda x: x * 2.0, X)
    with pytest.raises(TypeError, match="has dtype complex128, but its primal has dtype float64"):
        jvp_fn(X * 1j)


def test_control_flow_carries_complex_values_as_jax():
    """scan, cond and fori_loop run the same rules on complex carries: JAX's gradients, of a
    real loss of complex and real inputs and of a holomorphic loop."""

    def loss(lib, xp):
        def body(c, r):
            return xp.sin(c) * r + 0.1j * r, c * r

        def f(z, x):
            c, ys = lib.scan(body, z, xp.stack([x, 2 * x]))
            w = lib.cond(True, lambda v: v * (1 - 1j), lambda v: v, c)
            return xp.sum(xp.abs(ys) ** 2) + xp.real(xp.sum(w))

        return f

    def loop(lib, xp):
        return lambda z: xp.sum(lib.fori_loop(0, 3, lambda i, c: c * c * 0.5 + z, z))

    z, x = Z[:2], X[:2]
    ours = tg.grad(loss(tg, np), argnums=(0, 1))(z, x)
    theirs = _jit(jax.grad, loss(jax.lax, jnp), argnums=(0, 1))(z, x)
    for o, t in zip(ours, theirs):
        _close(o, t)
    _close(
        tg.grad(loop(tg, np), holomorphic=True)(z),
        _jit(jax.grad, loop(jax.lax, jnp), holomorphic=True)(z),
    )
