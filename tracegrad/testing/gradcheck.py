"""Finite differences and `check_grads`: tracegrad's derivatives of any order, in forward
and reverse mode, against 4th-order central differences, as `jax.test_util.check_grads`
does. A failure names the order, the mode, the argument and the worst element. Complex
arguments move in complex directions, and reverse mode is checked under JAX's pairing
<u, v> = Re(sum(u * v)).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs
import numpy as np

from tracegrad import tree
from tracegrad.api.forward import jvp
from tracegrad.api.reverse import vjp

# eps and tolerances by the least precise float dtype in play. The stencil below is 4th order,
# so eps can be large enough that float32 rounding stays small: 2**-6 -> error ~ 1e-5 * |f|.
_DEFAULT_EPS = {
    np.dtype(np.float16): 2.0**-3,
    np.dtype(np.float32): 2.0**-6,
    np.dtype(np.float64): 2.0**-10,
}
_DEFAULT_TOL = {np.dtype(np.float16): 5e-2, np.dtype(np.float32): 2e-3, np.dtype(np.float64): 1e-5}
_LOCATE_LIMIT = 256  # largest argument whose worst element a failure report looks for


def _is_float(x) -> bool:
    if isinstance(x, float | complex):
        return True
    d = getattr(x, "dtype", None)
    return d is not None and np.dtype(d).kind in "fc"


def _dtype_of(x) -> np.dtype:
    if isinstance(x, float):
        return np.dtype(np.float64)
    if isinstance(x, complex):
        return np.dtype(np.complex128)
    return np.dtype(x.dtype)


def _least_precise(values) -> np.dtype:
    """The least precise dtype in play, as a real dtype (complex64's parts are float32)."""
    dts = [np.dtype(np.finfo(_dtype_of(v)).dtype) for v in values if _is_float(v)]
    if not dts:
        return np.dtype(np.float64)
    return max(dts, key=lambda d: np.finfo(d).eps)


def _wide_dtype(x) -> np.dtype:
    return np.dtype(np.complex128 if _dtype_of(x).kind == "c" else np.float64)


def _perturb(x, t, step):
    if isinstance(x, float | complex):
        return x + step * type(x)(t)
    wide = _wide_dtype(x)
    return (np.asarray(x, wide) + step * np.asarray(t, wide)).astype(x.dtype)


def _as64(x):
    """`x` widened to float64 (complex128 for complex values); zeros for non-float values."""
    return np.asarray(x, dtype=_wide_dtype(x)) if _is_float(x) else np.zeros(np.shape(x))


def _pair(u, v) -> float:
    """JAX's pairing of a cotangent and a tangent: Re(sum(u * v)), no conjugation."""
    return float(np.real(np.sum(_as64(u) * _as64(v))))


# 4th-order central differences: f' ~ (f(-2h) - 8 f(-h) + 8 f(h) - f(2h)) / 12h
_STENCIL = ((-2, 1.0), (-1, -8.0), (1, 8.0), (2, -1.0))


def numerical_jvp(f: Callable, args: Sequence, tangents: Sequence, eps: float | None = None):
    """The directional derivative of `f` at `args` along `tangents` by central differences.

    `args` and `tangents` are tuples of pytrees with the same structure (tangents of
    non-float leaves are ignored). Perturbed arguments are computed in float64 and rounded
    to each argument's dtype; the outputs are combined in float64 with the 4th-order central
    stencil, so the result is a pytree like `f`'s output, of float64 arrays. `eps` defaults
    to 2**-10 for float64 arguments and 2**-6 when a float32 argument is present.
    """
    leaves, treedef = tree.flatten(tuple(args))
    t_leaves, _ = tree.flatten(tuple(tangents))
    if len(t_leaves) != len(leaves):
        raise ValueError(
            f"numerical_jvp: args have {len(leaves)} leaves but tangents have "
            f"{len(t_leaves)}; give one tangent per argument leaf"
        )
    if eps is None:
        eps = _DEFAULT_EPS.get(_least_precise(leaves), 2.0**-10)
    total = None
    for s, w in _STENCIL:
        moved = [_perturb(x, t, s * eps) if _is_float(x) else x for x, t in zip(leaves, t_leaves)]
        out = f(*tree.unflatten(treedef, moved))
        out_leaves, out_tree = tree.flatten(out)
        vals = [_as64(o) * w for o in out_leaves]
        total = vals if total is None else [a + v for a, v in zip(total, vals)]
    return tree.unflatten(out_tree, [v / (12.0 * eps) for v in total])


@attrs.frozen
class _Settings:
    eps: float | None
    atol: float | None
    rtol: float | None
    rng: np.random.Generator

    def resolve(self, values):
        dt = _least_precise(values)
        default = _DEFAULT_TOL.get(dt, 1e-5)
        eps = self.eps if self.eps is not None else _DEFAULT_EPS.get(dt, 2.0**-10)
        atol = self.atol if self.atol is not None else default
        rtol = self.rtol if self.rtol is not None else default
        return eps, atol, rtol

    def direction(self, x):
        """A random direction like `x`: multiples of 1/8 in [-1, 1], so with a power-of-two
        eps the perturbed argument is exact even in float32 (both parts, for complex `x`)."""
        v = self.rng.integers(-8, 9, size=np.shape(x)) / 8.0
        if _dtype_of(x).kind == "c":
            v = v + 1j * (self.rng.integers(-8, 9, size=np.shape(x)) / 8.0)
        if isinstance(x, float | complex):
            return type(x)(v)
        return v.astype(_dtype_of(x))


def _mode_text(path) -> str:
    order = len(path)
    text = f"order {order}, mode {path[-1]!r}"
    if order > 1:
        inner = " of the ".join(f"{m!r}-mode derivative" for m in reversed(path[:-1]))
        text += f" (applied to the {inner})"
    return text


def check_grads(
    f: Callable,
    args,
    order: int = 2,
    modes=("fwd", "rev"),
    eps=None,
    atol=None,
    rtol=None,
    *,
    seed: int = 0,
) -> None:
    """Check `f`'s derivatives up to `order` against central finite differences.

    As `jax.test_util.check_grads`: "rev" compares `<u, J v>` from finite differences with
    `<vjp(u), v>` for random `u`, `v`; "fwd" compares `jvp(v)` with finite differences
    elementwise. For order 2 and more, the same checks run on the first-derivative functions
    (`x -> vjp(f, x)(u)` and `x -> jvp(f, x, v)`), recursively. Each argument is checked
    separately, so a failure names it.

    Args:
      f: the function; `args` a tuple of its positional arguments (pytrees). Only float
        leaves are differentiated; the others stay fixed. Only float outputs are compared.
      eps: step of the differences (default by dtype: 2**-10 float64, 2**-6 float32).
      atol, rtol: an element passes when |got - expected| <= atol * scale + rtol * |expected|,
        scale = max(1, |f(x)|, |expected|) (largest elements); defaults 1e-5 for float64 and
        2e-3 when a float32 value is involved.
      seed: seeds the random directions.

    Raises:
      AssertionError naming the order, the mode, the argument and the worst element.
    """
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    bad = [m for m in modes if m not in ("fwd", "rev")]
    if bad or not modes:
        raise ValueError(f"check_grads: modes must be a subset of ('fwd', 'rev'), got {modes}")
    if not isinstance(order, int) or order < 1:
        raise ValueError(f"check_grads: order must be a positive int, got {order!r}")
    if not isinstance(args, list | tuple):
        args = (args,)
    leaves, treedef = tree.flatten(tuple(args))
    diff = [k for k, x in enumerate(leaves) if _is_float(x)]
    labels = []
    for k in diff:
        arg_i, leaf_i, n_leaves = _arg_of_leaf(args, k)
        labels.append(
            f"argument {arg_i}" + (f" (leaf {leaf_i} of its pytree)" if n_leaves > 1 else "")
        )

    def flat_f(*xs):
        full = list(leaves)
        for k, x in zip(diff, xs):
            full[k] = x
        out = f(*tree.unflatten(treedef, full))
        return [o for o in tree.leaves(out) if _is_float(o)]

    settings = _Settings(eps, atol, rtol, np.random.default_rng(seed))
    _check_rec(flat_f, [leaves[k] for k in diff], labels, order, modes, (), settings)


def _arg_of_leaf(args, k):
    start = 0
    for i, a in enumerate(args):
        n = len(tree.leaves(a))
        if k < start + n:
            return i, k - start, n
        start += n
    raise IndexError(k)


def _check_rec(fn, primals, labels, order, modes, path, settings):
    if not primals:
        return
    for mode in modes:
        p = path + (mode,)
        if mode == "rev":
            _check_rev(fn, primals, labels, p, settings)
        else:
            _check_fwd(fn, primals, labels, p, settings)
        if order > 1:
            deriv = _rev_derivative if mode == "rev" else _fwd_derivative
            _check_rec(deriv(fn, primals, settings), primals, labels, order - 1, modes, p, settings)


def _zeros_like(x):
    if isinstance(x, float | complex):
        return type(x)(0)
    return np.zeros(x.shape, x.dtype)


def _eval(fn, primals):
    return [np.asarray(o) for o in fn(*primals)]


def _rev_derivative(fn, primals, settings):
    """x -> vjp(fn, x)(u) for a fixed random u: its derivative is fn's second derivative."""
    us = [settings.direction(o) for o in _eval(fn, primals)]

    def grad_fn(*xs):
        _, vjp_fn = vjp(fn, *xs)
        cts = vjp_fn(us)
        return [_zeros_like(x) if c is None else c for x, c in zip(xs, cts)]

    return grad_fn


def _fwd_derivative(fn, primals, settings):
    """x -> (fn(x), jvp(fn, x, v)) for a fixed random v."""
    vs = [settings.direction(x) for x in primals]

    def jvp_fn(*xs):
        out, t_out = jvp(fn, tuple(xs), tuple(vs))
        out = tree.leaves(out)
        t_out = [t for t in (t_out if isinstance(t_out, list | tuple) else [t_out])]
        t_out = [_zeros_like(o) if t is None else t for o, t in zip(out, t_out)]
        return list(out) + list(t_out)

    return jvp_fn


def _fail(path, label, x, lines, eps, atol, rtol):
    shape = f"{_dtype_of(x).name}{list(np.shape(x))}"
    head = (
        f"check_grads: {_mode_text(path)}: the derivative with respect to {label} "
        f"({shape}) disagrees with finite differences"
    )
    tail = f"  (eps={eps:g}, atol={atol:g}, rtol={rtol:g})"
    raise AssertionError("\n".join([head, *lines, tail]))


def _check_primal(out_ad, expected, path, atol, rtol):
    got = [np.asarray(o) for o in tree.leaves(out_ad)]
    if len(got) != len(expected) or any(
        g.shape != e.shape or not np.allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
        for g, e in zip(got, expected)
    ):
        head = (
            f"check_grads: {_mode_text(path)}: the primal output of the transform differs "
            f"from the function's own output"
        )
        raise AssertionError(f"{head}\n  got {got}\n  expected {expected}")


def _scale(*arrays) -> float:
    m = [float(np.max(np.abs(a))) for a in arrays if np.size(a)]
    return max([1.0, *m])


def _check_rev(fn, primals, labels, path, settings):
    out = _eval(fn, primals)
    eps, atol, rtol = settings.resolve(list(primals) + out)
    out_ad, vjp_fn = vjp(fn, *primals)
    _check_primal(out_ad, out, path, atol, rtol)
    us = [settings.direction(o) for o in out]
    cts = vjp_fn(us)
    if not isinstance(cts, tuple) or len(cts) != len(primals):
        raise AssertionError(
            f"check_grads: {_mode_text(path)}: vjp_fn returned {type(cts).__name__} of "
            f"{len(cts) if isinstance(cts, tuple | list) else 1} cotangents for "
            f"{len(primals)} primals; it must return a tuple with one per primal"
        )
    for i, (x, ct) in enumerate(zip(primals, cts)):
        ct = np.zeros(np.shape(x)) if ct is None else np.asarray(ct)
        if ct.shape != np.shape(x) or ct.dtype != _dtype_of(x):
            _fail(
                path,
                labels[i],
                x,
                [
                    f"  the cotangent has shape {ct.shape} and dtype {ct.dtype}; expected "
                    f"{np.shape(x)} and {_dtype_of(x)}"
                ],
                eps,
                atol,
                rtol,
            )
        v = settings.direction(x)
        fd = _fd_one(fn, primals, i, v, eps)
        expected = sum(_pair(u, d) for u, d in zip(us, fd))
        got = _pair(ct, v)
        scale = _scale(*out, *fd)
        tol = float(
            sum(
                np.sum(np.abs(_as64(u)) * (atol * scale + rtol * np.abs(d))) for u, d in zip(us, fd)
            )
        )
        tol += rtol * float(np.sum(np.abs(_as64(ct) * _as64(v))))
        if not abs(got - expected) <= tol:
            lines = [
                f"  <u, J v>: finite differences {expected!r}, vjp {got!r} "
                f"(difference {abs(got - expected):.3g}, tolerance {tol:.3g})"
            ]
            lines.append(_locate_rev(fn, primals, i, us, ct, eps, atol, rtol, scale))
            _fail(path, labels[i], x, lines, eps, atol, rtol)


def _fd_one(fn, primals, i, v, eps):
    """Finite differences of `fn` along direction `v` in argument `i` only."""
    tangents = [v if j == i else _zeros_like(x) for j, x in enumerate(primals)]
    return [np.asarray(d) for d in numerical_jvp(lambda *xs: fn(*xs), primals, tangents, eps)]


def _locate_rev(fn, primals, i, us, ct, eps, atol, rtol, scale) -> str:
    x = primals[i]
    size = int(np.size(x))
    if size > _LOCATE_LIMIT:
        return f"  (argument too large, {size} elements, to locate the worst element)"
    # a complex element is probed along 1 and along 1j: <ct, 1j e> is -Im(ct[j])
    units = (1.0, 1j) if _dtype_of(x).kind == "c" else (1.0,)
    worst = None
    for j in range(size):
        for unit in units:
            e = np.zeros(size, _wide_dtype(x))
            e[j] = unit
            e = e[0].item() if isinstance(x, float | complex) else e.reshape(np.shape(x))
            e = e if isinstance(e, float | complex) else e.astype(_dtype_of(x))
            fd = _fd_one(fn, primals, i, e, eps)
            expected = sum(_pair(u, d) for u, d in zip(us, fd))
            got = _pair(ct.reshape(-1)[j], unit)
            ratio = abs(got - expected) / (atol * scale + rtol * abs(expected))
            if worst is None or ratio > worst[0]:
                worst = (ratio, j, unit, expected, got)
    if worst is None:
        return "  (the argument has no elements)"
    _, j, unit, expected, got = worst
    idx = np.unravel_index(j, np.shape(x)) if np.ndim(x) else ()
    part = " (imaginary direction: -Im of the cotangent)" if unit == 1j else ""
    return (
        f"  worst element of the cotangent at index {tuple(int(k) for k in idx)}{part}: "
        f"expected {expected!r} (finite differences), got {got!r}"
    )


def _check_fwd(fn, primals, labels, path, settings):
    out = _eval(fn, primals)
    eps, atol, rtol = settings.resolve(list(primals) + out)
    for i, x in enumerate(primals):
        v = settings.direction(x)
        tangents = tuple(v if j == i else _zeros_like(p) for j, p in enumerate(primals))
        out_ad, t_out = jvp(fn, tuple(primals), tangents)
        _check_primal(out_ad, out, path, atol, rtol)
        t_out = list(t_out) if isinstance(t_out, list | tuple) else [t_out]
        if len(t_out) != len(out):
            _fail(
                path,
                labels[i],
                x,
                [f"  jvp returned {len(t_out)} output tangents for {len(out)} outputs"],
                eps,
                atol,
                rtol,
            )
        fd = _fd_one(fn, primals, i, v, eps)
        scale = _scale(*out, *fd)
        worst = None
        for k, (o, t, d) in enumerate(zip(out, t_out, fd)):
            t = np.zeros(o.shape) if t is None else np.asarray(t)
            if t.shape != o.shape:
                _fail(
                    path,
                    labels[i],
                    x,
                    [f"  output {k}: the tangent has shape {t.shape}, the output {o.shape}"],
                    eps,
                    atol,
                    rtol,
                )
            t64 = _as64(t) if t.dtype.kind in "fc" else t.astype(np.float64)
            err = np.abs(t64 - d) / (atol * scale + rtol * np.abs(d))
            if err.size and (worst is None or err.max() > worst[0]):
                j = np.unravel_index(int(np.argmax(err)), err.shape)
                worst = (float(err.max()), k, j, d[j].item(), t64[j].item())
        if worst is not None and not worst[0] <= 1.0:
            _, k, j, expected, got = worst
            where = f"output {k}, " if len(out) > 1 else ""
            _fail(
                path,
                labels[i],
                x,
                [
                    f"  worst element of the output tangent at {where}index "
                    f"{tuple(int(a) for a in j)}: expected {expected!r} (finite differences), "
                    f"got {got!r} ({worst[0]:.3g} times the tolerance)"
                ],
                eps,
                atol,
                rtol,
            )
