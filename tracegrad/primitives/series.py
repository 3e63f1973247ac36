"""Truncated Taylor series arithmetic: the shared parts of the primitives' Taylor rules.

A primitive's `taylor` rule (`tracegrad.ir.primitive`) maps its inputs' Taylor coefficients
x_1..x_K (derivative / k!: x(t) = x + x_1 t + ... + x_K t^K) to its output's. Most rules are
one of a few shapes, built here so that each primitive's block names its rule in one word:

- `linear`: a primitive linear in its moving inputs, or linear once its primal values are
  fixed (a view, a sum, `where`, `maximum` away from ties, `sort`: every piecewise-linear
  function), pushes each coefficient through its own jvp rule: y_k = J x_k.
- `multilinear`: a primitive linear in each input separately (multiply, matmul, einsum)
  convolves: y_k = sum over i + j = k of f(a_i, b_j), with a_0, b_0 the primal inputs.
- `elementwise`: an elementwise function whose partial derivatives are written with
  tracegrad's operations (reading the inputs, not the output) integrates its derivative's
  series: from y' = sum_i f_i(x) x_i', k y_k = sum_i sum_{j=1..k} j x_{i,j} g_{i,k-j}, where
  g_i, the series of f_i(x) to order K - 1, is itself a Taylor pass over the partial. Every
  SciPy special function gets its rule this way.
- `composite(fn)`: the series of a function written with other primitives (`hypot` as
  sqrt(x^2 + y^2)), by a Taylor pass over `fn`.
- the classical recurrences (exp, log, sin/cos, sqrt, powers, division), O(K^2) each, which
  give the elementary functions small graphs.

A coefficient is an array (or tracer) or None for a structural zero, so a curve that is a
straight line (x_2 = x_3 = ... = 0, the case of `tg.derivatives`) costs one product per order
and not K. The arithmetic is Python's operators, so the rules trace like any other rule and
differentiate again (grad of jet).
"""

from __future__ import annotations

import importlib
import itertools

from tracegrad.core import bind
from tracegrad.ir.primitive import rule_for
from tracegrad.ir.types import dtype_of

# -- terms: arrays, with None for zero ----------------------------------------------------


def add(a, b):
    """a + b, None for zero."""
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def mul(a, b):
    """a * b, None if either is zero."""
    if a is None or b is None:
        return None
    return a * b


def scale(a, c: float):
    """c * a for a Python number c (weak: keeps a's dtype); None for a zero a or c == 0."""
    if a is None or c == 0:
        return None
    return a if c == 1 else a * c


def total(terms):
    """The sum of `terms` (None for zero), left to right."""
    out = None
    for t in terms:
        out = add(out, t)
    return out


def order_of(series) -> int:
    """K, the number of coefficients, of the first input that moves."""
    return next(len(s) for s in series if s is not None)


def full(x, s, k: int) -> list:
    """[x, x_1, ..., x_K]: the primal in front of its coefficients (zeros for a constant)."""
    return [x, *(s if s is not None else [None] * k)]


def weighted_sum(u, g, k: int):
    """sum_{j=1..k} j u_j g_{k-j}: the coefficient of t^(k-1) in u'(t) g(t)."""
    return total(scale(mul(u[j], g[k - j]), j) for j in range(1, k + 1))


def convolve(a, b, k: int, product=mul):
    """sum_{i=0..k} product(a_i, b_{k-i}) over full series (index 0 the primal)."""
    return total(
        product(a[i], b[k - i]) if a[i] is not None and b[k - i] is not None else None
        for i in range(k + 1)
    )


# -- rule constructors --------------------------------------------------------------------


def linear(jvp, multiple_results: bool = False):
    """The Taylor rule of a primitive that is linear in its moving inputs once its primal
    values are fixed: its jvp `jvp(primals, tangents, out=, **params)` applied to each order
    (for several outputs, the per-order tuples regrouped per output)."""

    def rule(primals, series, *, out, **params):
        k = order_of(series)
        terms = [
            jvp(primals, tuple(None if s is None else s[i] for s in series), out=out, **params)
            for i in range(k)
        ]
        if multiple_results:
            n = len(out)
            terms = [None if t is None else tuple(t) for t in terms]
            return tuple([None if t is None else t[j] for t in terms] for j in range(n))
        return None if all(t is None for t in terms) else terms

    return rule


def linear_of(prim):
    """`linear` over a primitive's own jvp: `taylor=LINEAR` (`rule_for(linear_of)`)."""
    return linear(prim.jvp, prim.multiple_results)


#: `taylor=LINEAR`: the rule `linear` over the primitive's own jvp
LINEAR = rule_for(linear_of)


def multilinear(prim):
    """The Taylor rule of a primitive linear in each input separately (`bilinear=True`):
    y_k = sum over i_1 + ... + i_n = k of f(x1_{i_1}, ..., xn_{i_n})."""

    def rule(primals, series, *, out, **params):
        k_max = order_of(series)
        fulls = [full(x, s, k_max) for x, s in zip(primals, series)]
        n = len(fulls)
        terms = []
        for k in range(1, k_max + 1):
            acc = None
            for split in _compositions(k, n):
                parts = [f[i] for f, i in zip(fulls, split)]
                if any(p is None for p in parts):
                    continue
                acc = add(acc, bind(prim, *parts, **params))
            terms.append(acc)
        return None if all(t is None for t in terms) else terms

    return rule


#: `taylor=MULTILINEAR`: the rule `multilinear` of the primitive itself (`bilinear=True`)
MULTILINEAR = rule_for(lambda prim: multilinear(prim))


def _compositions(k: int, n: int):
    """Every (i_1, ..., i_n) of non-negative integers summing to k."""
    for cut in itertools.combinations(range(k + n - 1), n - 1):
        prev, parts = -1, []
        for c in (*cut, k + n - 1):
            parts.append(c - prev - 1)
            prev = c
        yield tuple(parts)


def _jet():
    # the Taylor pass traces functions, which sits above the primitives (DESIGN.md §7):
    # looked up at first use
    return importlib.import_module("tracegrad.api.taylor")


def of_function(fn, primals, series) -> list:
    """The coefficients of fn(*primals) along `series` (a Taylor pass over fn's trace)."""
    return _jet().series_of(fn, tuple(primals), tuple(series))


def composite(fn):
    """The Taylor rule of a primitive equal to `fn(*inputs)`, a composition of primitives
    that have rules; the primitive's own output stays the primal value."""

    def rule(primals, series, *, out, **params):
        return of_function(lambda *xs: fn(*xs, **params), primals, series)

    return rule


def elementwise(partials, out_shape=None, reads_output: bool = False):
    """The Taylor rule of an elementwise function from its partial derivatives, each
    `d(*inputs, out)` written with tracegrad's operations, or None for none (an integer
    argument). y' = sum_i d_i(x, y) x_i', integrated order by order: k y_k = sum_i sum_{j=1..k}
    j x_{i,j} g_{i,k-j}, where g_i, the series of d_i to order K - 1, is a Taylor pass over the
    partial. A partial that reads the output (`reads_output`: tanh' = 1 - y^2) sees y's series
    as far as it is known, so its pass runs once per order (O(K) passes); one that does not
    runs once. `out_shape(term, out)` broadcasts a term to the output's shape."""

    def rule(primals, series, *, out, **params):
        k_max = order_of(series)
        moving = [
            i
            for i, s in enumerate(series)
            if s is not None and partials[i] is not None and dtype_of(primals[i]).kind in "fc"
        ]
        if not moving:
            return None
        y: list = []
        if reads_output:
            gs = [_LazyPartial(partials[i], primals, series, out, y) for i in moving]
        else:
            low = [None if s is None else s[: k_max - 1] for s in series]
            gs = [
                [partials[i](*primals, out), *_partial_series(partials[i], primals, low)]
                for i in moving
            ]
        for k in range(1, k_max + 1):
            acc = total(
                weighted_sum(full(primals[i], series[i], k_max), g, k) for i, g in zip(moving, gs)
            )
            y.append(shaped(scale(acc, 1.0 / k), out, out_shape))
        return y

    return rule


def shaped(term, out, out_shape):
    return term if term is None or out_shape is None else out_shape(term, out)


def _partial_series(d, primals, low) -> list:
    if not any(s is not None and s for s in low):
        return [None] * (len(next(s for s in low if s is not None)))
    return of_function(lambda *xs: d(*xs, None), primals, low)


class _LazyPartial:
    """g_i(t) = d_i(x(t), y(t)) where y's series is being computed: entry j needs x and y to
    order j (`y` is the output's list of coefficients, filled as the rule goes); entries are
    computed (one pass each) the first time they are read."""

    def __init__(self, d, primals, series, out, y: list):
        self.d, self.primals, self.series, self.out, self.y = d, primals, series, out, y
        self.known = [d(*primals, out)]

    def __getitem__(self, j: int):
        while len(self.known) <= j:
            n = len(self.known)  # order n needs y_1..y_n, all computed by now
            xs = [None if s is None else s[:n] for s in self.series]
            ys = self.y[:n]
            terms = of_function(
                lambda *args: self.d(*args[:-1], args[-1]),
                (*self.primals, self.out),
                (*xs, ys if any(t is not None for t in ys) else None),
            )
            self.known.append(terms[n - 1])
        return self.known[j]


def unary(recurrence):
    """A one-input rule from `recurrence(u, out) -> [y_1..y_K]` over u = [x, x_1, ..., x_K]."""

    def rule(primals, series, *, out, **params):
        (s,) = series
        return recurrence(full(primals[0], s, len(s)), out)

    return rule


# -- the classical recurrences, over full series u = [x, x_1, ..., x_K] -------------------


def exp_terms(u, y0, scale_by: float = 1.0) -> list:
    """exp(c u): y' = c u' y, so k y_k = c sum_j j u_j y_{k-j}."""
    y = [y0]
    for k in range(1, len(u)):
        y.append(scale(weighted_sum(u, y, k), scale_by / k))
    return y[1:]


def log_terms(u, scale_by: float = 1.0) -> list:
    """c log(u): u y' = c u', so y_k = (c u_k - sum_{j=1..k-1} j y_j u_{k-j} / k) / u_0."""
    y = [None]
    for k in range(1, len(u)):
        known = scale(total(scale(mul(y[j], u[k - j]), j) for j in range(1, k)), 1.0 / k)
        num = add(scale(u[k], scale_by), None if known is None else -known)
        y.append(None if num is None else num / u[0])
    return y[1:]


def sincos_terms(u, s0, c0, hyperbolic: bool = False) -> tuple[list, list]:
    """sin and cos (sinh and cosh) together: s' = u' c, c' = -u' s (+u' s)."""
    s, c = [s0], [c0]
    sign = 1.0 if hyperbolic else -1.0
    for k in range(1, len(u)):
        s.append(scale(weighted_sum(u, c, k), 1.0 / k))
        c.append(scale(weighted_sum(u, s, k), sign / k))
    return s[1:], c[1:]


def quotient_terms(a, b, q0) -> list:
    """a / b: b q = a, so q_k = (a_k - sum_{j=1..k} b_j q_{k-j}) / b_0."""
    q = [q0]
    for k in range(1, len(a)):
        known = total(mul(b[j], q[k - j]) for j in range(1, k + 1))
        num = add(a[k], None if known is None else -known)
        q.append(None if num is None else num / b[0])
    return q[1:]


def sqrt_terms(u, y0) -> list:
    """sqrt(u): y^2 = u, so y_k = (u_k - sum_{j=1..k-1} y_j y_{k-j}) / (2 y_0)."""
    y = [y0]
    for k in range(1, len(u)):
        known = total(mul(y[j], y[k - j]) for j in range(1, k))
        num = add(u[k], None if known is None else -known)
        y.append(None if num is None else num / (y0 * 2.0))
    return y[1:]


def power_terms(u, r: float, y0) -> list:
    """u ** r for a constant r: u y' = r y u', so
    y_k = sum_{j=1..k} ((r + 1) j - k) u_j y_{k-j} / (k u_0). (Needs u_0 != 0.)"""
    y = [y0]
    for k in range(1, len(u)):
        acc = total(scale(mul(u[j], y[k - j]), (r + 1) * j - k) for j in range(1, k + 1))
        y.append(None if acc is None else acc / (u[0] * float(k)))
    return y[1:]


def integer_power_terms(u, n: int, y0) -> list:
    """u ** n for an integer n >= 0 by repeated squaring (JAX's rule: exact at u_0 = 0)."""
    k = len(u) - 1
    result, base, m = None, u, n
    while m:
        if m & 1:
            result = base if result is None else _product(result, base, k)
        m >>= 1
        if m:
            base = _product(base, base, k)
    if result is None:  # n == 0: a constant
        return [None] * k
    return result[1:]


def _product(a, b, k: int) -> list:
    return [a[0] * b[0], *(convolve(a, b, i) for i in range(1, k + 1))]


def logistic_terms(u, y0) -> list:
    """expit(u): y' = y (1 - y) u' (JAX's recurrence, carrying e = y (1 - y))."""
    y, e = [y0], [y0 * (1.0 - y0)]
    for k in range(1, len(u)):
        y.append(scale(weighted_sum(u, e, k), 1.0 / k))
        prod = total(mul(y[j], y[k - j]) for j in range(1, k + 1))
        first = mul(y[k], 1.0 - y0)
        e.append(add(first, None if prod is None else -prod))
    return y[1:]


def tan_terms(u, y0, sign: float = 1.0) -> list:
    """tan(u): y' = (1 + y^2) u', carrying g = 1 + y^2; with sign -1, tanh(u): y' = (1 - y^2) u'."""
    y, g = [y0], [y0 * y0 * sign + 1.0]
    for k in range(1, len(u)):
        y.append(scale(weighted_sum(u, g, k), 1.0 / k))
        g.append(scale(total(mul(y[j], y[k - j]) for j in range(k + 1)), sign))
    return y[1:]


# -- products and linear equations, for the reductions' and the solvers' rules ------------


def product_series(a, b, product=mul) -> list:
    """The full series [c_0, ..., c_K] of `product(a(t), b(t))` for a bilinear `product`
    (elementwise by default, `matmul` for matrices), over full series (index 0 the primal)."""
    k = len(a) - 1
    return [product(a[0], b[0]), *(convolve(a, b, i, product) for i in range(1, k + 1))]


def solve_terms(solve0, apply, rhs, x0) -> list:
    """The coefficients x_1..x_K of the solution of a linear equation M(t) x(t) = r(t):
    M_0 x_k = r_k - sum_{i=1..k} M_i x_{k-i}, one solve with the primal operator per order
    (its factorisation is the primal's, so a rule costs K solves, not K factorisations).
    `solve0(r)` applies M_0^-1, `apply(i, x)` is M_i x (None for M_i = 0), `rhs` is
    [r_1, ..., r_K] (None entries for zero) and `x0` the primal solution."""
    xs = [x0]
    for k in range(1, len(rhs) + 1):
        known = total(apply(i, xs[k - i]) for i in range(1, k + 1) if xs[k - i] is not None)
        r = add(rhs[k - 1], None if known is None else -known)
        xs.append(None if r is None else solve0(r))
    return xs[1:]
