"""The gradient of a spectral loss sum(|rfft(x)|^2 * w) written with np.fft, against the
handwritten adjoint in NumPy.

Run: python -m benchmarks.spectral_loss [--quick]   (N = 2^10, 2^16, 2^20; quick: 2^10, 2^16)
With X = rfft(x) (the half-spectrum k = 0..N/2), dL = sum_k 2 w_k Re(conj(X_k) dX_k) and
dX_k = sum_n e^(-2 pi i k n / N) dx_n, so grad_n = 2 Re sum_k w_k X_k e^(2 pi i k n / N). irfft
counts each bin strictly between 0 and N/2 twice (its mirror) and the two real bins once, so
with Z = w X and the DC and Nyquist bins doubled, grad = N irfft(Z) = irfft(Z, norm="forward"):
one rfft, one product, one irfft. The loss is quadratic, so a central difference with step 1
is exact up to rounding: the adjoint is checked that way at startup. The goal: tracegrad's
jit within 1.5x of it. Every row's gradient is checked against the adjoint's before timing;
ratios are time / adjoint, per round (benchmarks/harness.py). A note under each table lists
the calls in the code tracegrad's jit generates.
"""

from __future__ import annotations

import numpy as np

import tracegrad as tg
from benchmarks.harness import compare
from benchmarks.peers import EAGER, JIT, add_peer_rows, generated_calls, goal_note
from benchmarks.report import cli, optional, skipped

LIMIT = "handwritten adjoint (rfft, irfft)"
GOAL_JIT = 1.5


def data(n: int):
    rng = np.random.default_rng(n)
    return rng.standard_normal(n), rng.random(n // 2 + 1)


def loss(np, w):
    """The program, given a NumPy-like module (numpy, jax.numpy, autograd.numpy)."""

    def f(x):
        return np.sum(np.abs(np.fft.rfft(x)) ** 2 * w)

    return f


def loss_torch(torch, w):
    wt = torch.from_numpy(w)

    def f(x):
        return torch.sum(torch.abs(torch.fft.rfft(x)) ** 2 * wt)

    return f


def adjoint(x, w):
    """N irfft(w X) with the real bins (DC, and Nyquist for even N) doubled."""
    z = np.fft.rfft(x)
    z *= w
    z[0] *= 2
    if x.shape[0] % 2 == 0:
        z[-1] *= 2
    return np.fft.irfft(z, n=x.shape[0], norm="forward")


def check_adjoint(x, w) -> None:
    """The adjoint against a central difference along a random direction (exact: quadratic)."""
    f, v = loss(np, w), np.random.default_rng(1).standard_normal(x.shape)
    numeric = (f(x + v) - f(x - v)) / 2
    np.testing.assert_allclose(np.vdot(adjoint(x, w), v), numeric, rtol=1e-9)


def systems(n, jax, torch, autograd, notes):
    """name -> one gradient at size n, each checked against the adjoint's first."""
    x, w = data(n)
    check_adjoint(x, w)
    want = adjoint(x, w)

    def check(got):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-10 * np.abs(want).max())

    out = {LIMIT: lambda: adjoint(x, w)}
    f = loss(np, w)
    ours, eager = tg.jit(tg.grad(f)), tg.grad(f)
    check(ours(x))
    check(eager(x))
    out[JIT], out[EAGER] = lambda: ours(x), lambda: eager(x)
    notes.append(f"calls in tracegrad's jit(grad) code: {generated_calls(ours, x)}")
    add_peer_rows(out, check, x, lambda m, asarray: loss(m, asarray(w)), lambda t: loss_torch(t, w),
                  jax, torch, autograd)  # fmt: skip
    return out


def run(opts):
    jax, torch, autograd = optional("jax"), optional("torch"), optional("autograd")
    if note := skipped("jax", "torch", "autograd"):
        yield note
    for k in (10, 16) if opts.quick else (10, 16, 20):
        notes: list[str] = []
        title = f"Gradient of sum(|rfft(x)|^2 * w), N = 2^{k}, float64"
        cmp = compare(title, systems(2**k, jax, torch, autograd, notes), LIMIT, quick=opts.quick)
        cmp.notes += notes + [goal_note(cmp, JIT, GOAL_JIT, "the adjoint")]
        yield cmp.table()


if __name__ == "__main__":
    cli(run, __doc__)
