"""Eigen- and singular-value decompositions: `eigh`, `eigvalsh`, `eig`, `eigvals`, `svd`.

Where the derivative exists only under conditions, the choices (as JAX, and documented in
docs/linalg.md):

- `eigh`/`eigvalsh` read one triangle (`UPLO`); the derivative is that of the Hermitian part,
  as in JAX and PyTorch. Eigenvectors of repeated eigenvalues have no derivative: the rule
  divides by the differences of eigenvalues and gives inf/NaN there, as JAX. Eigenvalues are
  differentiable even then (their rule needs no difference).
- `svd`: singular vectors of repeated singular values, likewise; with `hermitian=True` NumPy
  computes through `eigh`, so the derivative is again that of the Hermitian part. The
  derivative of `u`/`vh` of a non-square matrix also divides by the singular values (zero ones
  are masked, as JAX).
  With `full_matrices=True` the extra columns of `u` (or rows of `vh`) are any orthonormal
  basis of a complement; their derivative is the smallest rotation keeping them orthogonal to
  the rest (`du_perp = -u du^H u_perp`), so a loss that does not depend on which basis is
  chosen gets its true gradient.
- `eig`: a traced value's dtype cannot depend on its values, so `eig`/`eigvals` of a real
  matrix always return complex arrays (NumPy returns real ones when every eigenvalue is real;
  JAX returns complex, as here); the values are NumPy's. Eigenvectors are normalised to unit
  length by LAPACK, with a free phase; their derivative keeps the unit length and fixes the
  phase by `Im(v^H dv) = 0` on the diagonal, as PyTorch (JAX differentiates only eigenvalues).
  A non-diagonalizable matrix has no eigenvector derivative (the solve with `v` fails or
  gives inf).

Signs and phases of eigenvectors and singular vectors are LAPACK's; tests compare invariant
quantities (projectors, `u diag(s) vh`, `|v|`). Reverse mode for `eig` and `svd` is the
transpose of forward mode (`_common.transposed`); `eigh`'s is written out.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import READS_OUTPUT, Primitive, rule_for
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives.linalg._common import (
    H,
    check_square,
    check_stacked,
    columns,
    conj,
    diag,
    diagonal,
    fit,
    is_complex,
    matmul,
    mT,
    mul,
    real_dtype,
    real_part,
    result_dtype,
    stacked_batch,
    sym,
    transposed,
)
from tracegrad.primitives.linalg.inverses import solve
from tracegrad.primitives.shape import concatenate
from tracegrad.primitives.views import expand_dims

_UPLO = ("L", "U")


def _uplo(uplo):
    """NumPy's spelling rule: 'l' and 'u' are 'L' and 'U' (it calls `UPLO.upper()`)."""
    return uplo.upper() if isinstance(uplo, str) else uplo


def _check_uplo(name: str, uplo) -> None:
    if uplo not in _UPLO:
        raise ValueError(f"{name}: UPLO argument must be 'L' or 'U', got {uplo!r}")


def _gaps_inverse(w):
    """`F[i, j] = 1 / (w[j] - w[i])` off the diagonal, 0 on it (inf for repeated values)."""
    n = shape_of(w)[-1]
    eye = np.eye(n, dtype=dtype_of(w))
    gaps = expand_dims(w, (len(shape_of(w)) - 1,)) - expand_dims(w, (len(shape_of(w)),))
    return ew.reciprocal(gaps + eye) - eye


# -- eigh and eigvalsh --------------------------------------------------------------------------


def eigh(a, UPLO: str = "L"):  # noqa: N803 - NumPy's name
    """`np.linalg.eigh(a, UPLO)`: the pair `(w, v)`."""
    return tuple(bind(eigh_p, a, UPLO=_uplo(UPLO)))


def _eigh_shape(a: Aval, *, UPLO):  # noqa: N803
    _check_uplo("eigh", UPLO)
    check_square("eigh", a)
    dtype = result_dtype("eigh", a)
    return Aval(a.shape[:-1], real_dtype(dtype)), Aval(a.shape, dtype)


def _eigh_jvp(primals, tangents, *, out, UPLO):  # noqa: N803
    (a_dot,) = tangents
    if a_dot is None:
        return None, None
    w, v = out
    m = matmul(matmul(H(v), sym(a_dot)), v)
    w_dot = real_part(diagonal(m))
    v_dot = matmul(v, mul(_gaps_inverse(w), m))
    return w_dot, v_dot


def _eigh_vjp(bar, a, *, out, UPLO):  # noqa: N803
    if not carries_derivative(a):
        return (None,)
    (w_bar, v_bar), (w, v) = bar, out
    # the transpose of the jvp: A_bar = sym(conj(v) B v^T), B = diag(w_bar) + F * (v^T v_bar)
    b = None if w_bar is None else diag(w_bar)
    if v_bar is not None:
        f = mul(_gaps_inverse(w), matmul(mT(v), v_bar))
        b = f if b is None else b + f
    if b is None:
        return (None,)
    return (fit(sym(matmul(matmul(conj(v), b), mT(v))), a),)


# Taylor rules of eigh and eig: with W_k = V_0^-1 V_k and B_k = V_0^-1 A_k V_0 (V_0^H sym(A_k)
# V_0 for eigh), the orders of A V = V diag(w) give Lambda_0 W_k - W_k Lambda_0 = Lambda_k - B_k
# - R_k, R_k = sum_{i=1..k-1} (B_i W_{k-i} - W_i Lambda_{k-i}): its diagonal is w_k = diag(B_k +
# R_k), its other entries W_k = F * (B_k + R_k) (F the inverse gaps, as in the jvps). The
# diagonal of W_k is the gauge the jvp fixes along the whole curve, so the series is that of
# the vectors nested jvps follow. Distinct eigenvalues only (F is inf otherwise).


def _eigen_terms(bs, w, gauge) -> tuple[list, list]:
    """([w_1..w_K], [W_1..W_K]) from B's terms; `gauge(k, off, ws)` is W_k's diagonal given its
    other entries `off` and W_1..W_{k-1} (`ws`, from index 1)."""
    gaps, axis = _gaps_inverse(w), len(shape_of(w)) - 1
    lams, ws = [w], [None]
    for k in range(1, len(bs) + 1):
        r = [bs[k - 1]]
        for i in range(1, k):
            if bs[i - 1] is not None and ws[k - i] is not None:
                r.append(matmul(bs[i - 1], ws[k - i]))
            if ws[i] is not None and lams[k - i] is not None:
                r.append(-mul(ws[i], expand_dims(lams[k - i], (axis,))))
        r = [t for t in r if t is not None]
        if not r:
            lams.append(None)
            ws.append(None)
            continue
        total = _sum(r)
        lams.append(diagonal(total))
        off = mul(gaps, total)
        d = gauge(k, off, ws)
        ws.append(off if d is None else off + diag(d))
    return lams[1:], ws[1:]


def _weighted_products(ws, k: int, left, weight):
    """sum_{i=1..k-1} weight(i) left(W_i) W_{k-i} (None if every term is zero)."""
    terms = [
        mul(matmul(left(ws[i]), ws[k - i]), weight(i))
        for i in range(1, k)
        if ws[i] is not None and ws[k - i] is not None
    ]
    return _sum(terms) if terms else None


def _sum(terms):
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


def _eigh_terms(a_terms, w, v) -> tuple[list, list]:
    """(w_1..w_K, V_1..V_K) of eigh. Gauge: diag(V^H V') = 0 (V unitary, no phase drift), so
    k diag(W_k) = -diag(sum_{i=1..k-1} (k - i) W_i^H W_{k-i})."""

    def gauge(k, off, ws):
        s = _weighted_products(ws, k, H, lambda i: float(i - k) / k)
        return None if s is None else diagonal(s)

    bs = [None if t is None else matmul(matmul(H(v), sym(t)), v) for t in a_terms]
    lams, ws = _eigen_terms(bs, w, gauge)
    return (
        [None if t is None else real_part(t) for t in lams],
        [None if t is None else matmul(v, t) for t in ws],
    )


def _eigh_taylor(primals, series_in, *, out, UPLO):  # noqa: N803
    (s,) = series_in
    return _eigh_terms(s, *out)


eigh_p = Primitive(
    "linalg.eigh",
    impl=lambda a, *, UPLO: tuple(np.linalg.eigh(a, UPLO)),
    shape=_eigh_shape,
    jvp=_eigh_jvp,
    vjp=_eigh_vjp,
    batch=rule_for(stacked_batch),
    emit=lambda a, *, UPLO: f"tuple(np.linalg.eigh({a}, {UPLO!r}))",
    multiple_results=True,
    vjp_reads=READS_OUTPUT,
    torch_name="LinalgEighBackward0",
    taylor=_eigh_taylor,
)


def eigvalsh(a, UPLO: str = "L"):  # noqa: N803
    """`np.linalg.eigvalsh(a, UPLO)` (LAPACK's eigenvalue-only driver: its own bits)."""
    return bind(eigvalsh_p, a, UPLO=_uplo(UPLO))


def _eigvalsh_shape(a: Aval, *, UPLO):  # noqa: N803
    _check_uplo("eigvalsh", UPLO)
    check_square("eigvalsh", a)
    return Aval(a.shape[:-1], real_dtype(result_dtype("eigvalsh", a)))


def _eigvalsh_jvp(primals, tangents, *, out, UPLO):  # noqa: N803
    (a,), (a_dot,) = primals, tangents
    if a_dot is None:
        return None
    _, v = eigh(a, UPLO)
    return real_part(diagonal(matmul(matmul(H(v), sym(a_dot)), v)))


def _eigvalsh_vjp(bar, a, *, out, UPLO):  # noqa: N803
    if not carries_derivative(a):
        return (None,)
    _, v = eigh(a, UPLO)
    scaled = mul(conj(v), expand_dims(bar, (len(shape_of(bar)) - 1,)))  # conj(v) diag(bar)
    return (fit(sym(matmul(scaled, mT(v))), a),)


def _eigvalsh_taylor(primals, series_in, *, out, UPLO):  # noqa: N803
    ((a,), (s,)) = primals, series_in
    return _eigh_terms(s, out, eigh(a, UPLO)[1])[0]


eigvalsh_p = Primitive(
    "linalg.eigvalsh",
    impl=lambda a, *, UPLO: np.linalg.eigvalsh(a, UPLO),
    shape=_eigvalsh_shape,
    jvp=_eigvalsh_jvp,
    vjp=_eigvalsh_vjp,
    batch=rule_for(stacked_batch),
    emit=lambda a, *, UPLO: f"np.linalg.eigvalsh({a}, {UPLO!r})",
    torch_name="LinalgEighBackward0",
    taylor=_eigvalsh_taylor,
)

# -- eig and eigvals ----------------------------------------------------------------------------


def _complex_dtype(a: Aval, name: str) -> np.dtype:
    d = result_dtype(name, a)
    return np.dtype(np.complex64 if d in (np.float32, np.complex64) else np.complex128)


def eig(a):
    """`np.linalg.eig(a)`: the pair `(w, v)`, complex (see the module docstring)."""
    return tuple(bind(eig_p, a))


def _eig_shape(a: Aval, name: str = "eig"):
    check_square(name, a)
    dtype = _complex_dtype(a, name)
    return Aval(a.shape[:-1], dtype), Aval(a.shape, dtype)


def _eig_impl(a):
    w, v = np.linalg.eig(a)
    dtype = _complex_dtype(Aval(np.shape(a), np.asarray(a).dtype), "eig")
    return w.astype(dtype, copy=False), v.astype(dtype, copy=False)


def _eig_parts(a, a_dot, v):
    """`K = v^-1 dA v`, whose diagonal is the eigenvalues' tangent."""
    return solve(v, matmul(a_dot, v))


def _eig_jvp(primals, tangents, *, out):
    (a,), (a_dot,) = primals, tangents
    if a_dot is None:
        return None, None
    w, v = out
    k = _eig_parts(a, a_dot, v)
    v0 = matmul(v, mul(_gaps_inverse(w), k))
    # keep every column at unit length, with no phase change: Re and Im of diag(v^H dv) = 0
    fix = real_part(diagonal(matmul(H(v), v0)))
    v_dot = v0 - mul(v, expand_dims(fix, (len(shape_of(fix)) - 1,)))
    return diagonal(k), v_dot


def _eig_terms(a_terms, w, v) -> tuple[list, list]:
    """(w_1..w_K, V_1..V_K) of eig. Gauge (the jvp's): unit columns, and diag(V^-1 V') real.
    With G = V_0^H V_0 (unit diagonal), S_k = sum_{i=1..k-1} W_i^H G W_{k-i} and Y = W^-1:
    Re diag(W_k) = -Re diag(G off_k) - diag(S_k) / 2, and k Im diag(W_k) = -Im diag(
    sum_{i=1..k-1} (k - i) Y_i W_{k-i})."""
    gram, ys = matmul(H(v), v), [None]

    def gauge(k, off, ws):
        while len(ys) < k:  # Y_j = -sum_{i=1..j} W_i Y_{j-i}, Y_0 = I
            j = len(ys)
            terms = [ws[j]] + [
                matmul(ws[i], ys[j - i])
                for i in range(1, j)
                if ws[i] is not None and ys[j - i] is not None
            ]
            terms = [t for t in terms if t is not None]
            ys.append(-_sum(terms) if terms else None)
        re = -real_part(diagonal(matmul(gram, off)))
        s = _weighted_products(ws, k, lambda x: matmul(H(x), gram), lambda i: 0.5)
        re = re if s is None else re - real_part(diagonal(s))
        drift = [
            mul(matmul(ys[i], ws[k - i]), float(k - i) / k)
            for i in range(1, k)
            if ys[i] is not None and ws[k - i] is not None
        ]
        if not drift or not is_complex(drift[0]):
            return re
        return re - mul(ew.imag(diagonal(_sum(drift))), 1j)

    bs = [None if t is None else _eig_parts(None, t, v) for t in a_terms]
    lams, ws = _eigen_terms(bs, w, gauge)
    return lams, [None if t is None else matmul(v, t) for t in ws]


eig_p = Primitive(
    "linalg.eig",
    impl=_eig_impl,
    shape=_eig_shape,
    jvp=_eig_jvp,
    vjp=transposed(_eig_jvp, "eig", multiple_results=True),
    batch=rule_for(stacked_batch),
    emit=lambda a: [
        "import tracegrad.primitives.linalg.spectral as _tg_spectral",
        f"_tg_spectral._eig_impl({a})",
    ],
    multiple_results=True,
    vjp_reads=READS_OUTPUT,
    torch_name="LinalgEigBackward0",
    taylor=lambda primals, series_in, *, out: _eig_terms(series_in[0], *out),
)


def eigvals(a):
    """`np.linalg.eigvals(a)`, complex (see the module docstring)."""
    return bind(eigvals_p, a)


def _eigvals_impl(a):
    dtype = _complex_dtype(Aval(np.shape(a), np.asarray(a).dtype), "eigvals")
    return np.linalg.eigvals(a).astype(dtype, copy=False)


def _eigvals_jvp(primals, tangents, *, out):
    (a,), (a_dot,) = primals, tangents
    if a_dot is None:
        return None
    _, v = eig(a)
    return diagonal(_eig_parts(a, a_dot, v))


eigvals_p = Primitive(
    "linalg.eigvals",
    impl=_eigvals_impl,
    shape=lambda a: _eig_shape(a, "eigvals")[0],
    jvp=_eigvals_jvp,
    vjp=transposed(_eigvals_jvp, "eigvals", multiple_results=False),
    batch=rule_for(stacked_batch),
    emit=lambda a: [
        "import tracegrad.primitives.linalg.spectral as _tg_spectral",
        f"_tg_spectral._eigvals_impl({a})",
    ],
    vjp_reads=frozenset({"inputs"}),
    torch_name="LinalgEigBackward0",
    # eig's series (its eigenvalues in eigvals' order, as the jvp assumes)
    taylor=lambda primals, series_in, *, out: _eig_terms(series_in[0], *eig(primals[0]))[0],
)

# -- svd ----------------------------------------------------------------------------------------


def svd(a, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False):
    """`np.linalg.svd(...)`: `(u, s, vh)`, or `(s,)` without compute_uv."""
    params = dict(full_matrices=bool(full_matrices), compute_uv=bool(compute_uv))
    return tuple(bind(svd_p, a, hermitian=bool(hermitian), **params))


def _svd_shape(a: Aval, *, full_matrices, compute_uv, hermitian):
    check_stacked("svd", a)
    if hermitian:
        check_square("svd", a)
    dtype = result_dtype("svd", a)
    *stack, m, n = a.shape
    k, stack = min(m, n), tuple(stack)
    s = Aval(stack + (k,), real_dtype(dtype))
    if not compute_uv:
        return (s,)
    um, vn = (m, n) if full_matrices else (k, k)
    return Aval(stack + (m, um), dtype), s, Aval(stack + (vn, n), dtype)


def _svd_impl(a, *, full_matrices, compute_uv, hermitian):
    out = np.linalg.svd(a, full_matrices, compute_uv, hermitian)
    return tuple(out) if compute_uv else (out,)


def _svd_emit(a, *, full_matrices, compute_uv, hermitian):
    call = f"np.linalg.svd({a}, {full_matrices!r}, {compute_uv!r}, {hermitian!r})"
    return f"tuple({call})" if compute_uv else f"({call},)"


def _masked_inverse(s):
    zero = ew.astype(ew.equal(s, 0), dtype_of(s))
    return ew.reciprocal(s + zero) - zero


def _reduced_svd_jvp(a, a_dot, u, s, vh):
    """JAX's rule for the reduced SVD: `(du, ds, dvh)`."""
    v = H(vh)
    ds_mat = matmul(matmul(H(u), a_dot), v)
    s_dot = real_part(diagonal(ds_mat))
    row = expand_dims(s, (len(shape_of(s)) - 1,))  # s[..., None, :]: s_j across columns
    col = mT(row)
    k = shape_of(s)[-1]
    eye = np.eye(k, dtype=dtype_of(s))
    f = ew.reciprocal((row + col) * (row - col) + eye) - eye  # 1 / (s_j^2 - s_i^2)
    dss, sds = mul(row, ds_mat), mul(col, ds_mat)
    s_inv = diag(_masked_inverse(s))
    du = matmul(u, mul(f, dss + H(dss)) + mul((ds_mat - H(ds_mat)) * 0.5, s_inv))
    dv = matmul(v, mul(f, sds + H(sds)))
    m, n = shape_of(a)[-2:]
    if m > n:
        dav = matmul(a_dot, v)
        du = du + mul(dav - matmul(u, matmul(H(u), dav)), _masked_inverse(row))
    if n > m:
        dahu = matmul(H(a_dot), u)
        dv = dv + mul(dahu - matmul(v, matmul(vh, dahu)), _masked_inverse(row))
    return du, s_dot, H(dv)


def _completed(q, dq, q_full):
    """The tangent of a full orthonormal basis `[q | q_perp]` given that of `q`: the extra
    columns turn as little as orthogonality allows, `d q_perp = -q dq^H q_perp`."""
    k, m = shape_of(q)[-1], shape_of(q_full)[-1]
    if m == k:
        return dq
    perp = columns(q_full, k, m)
    return concatenate([dq, -matmul(q, matmul(H(dq), perp))], len(shape_of(dq)) - 1)


def _svd_jvp(primals, tangents, *, out, full_matrices, compute_uv, hermitian):
    (a,), (a_dot,) = primals, tangents
    if a_dot is None:
        return (None,) * len(out)
    if hermitian:  # NumPy's eigh reads one triangle: the Hermitian part's derivative, as eigh
        a_dot = sym(a_dot)
    m, n = shape_of(a)[-2:]
    if compute_uv and not (full_matrices and m != n):
        u, s, vh = out
    else:
        u, s, vh = svd(a, False, True, hermitian)
    du, s_dot, dvh = _reduced_svd_jvp(a, a_dot, u, s, vh)
    if not compute_uv:
        return (s_dot,)
    if full_matrices and m != n:
        u_full, _, vh_full = out
        du = _completed(u, du, u_full)
        dvh = H(_completed(H(vh), H(dvh), H(vh_full)))
    return du, s_dot, dvh


svd_p = Primitive(
    "linalg.svd",
    impl=_svd_impl,
    shape=_svd_shape,
    jvp=_svd_jvp,
    vjp=transposed(_svd_jvp, "svd", multiple_results=True),
    batch=rule_for(stacked_batch),
    emit=_svd_emit,
    multiple_results=True,
    torch_name="LinalgSvdBackward0",
)

__all__ = ["eig", "eigh", "eigvals", "eigvalsh", "svd"]
PRIMITIVES = (eigh_p, eigvalsh_p, eig_p, eigvals_p, svd_p)
