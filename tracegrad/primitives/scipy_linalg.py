"""SciPy's triangular solve and its reusable factorisations as primitives: solve_triangular,
cholesky, cho_factor / cho_solve, lu_factor / lu_solve, each value SciPy's own call.

The point of cho_factor and lu_factor is that a factor is computed once and reused: so the
rules never factorise again. The vjp of cho_solve in `b` is a cho_solve with the same factor,
lu_solve's is an lu_solve with `trans` toggled, solve_triangular's a solve with the transposed
flag; the derivatives in a factor are triangular solves and products with its triangles (`trmm`,
BLAS's triangular product, is a primitive of its own for them).
The factors carry derivatives: cho_factor's `c` in its factor triangle, and in the other,
which holds `a`'s entries as LAPACK left them, the derivative of those entries (the identity);
lu_factor's `lu` in L (strict lower) and U (upper); `piv` is integer. Derivatives are for
real dtypes (complex values work). SciPy is imported on first use, never by `import tracegrad`.
Over 600 lines: the rules of each function call the other primitives (lu_factor's lu_solve and
solve_triangular, the Cholesky rules' trmm), so they stay in one module with their helpers.
"""

from __future__ import annotations

import functools
import importlib
import weakref

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import READS_ALL, READS_OUTPUT, Primitive, rule_for
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives.broadcasting import broadcast_to
from tracegrad.primitives.linalg import factorizations as _fa
from tracegrad.primitives.linalg._common import fit, matmul, mT, mul, stacked_batch, sym
from tracegrad.primitives.shape import concatenate
from tracegrad.primitives.views import expand_dims, move_to_front, squeeze


@functools.cache
def _sl():
    """scipy.linalg, imported on first use."""
    return importlib.import_module("scipy.linalg")


def _emit(name: str, args, **params) -> list[str]:
    kw = "".join(f", {k}={v!r}" for k, v in params.items())
    return ["import scipy.linalg as _scipy_linalg", f"_scipy_linalg.{name}({', '.join(args)}{kw})"]


@functools.cache
def _dtype(name: str, *dtypes) -> np.dtype:
    """The dtype SciPy's `name` returns for these input dtypes (SciPy's own choice, found on a
    1 x 1 problem once per signature)."""
    one = [np.ones((1, 1), dtype=d) for d in dtypes]
    f = getattr(_sl(), name)
    if name in ("cho_solve", "lu_solve"):
        factor = (one[0], False) if name == "cho_solve" else (one[0], np.zeros(1, np.int32))
        return f(factor, one[-1]).dtype
    out = f(*one)
    return (out[0] if isinstance(out, tuple) else out).dtype


# -- checks -------------------------------------------------------------------------------------


def _check_square(name: str, a: Aval) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{name}: expected a square matrix (or a stack of them), got {a.shape}")


def _check_rhs(name: str, a: Aval, b: Aval) -> None:
    """`b` is one vector (`a` one matrix) or a stack of matrices with `a`'s stack shape (the
    public functions broadcast the stacks first)."""
    if b.ndim == 1 and a.ndim == 2:
        ok = b.shape[0] == a.shape[-1]
    else:
        ok = b.ndim == a.ndim and b.shape[:-2] == a.shape[:-2] and b.shape[-2] == a.shape[-1]
    if not ok:
        raise ValueError(f"{name}: shapes of a {a.shape} and b {b.shape} are incompatible")


def _real_only(name: str, *xs) -> None:
    for x in xs:
        if x is not None and dtype_of(x).kind == "c":
            raise NotImplementedError(
                f"tracegrad: scipy.linalg.{name}: derivatives of complex matrices are not "
                "supported yet (the values are); differentiate real ones"
            )


# -- matrix helpers (tracegrad operations, so the rules differentiate again) ---------------------


@functools.lru_cache(maxsize=64)
def _tri_const(n: int, k: int, lower: bool, dtype: np.dtype) -> np.ndarray:
    # one array per mask, so that a trace records one constant and merges equal products
    m = np.tri(n, k=k, dtype=dtype)
    m = m if lower else m.T.copy()
    m.flags.writeable = False
    return m


def _mask(x, lower: bool, k: int = 0):
    """`x`'s lower (upper) triangle from diagonal `k` (`-k` for upper), zeros elsewhere."""
    return mul(x, _tri_const(shape_of(x)[-1], k, lower, np.dtype(dtype_of(x))))


def _tri(x, lower: bool, unit: bool):
    """The triangle a triangular solve reads (without the diagonal if `unit`)."""
    return _mask(x, lower, -1 if unit else 0)


def _column(x, vector: bool):
    return expand_dims(x, (1,)) if vector else x


def _uncolumn(x, vector: bool):
    return squeeze(x, (1,)) if vector else x


def _neg(x):
    return x * -1.0


def _flip(trans: int) -> int:
    """The `trans` of the transposed system (real matrices: 'C' is 'T')."""
    return 1 if trans == 0 else 0


def _batch(prim, vector_arg: int):
    """The batching rule of an operation on (a stack of) matrices with the right-hand side last:
    every input gets the batch axis in front (an unbatched one broadcast to it) and a 1-D
    right-hand side becomes one column, so the batched call is one call on a stack, which
    SciPy's functions loop over."""
    ref = weakref.ref(prim)

    def batch(args, dims, **params):
        size = next(shape_of(x)[d] for x, d in zip(args, dims) if d is not None)
        front = []
        for x, d in zip(args, dims):
            if d is None:
                front.append(broadcast_to(expand_dims(x, (0,)), (size, *shape_of(x))))
            else:
                front.append(move_to_front(x, d))
        b = front[vector_arg]
        vector = len(shape_of(b)) == 2 and len(shape_of(front[0])) == 3
        if vector:
            front[vector_arg] = expand_dims(b, (2,))
        out = bind(ref(), *front, **params)
        return (squeeze(out, (2,)) if vector else out), 0

    return batch


# -- solve_triangular ---------------------------------------------------------------------------


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, check_finite=True):
    """`scipy.linalg.solve_triangular(a, b, trans, lower, unit_diagonal)` (`trans` 0, 1, 2)."""
    params = dict(trans=int(trans), lower=bool(lower), unit_diagonal=bool(unit_diagonal))
    return bind(solve_triangular_p, a, b, **params, check_finite=bool(check_finite))


def _solve_triangular_shape(a: Aval, b: Aval, *, trans, lower, unit_diagonal, check_finite):
    if trans not in (0, 1, 2):
        raise ValueError(f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans}")
    _check_square("solve_triangular", a)
    _check_rhs("solve_triangular", a, b)
    return Aval(b.shape, _dtype("solve_triangular", a.dtype, b.dtype))


def _op(m, trans: int):
    return m if trans == 0 else mT(m)


def _solve_triangular_jvp(primals, tangents, *, out, trans, lower, unit_diagonal, check_finite):
    (a, b), (a_dot, b_dot) = primals, tangents
    _real_only("solve_triangular", a_dot, b_dot)
    vector = len(shape_of(b)) == 1
    rhs = None if b_dot is None else _column(b_dot, vector)
    if a_dot is not None:  # d(op(T) x) = db: op(T) dx = db - op(dT) x
        da_x = matmul(_op(_tri(a_dot, lower, unit_diagonal), trans), _column(out, vector))
        rhs = _neg(da_x) if rhs is None else rhs - da_x
    if rhs is None:
        return None
    params = dict(trans=trans, lower=lower, unit_diagonal=unit_diagonal, check_finite=False)
    return _uncolumn(solve_triangular(a, rhs, **params), vector)


def _solve_triangular_vjp(bar, a, b, *, out, trans, lower, unit_diagonal, check_finite):
    _real_only("solve_triangular", a, bar)
    vector = len(shape_of(b)) == 1
    params = dict(lower=lower, unit_diagonal=unit_diagonal, check_finite=False)
    # b_bar = op(T)^-T x_bar: the same triangle, the other flag
    g = solve_triangular(a, _column(bar, vector), trans=_flip(trans), **params)
    a_bar = None
    if carries_derivative(a):
        x = _column(out, vector)
        outer = matmul(g, mT(x)) if trans == 0 else matmul(x, mT(g))
        a_bar = fit(_neg(_tri(outer, lower, unit_diagonal)), a)
    b_bar = fit(_uncolumn(g, vector), b) if carries_derivative(b) else None
    return a_bar, b_bar


def _solve_triangular_emit(a, b, *, trans, lower, unit_diagonal, check_finite):
    params = dict(trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    return _emit("solve_triangular", (a, b), **params, check_finite=check_finite)


solve_triangular_p = Primitive(
    "scipy.linalg.solve_triangular",
    impl=lambda a, b, **params: _sl().solve_triangular(a, b, **params),
    shape=_solve_triangular_shape,
    jvp=_solve_triangular_jvp,
    vjp=_solve_triangular_vjp,
    batch=rule_for(lambda p: _batch(p, 1)),
    emit=_solve_triangular_emit,
    vjp_reads=READS_ALL,
)

# -- trmm: a product with one triangle, for the rules ----------------------------------------


def trmm(a, b, lower=False, trans=0):
    """`op(T) @ b` with `T` the `lower` (else upper) triangle of `a` and `op` the transpose if
    `trans`: BLAS's trmm, half the work of a full product. Used by the Cholesky rules."""
    return bind(trmm_p, a, b, lower=bool(lower), trans=int(trans))


def trmm_impl(a, b, *, lower, trans):
    """BLAS's trmm (through SciPy) on one matrix or each matrix of a stack."""
    blas = importlib.import_module("scipy.linalg.blas")
    a, b = np.asarray(a), np.asarray(b)
    fn = blas.get_blas_funcs("trmm", (a, b))
    out = np.empty(b.shape, fn.dtype)
    for i in np.ndindex(a.shape[:-2]):
        out[i] = fn(1.0, a[i], b[i], lower=int(lower), trans_a=int(trans))
    return out


def _trmm_shape(a: Aval, b: Aval, *, lower, trans):
    _check_square("trmm", a)
    if b.ndim != a.ndim or b.shape[:-1] != a.shape[:-1] or a.dtype.kind not in "fc":
        raise ValueError(f"trmm: a {a} and b {b} do not match")
    return Aval(b.shape, np.result_type(a.dtype, b.dtype))


def _trmm_jvp(primals, tangents, *, out, lower, trans):
    (a, b), (a_dot, b_dot) = primals, tangents
    terms = [trmm(a_dot, b, lower, trans) if a_dot is not None else None]
    terms.append(trmm(a, b_dot, lower, trans) if b_dot is not None else None)
    terms = [t for t in terms if t is not None]
    return None if not terms else terms[0] if len(terms) == 1 else terms[0] + terms[1]


def _trmm_vjp(bar, a, b, *, out, lower, trans):
    a_bar = b_bar = None
    if carries_derivative(a):
        outer = matmul(bar, mT(b)) if trans == 0 else matmul(b, mT(bar))
        a_bar = fit(_mask(outer, lower), a)
    if carries_derivative(b):
        b_bar = fit(trmm(a, bar, lower, 1 - trans), b)
    return a_bar, b_bar


trmm_p = Primitive(
    "scipy.linalg.blas.trmm",
    impl=trmm_impl,
    shape=_trmm_shape,
    jvp=_trmm_jvp,
    vjp=_trmm_vjp,
    batch=rule_for(lambda p: _batch(p, 1)),
    emit=lambda a, b, *, lower, trans: [
        "import tracegrad.primitives.scipy_linalg as _tracegrad_scipy_linalg",
        f"_tracegrad_scipy_linalg.trmm_impl({a}, {b}, lower={lower!r}, trans={trans!r})",
    ],
    vjp_reads=READS_ALL,
    bilinear=True,
)

# -- cholesky and cho_factor --------------------------------------------------------------------


def cholesky(a, lower=False, check_finite=True):
    """`scipy.linalg.cholesky(a, lower)`: the factor, zeros in its other triangle."""
    return bind(cholesky_p, a, lower=bool(lower), check_finite=bool(check_finite))


def cho_factor(a, lower=False, check_finite=True):
    """`scipy.linalg.cho_factor(a, lower)[0]`: the factor `c`, `a`'s entries in the other
    triangle."""
    return bind(cho_factor_p, a, lower=bool(lower), check_finite=bool(check_finite))


def _factor_shape(name):
    def shape(a: Aval, *, lower, check_finite):
        _check_square(name, a)
        return Aval(a.shape, _dtype(name, a.dtype))

    return shape


def _other(x, lower):
    """The triangle cho_factor leaves as `a` (strictly above the diagonal of a lower factor)."""
    return _mask(x, not lower, -1)


@functools.lru_cache(maxsize=64)
def _half_phi_const(n: int, dtype: np.dtype) -> np.ndarray:
    m = _fa._phi_mask(np.zeros((n, n), dtype)) * 0.5  # Phi's mask with sym's 1/2 folded in
    m.flags.writeable = False
    return m


def _half_phi(x):
    return _half_phi_const(shape_of(x)[-1], np.dtype(dtype_of(x)))


def _factor_jvp(name):
    # dL = L Phi(L^-1 sym(dA) L^-T) (NumPy's cholesky rule, with triangular solves on the
    # factor in place of its inverse); cho_factor's other triangle is `a`'s: its tangent is da's
    def jvp(primals, tangents, *, out, lower, check_finite):
        (a_dot,) = tangents
        _real_only(name, a_dot)
        if a_dot is None:
            return None
        t = 0 if lower else 1  # L^-1 is U^-T for an upper factor U = L^T
        r = solve_triangular(out, sym(a_dot), trans=t, lower=lower, check_finite=False)
        x = mT(solve_triangular(out, mT(r), trans=t, lower=lower, check_finite=False))
        low_dot = matmul(_lower_factor(out, lower), mul(x, _fa._phi_mask(x)))
        c_dot = low_dot if lower else mT(low_dot)
        return c_dot + _other(a_dot, lower) if name == "cho_factor" else c_dot

    return jvp


def _factor_vjp(name):
    # Murray's rule, A_bar = sym(L^-T Phi(L^T L_bar) L^-1), with two triangular solves on the
    # factor itself where NumPy's cholesky rule forms L^-1 and multiplies by it twice
    def vjp(bar, a, *, out, lower, check_finite):
        _real_only(name, a, bar)
        if not carries_derivative(a):
            return (None,)
        low_bar = _mask(bar if lower else mT(bar), True)
        # L^T L_bar, then L^-T p and (.) L^-1; for an upper factor U = L^T the same with U
        t = 1 if lower else 0
        p = mul(trmm(out, low_bar, lower, t), _half_phi(low_bar))
        r = solve_triangular(out, p, trans=t, lower=lower, check_finite=False)
        q = mT(solve_triangular(out, mT(r), trans=t, lower=lower, check_finite=False))
        a_bar = q + mT(q)  # sym(q), its 1/2 in p
        if name == "cho_factor":  # the entries of `a` that cho_factor's `c` holds as they are
            a_bar = a_bar + _other(bar, lower)
        return (fit(a_bar, a),)

    return vjp


def _factor_impl(name):
    def impl(a, *, lower, check_finite):
        out = getattr(_sl(), name)(a, lower=lower, check_finite=check_finite)
        return out[0] if name == "cho_factor" else out

    return impl


def _factor_emit(name):
    index = "[0]" if name == "cho_factor" else ""  # cho_factor's (c, lower): c

    def emit(a, *, lower, check_finite):
        *imports, call = _emit(name, (a,), lower=lower, check_finite=check_finite)
        return [*imports, call + index]

    return emit


def _factor(name):
    return Primitive(
        f"scipy.linalg.{name}",
        impl=_factor_impl(name),
        shape=_factor_shape(name),
        jvp=_factor_jvp(name),
        vjp=_factor_vjp(name),
        batch=rule_for(stacked_batch),
        emit=_factor_emit(name),
        vjp_reads=READS_OUTPUT,
    )


cholesky_p = _factor("cholesky")
cho_factor_p = _factor("cho_factor")

# -- cho_solve ----------------------------------------------------------------------------------


def cho_solve(c, b, lower=False, check_finite=True):
    """`scipy.linalg.cho_solve((c, lower), b)`: `x` with `(L L^T) x = b`."""
    return bind(cho_solve_p, c, b, lower=bool(lower), check_finite=bool(check_finite))


def _cho_solve_shape(c: Aval, b: Aval, *, lower, check_finite):
    _check_square("cho_solve", c)
    _check_rhs("cho_solve", c, b)
    return Aval(b.shape, _dtype("cho_solve", c.dtype, b.dtype))


def _lower_factor(c, lower):
    """L of `A = L L^T` from cho_factor's `c` (U^T for an upper factor)."""
    return _mask(c, True) if lower else mT(_mask(c, False))


def _cho_solve_jvp(primals, tangents, *, out, lower, check_finite):
    (c, b), (c_dot, b_dot) = primals, tangents
    _real_only("cho_solve", c_dot, b_dot)
    vector = len(shape_of(b)) == 1
    rhs = None if b_dot is None else _column(b_dot, vector)
    if c_dot is not None:  # A dx = db - dA x, dA = dL L^T + L dL^T
        low, low_dot, x = _lower_factor(c, lower), _lower_factor(c_dot, lower), _column(out, vector)
        da_x = matmul(low_dot, matmul(mT(low), x)) + matmul(low, matmul(mT(low_dot), x))
        rhs = _neg(da_x) if rhs is None else rhs - da_x
    if rhs is None:
        return None
    return _uncolumn(cho_solve(c, rhs, lower=lower, check_finite=False), vector)


def _cho_solve_vjp(bar, c, b, *, out, lower, check_finite):
    _real_only("cho_solve", c, bar)
    vector = len(shape_of(b)) == 1
    g = cho_solve(c, _column(bar, vector), lower=lower, check_finite=False)  # A is symmetric
    c_bar = None
    if carries_derivative(c):
        x = _column(out, vector)
        # L_bar = -(g y^T + x z^T), y = L^T x, z = L^T g: one product [g, x] [-y, -z]^T
        axis = len(shape_of(x)) - 1
        left, swapped = concatenate([g, x], axis), concatenate([x, g], axis)
        # L^T [x, g] = [y, z] with a product on c's factor triangle (no mask of c)
        low_t = trmm(c, swapped, lower, 1 if lower else 0)
        low_bar = _mask(matmul(left, mT(_neg(low_t))), True)
        c_bar = fit(low_bar if lower else mT(low_bar), c)
    b_bar = fit(_uncolumn(g, vector), b) if carries_derivative(b) else None
    return c_bar, b_bar


cho_solve_p = Primitive(
    "scipy.linalg.cho_solve",
    impl=lambda c, b, *, lower, check_finite: _sl().cho_solve(
        (c, lower), b, check_finite=check_finite
    ),
    shape=_cho_solve_shape,
    jvp=_cho_solve_jvp,
    vjp=_cho_solve_vjp,
    batch=rule_for(lambda p: _batch(p, 1)),
    emit=lambda c, b, *, lower, check_finite: [
        "import scipy.linalg as _scipy_linalg",
        f"_scipy_linalg.cho_solve(({c}, {lower!r}), {b}, check_finite={check_finite!r})",
    ],
    vjp_reads=READS_ALL,
)

# -- lu_factor ----------------------------------------------------------------------------------


def lu_factor(a, check_finite=True):
    """`scipy.linalg.lu_factor(a)`: `(lu, piv)`."""
    return tuple(bind(lu_factor_p, a, check_finite=bool(check_finite)))


def _lu_factor_shape(a: Aval, *, check_finite):
    _check_square("lu_factor", a)
    return Aval(a.shape, _dtype("lu_factor", a.dtype)), Aval(a.shape[:-1], np.int32)


def _parts(lu):
    """L (unit lower) and U (upper) of a packed LU factor."""
    n = shape_of(lu)[-1]
    return _mask(lu, True, -1) + np.eye(n, dtype=dtype_of(lu)), _mask(lu, False)


def _lu_factor_jvp(primals, tangents, *, out, check_finite):
    (a_dot,) = tangents
    _real_only("lu_factor", a_dot)
    if a_dot is None:
        return None, None
    lu, piv = out
    low, up = _parts(lu)
    # X = L^-1 P^T dA U^-1 = U (A^-1 dA) U^-1: the factor's own solves, no permutation needed
    y = matmul(up, lu_solve(lu, piv, a_dot, check_finite=False))
    x = mT(solve_triangular(lu, mT(y), trans=1, check_finite=False))
    lu_dot = matmul(low, _mask(x, True, -1)) + matmul(_mask(x, False), up)
    return lu_dot, None


def _lu_factor_vjp(bar, a, *, out, check_finite):
    lu_bar, _ = bar
    _real_only("lu_factor", a, lu_bar)
    if lu_bar is None or not carries_derivative(a):
        return (None,)
    lu, piv = out
    low, up = _parts(lu)
    x_bar = _mask(matmul(mT(low), _mask(lu_bar, True, -1)), True, -1) + _mask(
        matmul(_mask(lu_bar, False), mT(up)), False
    )
    w = mT(solve_triangular(lu, mT(x_bar), check_finite=False))  # X_bar U^-T
    return (fit(lu_solve(lu, piv, matmul(mT(up), w), trans=1, check_finite=False), a),)


def _lu_factor_impl(a, *, check_finite):
    lu, piv = _sl().lu_factor(a, check_finite=check_finite)
    return lu, piv


lu_factor_p = Primitive(
    "scipy.linalg.lu_factor",
    impl=_lu_factor_impl,
    shape=_lu_factor_shape,
    jvp=_lu_factor_jvp,
    vjp=_lu_factor_vjp,
    batch=rule_for(stacked_batch),
    emit=lambda a, *, check_finite: [
        "import scipy.linalg as _scipy_linalg",
        f"tuple(_scipy_linalg.lu_factor({a}, check_finite={check_finite!r}))",
    ],
    multiple_results=True,
    vjp_reads=READS_OUTPUT,
)

# -- lu_solve -----------------------------------------------------------------------------------


def lu_solve(lu, piv, b, trans=0, check_finite=True):
    """`scipy.linalg.lu_solve((lu, piv), b, trans)`."""
    return bind(lu_solve_p, lu, piv, b, trans=int(trans), check_finite=bool(check_finite))


def _lu_solve_shape(lu: Aval, piv: Aval, b: Aval, *, trans, check_finite):
    if trans not in (0, 1, 2):
        raise ValueError(f"lu_solve: trans must be 0, 1 or 2, got {trans}")
    _check_square("lu_solve", lu)
    _check_rhs("lu_solve", lu, b)
    if piv.shape != lu.shape[:-1] or piv.dtype.kind not in "iu":
        raise ValueError(f"lu_solve: piv must be integers of shape {lu.shape[:-1]}, got {piv}")
    return Aval(b.shape, _dtype("lu_solve", lu.dtype, b.dtype))


def _tsolve(lu, x, trans, lower):
    """A solve with one triangle of a packed LU factor (L has a unit diagonal)."""
    return solve_triangular(
        lu, x, trans=trans, lower=lower, unit_diagonal=lower, check_finite=False
    )


def _lu_solve_jvp(primals, tangents, *, out, trans, check_finite):
    (lu, piv, b), (lu_dot, _, b_dot) = primals, tangents
    _real_only("lu_solve", lu_dot, b_dot)
    vector = len(shape_of(b)) == 1
    t = 0 if trans == 0 else 1
    rhs = None if b_dot is None else _column(b_dot, vector)
    if lu_dot is not None:
        low_dot, up_dot = _mask(lu_dot, True, -1), _mask(lu_dot, False)
        up = _mask(lu, False)
        if t == 0:  # dx = -U^-1 (L^-1 dL U x + dU x), with the lu_solve of db added below
            x = _column(out, vector)
            inner = _tsolve(lu, matmul(low_dot, matmul(up, x)), 0, True) + matmul(up_dot, x)
            dx = _neg(_tsolve(lu, inner, 0, False))
            if rhs is None:
                return _uncolumn(dx, vector)
            return _uncolumn(dx + lu_solve(lu, piv, rhs, trans=0, check_finite=False), vector)
        # A^T dx = db - dA^T x, dA^T x = dU^T s + U^T dL^T v with s = U^-T b, v = L^-T s
        s = _tsolve(lu, _column(b, vector), 1, False)
        v = _tsolve(lu, s, 1, True)
        da_x = matmul(mT(up_dot), s) + matmul(mT(up), matmul(mT(low_dot), v))
        rhs = _neg(da_x) if rhs is None else rhs - da_x
    if rhs is None:
        return None
    return _uncolumn(lu_solve(lu, piv, rhs, trans=t, check_finite=False), vector)


def _lu_solve_vjp(bar, lu, piv, b, *, out, trans, check_finite):
    _real_only("lu_solve", lu, bar)
    vector = len(shape_of(b)) == 1
    t = 0 if trans == 0 else 1
    x_bar = _column(bar, vector)
    g = lu_solve(lu, piv, x_bar, trans=_flip(t), check_finite=False)  # the same factor
    lu_bar = None
    if carries_derivative(lu):
        up = _mask(lu, False)
        if t == 0:
            x = _column(out, vector)
            h = _tsolve(lu, x_bar, 1, False)
            k = _tsolve(lu, h, 1, True)
            low_bar, up_bar = matmul(k, mT(matmul(up, x))), matmul(h, mT(x))
        else:
            s = _tsolve(lu, _column(b, vector), 1, False)
            v = _tsolve(lu, s, 1, True)
            low_bar, up_bar = matmul(v, mT(matmul(up, g))), matmul(s, mT(g))
        lu_bar = fit(_neg(_mask(low_bar, True, -1) + _mask(up_bar, False)), lu)
    b_bar = fit(_uncolumn(g, vector), b) if carries_derivative(b) else None
    return lu_bar, None, b_bar


lu_solve_p = Primitive(
    "scipy.linalg.lu_solve",
    impl=lambda lu, piv, b, *, trans, check_finite: _sl().lu_solve(
        (lu, piv), b, trans=trans, check_finite=check_finite
    ),
    shape=_lu_solve_shape,
    jvp=_lu_solve_jvp,
    vjp=_lu_solve_vjp,
    batch=rule_for(lambda p: _batch(p, 2)),
    emit=lambda lu, piv, b, *, trans, check_finite: [
        "import scipy.linalg as _scipy_linalg",
        f"_scipy_linalg.lu_solve(({lu}, {piv}), {b}, trans={trans!r}, "
        f"check_finite={check_finite!r})",
    ],
    vjp_reads=READS_ALL,
)

__all__ = [
    "cho_factor",
    "cho_solve",
    "cholesky",
    "lu_factor",
    "lu_solve",
    "solve_triangular",
]
PRIMITIVES = (
    solve_triangular_p,
    trmm_p,
    cholesky_p,
    cho_factor_p,
    cho_solve_p,
    lu_factor_p,
    lu_solve_p,
)
