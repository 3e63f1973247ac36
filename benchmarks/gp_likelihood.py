"""The gradient in X of a Gaussian-process negative log marginal likelihood written with NumPy's
linalg as a user would, against the closed form with one Cholesky factorisation.

Run: python -m benchmarks.gp_likelihood [--quick]   (n = 100, 500, 1000; quick: 100, 500)
The program: f(X) = 0.5 y^T solve(K, y) + 0.5 slogdet(K)[1] with K = X X^T / d + s I (d = 8,
s = 0.1). Its gradient: df/dK = (K^-1 - a a^T) / 2 with a = K^-1 y, and dK = (dX X^T + X dX^T)
/ d puts the symmetric df/dK on both sides, so grad f = (K^-1 - a a^T) X / d (the two halves
add up to a factor 1), checked against a central difference at startup.

The limit, the reference of the ratios, is that textbook formula handwritten with one Cholesky
factorisation (SciPy's cho_factor, then cho_solve for K^-1 and a): it forms K^-1, as every
reverse-mode system must form the n x n cotangent of K, (K^-1 - a a^T) / 2, which the issue's
goals assume (jax.jit was measured at 1.1-1.2x of it). A second closed form, never forming
K^-1 ((cho_solve(K, X) - a (a^T X)) / d, O(n^2 d) after the factorisation), shows how far
algebra beyond any AD system's reach goes. The goals: tracegrad's jit within 2.0x / 1.3x /
1.2x of the limit at n = 100 / 500 / 1000 and ahead of jax.jit and HIPS autograd at 500 and
1000; eager tracegrad within 2.0x at 1000. Every row's gradient is checked against the limit's
before timing; ratios are time / limit, per round (benchmarks/harness.py). A note under each
table lists the calls in the code tracegrad's jit generates, so the factorisations its
backward pass makes are visible.

A second tracegrad row writes the program as a SciPy user would, with
`tracegrad.scipy.linalg`'s cho_factor and cho_solve and the log-determinant from the factor's
diagonal (issue 17's goal: within 1.3x of the limit at n = 500 and 1000 under jit); its
backward pass reuses the forward factor and never factorises again.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

import tracegrad as tg
from benchmarks.harness import compare
from benchmarks.peers import (
    AUTOGRAD,
    EAGER,
    JAX,
    JIT,
    add_peer_rows,
    ahead_note,
    generated_calls,
    goal_note,
)
from benchmarks.report import cli, optional, skipped

D, S = 8, 0.1
LIMIT = "limit: textbook closed form, one Cholesky"
FLOOR = "closed form without K^-1"
JIT_CHO = "tracegrad jit(grad), cho_factor"
GOALS_JIT = {100: 2.0, 500: 1.3, 1000: 1.2}
GOALS_EAGER = {1000: 2.0}
GOALS_CHO = {500: 1.3, 1000: 1.3}


def data(n: int):
    rng = np.random.default_rng(n)
    return rng.standard_normal((n, D)), rng.standard_normal(n)


def nll(np, y):
    """The program, given a NumPy-like module (numpy, jax.numpy, autograd.numpy)."""
    n = y.shape[0]

    def f(X):
        K = X @ X.T / D + S * np.eye(n)
        return 0.5 * y @ np.linalg.solve(K, y) + 0.5 * np.linalg.slogdet(K)[1]

    return f


def nll_cho(y):
    """The same program with SciPy's reusable factor (tracegrad.scipy.linalg)."""
    import tracegrad.scipy.linalg as tsl

    n = y.shape[0]

    def f(X):
        K = X @ X.T / D + S * np.eye(n)
        c = tsl.cho_factor(K, lower=True)
        return 0.5 * y @ tsl.cho_solve(c, y) + np.sum(np.log(np.diagonal(c[0])))

    return f


def nll_torch(torch, y):
    """The same program with torch.linalg, float64."""
    n, yt = y.shape[0], torch.from_numpy(y)

    def f(X):
        K = X @ X.T / D + S * torch.eye(n, dtype=torch.float64)
        return 0.5 * yt @ torch.linalg.solve(K, yt) + 0.5 * torch.linalg.slogdet(K)[1]

    return f


def _cholesky_of_K(X):
    K = X @ X.T
    K /= D
    K[np.diag_indices_from(K)] += S
    return scipy.linalg.cho_factor(K, lower=True, overwrite_a=True, check_finite=False)


def limit(X, y):
    """(K^-1 - a a^T) X / d as written, K^-1 from one Cholesky factorisation of K."""
    c = _cholesky_of_K(X)
    g = scipy.linalg.cho_solve(c, np.eye(X.shape[0]), overwrite_b=True, check_finite=False)
    a = g @ y
    g -= np.outer(a, a)
    g = g @ X
    g /= D
    return g


def floor(X, y):
    """(K^-1 X - a (a^T X)) / d: the same factorisation, solves for d + 1 columns only."""
    c = _cholesky_of_K(X)
    a = scipy.linalg.cho_solve(c, y, check_finite=False)
    g = scipy.linalg.cho_solve(c, X, check_finite=False)
    g -= np.outer(a, a @ X)
    g /= D
    return g


def check_closed_forms(X, y) -> None:
    """Both closed forms against a central difference of f along a random direction."""
    f, v, h = nll(np, y), np.random.default_rng(1).standard_normal(X.shape), 1e-5
    numeric = (f(X + h * v) - f(X - h * v)) / (2 * h)
    for closed_form in (limit, floor):
        np.testing.assert_allclose(np.vdot(closed_form(X, y), v), numeric, rtol=1e-6)


def systems(n, jax, torch, autograd, notes):
    """name -> one gradient at size n, each checked against the limit's first."""
    X, y = data(n)
    check_closed_forms(X, y)
    want = limit(X, y)

    def check(got):
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9 * np.abs(want).max())

    check(floor(X, y))
    out = {LIMIT: lambda: limit(X, y), FLOOR: lambda: floor(X, y)}
    f = nll(np, y)
    ours, eager = tg.jit(tg.grad(f)), tg.grad(f)
    check(ours(X))
    check(eager(X))
    out[JIT], out[EAGER] = lambda: ours(X), lambda: eager(X)
    notes.append(f"calls in tracegrad's jit(grad) code: {generated_calls(ours, X)}")
    cho = tg.jit(tg.grad(nll_cho(y)))
    check(cho(X))
    out[JIT_CHO] = lambda: cho(X)
    notes.append(f"calls in the cho_factor row's code: {generated_calls(cho, X)}")
    add_peer_rows(out, check, X, lambda m, asarray: nll(m, asarray(y)), lambda t: nll_torch(t, y),
                  jax, torch, autograd)  # fmt: skip
    return out


def run(opts):
    jax, torch, autograd = optional("jax"), optional("torch"), optional("autograd")
    if note := skipped("jax", "torch", "autograd"):
        yield note
    for n in (100, 500) if opts.quick else (100, 500, 1000):
        notes: list[str] = []
        title = f"Gradient of a GP negative log marginal likelihood, n = {n}, d = {D}, float64"
        cmp = compare(title, systems(n, jax, torch, autograd, notes), LIMIT, quick=opts.quick)
        cmp.notes += notes + [goal_note(cmp, JIT, GOALS_JIT[n], "the limit")]
        if n in GOALS_CHO:
            cmp.notes.append(goal_note(cmp, JIT_CHO, GOALS_CHO[n], "the limit"))
        if n in GOALS_EAGER:
            cmp.notes.append(goal_note(cmp, EAGER, GOALS_EAGER[n], "the limit"))
        if n >= 500:
            cmp.notes += ahead_note(cmp, JIT, (JAX, AUTOGRAD))
        yield cmp.table()


if __name__ == "__main__":
    cli(run, __doc__)
