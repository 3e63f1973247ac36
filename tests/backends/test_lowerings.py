"""The lowerings where NumPy's meaning is easy to lose, on each library against NumPy (values
and dtypes): mixed kinds and weak Python scalars, integer corners, the functional writes, and
a result's dtype that a library would promote otherwise refused, not returned."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tests.backends.helpers import back, to_dask, to_strict
from tracegrad.backends.libraries import BackendError

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
pytest.importorskip("dask.array")
pytest.importorskip("array_api_strict")

TAKE = {"dask": to_dask, "array_api_strict": to_strict, "jax": jnp.asarray}

x = np.linspace(0.1, 1.0, 6)
ints = np.array([1, 2, -1, -3, 4, 1])
CASES = {
    "python scalars keep float32": (lambda x, s: x.astype(np.float32) * (1 - s) + s * s, (x, 0.9)),
    "int array, float bounds": (lambda x: np.clip((x * 10).astype(np.int32), 1.5, 4.5), (x,)),
    "float32 x, float64 bound": (lambda x, lo: np.clip(x.astype(np.float32), lo, 0.8), (x, x / 2)),
    "where of int32 and float32": (
        lambda x, i: np.where(x > 0.5, i.astype(np.int32) * 50000001, x.astype(np.float32)),
        (x, ints),
    ),
    "integer reciprocal": (np.reciprocal, (ints,)),
    "exp2 of integers": (np.exp2, (ints,)),
    "integer fmod at the most negative": (lambda i: np.fmod(i, 3), (np.array([-(2**63), 5, -7]),)),
    "fmod beside a Python scalar": (lambda x: np.fmod(x - 3, -2.0), (x,)),
    "vjp of a strided slice": (lambda x: tg.grad(lambda x: np.sum(x[1::2] ** 2))(x), (x,)),
    "scatter-add of an inf": (
        lambda x, w: tg.grad(lambda x: np.sum(x[np.array([3, -1, 0, 3])] * w))(x),
        (x, np.array([np.inf, 1.0, 1.0, 1.0])),
    ),
}


pytestmark = pytest.mark.usefixtures("x64")


@pytest.mark.parametrize("library", sorted(TAKE))
@pytest.mark.parametrize("case", sorted(CASES))
def test_values_and_dtypes_equal_numpys(case, library):
    f, args = CASES[case]
    want = np.asarray(tg.jit(f)(*args))
    take = TAKE[library]
    got = back(tg.jit(f)(*[take(a) if isinstance(a, np.ndarray) else a for a in args]))
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_a_result_in_another_dtype_than_numpys_is_refused():
    jax.config.update("jax_enable_x64", False)  # JAX computes float64 as float32 then
    with pytest.raises(
        BackendError,
        match=r"output 0 came out float32, where NumPy's rules "
        r"give float64; JAX computes in 32 bits unless",
    ):
        tg.jit(lambda x, w: x @ w)(jnp.ones((2, 2)), np.ones(2))


def test_an_output_of_a_unary_op_on_a_broadcast_stays_a_fresh_array():
    out = tg.jit(lambda x: -np.broadcast_to(x, (2, 3)))(np.arange(3.0))
    assert out.flags.writeable and out.strides == (24, 8)
