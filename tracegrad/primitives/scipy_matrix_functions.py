"""SciPy's matrix functions and Sylvester-type solvers as primitives: expm, expm_frechet,
sqrtm, logm, solve_sylvester, solve_continuous_lyapunov and solve_banded, each value SciPy's
own call (SciPy 1.17 loops over a stack of matrices itself; solve_banded's stack is looped here).

The derivative of a matrix function is its Fréchet derivative, and each rule is an instance of
a primitive of this family, so derivatives of any order stay closed: expm's is SciPy's
expm_frechet, whose own derivative is expm_frechet of the 2n x 2n block matrix
[[A, E], [0, A]]; sqrtm's is a Sylvester equation with the square root; logm's is logm of the
block matrix; the solvers' are solves with the same coefficients (banded: the transposed band
storage, built with tracegrad's slices). Derivatives are for real dtypes; complex values work.

Over 600 lines: the matrix functions and the solvers differentiate through each other (sqrtm's
derivative is a Sylvester solve; every rule shares the stacking, block-matrix and Toeplitz
helpers), so splitting them would only trade this file for a cycle of imports.
"""

from __future__ import annotations

import functools
import weakref

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import READS_ALL, READS_INPUTS, READS_OUTPUT, Primitive, rule_for
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import series
from tracegrad.primitives.broadcasting import broadcast_to
from tracegrad.primitives.einsum import einsum
from tracegrad.primitives.linalg._common import fit, matmul, mT, mul
from tracegrad.primitives.products import cast_like
from tracegrad.primitives.scipy_linalg._common import (
    _check_square,
    _column,
    _emit,
    _neg,
    _real_only,
    _real_series,
    _sl,
    _uncolumn,
)
from tracegrad.primitives.shape import concatenate, pad
from tracegrad.primitives.slicing import slice_static
from tracegrad.primitives.views import expand_dims, move_to_front, squeeze


@functools.cache
def _dtype(name: str, *dtypes) -> np.dtype:
    """The dtype SciPy's `name` returns for these input dtypes, found once per signature on a
    2 x 2 problem whose answer is real (2 I); solve_banded's band is one row of twos."""
    args = [np.eye(2, dtype=d) * np.asarray(2, d) for d in dtypes]
    if name == "solve_banded":
        return _sl().solve_banded((0, 0), args[0][:1] + args[0][1:], args[1][0]).dtype
    out = getattr(_sl(), name)(*args)
    return (out[-1] if isinstance(out, tuple) else out).dtype


def _tangent(t, out):
    """A tangent in the output's dtype (SciPy computes some float32 results in float64)."""
    return None if t is None else cast_like(t, out)


def _stacked(prim, vector_arg: int | None = None):
    """The batching rule of an operation on equal stacks of matrices: every input gets the
    batch axis in front (an unbatched one broadcast to it), so the batched call is one call on
    a stack, which SciPy loops over; a 1-D right-hand side (`vector_arg`, of one matrix)
    becomes one column. Holds the primitive weakly."""
    ref = weakref.ref(prim)

    def batch(args, dims, **params):
        size = next(shape_of(x)[d] for x, d in zip(args, dims) if d is not None)
        front = [
            broadcast_to(expand_dims(x, (0,)), (size, *shape_of(x)))
            if d is None
            else move_to_front(x, d)
            for x, d in zip(args, dims)
        ]
        vector = vector_arg is not None and len(shape_of(front[vector_arg])) == 2
        if vector:
            front[vector_arg] = expand_dims(front[vector_arg], (2,))
        out = bind(ref(), *front, **params)
        if vector:
            return squeeze(out, (2,)), 0
        return out, (tuple(0 for _ in out) if isinstance(out, tuple | list) else 0)

    return batch


# -- block matrices: [[p, q], [0, p]], the Fréchet derivative's home -----------------------------


def _block(p, q):
    """`[[p, q], [0, p]]` for each matrix of a stack (`q` may be None: zeros)."""
    shape, axis = shape_of(p), len(shape_of(p)) - 1
    zeros = np.zeros(shape, dtype_of(p))
    q = zeros if q is None else q
    top = concatenate([p, q], axis)
    return concatenate([top, concatenate([zeros, p], axis)], axis - 1)


def _quarter(m, row: int, col: int):
    """Block (`row`, `col`) of each matrix of a stack of 2n x 2n matrices."""
    shape = shape_of(m)
    n = shape[-1] // 2
    lead = (0,) * (len(shape) - 2)
    starts = (*lead, row * n, col * n)
    return slice_static(m, starts, (*shape[:-2], row * n + n, col * n + n))


# -- Taylor series: a matrix function of the block Toeplitz matrix of the input's series -------
# T = [[A_0, A_1, ..., A_K], [0, A_0, ..., A_{K-1}], ..., [0, ..., A_0]] is A(t) = sum A_k t^k
# in the algebra of matrices over R[t] / t^(K+1), so f(T) is the same Toeplitz matrix of the
# series of f(A(t)): its first block row holds the Taylor coefficients (f analytic at A's
# spectrum, which is T's), one call of f on a (K + 1) n matrix.


def _toeplitz(u):
    """The block upper-triangular Toeplitz matrix of a full series (None for zero terms)."""
    shape = shape_of(u[0])
    axis, zeros = len(shape) - 1, np.zeros(shape, dtype_of(u[0]))
    u = [zeros if t is None else cast_like(t, u[0]) for t in u]
    rows = [concatenate([zeros] * r + u[: len(u) - r], axis) for r in range(len(u))]
    return concatenate(rows, axis - 1)


def _first_row(m, n: int, k: int) -> list:
    """Blocks 1..k (n x n each) of the first block row of each matrix of a stack."""
    shape = shape_of(m)
    lead = (0,) * (len(shape) - 2)
    return [
        slice_static(m, (*lead, 0, j * n), (*shape[:-2], n, j * n + n)) for j in range(1, k + 1)
    ]


def _matfun_taylor(name: str, fn):
    def rule(primals, series_in, *, out):
        ((a,), (s,)) = primals, series_in
        _real_series(name, series_in)
        big = fn(_toeplitz([_tangent(a, out), *s]))  # in the result's precision
        return [_tangent(t, out) for t in _first_row(big, shape_of(a)[-1], len(s))]

    return rule


# -- expm ---------------------------------------------------------------------------------------


def expm(a):
    """`scipy.linalg.expm(a)`."""
    return bind(expm_p, a)


def _expm_shape(a: Aval):
    _check_square("expm", a)
    return Aval(a.shape, _dtype("expm", a.dtype))


def _expm_jvp(primals, tangents, *, out):
    ((a,), (a_dot,)) = primals, tangents
    _real_only("expm", a_dot)
    if a_dot is None:
        return None
    return _tangent(expm_frechet(a, a_dot, check_finite=False)[1], out)


def _expm_vjp(bar, a, *, out):
    # the adjoint of A's Fréchet derivative L(A, .) is L(A^T, .) for a real A
    _real_only("expm", a, bar)
    if not carries_derivative(a):
        return (None,)
    return (fit(expm_frechet(mT(a), bar, check_finite=False)[1], a),)


expm_p = Primitive(
    "scipy.linalg.expm",
    impl=lambda a: _sl().expm(a),
    shape=_expm_shape,
    jvp=_expm_jvp,
    vjp=_expm_vjp,
    batch=rule_for(_stacked),
    emit=lambda a: _emit("expm", (a,)),
    vjp_reads=READS_INPUTS,
    taylor=_matfun_taylor("expm", expm),
)

# -- expm_frechet: (expm(A), L(A, E)) -----------------------------------------------------------


def expm_frechet(a, e, check_finite=True):
    """`scipy.linalg.expm_frechet(a, e)`: `(expm(a), L(a, e))`, both SciPy's (its expm part
    comes from the Fréchet algorithm, which may differ from `expm`'s in the last bits)."""
    return tuple(bind(expm_frechet_p, a, e, check_finite=bool(check_finite)))


def _expm_frechet_shape(a: Aval, e: Aval, *, check_finite):
    _check_square("expm_frechet", a)
    if e.shape != a.shape:
        raise ValueError(
            f"expm_frechet: A {a.shape} and E {e.shape} must be square matrices of one shape"
        )
    dtype = _dtype("expm_frechet", a.dtype, e.dtype)
    return Aval(a.shape, dtype), Aval(a.shape, dtype)


def _expm_frechet_jvp(primals, tangents, *, out, check_finite):
    (a, e), (a_dot, e_dot) = primals, tangents
    _real_only("expm_frechet", a_dot, e_dot)
    if a_dot is None and e_dot is None:
        return None, None
    if a_dot is None:  # L is linear in E
        return None, _tangent(expm_frechet(a, e_dot, check_finite=False)[1], out[1])
    # expm([[A, E], [0, A]]) = [[expm(A), L(A, E)], [0, expm(A)]]: the tangent of both is the
    # Fréchet derivative of the block matrix, one expm_frechet of size 2n
    big = expm_frechet(_block(a, e), _block(a_dot, e_dot), check_finite=False)[1]
    return _tangent(_quarter(big, 0, 0), out[0]), _tangent(_quarter(big, 0, 1), out[1])


def _expm_frechet_vjp(bar, a, e, *, out, check_finite):
    x_bar, l_bar = bar
    _real_only("expm_frechet", a, x_bar, l_bar)
    if l_bar is None:
        if x_bar is None or not carries_derivative(a):
            return None, None
        return fit(expm_frechet(mT(a), x_bar, check_finite=False)[1], a), None
    # the adjoint of the jvp: Z = L(M^T, [[x_bar, l_bar], [0, 0]]), M = [[A, E], [0, A]];
    # A's cotangent collects Z's two diagonal blocks, E's is Z's top-right one
    ndim = len(shape_of(a))
    if x_bar is None:
        x_bar = np.zeros(shape_of(l_bar), dtype_of(l_bar))
    cots = concatenate([x_bar, l_bar], ndim - 1)
    cots = pad(cots, [(0, 0)] * (ndim - 2) + [(0, shape_of(a)[-1]), (0, 0)])
    z = expm_frechet(mT(_block(a, e)), cots, check_finite=False)[1]
    a_bar = fit(_quarter(z, 0, 0) + _quarter(z, 1, 1), a) if carries_derivative(a) else None
    e_bar = fit(_quarter(z, 0, 1), e) if carries_derivative(e) else None
    return a_bar, e_bar


def _expm_frechet_taylor(primals, series_in, *, out, check_finite):
    # both outputs are blocks of expm([[A, E], [0, A]]): the series of that 2n x 2n expm
    (a, e), (sa, se) = primals, series_in
    _real_series("expm_frechet", series_in)
    k = series.order_of(series_in)
    sa, se = sa or [None] * k, se or [None] * k
    big = [_block(a, e)] + [
        None if p is None and q is None else _block(_zeros_or(p, a), q) for p, q in zip(sa, se)
    ]
    terms = _first_row(expm(_toeplitz(big)), 2 * shape_of(a)[-1], k)
    pick = [_quarter(t, 0, 0) for t in terms], [_quarter(t, 0, 1) for t in terms]
    return tuple([_tangent(t, o) for t in p] for p, o in zip(pick, out))


def _zeros_or(t, like):
    return np.zeros(shape_of(like), dtype_of(like)) if t is None else t


expm_frechet_p = Primitive(
    "scipy.linalg.expm_frechet",
    impl=lambda a, e, *, check_finite: tuple(_sl().expm_frechet(a, e, check_finite=check_finite)),
    shape=_expm_frechet_shape,
    jvp=_expm_frechet_jvp,
    vjp=_expm_frechet_vjp,
    batch=rule_for(_stacked),
    emit=lambda a, e, *, check_finite: [
        "import scipy.linalg as _scipy_linalg",
        f"tuple(_scipy_linalg.expm_frechet({a}, {e}, check_finite={check_finite!r}))",
    ],
    multiple_results=True,
    vjp_reads=READS_INPUTS,
    taylor=_expm_frechet_taylor,
)

# -- sqrtm and logm: real results only ----------------------------------------------------------


def _real_result(name: str, a, out):
    """SciPy returns a complex result for a real matrix with no real square root (logarithm),
    and its float32 logm is complex wherever float32 rounding leaves imaginary parts above its
    float64 tolerance; a traced value's dtype is fixed before its value is known, so a complex
    result of a real matrix is refused here."""
    dtype = np.asarray(a).dtype
    if dtype.kind != "c" and np.asarray(out).dtype.kind == "c":
        what = "square root" if name == "sqrtm" else "logarithm"
        why = (
            "SciPy's float32 logm keeps float32 rounding as imaginary parts: pass float64"
            if name == "logm" and dtype == np.float32
            else f"the matrix has no real {what} (an eigenvalue on the negative real axis)"
        )
        raise ValueError(
            f"scipy.linalg.{name}: SciPy's result for this real {dtype} matrix of shape "
            f"{np.shape(a)} is complex ({why}); a traced real matrix needs a real result, or "
            "pass a.astype(complex) (values only; complex derivatives are not supported)"
        )
    return out


def sqrtm_impl(a):
    """SciPy's sqrtm, refusing a complex result of a real matrix (see `_real_result`)."""
    return _real_result("sqrtm", a, _sl().sqrtm(a))


def logm_impl(a):
    """SciPy's logm, refusing a complex result of a real matrix (see `_real_result`).

    SciPy's logm estimates 1-norms with random probe vectors drawn from NumPy's global
    random state (`onenormest`), so two calls on the same matrix may differ in the last bits
    and each call moves the user's global stream. It runs here from a fixed seed, with the
    caller's state restored afterwards: the same bits every time (the interpreter and the
    generated code agree), and `np.random` untouched. A stack of matrices (SciPy's batches)
    runs matrix by matrix, each from the seed, so that a matrix gets its own bits whether it
    comes alone or in a stack (vmap's batching rule stacks them; SciPy's batch would carry the
    stream from one matrix to the next)."""
    state = np.random.get_state()
    try:
        if np.ndim(a) > 2 and np.size(a) > 0:
            a = np.asarray(a)
            out = np.stack([_seeded_logm(m) for m in a.reshape(-1, *a.shape[-2:])])
            out = out.reshape(a.shape[:-2] + out.shape[-2:])
        else:
            out = _seeded_logm(a)
    finally:
        np.random.set_state(state)
    return _real_result("logm", a, out)


def _seeded_logm(a):
    np.random.seed(0)
    return _sl().logm(a)


def sqrtm(a):
    """`scipy.linalg.sqrtm(a)` for a result of `a`'s kind (see `sqrtm_impl`)."""
    return bind(sqrtm_p, a)


def logm(a):
    """`scipy.linalg.logm(a)` for a result of `a`'s kind (see `logm_impl`)."""
    return bind(logm_p, a)


def _matfun_shape(name: str):
    def shape(a: Aval):
        _check_square(name, a)
        return Aval(a.shape, _dtype(name, a.dtype))

    return shape


def _sqrtm_jvp(primals, tangents, *, out):
    (a_dot,) = tangents
    _real_only("sqrtm", a_dot)
    if a_dot is None:
        return None
    # X X = A: X dX + dX X = dA, a Sylvester equation in the square root itself
    return _tangent(solve_sylvester(out, out, a_dot), out)


def _sqrtm_vjp(bar, a, *, out):
    _real_only("sqrtm", a, bar)
    if not carries_derivative(a):
        return (None,)
    x_t = mT(out)  # the adjoint of dA -> dX solves X^T S + S X^T = bar
    return (fit(solve_sylvester(x_t, x_t, bar), a),)


def _sqrtm_taylor(primals, series_in, *, out):
    # X X = A: X_0 X_k + X_k X_0 = A_k - sum_{i=1..k-1} X_i X_{k-i}, a Sylvester equation per
    # order with the primal square root
    (s,) = series_in
    _real_series("sqrtm", series_in)
    xs = [out]
    for k in range(1, len(s) + 1):
        known = series.total(
            matmul(xs[i], xs[k - i])
            for i in range(1, k)
            if xs[i] is not None and xs[k - i] is not None
        )
        r = series.add(_tangent(s[k - 1], out), None if known is None else _neg(known))
        xs.append(None if r is None else _tangent(solve_sylvester(out, out, r), out))
    return xs[1:]


def _logm_jvp(primals, tangents, *, out):
    ((a,), (a_dot,)) = primals, tangents
    _real_only("logm", a_dot)
    if a_dot is None:
        return None
    # logm([[A, E], [0, A]]) = [[logm(A), L(A, E)], [0, logm(A)]]: logm again, of size 2n
    return _tangent(_quarter(logm(_block(a, a_dot)), 0, 1), out)


def _logm_vjp(bar, a, *, out):
    # the adjoint of L(A, .) is L(A^T, .) (a function with a real power series, real A)
    _real_only("logm", a, bar)
    if not carries_derivative(a):
        return (None,)
    return (fit(_quarter(logm(_block(mT(a), cast_like(bar, a))), 0, 1), a),)


def _matfun_emit(name: str):
    def emit(a):
        module = "tracegrad.primitives.scipy_matrix_functions"
        return [f"import {module} as _tracegrad_matfun", f"_tracegrad_matfun.{name}_impl({a})"]

    return emit


sqrtm_p = Primitive(
    "scipy.linalg.sqrtm",
    impl=sqrtm_impl,
    shape=_matfun_shape("sqrtm"),
    jvp=_sqrtm_jvp,
    vjp=_sqrtm_vjp,
    batch=rule_for(_stacked),
    emit=_matfun_emit("sqrtm"),
    vjp_reads=READS_OUTPUT,
    taylor=_sqrtm_taylor,
)

logm_p = Primitive(
    "scipy.linalg.logm",
    impl=logm_impl,
    shape=_matfun_shape("logm"),
    jvp=_logm_jvp,
    vjp=_logm_vjp,
    batch=rule_for(_stacked),
    emit=_matfun_emit("logm"),
    vjp_reads=READS_INPUTS,
    taylor=_matfun_taylor("logm", logm),
)

# -- solve_sylvester: A X + X B = Q --------------------------------------------------------------


def solve_sylvester(a, b, q):
    """`scipy.linalg.solve_sylvester(a, b, q)`: `X` with `a X + X b = q` (equal stacks)."""
    return bind(solve_sylvester_p, a, b, q)


def _solve_sylvester_shape(a: Aval, b: Aval, q: Aval):
    _check_square("solve_sylvester", a)
    _check_square("solve_sylvester", b)
    want = (*a.shape[:-1], b.shape[-1])
    if a.shape[:-2] != b.shape[:-2] or q.shape != want:
        raise ValueError(
            f"solve_sylvester: a {a.shape}, b {b.shape} and q {q.shape} do not match: q must be "
            f"{want} (a's rows by b's columns, one stack)"
        )
    return Aval(q.shape, _dtype("solve_sylvester", a.dtype, b.dtype, q.dtype))


def _minus(rhs, term):
    return _neg(term) if rhs is None else rhs - term


def _solve_sylvester_jvp(primals, tangents, *, out):
    (a, b, _), (a_dot, b_dot, q_dot) = primals, tangents
    _real_only("solve_sylvester", a_dot, b_dot, q_dot)
    rhs = q_dot  # A dX + dX B = dQ - dA X - X dB: the same A and B
    if a_dot is not None:
        rhs = _minus(rhs, matmul(a_dot, out))
    if b_dot is not None:
        rhs = _minus(rhs, matmul(out, b_dot))
    return None if rhs is None else _tangent(solve_sylvester(a, b, rhs), out)


def _solve_sylvester_vjp(bar, a, b, q, *, out):
    _real_only("solve_sylvester", a, b, bar)
    s = solve_sylvester(mT(a), mT(b), bar)  # A^T S + S B^T = bar
    a_bar = fit(_neg(matmul(s, mT(out))), a) if carries_derivative(a) else None
    b_bar = fit(_neg(matmul(mT(out), s)), b) if carries_derivative(b) else None
    return a_bar, b_bar, (fit(s, q) if carries_derivative(q) else None)


def _solve_sylvester_taylor(primals, series_in, *, out):
    # A_0 X_k + X_k B_0 = Q_k - sum_{i=1..k} (A_i X_{k-i} + X_{k-i} B_i)
    (a, b, _), (sa, sb, sq) = primals, series_in
    _real_series("solve_sylvester", series_in)
    k = series.order_of(series_in)
    sa, sb = sa or [None] * k, sb or [None] * k

    def apply(i, x):
        left = None if sa[i - 1] is None else matmul(sa[i - 1], x)
        return series.add(left, None if sb[i - 1] is None else matmul(x, sb[i - 1]))

    solve0 = lambda r: _tangent(solve_sylvester(a, b, r), out)  # noqa: E731
    return series.solve_terms(solve0, apply, sq or [None] * k, out)


solve_sylvester_p = Primitive(
    "scipy.linalg.solve_sylvester",
    impl=lambda a, b, q: _sl().solve_sylvester(a, b, q),
    shape=_solve_sylvester_shape,
    jvp=_solve_sylvester_jvp,
    vjp=_solve_sylvester_vjp,
    batch=rule_for(_stacked),
    emit=lambda a, b, q: _emit("solve_sylvester", (a, b, q)),
    vjp_reads=READS_ALL,
    taylor=_solve_sylvester_taylor,
)

# -- solve_continuous_lyapunov: A X + X A^H = Q --------------------------------------------------


def solve_continuous_lyapunov(a, q):
    """`scipy.linalg.solve_continuous_lyapunov(a, q)`: `X` with `a X + X a^H = q`."""
    return bind(lyapunov_p, a, q)


def _lyapunov_shape(a: Aval, q: Aval):
    _check_square("solve_continuous_lyapunov", a)
    if q.shape != a.shape:
        raise ValueError(
            f"solve_continuous_lyapunov: a {a.shape} and q {q.shape} must be square matrices "
            "of one shape"
        )
    return Aval(q.shape, _dtype("solve_continuous_lyapunov", a.dtype, q.dtype))


def _lyapunov_jvp(primals, tangents, *, out):
    (a, _), (a_dot, q_dot) = primals, tangents
    _real_only("solve_continuous_lyapunov", a_dot, q_dot)
    rhs = q_dot  # A dX + dX A^T = dQ - dA X - X dA^T: a Lyapunov equation with the same A
    if a_dot is not None:
        rhs = _minus(rhs, matmul(a_dot, out) + matmul(out, mT(a_dot)))
    return None if rhs is None else _tangent(solve_continuous_lyapunov(a, rhs), out)


def _lyapunov_vjp(bar, a, q, *, out):
    _real_only("solve_continuous_lyapunov", a, bar)
    s = solve_continuous_lyapunov(mT(a), bar)  # A^T S + S A = bar
    a_bar = None
    if carries_derivative(a):
        a_bar = fit(_neg(matmul(s, mT(out)) + matmul(mT(s), out)), a)
    return a_bar, (fit(s, q) if carries_derivative(q) else None)


def _lyapunov_taylor(primals, series_in, *, out):
    # A_0 X_k + X_k A_0^T = Q_k - sum_{i=1..k} (A_i X_{k-i} + X_{k-i} A_i^T)
    (a, _), (sa, sq) = primals, series_in
    _real_series("solve_continuous_lyapunov", series_in)
    k = series.order_of(series_in)
    sa = sa or [None] * k

    def apply(i, x):
        return None if sa[i - 1] is None else matmul(sa[i - 1], x) + matmul(x, mT(sa[i - 1]))

    solve0 = lambda r: _tangent(solve_continuous_lyapunov(a, r), out)  # noqa: E731
    return series.solve_terms(solve0, apply, sq or [None] * k, out)


lyapunov_p = Primitive(
    "scipy.linalg.solve_continuous_lyapunov",
    impl=lambda a, q: _sl().solve_continuous_lyapunov(a, q),
    shape=_lyapunov_shape,
    jvp=_lyapunov_jvp,
    vjp=_lyapunov_vjp,
    batch=rule_for(_stacked),
    emit=lambda a, q: _emit("solve_continuous_lyapunov", (a, q)),
    vjp_reads=READS_ALL,
    taylor=_lyapunov_taylor,
)

# -- solve_banded: A x = b, A in LAPACK's band storage -------------------------------------------


def solve_banded(ab, b, nlower, nupper, check_finite=True):
    """`scipy.linalg.solve_banded((nlower, nupper), ab, b)`: `ab[nupper + i - j, j] = A[i, j]`."""
    params = dict(nlower=int(nlower), nupper=int(nupper), check_finite=bool(check_finite))
    return bind(solve_banded_p, ab, b, **params)


def solve_banded_impl(ab, b, *, nlower, nupper, check_finite):
    """SciPy's solve_banded on one band matrix, or on each of a stack (with a stack of `b`)."""
    ab, b = np.asarray(ab), np.asarray(b)
    if ab.ndim == 2:
        return _sl().solve_banded((nlower, nupper), ab, b, check_finite=check_finite)
    out = np.empty(b.shape, _dtype("solve_banded", ab.dtype, b.dtype))
    for i in np.ndindex(ab.shape[:-2]):
        out[i] = _sl().solve_banded((nlower, nupper), ab[i], b[i], check_finite=check_finite)
    return out


def _solve_banded_shape(ab: Aval, b: Aval, *, nlower, nupper, check_finite):
    if nlower < 0 or nupper < 0:
        raise ValueError(f"solve_banded: (l, u) = ({nlower}, {nupper}) must be non-negative")
    if ab.ndim < 2 or ab.shape[-2] != nlower + nupper + 1:
        raise ValueError(
            f"solve_banded: ab of shape {ab.shape} must have l + u + 1 = "
            f"{nlower + nupper + 1} rows for (l, u) = ({nlower}, {nupper}) (one per diagonal)"
        )
    n = ab.shape[-1]
    if b.ndim == 1 and ab.ndim == 2:
        ok = b.shape[0] == n
    else:
        ok = b.ndim == ab.ndim and b.shape[:-2] == ab.shape[:-2] and b.shape[-2] == n
    if not ok:
        raise ValueError(f"solve_banded: shapes of ab {ab.shape} and b {b.shape} are incompatible")
    return Aval(b.shape, _dtype("solve_banded", ab.dtype, b.dtype))


def _shift(v, s: int, axis: int):
    """`w` with `w[j] = v[j + s]` along `axis` (counted from the end), zeros where `j + s` is
    outside: moves a diagonal of the band between row and column indexing."""
    shape, ax = shape_of(v), len(shape_of(v)) + axis
    keep = max(shape[ax] - abs(s), 0)
    if s == 0:
        return v
    starts, limits, width = [0] * len(shape), list(shape), [(0, 0)] * len(shape)
    starts[ax] = min(max(s, 0), shape[ax])
    limits[ax] = starts[ax] + keep
    width[ax] = (0, shape[ax] - keep) if s > 0 else (shape[ax] - keep, 0)
    return pad(slice_static(v, tuple(starts), tuple(limits)), width)


def _row(ab, r: int):
    """Row `r` of each band (a diagonal of A), keeping the axis."""
    shape = shape_of(ab)
    lead = (0,) * (len(shape) - 2)
    return slice_static(ab, (*lead, r, 0), (*shape[:-2], r + 1, shape[-1]))


def _band_transpose(ab, nlower: int, nupper: int):
    """The band storage of A^T (nupper lower and nlower upper diagonals) from A's:
    `abT[r, j] = ab[l + u - r, j + r - l]`, the rows reversed and shifted."""
    rows = [_shift(_row(ab, nlower + nupper - r), r - nlower, -1) for r in range(shape_of(ab)[-2])]
    return concatenate(rows, len(shape_of(ab)) - 2) if len(rows) > 1 else rows[0]


def _band_matmul(dab, x, nupper: int):
    """`dA @ x` for dA in band storage: diagonal r contributes `dab[r, j] x[j]` to row
    `j - (nupper - r)`."""
    total = None
    for r in range(shape_of(dab)[-2]):
        term = _shift(mul(mT(_row(dab, r)), x), nupper - r, -2)
        total = term if total is None else total + term
    return total


def _band_outer(s, x, nupper: int, rows: int):
    """The band entries of `s @ x^T`: `[r, j] = sum_k s[j + r - u, k] x[j, k]`."""
    axis = len(shape_of(x)) - 2
    parts = [
        expand_dims(einsum("...jk,...jk->...j", _shift(s, r - nupper, -2), x), (axis,))
        for r in range(rows)
    ]
    return concatenate(parts, axis) if len(parts) > 1 else parts[0]


def _solve_banded_jvp(primals, tangents, *, out, nlower, nupper, check_finite):
    (ab, b), (ab_dot, b_dot) = primals, tangents
    _real_only("solve_banded", ab_dot, b_dot)
    vector = len(shape_of(b)) == 1
    rhs = None if b_dot is None else _column(b_dot, vector)
    if ab_dot is not None:  # A dx = db - dA x
        rhs = _minus(rhs, _band_matmul(ab_dot, _column(out, vector), nupper))
    if rhs is None:
        return None
    dx = solve_banded(ab, rhs, nlower, nupper, check_finite=False)
    return _tangent(_uncolumn(dx, vector), out)


def _solve_banded_vjp(bar, ab, b, *, out, nlower, nupper, check_finite):
    _real_only("solve_banded", ab, bar)
    vector = len(shape_of(b)) == 1
    ab_t = _band_transpose(ab, nlower, nupper)
    g = solve_banded(ab_t, _column(bar, vector), nupper, nlower, check_finite=False)  # A^-T
    ab_bar = None
    if carries_derivative(ab):  # -g x^T, on the band
        rows = nlower + nupper + 1
        ab_bar = fit(_neg(_band_outer(g, _column(out, vector), nupper, rows)), ab)
    return ab_bar, (fit(_uncolumn(g, vector), b) if carries_derivative(b) else None)


def _solve_banded_taylor(primals, series_in, *, out, nlower, nupper, check_finite):
    # A_0 x_k = b_k - sum_{i=1..k} A_i x_{k-i}, the A_i in band storage
    (ab, b), (sab, sb) = primals, series_in
    _real_series("solve_banded", series_in)
    vector = len(shape_of(b)) == 1
    k = series.order_of(series_in)
    sab = sab or [None] * k

    def apply(i, x):
        return None if sab[i - 1] is None else _band_matmul(sab[i - 1], x, nupper)

    def solve0(r):
        return _tangent(solve_banded(ab, r, nlower, nupper, check_finite=False), out)

    rhs = [None if t is None else _column(t, vector) for t in sb or [None] * k]
    terms = series.solve_terms(solve0, apply, rhs, _column(out, vector))
    return [None if t is None else _uncolumn(t, vector) for t in terms]


solve_banded_p = Primitive(
    "scipy.linalg.solve_banded",
    impl=solve_banded_impl,
    shape=_solve_banded_shape,
    jvp=_solve_banded_jvp,
    vjp=_solve_banded_vjp,
    batch=rule_for(lambda p: _stacked(p, 1)),
    emit=lambda ab, b, *, nlower, nupper, check_finite: [
        "import tracegrad.primitives.scipy_matrix_functions as _tracegrad_matfun",
        f"_tracegrad_matfun.solve_banded_impl({ab}, {b}, nlower={nlower!r}, "
        f"nupper={nupper!r}, check_finite={check_finite!r})",
    ],
    vjp_reads=READS_ALL,
    taylor=_solve_banded_taylor,
)

__all__ = [
    "expm",
    "expm_frechet",
    "logm",
    "solve_banded",
    "solve_continuous_lyapunov",
    "solve_sylvester",
    "sqrtm",
]
PRIMITIVES = (
    expm_p,
    expm_frechet_p,
    sqrtm_p,
    logm_p,
    solve_sylvester_p,
    lyapunov_p,
    solve_banded_p,
)
