"""`grad` without jit against HIPS autograd and PyTorch eager (when installed), one thread each.

Run: python -m benchmarks.grad_overhead
- a chain of 1,000 scalar operations, forward and backward: microseconds per operation;
- a small MLP training-step gradient (batch 64, 64 -> 256 -> 10, tanh, MSE);
- the node counts of nested grad of f(x) = sin(x) exp(x) / (1 + x^2), orders 1-6 (JAX's
  jaxprs: 21, 67, 182, 470, 1208, 3144 equations).
All ratios are against tracegrad measured in the same process.
"""

from __future__ import annotations

import numpy as np

import tracegrad as tg
from benchmarks.common import best_time, optional

N_OPS = 1000


def chain(np_, n=N_OPS):
    # four operations per step: sin, multiply, multiply, add
    def f(x):
        for _ in range(n // 4):
            x = np_.sin(x) * 0.9 + x * 0.3
        return x

    return f


def mlp(np_, x, y):
    def loss(w1, b1, w2, b2):
        h = np_.tanh(x @ w1 + b1)
        return np_.mean((h @ w2 + b2 - y) ** 2)

    return loss


def main() -> None:
    autograd = optional("autograd")
    torch = optional("torch")
    rows = []

    # -- 1,000-op scalar chain ----------------------------------------------------------
    x0 = 0.3
    t_tg = best_time(lambda: tg.grad(chain(np))(x0))
    rows.append(("scalar chain, grad (us/op)", t_tg / N_OPS * 1e6, {}))
    if autograd is not None:
        import autograd.numpy as anp

        t = best_time(lambda: autograd.grad(chain(anp))(x0))
        rows[-1][2]["HIPS autograd"] = t / N_OPS * 1e6
    if torch is not None:

        def torch_chain():
            x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
            chain(torch)(x).backward()
            return x.grad

        t = best_time(torch_chain)
        rows[-1][2]["PyTorch eager"] = t / N_OPS * 1e6

    # -- MLP gradient -------------------------------------------------------------------
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 64))
    y = rng.standard_normal((64, 10))
    params = (
        rng.standard_normal((64, 256)) * 0.1,
        np.zeros(256),
        rng.standard_normal((256, 10)) * 0.1,
        np.zeros(10),
    )
    g = tg.grad(mlp(np, x, y), argnums=(0, 1, 2, 3))
    t_tg = best_time(lambda: g(*params))
    rows.append(("MLP 64-256-10 grad (us/step)", t_tg * 1e6, {}))

    def numpy_step():  # handwritten forward and backward: the limit
        w1, b1, w2, b2 = params
        a = x @ w1 + b1
        h = np.tanh(a)
        r = h @ w2 + b2 - y
        d = 2.0 * r / r.size
        gw2 = h.T @ d
        gb2 = d.sum(0)
        da = (d @ w2.T) * (1 - h * h)
        return x.T @ da, da.sum(0), gw2, gb2

    rows[-1][2]["handwritten NumPy"] = best_time(numpy_step) * 1e6
    for got, want in zip(g(*params), numpy_step()):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    if autograd is not None:
        import autograd.numpy as anp

        def ag_loss(p):
            return mlp(anp, x, y)(*p)

        agp = autograd.grad(ag_loss)
        rows[-1][2]["HIPS autograd"] = best_time(lambda: agp(params)) * 1e6
    if torch is not None:
        tx, ty = torch.tensor(x), torch.tensor(y)
        tp = [torch.tensor(p, requires_grad=True) for p in params]

        def torch_step():
            for p in tp:
                p.grad = None
            mlp(torch, tx, ty)(*tp).backward()

        rows[-1][2]["PyTorch eager"] = best_time(torch_step) * 1e6

    print(f"{'benchmark':34} {'tracegrad':>10}  peers (ratio = peer / tracegrad)")
    for name, ours, peers in rows:
        peer_text = ", ".join(f"{k} {v:.2f} ({v / ours:.2f}x)" for k, v in peers.items())
        print(f"{name:34} {ours:10.2f}  {peer_text}")

    # -- nested grad graph sizes ----------------------------------------------------------
    def f(x):
        return np.sin(x) * np.exp(x) / (1 + x * x)

    sizes = []
    d = f
    for _ in range(6):
        d = tg.grad(d)
        sizes.append(len(tg.make_graph(d)(1.0).nodes))
    print(
        "nested grad graph nodes, orders 1-6:", sizes, "(JAX jaxprs: 21, 67, 182, 470, 1208, 3144)"
    )


if __name__ == "__main__":
    main()
