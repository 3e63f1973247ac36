"""np.linalg's LAPACK-backed functions on traced values (tracegrad/numpy/linalg/_decompositions.py).

Hypothesis draws stacks of 0-2 axes, n from 1 to 4, the four dtypes and well-conditioned
inputs (near the identity, positive definite, Hermitian with eigenvalues apart, `u diag(s) v^H`
with singular values apart). The oracles: NumPy bit for bit (outside a trace, traced, under jit,
inside vjp, and vmap against a loop); JAX for grad, jvp and second derivatives, on quantities
that do not depend on the sign or phase of eigenvectors and singular vectors (JAX's complex
convention is ours); finite differences (`check_grads`) where JAX has no rule (eig's
eigenvectors, svd's extra columns); PyTorch and the adjugate for det at a singular matrix.

Over 600 lines: one table of cases (inputs, the call, its gauge-free quantities) serves the
forward, JAX, second-order and vmap tests, and a shared helper module is not this file's to add.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracegrad as tg
import tracegrad.numpy.linalg as tla
from tracegrad.testing import assert_bitwise_equal, check_grads

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)  # float64, as NumPy (for the whole process)

DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
# JAX compiles each operation for each new shape (seconds per function): where JAX is the
# oracle, one stack of 2 matrices with n = 3 (m = 2 or 4 rows for rectangular ones, 2
# right-hand sides), float64 and complex128, so that its caches are reused across examples
_JAX = dict(stack=(2,), n=3, ms=st.sampled_from([2, 4]), ks=st.just(2))
_JAX_DTYPES = (np.float64, np.complex128)
_JAX_EXAMPLES = 1


# -- well-conditioned inputs ----------------------------------------------------------------------


def _normal(rng, shape, dtype):
    x = rng.normal(size=shape)
    return x + 1j * rng.normal(size=shape) if np.dtype(dtype).kind == "c" else x


def _h(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _unitary(rng, stack, n, dtype):
    q, _ = np.linalg.qr(np.eye(n) + 0.5 * _normal(rng, stack + (n, n), dtype))
    return q


def _spaced(rng, stack, n, lo):
    """`lo, lo + 1, ...`, each moved by at most 0.25: at least 0.5 apart."""
    return lo + np.arange(n) + rng.uniform(-0.25, 0.25, stack + (n,))


def near_identity(rng, stack, n, dtype):
    sign = rng.choice([1.0, -1.0])
    return (sign * 1.5 * np.eye(n) + 0.4 / n * _normal(rng, stack + (n, n), dtype)).astype(dtype)


def spd(rng, stack, n, dtype):
    b = _normal(rng, stack + (n, n), dtype)
    return (b @ _h(b) / n + np.eye(n)).astype(dtype)


def hermitian(rng, stack, n, dtype, lo=-2.0):
    """Eigenvalues at least 0.5 apart (`lo=0.5`: positive, so their absolute values are too)."""
    q = _unitary(rng, stack, n, dtype)
    a = (q * _spaced(rng, stack, n, lo)[..., None, :]) @ _h(q)
    return ((a + _h(a)) / 2).astype(dtype)


def rectangular(rng, stack, m, n, dtype):
    """`u diag(s) v^H` with singular values 1, 2, ... (each moved by at most 0.25)."""
    k = min(m, n)
    u = _unitary(rng, stack, m, dtype)[..., :, :k]
    v = _unitary(rng, stack, n, dtype)[..., :, :k]
    s = _spaced(rng, stack, k, 1.0)[..., ::-1]
    return ((u * s[..., None, :]) @ _h(v)).astype(dtype)


def diagonalizable(rng, stack, n, dtype):
    """`p diag(w) p^-1`, eigenvalues at least 0.5 apart and away from 0 (complex ones for a
    complex dtype)."""
    p = near_identity(rng, stack, n, np.complex128 if np.dtype(dtype).kind == "c" else float)
    w = _spaced(rng, stack, n, 0.5)
    if np.dtype(dtype).kind == "c":
        w = w + 1j * rng.uniform(-0.2, 0.2, w.shape)
    return ((p * w[..., None, :]) @ np.linalg.inv(p)).astype(dtype)


def weights(rng, x):
    x = np.asarray(x)
    return _normal(rng, x.shape, x.dtype).astype(x.dtype)


# -- the cases: inputs, and a call on a linalg module (NumPy's, ours or JAX's) -------------------
#
# Each `case_*` takes (data, rng, stack, n, dtype, ms, ks) (`ms`, `ks`: strategies for the
# rows of a rectangular matrix and the columns of a right-hand side) and returns (args, call,
# invariant): `call(m, *args)` is the function on module `m` (np.linalg, tla or jnp.linalg),
# `invariant(m, *args)` a tuple of quantities free of eigenvector and singular-vector gauges
# (None: not differentiable, or no JAX oracle).


def _ab(m, x):  # |x|^2, as each module writes it
    return (x * x.conj()).real


def _whole(build, call):
    """A case whose invariant is the function's whole result (both of slogdet's)."""

    def invariant(m, a):
        out = call(m, a)
        return tuple(out) if isinstance(out, tuple) else (out,)

    def case(data, rng, stack, n, dtype, ms, ks):
        return (build(rng, stack, n, dtype),), call, invariant

    return case


case_inv = _whole(near_identity, lambda m, a: m.inv(a))
case_det = _whole(near_identity, lambda m, a: m.det(a))
case_slogdet = _whole(near_identity, lambda m, a: m.slogdet(a))


def case_solve(data, rng, stack, n, dtype, ms, ks):
    a = near_identity(rng, stack, n, dtype)
    if data.draw(st.booleans(), label="1-D b"):
        b = _normal(rng, (n,), dtype).astype(dtype)
    else:
        b_stack = stack[data.draw(st.integers(0, len(stack)), label="b stack") :]
        b = _normal(rng, b_stack + (n, data.draw(ks, label="k")), dtype)
        b = b.astype(dtype)

    def call(m, a, b):
        return m.solve(a, b)

    return (a, b), call, lambda m, a, b: (call(m, a, b),)


def case_cholesky(data, rng, stack, n, dtype, ms, ks):
    upper = data.draw(st.booleans(), label="upper")

    def call(m, a):
        return m.cholesky(a, upper=upper)

    return (spd(rng, stack, n, dtype),), call, lambda m, a: (call(m, a),)


def _hermitian_part(m, a):
    """`(a + a^H) / 2`: svd and pinv with `hermitian=True` compared in Hermitian directions
    only (test_hermitian_svd_differentiates_the_hermitian_part: the others)."""
    xp = jnp if m is jnp.linalg else np
    return (a + xp.conj(xp.swapaxes(a, -1, -2))) / 2


def _gauge_free(m, u, w):
    """Squared moduli of the columns' entries (free of each column's phase), weighted, and the
    projector onto the first column."""
    xp = jnp if m is jnp.linalg else np
    u0 = u[..., :, :1]
    return _ab(xp, u) * w, u0 @ xp.conj(xp.swapaxes(u0, -1, -2))


def case_eigh(data, rng, stack, n, dtype, ms, ks):
    uplo = data.draw(st.sampled_from(["L", "U"]), label="UPLO")
    a = hermitian(rng, stack, n, dtype)
    w = rng.uniform(0.5, 1.5, (n,))

    def call(m, a):
        return m.eigh(a, UPLO=uplo)

    def invariant(m, a):
        vals, vecs = call(m, a)
        return (vals, *_gauge_free(m, vecs, w))

    return (a,), call, invariant


def case_eigvalsh(data, rng, stack, n, dtype, ms, ks):
    uplo = data.draw(st.sampled_from(["L", "U"]), label="UPLO")

    def call(m, a):
        return m.eigvalsh(a, UPLO=uplo)

    return (hermitian(rng, stack, n, dtype),), call, lambda m, a: (call(m, a),)


def case_eig(data, rng, stack, n, dtype, ms, ks):
    # JAX differentiates eigenvalues only; test_eig_eigenvectors checks the vectors
    return (diagonalizable(rng, stack, n, dtype),), lambda m, a: m.eig(a), None


def case_eigvals(data, rng, stack, n, dtype, ms, ks):
    return (diagonalizable(rng, stack, n, dtype),), lambda m, a: m.eigvals(a), None


def case_svd(data, rng, stack, n, dtype, ms, ks):
    hermitian_ = data.draw(st.booleans(), label="hermitian")
    m_ = n if hermitian_ else data.draw(ms, label="m")
    full = data.draw(st.booleans(), label="full_matrices")
    uv = data.draw(st.booleans(), label="compute_uv")
    a = (
        hermitian(rng, stack, n, dtype, lo=0.5)
        if hermitian_
        else rectangular(rng, stack, m_, n, dtype)
    )
    k = min(m_, n)
    w_u, w_v = rng.uniform(0.5, 1.5, (k,)), rng.uniform(0.5, 1.5, (k,))

    def call(m, a):
        return m.svd(a, full_matrices=full, compute_uv=uv, hermitian=hermitian_)

    def invariant(m, a):
        # JAX refuses full_matrices=True of a non-square matrix: the reduced SVD's quantities
        a = _hermitian_part(m, a) if hermitian_ else a
        out = m.svd(a, full_matrices=False, compute_uv=uv, hermitian=hermitian_)
        if not uv:
            return (out,)
        u, s, vh = out
        vh_h = vh.conj().swapaxes(-1, -2)
        return (s, *_gauge_free(m, u, w_u), *_gauge_free(m, vh_h, w_v), (u * s[..., None, :]) @ vh)

    return (a,), call, invariant


def case_qr(data, rng, stack, n, dtype, ms, ks):
    m_ = data.draw(ms, label="m")
    mode = data.draw(st.sampled_from(["reduced", "r", "complete", "raw"]), label="mode")
    a = rectangular(rng, stack, m_, n, dtype)

    def call(m, a):
        return m.qr(a, mode=mode)

    def invariant(m, a):
        out = m.qr(a, mode=mode)
        return (out,) if mode == "r" else tuple(out)

    differentiable = mode in ("reduced", "r") or (mode == "complete" and m_ <= n)
    return (a,), call, invariant if differentiable else None


def case_pinv(data, rng, stack, n, dtype, ms, ks):
    m_ = data.draw(ms, label="m")
    hermitian_ = data.draw(st.booleans(), label="hermitian")
    kind = data.draw(st.sampled_from(["default", "rcond", "rtol"]), label="cutoff")
    cutoff = data.draw(st.sampled_from([None, 1e-3, 0.2]), label="value")
    a = (
        hermitian(rng, stack, n, dtype, lo=0.5)
        if hermitian_
        else rectangular(rng, stack, m_, n, dtype)
    )
    kw = {} if kind == "default" else {kind: cutoff}

    def call(m, a):
        if m is jnp.linalg:  # JAX's `rtol` is NumPy's `rcond` (and `rtol`) when given
            return m.pinv(a, hermitian=hermitian_, rtol=cutoff if kw else None)
        return m.pinv(a, hermitian=hermitian_, **kw)

    def invariant(m, a):
        return (call(m, _hermitian_part(m, a) if hermitian_ else a),)

    return (a,), call, invariant


def case_lstsq(data, rng, stack, n, dtype, ms, ks):
    # lstsq takes one matrix: `stack` is () except for test_vmap_against_a_loop
    m_ = data.draw(ms, label="m")
    a = rectangular(rng, stack, m_, n, dtype)
    one = data.draw(st.booleans(), label="1-D b")
    b = _normal(rng, stack + ((m_,) if one else (m_, data.draw(ks, label="k"))), dtype)
    b = b.astype(dtype)

    def call(m, a, b):
        return m.lstsq(a, b, rcond=None)

    def invariant(m, a, b):
        x, residuals, _, s = call(m, a, b)
        return (x, s) + ((residuals,) if m_ > n else ())  # JAX's is not empty when m <= n

    return (a, b), call, invariant


CASES = {
    "inv": case_inv,
    "solve": case_solve,
    "det": case_det,
    "slogdet": case_slogdet,
    "cholesky": case_cholesky,
    "eigh": case_eigh,
    "eigvalsh": case_eigvalsh,
    "eig": case_eig,
    "eigvals": case_eigvals,
    "svd": case_svd,
    "qr": case_qr,
    "pinv": case_pinv,
    "lstsq": case_lstsq,
}


_ROWS, _COLUMNS = st.integers(1, 4), st.integers(1, 3)


def draw_case(
    data,
    name,
    dtypes=DTYPES,
    stack=None,
    n=None,
    ms=_ROWS,
    ks=_COLUMNS,
    stacked_lstsq=False,
):
    """A case's (args, call, invariant, rng); `stack` and `n` drawn unless given."""
    if stack is None:
        stack = tuple(data.draw(st.lists(st.integers(1, 2), max_size=2), label="stack"))
    if n is None:
        n = data.draw(st.integers(1, 4), label="n")
    if name == "lstsq" and not stacked_lstsq:
        stack = ()
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    return CASES[name](data, rng, stack, n, dtype, ms, ks) + (rng,)


# -- forward values: NumPy's bits ----------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
@given(data=st.data())
def test_values_are_numpys_bits(name, data):
    args, call, invariant, _ = draw_case(data, name)
    want = call(np.linalg, *args)
    if name in ("eig", "eigvals") and args[0].dtype.kind == "f":  # always complex when traced
        cast = np.result_type(args[0], np.complex64)
        want = type(want)(*(x.astype(cast) for x in want)) if name == "eig" else want.astype(cast)
    assert_bitwise_equal(call(tla, *args), want, "tracegrad.numpy.linalg outside a trace")
    graph = tg.make_graph(lambda *a: call(np.linalg, *a))(*args)
    assert_bitwise_equal(graph(*args), want, "np.linalg on tracers, traced")
    assert_bitwise_equal(tg.jit(lambda *a: call(np.linalg, *a))(*args), want, "under jit")
    if invariant is not None:  # differentiable: the value inside reverse mode is NumPy's too
        value, _ = tg.vjp(lambda *a: call(np.linalg, *a), *args)
        assert_bitwise_equal(value, want, "inside vjp")


def test_named_fields_on_traced_values():
    rng = np.random.default_rng(0)
    a, k = near_identity(rng, (2,), 3, np.float64), spd(rng, (), 3, np.complex128)
    r = rectangular(rng, (), 4, 3, np.float64)

    def fields(a, k, r):
        s = np.linalg.slogdet(a)
        e = np.linalg.eigh(k, UPLO="U")
        u = np.linalg.svd(r)
        q = np.linalg.qr(r)
        w = np.linalg.eig(a)
        return s.sign, s.logabsdet, e.eigenvalues, e.eigenvectors, u.U, u.S, u.Vh, q.Q, q.R, w[1]

    want = fields(a, k, r)
    want = want[:-1] + (want[-1].astype(complex),)
    assert_bitwise_equal(tg.make_graph(fields)(a, k, r)(a, k, r), want, "traced")
    assert_bitwise_equal(tg.jit(fields)(a, k, r), want, "jit")
    # the named tuples are NumPy's own classes, indexable as NumPy's
    traced = tg.make_graph(lambda a: np.linalg.slogdet(a)[1] + np.linalg.slogdet(a).logabsdet)
    assert_bitwise_equal(traced(a)(a), 2 * np.linalg.slogdet(a)[1])


def test_eig_of_a_real_matrix_is_complex():
    # real eigenvalues: NumPy returns float64 here, a traced dtype cannot depend on values
    a = np.diag([1.0, 2.0, 3.0]) + np.triu(np.ones((3, 3)), 1)
    for fn in (tla.eig, np.linalg.eig, tla.eigvals, np.linalg.eigvals):
        runs = (tg.jit(fn), tg.make_graph(fn)(a)) + ((fn,) if fn in (tla.eig, tla.eigvals) else ())
        for run in runs:
            out = run(a)
            for x in out if isinstance(out, tuple) else (out,):
                assert x.dtype == np.complex128
    w32 = tg.jit(np.linalg.eigvals)(a.astype(np.float32))
    assert w32.dtype == np.complex64
    np.testing.assert_array_equal(w32, np.linalg.eigvals(a.astype(np.float32)))


# -- grad and jvp against JAX --------------------------------------------------------------------


def assert_close(got, want, tol, what):
    for g, w in zip(tg.tree.leaves(got), tg.tree.leaves(want), strict=True):
        w = np.asarray(w)
        scale = max(1.0, float(np.max(np.abs(w), initial=0.0)))
        np.testing.assert_allclose(np.asarray(g), w, rtol=tol, atol=tol * scale, err_msg=what)


def _loss(invariant, linalg, xp, ws):
    """A real scalar: the invariants paired with weights (complex ones for complex outputs)."""

    def loss(*args):
        return sum(xp.sum(xp.real(o * w)) for o, w in zip(invariant(linalg, *args), ws))

    return loss


@pytest.mark.parametrize("dtype", _JAX_DTYPES)
@pytest.mark.parametrize("name", [n for n in CASES if n not in ("eig", "eigvals")])
@settings(max_examples=_JAX_EXAMPLES)
@given(data=st.data())
def test_grad_and_jvp_against_jax(name, dtype, data):
    args, _, invariant, rng = draw_case(data, name, dtypes=(dtype,), **_JAX)
    if invariant is None:  # qr: 'raw' and a tall 'complete' (test_errors.py: refused)
        return
    ws = [weights(rng, o) for o in invariant(np.linalg, *args)]
    argnums = tuple(range(len(args)))
    tol = 1e-8
    got = tg.grad(_loss(invariant, np.linalg, np, ws), argnums)(*args)
    want = jax.grad(_loss(invariant, jnp.linalg, jnp, ws), argnums)(*args)
    assert_close(got, want, tol, "grad")
    tangents = tuple(weights(rng, a) for a in args)
    _, got = tg.jvp(lambda *a: invariant(np.linalg, *a), args, tangents)
    _, want = jax.jvp(lambda *a: invariant(jnp.linalg, *a), args, tangents)
    assert_close(got, want, tol, "jvp")


def _matching(ours, theirs):
    """The permutation taking JAX's eigenvalues to ours (LAPACK orders them; the two calls
    may not agree on the order)."""
    order = np.argmin(np.abs(ours[..., :, None] - theirs[..., None, :]), axis=-1)
    np.testing.assert_allclose(np.take_along_axis(theirs, order, -1), ours, rtol=1e-3, atol=1e-3)
    return order


@pytest.mark.parametrize("dtype", _JAX_DTYPES)
@pytest.mark.parametrize("name", ["eig", "eigvals"])
@settings(max_examples=_JAX_EXAMPLES)
@given(data=st.data())
def test_eigenvalue_derivatives_against_jax(name, dtype, data):
    # JAX has no eigenvector derivative: eigenvalues only (test_eig_eigenvectors: the vectors)
    (a,), call, _, rng = draw_case(data, name, dtypes=(dtype,), **_JAX)
    values = (lambda m, a: m.eig(a)[0]) if name == "eig" else (lambda m, a: m.eigvals(a))
    order = _matching(np.asarray(values(tla, a)), np.asarray(jnp.linalg.eigvals(a)))
    w = weights(rng, values(tla, a))

    def jax_values(a):
        return jnp.take_along_axis(jnp.linalg.eigvals(a), order, -1)

    got = tg.grad(lambda a: np.sum(np.real(values(np.linalg, a) * w)))(a)
    want = jax.grad(lambda a: jnp.sum(jnp.real(jax_values(a) * w)))(a)
    tol = 1e-7
    assert_close(got, want, tol, "grad")
    t = weights(rng, a)
    assert_close(
        tg.jvp(lambda a: values(np.linalg, a), (a,), (t,))[1],
        jax.jvp(jax_values, (a,), (t,))[1],
        tol,
        "jvp",
    )


@given(data=st.data())
def test_eig_eigenvectors(data):
    # |v|^2 and v v^H do not depend on the phase; the eigenvector rule (unit length,
    # Im(v^H dv)_ii = 0, as PyTorch) against finite differences. LAPACK's order of the
    # eigenvalues can change within a finite-difference step, so each quantity is summed over
    # the eigenpairs, weighted by a smooth function of the eigenvalue: order-free too.
    (a,), _, _, rng = draw_case(data, "eig", (np.float64, np.complex128))

    def f(a):
        vals, vecs = np.linalg.eig(a)
        modulus2 = np.real(vecs * np.conj(vecs))  # smooth (|v| has a kink at 0)
        outer = (vecs * vals[..., None, :]) @ np.conj(np.swapaxes(vecs, -1, -2))
        return np.sum(vals**2, -1), np.sum(modulus2 * np.real(vals)[..., None, :], -1), outer

    check_grads(f, (a,), order=1, atol=1e-5, rtol=1e-5)


def _hermitian_direction():
    rng = np.random.default_rng(0)
    a = hermitian(rng, (), 3, np.complex128, lo=0.5)
    t = weights(rng, a)
    return a, t, _hermitian_part(np.linalg, t)  # eigh's convention: f(a) acts as f(herm(a))


def test_hermitian_svd_differentiates_the_hermitian_part():
    a, t, t_h = _hermitian_direction()

    def reconstruct(a):
        u, s, vh = np.linalg.svd(a, hermitian=True)
        return (u * s[..., None, :]) @ vh

    assert_close(tg.jvp(reconstruct, (a,), (t,))[1], t_h, 1e-8, "u diag(s) vh")


def test_hermitian_pinv_differentiates_by_the_general_formula_as_pytorch():
    # PyTorch's pinv(hermitian=True) is differentiated as pinv (tests/shim checks its numbers)
    a, t, _ = _hermitian_direction()
    p = np.linalg.inv(a)
    got = tg.jvp(lambda a: np.linalg.pinv(a, hermitian=True), (a,), (t,))[1]
    assert_close(got, -p @ t @ p, 1e-8, "pinv")


# -- vmap against a loop -------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(CASES))
@settings(max_examples=2)
@given(data=st.data())
def test_vmap_against_a_loop(name, data):
    # the batch axis at the front, at the end, or in the middle of the matrix axes
    args, call, _, _ = draw_case(data, name, stack=(3,), n=2, stacked_lstsq=True)
    where = data.draw(st.sampled_from([0, -1, 1]), label="batch axis")
    # solve's `b` may have no stack axis: not batched (None)
    axes = tuple(where % np.ndim(x) if np.shape(x)[0] == 3 else None for x in args)
    batched = tuple(x if ax is None else np.moveaxis(x, 0, ax) for x, ax in zip(args, axes))
    got = tg.vmap(lambda *a: call(np.linalg, *a), in_axes=axes)(*batched)
    loop = [call(tla, *(x if ax is None else x[k] for x, ax in zip(args, axes))) for k in range(3)]
    want = tg.tree.map(lambda *xs: np.stack([np.asarray(x) for x in xs]), *loop)
    assert_bitwise_equal(got, want, f"{name}: vmap(in_axes={axes}) against a loop")


# -- second derivatives against JAX -------------------------------------------------------------


@pytest.mark.parametrize("name", ["slogdet", "inv", "solve", "cholesky", "eigh", "det"])
@settings(max_examples=2)
@given(data=st.data())
def test_second_derivatives_against_jax(name, data):
    # forward over reverse (the Hessian applied to a tangent) and reverse over reverse (the
    # gradient of <grad, v>), for every argument at once; eigh: eigenvalues and |U|^2.
    # complex128 (its rules are the real ones plus conjugates; test_real_hessians_against_jax
    # and tests/primitives/test_rules.py's order-2 finite differences cover float64)
    args, _, invariant, rng = draw_case(data, name, dtypes=(np.complex128,), **_JAX)
    ws = [weights(rng, o) for o in invariant(np.linalg, *args)]
    argnums = tuple(range(len(args)))
    ours = tg.grad(_loss(invariant, np.linalg, np, ws), argnums)
    theirs = jax.grad(_loss(invariant, jnp.linalg, jnp, ws), argnums)
    tangents = tuple(weights(rng, a) for a in args)
    assert_close(
        tg.jvp(ours, args, tangents)[1], jax.jvp(theirs, args, tangents)[1], 1e-7, "jvp of grad"
    )
    vs = tuple(weights(rng, a) for a in args)

    def paired(grad, xp):
        return lambda *a: sum(xp.sum(xp.real(g * v)) for g, v in zip(grad(*a), vs))

    assert_close(
        tg.grad(paired(ours, np), argnums)(*args),
        jax.grad(paired(theirs, jnp), argnums)(*args),
        1e-7,
        "grad of grad",
    )


@pytest.mark.parametrize("name", ["slogdet", "inv", "cholesky", "eigh", "det"])
def test_real_hessians_against_jax(name):
    # tg.hessian against jax.hessian, with the invariants of the JAX tests above
    rng = np.random.default_rng(0)
    (a,), _, invariant = CASES[name](_Draws(), rng, (), 3, np.float64, None, None)
    ws = [weights(rng, o) for o in invariant(np.linalg, a)]
    got = tg.hessian(_loss(invariant, np.linalg, np, ws))(a)
    want = jax.hessian(_loss(invariant, jnp.linalg, jnp, ws))(a)
    assert_close(got, want, 1e-8, "hessian")
    if name == "slogdet":  # closed form: d2 log|det| [E_ij, E_kl] = -inv_jk inv_li
        inv = np.linalg.inv(a)
        assert_close(got, -ws[1] * np.einsum("jk,li->ijkl", inv, inv), 1e-10, "closed form")


class _Draws:
    """`data` for a case outside hypothesis: upper=True, UPLO='L', every other draw False."""

    def draw(self, strategy, label=None):
        return {"UPLO": "L", "upper": True}.get(label, False)


# -- documented corner cases ---------------------------------------------------------------------


def _adjugate(a):
    """Cofactors: adj(a)_ji = (-1)^(i+j) det(a without row i and column j)."""
    n = a.shape[-1]
    adj = np.zeros_like(a)
    for i in range(n):
        for j in range(n):
            minor = np.delete(np.delete(a, i, -2), j, -1)
            adj[..., j, i] = (-1) ** (i + j) * (np.linalg.det(minor) if n > 1 else 1.0)
    return adj


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("rank_drop", [1, 2])
def test_det_gradient_at_a_singular_matrix_is_the_adjugate(dtype, rank_drop):
    rng = np.random.default_rng(rank_drop)
    n = 4
    a = rectangular(rng, (), n, n, dtype)
    u, s, vh = np.linalg.svd(a)
    s[n - rank_drop :] = 0
    a = ((u * s) @ vh).astype(dtype)  # rank n - 1 (adjugate of rank 1) or n - 2 (adjugate 0)
    for grad in (
        tg.grad(lambda a: np.real(np.linalg.det(a))),
        tg.jit(tg.grad(lambda a: np.real(np.linalg.det(a)))),
    ):
        g = grad(a)
        assert np.all(np.isfinite(g))
        assert_close(g, _adjugate(a).T, 1e-10, "grad of det = adj(a)^T")
    if dtype == np.float64:
        torch = pytest.importorskip("torch")
        t = torch.tensor(a, requires_grad=True)
        torch.linalg.det(t).backward()
        assert_close(g, t.grad.numpy(), 1e-10, "torch.linalg.det's gradient")


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("shape", [(4, 2), (2, 4), (2, 3, 1)])
def test_svd_full_matrices_complement_projector(dtype, shape):
    # the extra columns of u (rows of vh) are any basis of the complement: their projector is
    # a function of `a`, and its derivative is checked against finite differences
    a = rectangular(np.random.default_rng(0), shape[:-2], *shape[-2:], dtype)
    k = min(shape[-2:])

    def projectors(a):
        u, s, vh = np.linalg.svd(a, full_matrices=True)
        u_perp, v_perp = u[..., :, k:], np.conj(np.swapaxes(vh[..., k:, :], -1, -2))
        return (
            u_perp @ np.conj(np.swapaxes(u_perp, -1, -2)),
            v_perp @ np.conj(np.swapaxes(v_perp, -1, -2)),
        )

    check_grads(projectors, (a,), order=1, atol=1e-6, rtol=1e-6)
