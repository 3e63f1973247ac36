"""`torch.linalg` and `torch.fft` on the shim's tensors, against PyTorch (`run_both`).

Every scenario runs the same lines in tracegrad.torch and torch, and compares values, dtypes,
`requires_grad` and the leaves' `.grad` (up to tolerance: torch's LAPACK calls are not NumPy's).
Losses of eigenvectors and singular vectors are invariant under their sign and phase freedom
(weights on |V|**2, projectors), so both libraries' gradients are the same function. Complex
inputs check the shim's conjugate-Wirtinger `.grad`. Bad input: PyTorch's error type and message.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad.torch
import tracegrad.torch.fft
import tracegrad.torch.linalg
from tests.shim.torch_oracle import (
    attempt,
    caught,
    run_both,
    torch_one_thread,  # noqa: F401 - the `torch` fixture
)

pytest.importorskip("torch")

RNG = np.random.default_rng(15)
TOL = {"float64": (1e-7, 1e-9), "float32": (2e-3, 2e-4)}


def _matrix(*shape, complex_=False, shift=0.0):
    a = RNG.standard_normal(shape)
    if complex_:
        a = a + 1j * RNG.standard_normal(shape)
    return a + shift * np.eye(shape[-1]) if shift else a


def _spd(*batch, n, complex_=False):
    """Hermitian positive-definite n x n matrices with separated eigenvalues (1, 2, ..., n
    plus a little)."""
    q, _ = np.linalg.qr(_matrix(*batch, n, n, complex_=complex_))
    w = np.arange(1.0, n + 1) + 0.1 * RNG.random((*batch, n))
    return (q * w[..., None, :]) @ np.conj(np.swapaxes(q, -1, -2))


A3 = _matrix(3, 3, shift=3.0)
AB = _matrix(2, 3, 3, shift=3.0)
R43 = _matrix(4, 3)
R35 = _matrix(2, 3, 5)
S4 = _spd(n=4)
SB = _spd(2, n=3)
C3 = _matrix(3, 3, complex_=True, shift=3.0)
CS = _spd(n=3, complex_=True)


def _leaf(lib, value, dtype):
    """A leaf of `value` as `dtype` (a NumPy name) requiring grad."""
    return lib.tensor(
        np.asarray(value).astype(dtype), dtype=getattr(lib, dtype), requires_grad=True
    )


def _weights(lib, t, seed=0):
    """Fixed real weights shaped like `t`, of its real dtype."""
    w = np.random.default_rng(seed).random(tuple(t.shape)) + 0.5
    real = {"complex64": "float32", "complex128": "float64"}.get(_name(t.dtype), _name(t.dtype))
    return lib.tensor(w.astype(real), dtype=getattr(lib, real))


def _name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _weighted(lib, outs):
    """A real loss of tensors: sum(w * |t|**2) for complex ones, sum(w * t) for real ones."""
    total = 0
    for i, t in enumerate(outs):
        w = _weights(lib, t, seed=i)
        total = total + ((t.abs() ** 2) * w if t.is_complex() else t * w).sum()
    return total


def _check(scenario_of_lib, inputs, dtype):
    """Run `scenario_of_lib(lib, *leaves)` in both libraries; compare outputs and `.grad`."""
    rtol, atol = TOL[_name(dtype).replace("complex128", "float64").replace("complex64", "float32")]

    def scenario(lib):
        leaves = [_leaf(lib, x, dtype) for x in inputs]
        outs = scenario_of_lib(lib, *leaves)
        outs = tuple(outs) if isinstance(outs, tuple) else (outs,)
        _weighted(lib, [o for o in outs if o.requires_grad]).backward()
        return outs, tuple(x.grad for x in leaves)

    run_both(scenario, rtol=rtol, atol=atol)


# -- torch.linalg: values and gradients --------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_inverses_and_determinants(dtype):
    _check(lambda lib, a: lib.linalg.inv(a), [AB], dtype)
    _check(lambda lib, a: lib.linalg.det(a), [AB], dtype)
    _check(lambda lib, a: lib.linalg.slogdet(a), [AB * np.array([1, -1])[:, None, None]], dtype)
    _check(lambda lib, a: lib.linalg.pinv(a), [R35], dtype)
    _check(lambda lib, a: lib.linalg.pinv(a, rtol=0.1), [R43], dtype)
    _check(lambda lib, a: lib.linalg.pinv(a, hermitian=True), [S4], dtype)


@given(
    batch_a=st.lists(st.integers(1, 3), max_size=2),
    batch_b=st.lists(st.integers(1, 3), max_size=3),
    vector=st.booleans(),
    k=st.integers(1, 2),
)
def test_solve_right_hand_side_rule(batch_a, batch_b, vector, k):
    """Which B is a batch of vectors, and which batches broadcast: the same shapes (or the same
    error) as torch for random batch shapes of A and B."""
    rng = np.random.default_rng(len(batch_a) + 3 * len(batch_b))  # not the shared RNG
    a = rng.standard_normal((*batch_a, 3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((*batch_b, 3) if vector else (*batch_b, 3, k))

    def scenario(lib):
        return attempt(lib.linalg.solve, lib.tensor(a), lib.tensor(b))

    run_both(scenario, rtol=1e-8, atol=1e-10, warns=False)


def test_slogdet_named_and_singular():
    def scenario(lib):
        result = lib.linalg.slogdet(lib.tensor(np.ones((3, 3))))
        return result.sign, result.logabsdet, result[1]

    run_both(scenario)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_solve_matrix_and_vector_right_hand_sides(dtype):
    b3, b23, b32 = RNG.standard_normal(3), RNG.standard_normal((2, 3)), RNG.standard_normal((3, 2))
    _check(lambda lib, a, b: lib.linalg.solve(a, b), [A3, b3], dtype)  # a vector
    _check(lambda lib, a, b: lib.linalg.solve(a, b), [A3, b32], dtype)  # a matrix
    _check(lambda lib, a, b: lib.linalg.solve(a, b), [AB, b23], dtype)  # a batch of vectors
    _check(lambda lib, a, b: lib.linalg.solve(a, b), [AB, b32], dtype)  # broadcast matrix
    _check(lambda lib, a, b: lib.linalg.solve(a, b), [AB, b3], dtype)  # broadcast vector
    _check(lambda lib, a, b: lib.linalg.solve(a, b), [AB, RNG.standard_normal((4, 1, 3, 2))], dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cholesky_and_eigh(dtype):
    _check(lambda lib, a: lib.linalg.cholesky(a), [SB], dtype)
    _check(lambda lib, a: lib.linalg.cholesky(a, upper=True), [S4], dtype)
    for uplo in ("L", "U"):
        _check(lambda lib, a, uplo=uplo: lib.linalg.eigvalsh(a, UPLO=uplo), [SB], dtype)
        # |V|**2 does not depend on the eigenvectors' signs
        _check(lambda lib, a, uplo=uplo: _abs2(lib.linalg.eigh(a, UPLO=uplo)), [S4], dtype)


def _abs2(pair):
    values, vectors = pair
    return values, vectors.abs() ** 2


def _invariant_svd(usv):
    """S, |U|**2, |Vh|**2 and the projector U Vh: free of the singular vectors' phases."""
    u, s, vh = usv
    k = s.shape[-1]
    return s, u.abs() ** 2, vh.abs() ** 2, u[..., :k] @ vh[..., :k, :]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_svd_qr(dtype):
    _check(lambda lib, a: _invariant_svd(lib.linalg.svd(a, full_matrices=False)), [R35], dtype)
    _check(lambda lib, a: lib.linalg.svdvals(a), [R35], dtype)
    _check(lambda lib, a: lib.linalg.svd(a)[1], [R43], dtype)  # full_matrices=True
    _check(lambda lib, a: lib.linalg.qr(a), [R43], dtype)
    _check(lambda lib, a: lib.linalg.qr(a, mode="complete"), [A3], dtype)


def test_svd_full_matrices_shapes_and_qr_r():
    def scenario(lib):
        a = lib.tensor(R43)
        u, s, vh = lib.linalg.svd(a)
        q, r = lib.linalg.qr(a, mode="r")
        return tuple(u.shape), tuple(vh.shape), tuple(q.shape), r.abs(), lib.linalg.svd(a).S

    run_both(scenario, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("ord", [None, "fro", "nuc", 2, -2, 1, -1, float("inf"), -float("inf")])
def test_matrix_norms(dtype, ord):
    _check(lambda lib, a: lib.linalg.norm(a, ord=ord), [R43], dtype)
    _check(lambda lib, a: lib.linalg.norm(a, ord=ord, dim=(2, 0), keepdim=True), [R35], dtype)
    if ord is not None:
        _check(lambda lib, a: lib.linalg.matrix_norm(a, ord=ord), [R35], dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, -1, float("inf"), -float("inf")])
def test_vector_norms(dtype, ord):
    _check(lambda lib, a: lib.linalg.vector_norm(a, ord=ord), [R35], dtype)
    _check(lambda lib, a: lib.linalg.vector_norm(a, ord, dim=(0, 2), keepdim=True), [R35], dtype)
    _check(lambda lib, a: lib.linalg.norm(a, ord=ord, dim=1), [R35], dtype)
    _check(lambda lib, v: lib.linalg.norm(v, ord=ord), [R35[0, 0]], dtype)


def test_norms_default_dtype_and_zero():
    def scenario(lib):
        a = lib.tensor(R35.astype(np.float32), requires_grad=True)
        zero = lib.zeros(4, requires_grad=True)
        out = lib.linalg.norm(a, dtype=lib.float64), lib.linalg.vector_norm(zero)
        (out[0] + out[1]).backward()
        return (*out, lib.linalg.norm(a, keepdim=True), a.grad, zero.grad)

    run_both(scenario, rtol=1e-6)


def test_complex_inputs():
    for dtype in ("complex128", "complex64"):
        _check(lambda lib, a: lib.linalg.inv(a), [C3], dtype)
        _check(lambda lib, a: lib.linalg.det(a), [C3], dtype)
        _check(lambda lib, a: lib.linalg.slogdet(a).logabsdet, [C3], dtype)
        _check(lambda lib, a, b: lib.linalg.solve(a, b), [C3, C3[0]], dtype)
        _check(lambda lib, a: lib.linalg.cholesky(a), [CS], dtype)
        _check(lambda lib, a: _abs2(lib.linalg.eigh(a)), [CS], dtype)
        _check(lambda lib, a: _invariant_svd(lib.linalg.svd(a, False)), [C3], dtype)
        _check(lambda lib, a: lib.linalg.norm(a), [C3], dtype)
        _check(lambda lib, a: lib.linalg.matrix_norm(a, ord="nuc"), [C3], dtype)
        _check(lambda lib, a: lib.linalg.vector_norm(a, ord=3, dim=0), [C3], dtype)
        _check(lambda lib, a: lib.linalg.pinv(a), [C3], dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_eig_and_composites(dtype):
    # |V|**2 and the eigenvalues do not depend on the eigenvectors' phases
    _check(lambda lib, a: _abs2(lib.linalg.eig(a)), [A3], dtype)
    _check(lambda lib, a: lib.linalg.eigvals(a), [AB], dtype)
    _check(
        lambda lib, a: lib.linalg.eigvals(a),
        [C3],
        {"float64": "complex128", "float32": "complex64"}[dtype],
    )
    for n in (1, 2, 3, 5, -1, -3):
        _check(lambda lib, a, n=n: lib.linalg.matrix_power(a, n), [AB], dtype)
    _check(lambda lib, *m: lib.linalg.multi_dot(m), [R43[:, 0], R43, R35[0], R35[1].T], dtype)
    _check(lambda lib, *m: lib.linalg.multi_dot(m), [R35[0], R35[1].T], dtype)
    for p in (None, 2, -2, "nuc"):
        _check(lambda lib, a, p=p: lib.linalg.cond(a, p), [AB], dtype)
    _check(lambda lib, a: lib.linalg.cond(a), [R35], dtype)


@pytest.mark.parametrize("p", ["fro", 1, -1, float("inf")])
def test_cond_through_the_inverse(p, torch):
    """cond for these p is norm(A) * norm(inv(A)); torch 2.13's own cond backward fails for
    them (it changes inv's saved output in place), so the oracle is that product in torch."""
    ours = tracegrad.torch.tensor(AB, requires_grad=True)
    theirs = torch.tensor(AB, requires_grad=True)
    value = tracegrad.torch.linalg.cond(ours, p)
    norm = torch.linalg.matrix_norm
    expected = norm(theirs, p) * norm(torch.linalg.inv(theirs), p)
    value.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(value.detach().numpy(), expected.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-8)


def test_matrix_rank_and_power_of_integers():
    def scenario(lib):
        low = lib.tensor(R43[:, :1] @ R35[0, :1])  # rank 1, 4 x 5
        return (
            lib.linalg.matrix_rank(low),
            lib.linalg.matrix_rank(lib.tensor(R35)),
            lib.linalg.matrix_rank(low, atol=0.5),
            lib.linalg.matrix_rank(lib.tensor(R35), rtol=0.9),
            lib.linalg.matrix_rank(lib.tensor(S4), hermitian=True),
            lib.linalg.matrix_power(lib.arange(9).reshape(3, 3), 3),
        )

    run_both(scenario)


def test_grad_fn_names():
    def scenario(lib):
        a = lib.tensor(S4, requires_grad=True)
        outs = (
            lib.linalg.inv(a),
            lib.linalg.solve(a, a[0]),
            lib.linalg.det(a),
            lib.linalg.cholesky(a),
            lib.linalg.eigh(a)[0],
            lib.linalg.svd(a)[1],
            lib.linalg.qr(a)[0],
            lib.linalg.norm(a),
            lib.linalg.vector_norm(a, 3),
            lib.linalg.pinv(a),
            lib.fft.fft(a),
            lib.fft.rfft(a),
            lib.fft.irfft(a),
            lib.fft.fftn(a),
        )
        return tuple(o.grad_fn.name() for o in outs)

    run_both(scenario)


def test_second_derivatives(torch):
    """Hessian-vector products through slogdet, inv, solve, cholesky and eigvalsh."""

    def scenario(lib):
        s = lib.tensor(S4, requires_grad=True)
        b = lib.tensor(S4[0], requires_grad=True)
        f = lib.linalg.slogdet(s).logabsdet + lib.linalg.inv(s).sum()
        f = f + lib.linalg.solve(s, b).sum() + lib.linalg.cholesky(s).sum()
        f = f + (lib.linalg.eigvalsh(s) ** 3).sum()
        gs, gb = lib.autograd.grad(f, (s, b), create_graph=True)
        return lib.autograd.grad((gs**2).sum() + (gb**2).sum(), (s, b))

    run_both(scenario, rtol=1e-8, atol=1e-10)


def test_inverse_is_inv(torch):
    """`tracegrad.torch.linalg.inverse` is `torch.inverse` (re-exported at the top level)."""
    ours = tracegrad.torch.tensor(A3, requires_grad=True)
    theirs = torch.tensor(A3, requires_grad=True)
    tracegrad.torch.linalg.inverse(ours).sum().backward()
    torch.inverse(theirs).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-10)


def test_top_level_names_and_methods():
    def scenario(lib):
        x = lib.tensor(A3, requires_grad=True)
        (x.det() + x.inverse().sum() + lib.det(x) + lib.inverse(x).sum()).backward()
        return x.grad, lib.linalg.norm(x), lib.fft.rfft(x)

    run_both(scenario, rtol=1e-10)


# -- torch.linalg: bad input -------------------------------------------------------------------


def _same_error(call):
    """`call(lib)` raises the same error type (by name) and first line in both libraries."""
    run_both(lambda lib: attempt(call, lib), warns=False)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.linalg.inv(lib.ones(3, 3, dtype=lib.int64)),
        lambda lib: lib.linalg.inv(lib.ones(3, 3, dtype=lib.float16)),
        lambda lib: lib.linalg.inv(lib.ones(3, 4)),
        lambda lib: lib.linalg.det(lib.ones(3)),
        lambda lib: lib.linalg.cholesky(lib.ones(2, 3)),
        lambda lib: lib.linalg.svd(lib.ones(3)),
        lambda lib: lib.linalg.svd(lib.ones(3, 3), driver="gesvd"),
        lambda lib: lib.linalg.eigh(lib.eye(3), UPLO="X"),
        lambda lib: lib.linalg.qr(lib.ones(3, 4), mode="raw"),
        lambda lib: lib.linalg.solve(lib.eye(3), lib.ones(4)),
        lambda lib: lib.linalg.solve(lib.eye(3), lib.ones(2, 4)),
        lambda lib: lib.linalg.solve(lib.eye(3), lib.ones(3, dtype=lib.float64)),
        lambda lib: lib.linalg.solve(lib.eye(3).expand(2, 3, 3), lib.ones(4, 3, 1)),
        lambda lib: lib.linalg.pinv(lib.ones(3)),
        lambda lib: lib.linalg.norm(lib.ones(2, 3, 4), ord=2),
        lambda lib: lib.linalg.norm(lib.ones(3, 4), dim=(0, 1, 1)),
        lambda lib: lib.linalg.norm(lib.ones(4), ord="fro"),
        lambda lib: lib.linalg.matrix_norm(lib.ones(3, 4), ord=3),
        lambda lib: lib.linalg.matrix_norm(lib.ones(3, 4), dim=(0, 0)),
        lambda lib: lib.linalg.matrix_norm(lib.ones(3, 4), dim=(0,)),
        lambda lib: lib.linalg.vector_norm(lib.ones(3), ord="fro"),
        lambda lib: lib.linalg.vector_norm(lib.ones(3, 4), dim=(0, 0)),
        lambda lib: lib.linalg.vector_norm(lib.ones(3, 4), dim=5),
        lambda lib: lib.linalg.vector_norm(lib.ones(3), dtype=lib.complex64),
        lambda lib: lib.linalg.vector_norm(lib.ones(3, dtype=lib.int64)),
        lambda lib: lib.linalg.eig(lib.ones(3, 4)),
        lambda lib: lib.linalg.matrix_power(lib.ones(3, 4), 2),
        lambda lib: lib.linalg.matrix_power(lib.ones(3, 3), 2.0),
        lambda lib: lib.linalg.matrix_power(lib.ones(3, 3, dtype=lib.int64), -2),
        lambda lib: lib.linalg.multi_dot([lib.ones(3)]),
        lambda lib: lib.linalg.multi_dot([lib.ones(3), lib.ones(4, 4)]),
        lambda lib: lib.linalg.multi_dot([lib.ones(3), lib.ones(3, 4, 4)]),
        lambda lib: lib.linalg.multi_dot([lib.ones(3), lib.ones(3, 4, 4), lib.ones(4)]),
        lambda lib: lib.linalg.multi_dot([lib.ones(3, dtype=lib.complex64), lib.ones(3, 4)]),
        lambda lib: lib.linalg.cond(lib.ones(3, 4), 1),
        lambda lib: lib.linalg.matrix_rank(lib.ones(4)),
    ],
)
def test_bad_input_as_torch(call):
    _same_error(call)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.linalg.inv(lib.zeros(3, 3)),
        lambda lib: lib.linalg.solve(lib.zeros(2, 3, 3), lib.ones(3)),
        lambda lib: lib.linalg.cholesky(-lib.eye(3)),
    ],
)
def test_lapack_failures_raise_linalg_error(call, torch):
    """torch.linalg.LinAlgError (a RuntimeError) in both; the shim's is NumPy's class too."""
    assert issubclass(torch.linalg.LinAlgError, RuntimeError)
    with pytest.raises(torch.linalg.LinAlgError):
        call(torch)
    with pytest.raises(tracegrad.torch.linalg.LinAlgError) as info:
        call(tracegrad.torch)
    assert isinstance(info.value, RuntimeError | np.linalg.LinAlgError)
    assert str(info.value).startswith(caught(lambda: call(torch))[1].split(":")[0])


def test_refused_arguments():
    L, t = tracegrad.torch.linalg, tracegrad.torch.eye(3)
    with pytest.raises(NotImplementedError, match="left=False"):
        L.solve(t, t, left=False)
    with pytest.raises(NotImplementedError, match="atol"):
        L.pinv(t, atol=1e-3)
    with pytest.raises(NotImplementedError, match="out="):
        L.inv(t, out=t)
    with pytest.raises(NotImplementedError, match="out="):
        tracegrad.torch.fft.fft(t, out=t)


# -- torch.fft ---------------------------------------------------------------------------------

X46 = RNG.standard_normal((4, 6))
Z46 = X46 + 1j * RNG.standard_normal((4, 6))

_ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
_N_D = ["fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"]


@pytest.mark.parametrize(
    ("name", "dtype"),
    [
        (name, dtype)
        for name in _ONE_D
        for dtype in ("float64", "float32", "complex128", "complex64")
        if dtype.startswith("float") or name not in ("rfft", "ihfft")  # real input only
    ],
)
def test_one_dimensional_transforms(name, dtype):
    x = Z46 if dtype.startswith("complex") else X46
    for kwargs in ({}, {"n": 5, "dim": 0, "norm": "ortho"}, {"n": 8, "norm": "forward"}):
        _check(lambda lib, a, kw=kwargs: getattr(lib.fft, name)(a, **kw), [x], dtype)


@pytest.mark.parametrize(
    ("name", "dtype"),
    [
        (name, dtype)
        for name in _N_D
        for dtype in ("float64", "float32", "complex64")
        if dtype.startswith("float") or not name.startswith("rfft")  # real input only
    ],
)
def test_n_dimensional_transforms(name, dtype):
    x = (Z46 if dtype.startswith("complex") else X46)[None].repeat(2, 0)
    for kwargs in ({}, {"s": (3, -1)}, {"s": (5, 4), "dim": (2, 0), "norm": "ortho"}):
        if name.endswith("2") and "dim" in kwargs:
            kwargs = {**kwargs, "dim": (-1, 0)}
        _check(lambda lib, a, kw=kwargs: getattr(lib.fft, name)(a, **kw), [x], dtype)


def test_fft_dtypes_and_edges():
    def scenario(lib):
        ints = lib.arange(6)
        return (
            lib.fft.fft(ints),
            lib.fft.rfftn(ints.reshape(2, 3)),
            lib.fft.fftn(lib.tensor(1.5)),
            lib.fft.fftn(lib.ones(2, 3), dim=()),
            lib.fft.fftn(lib.ones(2, 3, dtype=lib.complex64, requires_grad=True), dim=()),
            lib.fft.fftn(lib.ones(2, 3, requires_grad=True), dim=()).grad_fn.name(),
            lib.fft.irfftn(lib.ones(2, 3, dtype=lib.complex64), s=(4, -1)),
            lib.fft.fftshift(lib.arange(10.0).reshape(2, 5)),
            lib.fft.ifftshift(lib.arange(10.0).reshape(2, 5), dim=1),
            lib.fft.fftfreq(7, 0.3),
            lib.fft.rfftfreq(8, dtype=lib.float64),
            lib.fft.fftfreq(4, requires_grad=True),
        )

    run_both(scenario, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib: lib.fft.fft(lib.ones(4), norm="bad"),
        lambda lib: lib.fft.fft(lib.ones(4), n=0),
        lambda lib: lib.fft.fft(lib.ones(4, 6), dim=2),
        lambda lib: lib.fft.fft(lib.tensor(1.0)),
        lambda lib: lib.fft.fft(lib.ones(4, dtype=lib.float16)),
        lambda lib: lib.fft.irfft(lib.ones(1, dtype=lib.complex64)),
        lambda lib: lib.fft.rfft(lib.ones(4, dtype=lib.complex64)),
        lambda lib: lib.fft.rfftn(lib.ones(4, dtype=lib.complex64)),
        lambda lib: lib.fft.fftn(lib.ones(4, 6), dim=(0, 0)),
        lambda lib: lib.fft.fftn(lib.ones(4, 6), s=(3, 4, 5)),
        lambda lib: lib.fft.fftn(lib.ones(4, 6), s=(3, 4), dim=(0,)),
        lambda lib: lib.fft.rfftn(lib.ones(4, 6), dim=()),
        lambda lib: lib.fft.irfft2(lib.ones(4, 6, dtype=lib.complex64), dim=()),
        lambda lib: lib.fft.rfft2(lib.ones(4, 6, dtype=lib.complex64)),
        lambda lib: lib.fft.ihfft(lib.ones(4, dtype=lib.complex64)),
        lambda lib: lib.fft.fft2(lib.ones(3)),
    ],
)
def test_fft_bad_input_as_torch(call):
    _same_error(call)
