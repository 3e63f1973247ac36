"""np.linalg's functions written over other operations (tracegrad/numpy/linalg/_composites.py):
matrix_power, multi_dot, tensorsolve, tensorinv and the array-API names (outer, cross, trace,
diagonal, matrix_transpose, tensordot, vecdot, matmul, svdvals).

The same oracles as test_norms.py (its helpers): NumPy bit for bit outside a trace, on tracers
(`np.linalg.<name>` reaching ours) and under jit, vmap against a loop, JAX for grad and jvp
(float64 and complex128), finite differences for second derivatives; then each bad input's
error against NumPy's error type.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
from tests.linalg.test_norms import (
    DTYPES,
    check_against_jax,
    check_forward,
    check_vmap,
    random_array,
)
from tracegrad.numpy.linalg import _composites as ours
from tracegrad.testing import check_grads

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)  # float64, as NumPy (for the whole process)

PRECISE = (np.float64, np.complex128)
_stacks = st.lists(st.integers(1, 3), max_size=2).map(tuple)


def _invertible(shape, dtype, seed):
    """A random matrix (stack) plus 2 * identity: well conditioned, so inverses and their
    finite differences behave."""
    return (random_array(shape, dtype, seed) + 2 * np.eye(shape[-1])).astype(dtype)


# -- matrix_power -------------------------------------------------------------------------------


@given(
    stack=_stacks,
    m=st.integers(1, 4),
    n=st.integers(-5, 12),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 99),
)
def test_matrix_power_is_numpys_bits(stack, m, n, dtype, seed):
    a = _invertible((*stack, m, m), dtype, seed)
    check_forward(
        partial(ours.matrix_power, n=n), partial(np.linalg.matrix_power, n=n), (a,), f"n={n}"
    )
    check_vmap(partial(ours.matrix_power, n=n), (a,), f"n={n}")


@pytest.mark.parametrize("n", [-2, 0, 1, 3, 7])
@pytest.mark.parametrize("dtype", PRECISE)
def test_matrix_power_derivatives(n, dtype):
    a = _invertible((2, 3, 3), dtype, seed=n + 10) * 0.5
    check_against_jax(
        partial(ours.matrix_power, n=n), partial(jnp.linalg.matrix_power, n=n), (a,), rtol=1e-8
    )
    if dtype is np.float64 and n in (-2, 3):
        check_grads(partial(ours.matrix_power, n=n), (a,), order=2)


# -- multi_dot ----------------------------------------------------------------------------------


@st.composite
def _chains(draw, dtypes=DTYPES):
    count = draw(st.integers(2, 6), label="count")
    dims = draw(st.lists(st.integers(1, 5), min_size=count + 1, max_size=count + 1))
    first_vector, last_vector = draw(st.booleans()), draw(st.booleans())
    dtype = draw(st.sampled_from(dtypes))
    seed = draw(st.integers(0, 99))
    shapes = [(dims[i], dims[i + 1]) for i in range(count)]
    if first_vector:
        shapes[0] = shapes[0][1:]
    if last_vector:
        shapes[-1] = shapes[-1][:1]
    return [random_array(s, dtype, seed + i) for i, s in enumerate(shapes)]


@given(arrays=_chains())
def test_multi_dot_is_numpys_bits(arrays):
    label = str([a.shape for a in arrays])
    check_forward(
        lambda *xs: ours.multi_dot(list(xs)), lambda *xs: np.linalg.multi_dot(xs), arrays, label
    )
    check_vmap(lambda *xs: ours.multi_dot(xs), arrays, label)


@given(dims=st.lists(st.integers(1, 60), min_size=4, max_size=9))
def test_multi_dot_takes_numpys_order(dims):
    # the split table of NumPy's dynamic programme (its private function, the oracle), and
    # float32 bits, which a product in another order would change
    arrays = [np.ones((dims[i], dims[i + 1]), np.float32) for i in range(len(dims) - 1)]
    want = np.linalg._linalg._multi_dot_matrix_chain_order(arrays)
    got = ours._chain_order(arrays)
    n = len(arrays)
    assert [[got[i][j] for j in range(i + 1, n)] for i in range(n)] == [
        [int(want[i, j]) for j in range(i + 1, n)] for i in range(n)
    ]
    arrays = [random_array(a.shape, np.float32, i) for i, a in enumerate(arrays)]
    check_forward(lambda *xs: ours.multi_dot(xs), lambda *xs: np.linalg.multi_dot(xs), arrays)


@pytest.mark.parametrize(
    "shapes", [[(3,), (3, 4), (4,)], [(2, 3), (3, 4), (4, 1), (1, 2)], [(2, 3), (3,)]], ids=str
)
def test_multi_dot_derivatives_match_jax(shapes):
    arrays = [random_array(s, np.complex128, i) for i, s in enumerate(shapes)]
    check_against_jax(lambda *xs: ours.multi_dot(xs), lambda *xs: jnp.linalg.multi_dot(xs), arrays)
    check_grads(lambda *xs: ours.multi_dot(xs), [a.real.copy() for a in arrays], order=1)


# -- tensorsolve, tensorinv ---------------------------------------------------------------------


@given(
    b_shape=st.sampled_from([(6,), (2, 3), (3, 2, 1)]),
    x_shape=st.sampled_from([(6,), (3, 2), (1, 2, 3)]),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 99),
)
def test_tensorsolve_is_numpys_bits(b_shape, x_shape, dtype, seed):
    a = _invertible((6, 6), dtype, seed).reshape(b_shape + x_shape)
    b = random_array(b_shape, dtype, seed + 1)
    check_forward(ours.tensorsolve, np.linalg.tensorsolve, (a, b), f"{a.shape}, {b.shape}")
    # axes=(0,) moves a's first axis to the end: given a with its last axis first, the same
    a0 = np.moveaxis(a, -1, 0)
    check_forward(
        partial(ours.tensorsolve, axes=(0,)), partial(np.linalg.tensorsolve, axes=(0,)), (a0, b)
    )
    check_vmap(ours.tensorsolve, (a, b))


@given(
    shape=st.sampled_from([((4, 6), (8, 3)), ((2, 3), (6,)), ((6,), (3, 2)), ((2, 2, 2), (8,))]),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 99),
)
def test_tensorinv_is_numpys_bits(shape, dtype, seed):
    lead, rest = shape
    n = int(np.prod(lead))
    a = _invertible((n, n), dtype, seed).reshape(lead + rest)
    ind = len(lead)
    check_forward(partial(ours.tensorinv, ind=ind), partial(np.linalg.tensorinv, ind=ind), (a,))
    check_vmap(partial(ours.tensorinv, ind=ind), (a,))


@pytest.mark.parametrize("dtype", PRECISE)
def test_tensorsolve_and_tensorinv_derivatives(dtype):
    a = _invertible((6, 6), dtype, 1).reshape(2, 3, 3, 2)
    b = random_array((2, 3), dtype, 2)
    check_against_jax(ours.tensorsolve, jnp.linalg.tensorsolve, (a, b))
    a0 = np.moveaxis(a, -1, 0)  # axes=(0,) moves it back
    check_against_jax(
        partial(ours.tensorsolve, axes=(0,)), partial(jnp.linalg.tensorsolve, axes=(0,)), (a0, b)
    )
    check_against_jax(ours.tensorinv, jnp.linalg.tensorinv, (a,))
    if dtype is np.float64:
        check_grads(ours.tensorsolve, (a, b), order=1)
        check_grads(ours.tensorinv, (a,), order=2)


# -- the array-API names ------------------------------------------------------------------------

# label: (name, argument shapes, keywords)
_NAMES = {
    "outer": ("outer", ((3,), (4,)), {}),
    "cross": ("cross", ((2, 3), (3,)), {}),
    "cross, axis=0": ("cross", ((3, 2), (3, 1)), {"axis": 0}),
    "trace": ("trace", ((2, 3, 4),), {}),
    "trace of 9 x 9": ("trace", ((3, 9, 9),), {}),  # pairwise sums: the layout matters
    "trace, offset=1": ("trace", ((3, 4),), {"offset": 1}),
    "trace, offset=-2": ("trace", ((2, 4, 3),), {"offset": -2}),
    "diagonal": ("diagonal", ((2, 3, 4),), {}),
    "diagonal of 17 x 17": ("diagonal", ((3, 17, 17),), {}),
    "diagonal, offset=-1": ("diagonal", ((4, 3),), {"offset": -1}),
    "matrix_transpose": ("matrix_transpose", ((2, 3, 4),), {}),
    "tensordot": ("tensordot", ((2, 3, 4), (3, 4, 5)), {}),
    "tensordot, axes": ("tensordot", ((2, 3, 4), (4, 2)), {"axes": ([0, 2], [1, 0])}),
    "vecdot": ("vecdot", ((2, 3), (3,)), {}),
    "vecdot, axis=0": ("vecdot", ((3, 2), (3, 1)), {"axis": 0}),
    "matmul": ("matmul", ((2, 3, 4), (4, 2)), {}),
    "matmul of a vector": ("matmul", ((4,), (2, 4, 3)), {}),
    "svdvals": ("svdvals", ((2, 3, 4),), {}),
}


@pytest.mark.parametrize("case", list(_NAMES))
@pytest.mark.parametrize("dtype", DTYPES)
def test_array_api_names_are_numpys_bits(case, dtype):
    name, shapes, kw = _NAMES[case]
    args = tuple(random_array(s, dtype, i) for i, s in enumerate(shapes))
    mine, theirs = partial(getattr(ours, name), **kw), partial(getattr(np.linalg, name), **kw)
    check_forward(mine, theirs, args, case)
    if name != "outer":  # np.linalg.outer takes 1-D operands only, so no batch of them
        check_vmap(mine, args, case)


# the names whose rules do more than move or sum values (conjugation, products, svd), for JAX;
# the rest are linear maps of their primitives, checked by finite differences
_AGAINST_JAX = ("outer", "cross, axis=0", "vecdot", "vecdot, axis=0", "tensordot, axes", "svdvals")


@pytest.mark.parametrize("case", list(_NAMES))
def test_array_api_names_derivatives(case):
    # finite differences to second order in float64, and JAX's in complex128
    name, shapes, kw = _NAMES[case]
    args = tuple(random_array(s, np.complex128, i) for i, s in enumerate(shapes))
    mine = partial(getattr(ours, name), **kw)
    check_grads(mine, tuple(a.real.copy() for a in args), order=2)
    if case in _AGAINST_JAX:
        check_against_jax(mine, partial(getattr(jnp.linalg, name), **kw), args)


def test_trace_with_a_dtype_sums_in_it():
    x = random_array((2, 5, 5), np.float32)
    for dtype in (np.float64, np.complex64, None):
        check_forward(partial(ours.trace, dtype=dtype), partial(np.linalg.trace, dtype=dtype), (x,))
    n = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    check_forward(ours.trace, np.linalg.trace, (n,))
    check_forward(partial(ours.trace, dtype=np.int8), partial(np.linalg.trace, dtype=np.int8), (n,))


def test_matrix_transpose_is_a_derivative_of_itself():
    x = random_array((2, 3, 4), np.float64)
    ct = random_array((2, 4, 3), np.float64, 1)
    (x_bar,) = tg.vjp(ours.matrix_transpose, x)[1](ct)
    np.testing.assert_array_equal(x_bar, np.swapaxes(ct, -1, -2))


# -- errors -------------------------------------------------------------------------------------

_M, _V, _LINALG_ERROR = np.eye(3), np.ones(3), np.linalg.LinAlgError
_BAD_CALLS = {  # label: (name, arguments, keywords, NumPy's error type)
    "matrix_power of a non-square matrix": (
        "matrix_power",
        (np.ones((2, 3)), 2),
        {},
        _LINALG_ERROR,
    ),
    "matrix_power of a vector": ("matrix_power", (_V, 2), {}, _LINALG_ERROR),
    "matrix_power of a float exponent": ("matrix_power", (_M, 2.0), {}, TypeError),
    "matrix_power -1 of a singular matrix": (
        "matrix_power",
        (np.zeros((2, 2)), -1),
        {},
        _LINALG_ERROR,
    ),
    "multi_dot of one array": ("multi_dot", ([_M],), {}, ValueError),
    "multi_dot of a 3-d array": ("multi_dot", ([_M, np.ones((3, 3, 3)), _M],), {}, _LINALG_ERROR),
    "multi_dot of a vector inside": ("multi_dot", ([_M, _V, _M],), {}, _LINALG_ERROR),
    "multi_dot misaligned": ("multi_dot", ([_M, np.ones((2, 2)), _M],), {}, ValueError),
    "tensorsolve of mismatched shapes": (
        "tensorsolve",
        (np.ones((2, 3, 4)), np.ones((2, 3))),
        {},
        _LINALG_ERROR,
    ),
    "tensorsolve of a missing axis": (
        "tensorsolve",
        (np.ones((2, 2)), _V[:2]),
        {"axes": (2,)},
        ValueError,
    ),
    "tensorinv with ind=0": ("tensorinv", (np.ones((2, 2)),), {"ind": 0}, ValueError),
    "tensorinv of a non-square split": ("tensorinv", (_M[:2],), {"ind": 1}, _LINALG_ERROR),
    "outer of a matrix": ("outer", (_M, _V), {}, ValueError),
    "cross of 2-vectors": ("cross", (np.ones(2), np.ones(2)), {}, ValueError),
    "cross of 4-vectors": ("cross", (np.ones(4), np.ones(3)), {}, ValueError),
    "trace of a vector": ("trace", (_V,), {}, ValueError),
    "diagonal of a vector": ("diagonal", (_V,), {}, ValueError),
    "matrix_transpose of a vector": ("matrix_transpose", (_V,), {}, ValueError),
    "matmul misaligned": ("matmul", (_M, np.ones((2, 2))), {}, ValueError),
    "vecdot misaligned": ("vecdot", (_V, np.ones(2)), {}, ValueError),
    "svdvals of a vector": ("svdvals", (_V,), {}, _LINALG_ERROR),
}


@pytest.mark.parametrize("label", list(_BAD_CALLS))
def test_bad_input_raises_numpys_error(label):
    name, args, kw, error = _BAD_CALLS[label]
    with pytest.raises(error):
        getattr(np.linalg, name)(*args, **kw)
    with pytest.raises(error):
        getattr(ours, name)(*args, **kw)


def test_multi_dot_refuses_out():
    with pytest.raises(NotImplementedError, match="out="):
        ours.multi_dot([_M, _M, _M], out=np.empty((3, 3)))


def test_messages_name_the_problem():
    with pytest.raises(ValueError, match="one-dimensional.*x1.ndim=2"):
        ours.outer(_M, _V)
    with pytest.raises(ValueError, match="3-dimensional vectors.*2 and 2"):
        ours.cross(np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="exponent must be an integer"):
        ours.matrix_power(_M, 1.5)
    with pytest.raises(_LINALG_ERROR, match="prod"):
        ours.tensorsolve(np.ones((2, 3, 4)), np.ones((2, 3)))
