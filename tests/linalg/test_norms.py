"""np.linalg's norms, cond and matrix_rank (tracegrad/numpy/linalg/_norms.py).

Hypothesis draws the shapes (stacks of matrices), axes, keepdims, every order and the four
dtypes. The oracles: NumPy bit for bit (outside a trace, traced, under jit, and vmap against a
loop); JAX for grad and jvp where its value is defined (x64, float64 and complex128); finite
differences (`check_grads`, second order too); PyTorch for the gradient at zero, where we give
PyTorch's 0 (JAX gives NaN). Then every bad input's error, against NumPy's error type.
"""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracegrad as tg
from tracegrad.numpy.linalg._norms import cond, matrix_norm, matrix_rank, norm, vector_norm
from tracegrad.testing import assert_bitwise_equal, check_grads

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)  # float64, as NumPy (for the whole process)

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
VECTOR_ORDS = (None, 2, 1, np.inf, -np.inf, 0, 3, 0.5, 1.5, -1, -2.5, 2.0)
MATRIX_ORDS = (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)
inf = np.inf


# -- shared checks (test_composites.py uses them too) -------------------------------------------


def random_array(shape, dtype, seed=0, zeros=0.0):
    """Normal values (complex ones with a normal imaginary part), a fraction `zeros` of them 0."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.normal(size=shape)
    if zeros:
        x = np.where(rng.random(size=shape) < zeros, 0, x)
    return np.asarray(x).astype(dtype)


def away_from_zero(x):
    """`x` moved 0.5 away from 0 (along its sign, or its phase): finite differences of |x|
    then stay on one side of the kink."""
    return (
        x + 0.5 * np.exp(1j * np.angle(x)) if x.dtype.kind == "c" else x + 0.5 * np.sign(x)
    ).astype(x.dtype)


def check_forward(ours, theirs, args, label=""):
    """NumPy's bits from `ours` outside a trace, traced (make_graph) and under jit, and from
    NumPy's own function (`theirs`) called on tracers, which reaches ours."""
    want = theirs(*args)
    assert_bitwise_equal(ours(*args), want, f"{label}: outside a trace")
    for how, fn in (("ours", ours), ("NumPy's function on tracers", theirs)):
        graph = tg.make_graph(fn)(*args)
        assert_bitwise_equal(graph(*args), want, f"{label}: traced, {how}")
    assert_bitwise_equal(tg.jit(theirs)(*args), want, f"{label}: jit", nan_payloads=False)


def check_vmap(ours, args, label=""):
    """vmap over a batch of two of every argument, against a loop over the two."""
    batched = [np.stack([a, (a * 0.75 + 0.125).astype(a.dtype)]) for a in args]
    got = tg.vmap(ours)(*batched)
    want = np.stack([np.asarray(ours(*(b[k] for b in batched))) for k in range(2)])
    assert_bitwise_equal(got, want, f"{label}: vmap against a loop")


def check_against_jax(ours, theirs, args, seed=0, rtol=1e-9):
    """The vjp of a random cotangent and the jvp of random tangents, against JAX's."""
    args = tuple(args)
    out = ours(*args)
    ct = random_array(np.shape(out), np.asarray(out).dtype, seed + 100)
    ts = tuple(random_array(a.shape, a.dtype, seed + 200 + i) for i, a in enumerate(args))
    ours_vjp = tg.vjp(ours, *args)[1](ct)
    ours_jvp = tg.jvp(ours, args, ts)[1]
    theirs_out, theirs_vjp_fn = jax.vjp(theirs, *args)
    theirs_jvp = jax.jvp(theirs, args, ts)[1]
    np.testing.assert_allclose(out, np.asarray(theirs_out), rtol=rtol, atol=rtol)
    for got, want in zip(ours_vjp, theirs_vjp_fn(ct)):
        np.testing.assert_allclose(got, np.asarray(want), rtol=rtol, atol=rtol, err_msg="vjp")
    np.testing.assert_allclose(ours_jvp, np.asarray(theirs_jvp), rtol=rtol, atol=rtol)


_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
_matrix_shapes = st.lists(st.integers(1, 4), min_size=2, max_size=4).map(tuple)


# -- forward values: NumPy's bits ---------------------------------------------------------------


@given(
    shape=_shapes,
    dtype=st.sampled_from(DTYPES),
    ord=st.sampled_from(VECTOR_ORDS),
    keepdims=st.booleans(),
    data=st.data(),
)
def test_vector_norms_are_numpys_bits(shape, dtype, ord, keepdims, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    # zeros (a whole zero vector too) only where NumPy itself raises no warning
    zeros = data.draw(st.sampled_from([0.0, 0.3, 1.0])) if ord is None or ord >= 0 else 0.0
    x = random_array(shape, dtype, data.draw(st.integers(0, 99)), zeros)
    kw = dict(ord=ord, axis=axis, keepdims=keepdims)
    check_forward(lambda x: norm(x, **kw), lambda x: np.linalg.norm(x, **kw), (x,), str(kw))
    check_vmap(lambda x: norm(x, **kw), (x,), str(kw))


@given(
    shape=_matrix_shapes,
    dtype=st.sampled_from(DTYPES),
    ord=st.sampled_from(MATRIX_ORDS),
    keepdims=st.booleans(),
    data=st.data(),
)
def test_matrix_norms_are_numpys_bits(shape, dtype, ord, keepdims, data):
    n = len(shape)
    pair = data.draw(st.permutations(range(n)), label="axes")[:2]
    axis = tuple(a - n if data.draw(st.booleans(), label="negative") else a for a in pair)
    x = random_array(
        shape, dtype, data.draw(st.integers(0, 99)), data.draw(st.sampled_from([0, 0.3]))
    )
    kw = dict(ord=ord, axis=axis, keepdims=keepdims)
    check_forward(lambda x: norm(x, **kw), lambda x: np.linalg.norm(x, **kw), (x,), str(kw))
    check_vmap(lambda x: norm(x, **kw), (x,), str(kw))
    if tuple(a % n for a in axis) == (n - 2, n - 1):
        kw = dict(ord="fro" if ord is None else ord, keepdims=keepdims)
        check_forward(
            lambda x: matrix_norm(x, **kw), lambda x: np.linalg.matrix_norm(x, **kw), (x,)
        )


@given(
    shape=st.lists(st.integers(0, 4), max_size=3).map(tuple),
    dtype=st.sampled_from(DTYPES),
    keepdims=st.booleans(),
    zeros=st.sampled_from([0.0, 0.5, 1.0]),
    seed=st.integers(0, 99),
)
def test_norm_over_the_whole_array_is_numpys_dot(shape, dtype, keepdims, zeros, seed):
    # axis=None: NumPy's fast path sqrt(x.dot(x)) for ord None, 'fro' (2-d) and 2 (1-d)
    x = random_array(shape, dtype, seed, zeros)
    ords = [None] + (["fro", "f"] if x.ndim == 2 else []) + ([2] if x.ndim == 1 else [])
    for ord in ords:
        kw = dict(ord=ord, keepdims=keepdims)
        check_forward(partial(norm, **kw), partial(np.linalg.norm, **kw), (x,), str(kw))


@pytest.mark.parametrize("ord", [None, 1, -1, 3, 0.5, inf, -inf, 0])
def test_norms_of_infinities_and_nans_are_numpys(ord):
    x = np.array([[1.0, -np.inf, 0.0], [np.nan, 2.0, 0.0], [0.0, 0.0, 0.0]])
    for axis in (0, 1):
        kw = dict(ord=ord, axis=axis)
        quiet = ord is not None and ord < 0  # NumPy's own 0 ** -1 warns; nothing else may
        with np.errstate(divide="ignore") if quiet else warnings.catch_warnings():
            warnings.simplefilter("default" if quiet else "error")
            check_forward(partial(norm, **kw), partial(np.linalg.norm, **kw), (x,), str(kw))
    if ord in (None, 1, -1, inf, -inf):
        kw = dict(ord=ord, axis=(0, 1))
        check_forward(partial(norm, **kw), partial(np.linalg.norm, **kw), (x,), str(kw))


def test_results_outside_a_trace_are_numpys_types():
    # a full reduction is a NumPy scalar, as NumPy returns it (not a 0-d array)
    x = random_array((3, 3), np.float32)
    calls = [
        lambda m: m.norm(x),
        lambda m: m.norm(x, keepdims=True),
        lambda m: m.norm(x[0], 3),
        lambda m: m.norm(x, "nuc"),
        lambda m: m.cond(x),
        lambda m: m.cond(x, 1),
        lambda m: m.matrix_rank(x),
        lambda m: m.vector_norm(x),
    ]
    mine = type("Ours", (), {k: staticmethod(v) for k, v in _OURS.items()})
    for call in calls:
        assert type(call(mine)) is type(call(np.linalg))


def test_norm_of_integers_and_bools_is_float64():
    for x in (np.arange(-3, 5).reshape(2, 4), np.array([True, False, True])):
        for kw in ({}, {"ord": 1, "axis": -1}, {"ord": inf}):
            if x.ndim == 1 or "axis" in kw or kw.get("ord") is None:
                check_forward(partial(norm, **kw), partial(np.linalg.norm, **kw), (x,))


@given(
    shape=_shapes,
    dtype=st.sampled_from(DTYPES),
    ord=st.sampled_from(VECTOR_ORDS),
    keepdims=st.booleans(),
    data=st.data(),
)
def test_vector_norm_is_numpys_bits(shape, dtype, ord, keepdims, data):
    n = len(shape)
    axis = data.draw(
        st.one_of(
            st.none(),
            st.integers(-n, n - 1),
            st.permutations(range(n)).flatmap(lambda p: st.integers(1, n).map(lambda k: p[:k])),
        ).map(lambda a: tuple(a) if isinstance(a, list) else a),
        label="axis",
    )
    x = random_array(shape, dtype, data.draw(st.integers(0, 99)))
    kw = dict(ord=2 if ord is None else ord, axis=axis, keepdims=keepdims)
    check_forward(
        lambda x: vector_norm(x, **kw), lambda x: np.linalg.vector_norm(x, **kw), (x,), str(kw)
    )


# -- derivatives: JAX, finite differences, the subgradient at zero ------------------------------


# JAX compiles each operation once per shape: a few shapes keep its cache warm
_JAX_VECTOR_SHAPES = st.sampled_from([(5,), (3, 4), (2, 1, 3)])
_JAX_MATRIX_SHAPES = st.sampled_from([(3, 4), (2, 3, 3), (4, 2)])


@settings(max_examples=6)  # each new JAX shape and order compiles (~0.3 s)
@given(
    shape=_JAX_VECTOR_SHAPES,
    dtype=st.sampled_from((np.float64, np.complex128)),
    ord=st.sampled_from(VECTOR_ORDS[:-1]),
    data=st.data(),
)
def test_vector_norm_derivatives_match_jax(shape, dtype, ord, data):
    if ord == 0:
        ord = 4  # the count of nonzeros is a step function: its derivative is 0 (below)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    x = random_array(shape, dtype, data.draw(st.integers(0, 99)))
    kw = dict(ord=ord, axis=axis, keepdims=keepdims)
    check_against_jax(lambda x: norm(x, **kw), lambda x: jnp.linalg.norm(x, **kw), (x,))


@settings(max_examples=6)
@given(
    shape=_JAX_MATRIX_SHAPES,
    dtype=st.sampled_from((np.float64, np.complex128)),
    ord=st.sampled_from(MATRIX_ORDS),
    keepdims=st.booleans(),
    seed=st.integers(0, 99),
)
def test_matrix_norm_derivatives_match_jax(shape, dtype, ord, keepdims, seed):
    x = random_array(shape, dtype, seed)
    kw = dict(ord=ord, axis=(-1, -2), keepdims=keepdims)
    check_against_jax(lambda x: norm(x, **kw), lambda x: jnp.linalg.norm(x, **kw), (x,))


@pytest.mark.parametrize("ord", [None, 1, 2, inf, 3, 0.5])
def test_vector_norm_second_derivatives(ord):
    x = away_from_zero(random_array((5,), np.float64, seed=3))
    check_grads(lambda x: norm(x, ord=ord, axis=0), (x,), order=2)
    check_grads(lambda x: norm(x, ord=ord, axis=0), (x.astype(np.float32),), order=1)


@pytest.mark.parametrize("ord", [None, "nuc", 2, -2, 1, -inf])
def test_matrix_norm_second_derivatives(ord):
    x = away_from_zero(random_array((2, 4, 3), np.float64, seed=4))
    check_grads(lambda x: norm(x, ord=ord, axis=(1, 2)), (x,), order=2)
    check_grads(lambda x: norm(x, ord=ord, axis=(1, 2)), (x.astype(np.complex128),), order=1)


@pytest.mark.parametrize(
    "kw",
    [{}, {"ord": 3, "axis": 0}, {"ord": inf, "axis": 1}, {"ord": "nuc"}, {"ord": -2}, {"ord": 1}],
    ids=str,
)
def test_gradients_agree_bitwise_between_executors(kw):
    # gradients have no NumPy twin: eager, interpreted and compiled runs give the same bits
    x = random_array((4, 3), np.complex128, seed=6, zeros=0.2)

    def f(x):
        return norm(x, **kw).sum()

    eager = tg.grad(f)(x)
    assert_bitwise_equal(tg.jit(tg.grad(f))(x), eager, "jit(grad)")
    assert_bitwise_equal(tg.make_graph(tg.grad(f))(x)(x), eager, "interpreted")


def test_count_of_nonzeros_has_zero_derivative():
    x = random_array((3, 4), np.float64, zeros=0.3)
    np.testing.assert_array_equal(tg.grad(lambda x: norm(x, 0, axis=1).sum())(x), 0 * x)


@pytest.mark.parametrize("ord", [None, 2, 1, inf, -inf, 3, 0.5, 1.5], ids=lambda o: f"ord={o}")
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_gradient_at_zero_is_zero_as_in_pytorch(ord, dtype):
    torch = pytest.importorskip("torch")
    x = np.zeros(4, dtype)
    ours = tg.grad(lambda x: norm(x, ord=ord, axis=0))(x)
    t = torch.zeros(4, dtype=getattr(torch, np.dtype(dtype).name), requires_grad=True)
    torch.linalg.norm(t, ord=ord).backward()
    np.testing.assert_array_equal(ours, t.grad.numpy())
    np.testing.assert_array_equal(ours, np.zeros(4, dtype))
    if ord is None:  # the default over the whole array (NumPy's dot), and a matrix's
        np.testing.assert_array_equal(tg.grad(norm)(x), np.zeros(4, dtype))
        m = torch.zeros((2, 3), dtype=t.dtype, requires_grad=True)
        torch.linalg.matrix_norm(m).backward()
        ours = tg.grad(lambda m: norm(m, axis=(0, 1)))(np.zeros((2, 3), dtype))
        np.testing.assert_array_equal(ours, m.grad.numpy())


@pytest.mark.parametrize("ord", [None, 2, 3, 0.5, 1.5])
def test_derivatives_at_zero_of_every_order_are_finite(ord):
    x = np.zeros(3)
    f = (lambda x: norm(x)) if ord is None else (lambda x: norm(x, ord=ord, axis=0))
    np.testing.assert_array_equal(tg.hessian(f)(x), np.zeros((3, 3)))
    np.testing.assert_array_equal(tg.jvp(f, (x,), (np.ones(3),))[1], 0.0)
    # a zero matrix's Frobenius norm too, in both modes
    m = np.zeros((2, 3))
    np.testing.assert_array_equal(tg.grad(lambda m: norm(m, "fro", axis=(0, 1)))(m), 0 * m)
    np.testing.assert_array_equal(tg.jvp(lambda m: norm(m, "fro"), (m,), (m + 1,))[1], 0.0)


@pytest.mark.parametrize("ord", [0.5, 1.5, 3])
def test_zero_entries_of_a_nonzero_vector_as_in_pytorch(ord):
    # |x|**p with p < 1 has an infinite slope at 0: PyTorch masks it to 0, and so do we
    torch = pytest.importorskip("torch")
    x = np.array([1.5, 0.0, -2.0, 0.0])
    ours = tg.grad(lambda x: norm(x, ord=ord, axis=0))(x)
    t = torch.tensor(x, requires_grad=True)
    torch.linalg.vector_norm(t, ord=ord).backward()
    np.testing.assert_allclose(ours, t.grad.numpy(), rtol=1e-12)


@given(
    shape=_matrix_shapes,
    dtype=st.sampled_from(DTYPES),
    p=st.sampled_from((None, 2, -2, 1, -1, inf, -inf, "fro", "nuc")),
    seed=st.integers(0, 99),
)
def test_cond_is_numpys_bits(shape, dtype, p, seed):
    shape = shape[:-1] + (shape[-2],) if p not in (None, 2, -2) else shape
    x = random_array(shape, dtype, seed)
    check_forward(lambda x: cond(x, p), lambda x: np.linalg.cond(x, p), (x,), f"p={p}")
    check_vmap(lambda x: cond(x, p), (x,), f"p={p}")


@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, inf, -inf, "fro", "nuc"])
def test_cond_derivatives(p):
    # cond is norms (tested against JAX above) of x and of its inverse or singular values:
    # finite differences for each p, and JAX for the singular values' ratio
    x = away_from_zero(random_array((2, 3, 3), np.float64, seed=5))
    if p is None:
        check_against_jax(lambda x: cond(x, p), lambda x: jnp.linalg.cond(x, p), (x,))
    check_grads(lambda x: cond(x, p), (x,), order=1)
    check_grads(lambda x: cond(x, p), (x.astype(np.complex128),), order=1)


def test_cond_of_a_singular_matrix_is_inf_as_numpy():
    x = np.array([[[1.0, 2.0], [2.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]])
    for p in (None, 2, -2):
        check_forward(partial(cond, p=p), partial(np.linalg.cond, p=p), (x,), f"p={p}")
    nan = np.array([[np.nan, 1.0], [0.0, 1.0]])  # NaN entries keep a NaN (NumPy's rule)
    with np.errstate(invalid="ignore"):
        with pytest.raises(np.linalg.LinAlgError):  # NumPy's svd refuses it: so do we
            np.linalg.cond(nan)
        with pytest.raises(np.linalg.LinAlgError):
            cond(nan)


@given(
    shape=_matrix_shapes,
    dtype=st.sampled_from(DTYPES),
    rank=st.integers(0, 4),
    hermitian=st.booleans(),
    seed=st.integers(0, 99),
)
def test_matrix_rank_is_numpys(shape, dtype, rank, hermitian, seed):
    *stack, m, n = shape
    if hermitian:
        n = m
    left = random_array((*stack, m, min(rank, m, n)), dtype, seed)
    x = np.matmul(
        left,
        np.swapaxes(left, -1, -2).conj()[..., :n]
        if hermitian
        else random_array((*stack, min(rank, m, n), n), dtype, seed + 1),
    )
    x = x.astype(dtype)
    for kw in ({}, {"tol": 0.5}, {"rtol": 0.25}, {"rtol": np.full(stack, 1e-3)}):
        kw = dict(kw, hermitian=hermitian)
        ours, theirs = partial(matrix_rank, **kw), partial(np.linalg.matrix_rank, **kw)
        check_forward(ours, theirs, (x,), str(kw))
    check_vmap(lambda x: matrix_rank(x, hermitian=hermitian), (x,))


def test_matrix_rank_of_vectors_and_scalars():
    for x in (np.zeros(3), np.array([0.0, 1e-300]), np.float64(0.0), np.array(2.0)):
        assert matrix_rank(x) == np.linalg.matrix_rank(x)
        assert type(matrix_rank(x)) is int
        assert int(tg.jit(matrix_rank)(x)) == np.linalg.matrix_rank(x)


def test_matrix_rank_has_no_derivative():
    x = random_array((3, 3), np.float64)
    with pytest.raises(TypeError):  # an integer output: grad refuses it, as for argmax
        tg.grad(matrix_rank)(x)
    loss = lambda x: matrix_rank(x) * norm(x)  # noqa: E731 - the count is a constant factor
    np.testing.assert_allclose(tg.grad(loss)(x), 3 * x / np.linalg.norm(x), rtol=1e-12)


# -- errors -------------------------------------------------------------------------------------

_VECTOR, _MATRIX, _CUBE = np.ones(3), np.ones((2, 2)), np.ones((2, 2, 2))
_OURS = {"norm": norm, "vector_norm": vector_norm, "matrix_norm": matrix_norm, "cond": cond}
_OURS["matrix_rank"] = matrix_rank
_AXIS_ERROR, _LINALG_ERROR = np.exceptions.AxisError, np.linalg.LinAlgError
_BAD_CALLS = {  # label: (name, array, keywords, NumPy's error type)
    "fro on a vector": ("norm", _VECTOR, {"ord": "fro", "axis": 0}, ValueError),
    "nuc on a vector": ("norm", _VECTOR, {"ord": "nuc"}, ValueError),
    "a string order on a vector": ("norm", _VECTOR, {"ord": "max"}, ValueError),
    "order 3 on a matrix": ("norm", _MATRIX, {"ord": 3}, ValueError),
    "order 0 on a matrix": ("norm", _MATRIX, {"ord": 0, "axis": (0, 1)}, ValueError),
    "another string on a matrix": ("norm", _MATRIX, {"ord": "inf"}, ValueError),
    "three axes": ("norm", _CUBE, {"axis": (0, 1, 2)}, ValueError),
    "an order on 3-d without axes": ("norm", _CUBE, {"ord": 1}, ValueError),
    "duplicate axes": ("norm", _MATRIX, {"axis": (1, -1)}, ValueError),
    "axis a list": ("norm", _MATRIX, {"axis": [0, 1]}, TypeError),
    "axis out of range": ("norm", _MATRIX, {"ord": 2, "axis": (0, 2)}, _AXIS_ERROR),
    "a complex order": ("norm", _VECTOR, {"ord": 1j, "axis": 0}, TypeError),
    "matrix_norm of a vector": ("matrix_norm", _VECTOR, {}, _AXIS_ERROR),
    "matrix_norm order 3": ("matrix_norm", _MATRIX, {"ord": 3}, ValueError),
    "vector_norm fro": ("vector_norm", _MATRIX, {"ord": "fro"}, ValueError),
    "vector_norm axis": ("vector_norm", _MATRIX, {"axis": (0, 2)}, _AXIS_ERROR),
    "cond of an empty matrix": ("cond", np.ones((0, 0)), {}, _LINALG_ERROR),
    "cond p=1 non-square": ("cond", np.ones((2, 3)), {"p": 1}, _LINALG_ERROR),
    "cond p=1 of a vector": ("cond", _VECTOR, {"p": 1}, _LINALG_ERROR),
    "cond p=3": ("cond", _MATRIX + np.eye(2), {"p": 3}, ValueError),
    "rank tol and rtol": ("matrix_rank", _MATRIX, {"tol": 0.1, "rtol": 0.1}, ValueError),
}


@pytest.mark.parametrize("label", list(_BAD_CALLS))
def test_bad_input_raises_numpys_error(label):
    name, x, kw, error = _BAD_CALLS[label]
    ours = _OURS[name]
    with pytest.raises(error):
        getattr(np.linalg, name)(x, **kw)
    with pytest.raises(error):
        ours(x, **kw)
    with pytest.raises(error):  # traced: the same error, at trace time
        tg.jit(lambda x: ours(x, **kw))(x)


def test_messages_name_the_problem():
    with pytest.raises(ValueError, match="Invalid norm order 'fro' for vectors"):
        norm(_VECTOR, "fro", axis=0)
    with pytest.raises(ValueError, match="Invalid norm order for matrices"):
        norm(_MATRIX, 3)
    with pytest.raises(ValueError, match="Duplicate axes"):
        norm(_MATRIX, axis=(0, 0))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        cond(np.ones((2, 3)), 1)
