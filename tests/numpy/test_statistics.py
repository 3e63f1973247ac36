"""cov and corrcoef: NumPy's bits, derivatives (in the data and in aweights) and vmap through
`check_name` (float32 and float64), JAX's gradients as an oracle, and NumPy's errors and
warnings with NumPy's messages (the checks of the weights' values where they are known).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tests.numpy.harness import FLOATS, check_name
from tracegrad.testing import assert_bitwise_equal

_RNG = np.random.default_rng(29)
X = _RNG.standard_normal((3, 5))
Y = _RNG.standard_normal((2, 5))
FW = np.array([1, 2, 1, 3, 1])
AW = np.array([0.5, 1.5, 1.0, 2.0, 0.25])

# cov's arguments by position (m, y, rowvar, bias, ddof, fweights, aweights), so that the
# harness traces and differentiates the arrays among them
CASES = [
    ("cov", (X,), {}),
    ("cov", (X, None, False), {}),
    ("cov", (X[0], X[1]), {}),
    ("cov", (X, Y, True, True), {}),
    ("cov", (X, None, True, False, 2), {}),
    ("cov", (X, None, True, False, None, FW, AW), {}),
    ("cov", (X, Y, True, False, 0, None, AW), {}),
    ("cov", (X, None, True, False, None, FW), {}),
    ("cov", (X,), {"dtype": np.float32}),
    ("cov", (X[0],), {}),
    ("cov", (np.arange(6).reshape(2, 3) ** 2,), {}),
    ("corrcoef", (X,), {}),
    ("corrcoef", (X, Y * 1.5), {}),
    ("corrcoef", (X, None, False), {}),
    ("corrcoef", (X[0],), {}),
]


def _id(case):
    name, args, kwargs = case
    shapes = ",".join(
        f"{a.dtype.kind}{list(a.shape)}" if isinstance(a, np.ndarray) else repr(a) for a in args
    )
    extra = ",".join(f"{k}={v!r}" for k, v in kwargs.items())
    return f"{name}({shapes}{',' + extra if extra else ''})"


def _as(a, dtype):
    return a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_name_against_numpy(case, dtype):
    name, args, kwargs = case
    check_name(name, [_as(a, dtype) for a in args], kwargs)


JAX_CASES = [CASES[k] for k in (1, 3, 5, 6, 11, 12)]


@pytest.mark.parametrize("case", JAX_CASES, ids=[_id(c) for c in JAX_CASES])
def test_gradients_match_jax(case):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = pytest.importorskip("jax.numpy")
    name, args, kwargs = case
    floats = [k for k, a in enumerate(args) if isinstance(a, np.ndarray) and a.dtype.kind == "f"]
    weights = np.random.default_rng(3).standard_normal(np.shape(getattr(np, name)(*args)))

    def total(module):
        def fn(*values):
            full = list(args)
            for k, v in zip(floats, values):
                full[k] = v
            return (getattr(module, name)(*full, **kwargs) * weights).sum()

        return fn

    argnums = tuple(range(len(floats)))
    primals = [args[k] for k in floats]
    ours = tg.grad(total(np), argnums=argnums)(*primals)
    theirs = jax.jit(jax.grad(total(jnp), argnums=argnums))(*primals)
    for g, want in zip(ours, theirs):
        np.testing.assert_allclose(g, want, rtol=1e-9, atol=1e-12)


def test_complex_cov_is_numpys():
    z = X + 1j * X[::-1]
    assert_bitwise_equal(tnp.cov(z), np.cov(z))
    assert_bitwise_equal(tg.jit(np.cov)(z), np.cov(z))


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_empty_and_single_observation():
    assert_bitwise_equal(tnp.cov(np.ones((0, 3))), np.cov(np.ones((0, 3))))
    with pytest.warns(RuntimeWarning, match="Degrees of freedom <= 0 for slice"):
        ours = tnp.cov(X[:, :1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_bitwise_equal(ours, np.cov(X[:, :1]))
    # traced weights summing to ddof: the same warning under concrete tracing
    with pytest.warns(RuntimeWarning, match="Degrees of freedom <= 0 for slice"):
        tg.grad(lambda w: tnp.cov(X[0], aweights=w).sum())(np.array([1.0, 0, 0, 0, 0]))


# -- errors: NumPy's types and messages -------------------------------------------------------

SAME_ERRORS = [
    ("cov", (X,), {"ddof": 1.5}),
    ("cov", (np.ones((2, 2, 2)),), {}),
    ("cov", (X, np.ones((2, 2, 2))), {}),
    ("cov", (X,), {"fweights": AW}),
    ("cov", (X,), {"fweights": np.ones((5, 1))}),
    ("cov", (X,), {"aweights": np.ones((5, 1))}),
    ("cov", (X,), {"aweights": AW[:4]}),
    ("cov", (X,), {"fweights": -FW}),
    ("cov", (X,), {"aweights": -AW}),
]


@pytest.mark.parametrize("case", SAME_ERRORS, ids=[_id(c) for c in SAME_ERRORS])
def test_errors_are_numpys(case):
    name, args, kwargs = case
    with pytest.raises(Exception) as theirs:
        getattr(np, name)(*args, **kwargs)
    with pytest.raises(theirs.type) as ours:
        getattr(tnp, name)(*args, **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_weight_checks_need_values():
    # concrete tracing knows the values and checks them; jit does not, and skips the checks
    with pytest.raises(ValueError, match="aweights cannot be negative"):
        tg.grad(lambda w: np.cov(X, aweights=w).sum())(-AW)
    got = tg.jit(lambda w: np.cov(X, fweights=w))(FW)
    assert_bitwise_equal(got, np.cov(X, fweights=FW))


def test_complex_corrcoef_is_refused():
    with pytest.raises(NotImplementedError, match="corrcoef: complex inputs are not supported"):
        tnp.corrcoef(X + 1j)
