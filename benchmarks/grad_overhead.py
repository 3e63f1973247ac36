"""`grad` without jit against HIPS autograd and PyTorch eager (when installed), one thread each.

Run: python -m benchmarks.grad_overhead [--quick]
- a chain of 1,000 scalar operations, forward and backward: microseconds per operation, ratios
  to tracegrad's `tg.grad`;
- a small MLP training-step gradient (batch 64, 64 -> 256 -> 10, tanh, MSE): ratios to a
  handwritten NumPy forward and backward (the limit);
- the node counts of nested grad of f(x) = sin(x) exp(x) / (1 + x^2), orders 1-6 (JAX's
  jaxprs: 21, 67, 182, 470, 1208, 3144 equations).
Systems alternate in rounds in one process (benchmarks/harness.py).
"""

from __future__ import annotations

import numpy as np

import tracegrad as tg
from benchmarks.harness import compare
from benchmarks.report import cli, optional, skipped

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


def chain_systems(torch, autograd, x0=0.3):
    out = {"tracegrad tg.grad": lambda: tg.grad(chain(np))(x0)}
    if autograd is not None:
        import autograd.numpy as anp

        out["HIPS autograd"] = lambda: autograd.grad(chain(anp))(x0)
    if torch is not None:

        def torch_chain():
            x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
            chain(torch)(x).backward()
            return x.grad

        out["PyTorch eager"] = torch_chain
    return out


def mlp_systems(torch, autograd):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 64))
    y = rng.standard_normal((64, 10))
    params = (
        rng.standard_normal((64, 256)) * 0.1,
        np.zeros(256),
        rng.standard_normal((256, 10)) * 0.1,
        np.zeros(10),
    )

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

    g = tg.grad(mlp(np, x, y), argnums=(0, 1, 2, 3))
    for got, want in zip(g(*params), numpy_step()):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    out = {"handwritten NumPy": numpy_step, "tracegrad tg.grad": lambda: g(*params)}
    if autograd is not None:
        import autograd.numpy as anp

        agp = autograd.grad(lambda p: mlp(anp, x, y)(*p))
        out["HIPS autograd"] = lambda: agp(params)
    if torch is not None:
        tx, ty = torch.tensor(x), torch.tensor(y)
        tp = [torch.tensor(p, requires_grad=True) for p in params]

        def torch_step():
            for p in tp:
                p.grad = None
            mlp(torch, tx, ty)(*tp).backward()

        out["PyTorch eager"] = torch_step
    return out


def nested_sizes(orders=6) -> list[int]:
    def f(x):
        return np.sin(x) * np.exp(x) / (1 + x * x)

    sizes = []
    d = f
    for _ in range(orders):
        d = tg.grad(d)
        sizes.append(len(tg.make_graph(d)(1.0).nodes))
    return sizes


def run(opts):
    torch, autograd = optional("torch"), optional("autograd")
    if note := skipped("torch", "autograd"):
        yield note
    title = "1,000-op scalar chain (sin, *0.9, *0.3, +), forward + backward, float64"
    systems = chain_systems(torch, autograd)
    yield compare(
        title, systems, "tracegrad tg.grad", quick=opts.quick, per=N_OPS, unit="op"
    ).table()
    title = "MLP gradient, batch 64, 64 -> 256 -> 10, tanh, MSE, float64"
    yield compare(
        title, mlp_systems(torch, autograd), "handwritten NumPy", quick=opts.quick
    ).table()
    yield (
        f"nested grad graph nodes, orders 1-6: {nested_sizes()} "
        "(JAX jaxprs: 21, 67, 182, 470, 1208, 3144)"
    )


if __name__ == "__main__":
    cli(run, __doc__)
