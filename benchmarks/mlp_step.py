"""An MLP training step (batch 64, 64 -> H -> 10, tanh, MSE, SGD) under jit and without it
(`tg.value_and_grad`; the PyTorch-style tensors running PyTorch's code), against a handwritten
NumPy step (the limit) and peers, one thread each, alternating in one process.

Run: python -m benchmarks.mlp_step [--quick]
The handwritten step updates the parameters in place and reuses temporaries where natural.
Ratios are time / handwritten, per round (benchmarks/harness.py). Page faults per step are
counted after the rounds: a step that frees and re-allocates large temporaries pays for them.
"""

from __future__ import annotations

import resource

import numpy as np

import tracegrad as tg
import tracegrad.torch as ttorch
from benchmarks.harness import Table, compare
from benchmarks.report import cli, optional, skipped

LR = 0.01


def init(h, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "w1": rng.standard_normal((64, h)) / 8.0,
        "b1": np.zeros(h),
        "w2": rng.standard_normal((h, 10)) / np.sqrt(h),
        "b2": np.zeros(10),
    }


def loss(p, x, y):
    hidden = np.tanh(x @ p["w1"] + p["b1"])
    return np.mean((hidden @ p["w2"] + p["b2"] - y) ** 2)


def step(p, x, y):
    value, g = tg.value_and_grad(loss)(p, x, y)
    return {k: p[k] - LR * g[k] for k in p}, value


class Handwritten:
    """The limit: forward and backward by hand, every buffer allocated once and reused,
    parameters updated in place (freeing and re-allocating large temporaries each step costs
    page faults, which this avoids)."""

    def __init__(self, p, x, y):
        self.p, self.x, self.y = p, x, y
        h = p["b1"].shape[0]
        self.a = np.empty((64, h))
        self.da = np.empty((64, h))
        self.o = np.empty((64, 10))
        self.sq = np.empty((64, 10))
        self.g = {k: np.empty_like(v) for k, v in p.items()}

    def __call__(self):
        p, g, x, y, a, da, o = self.p, self.g, self.x, self.y, self.a, self.da, self.o
        np.matmul(x, p["w1"], out=a)
        a += p["b1"]
        np.tanh(a, out=a)  # a is now the hidden activation
        np.matmul(a, p["w2"], out=o)
        o += p["b2"]
        o -= y
        np.multiply(o, o, out=self.sq)
        value = self.sq.sum() / o.size
        o *= 2.0 / o.size  # d loss / d out
        np.matmul(a.T, o, out=g["w2"])
        np.sum(o, axis=0, out=g["b2"])
        np.matmul(o, p["w2"].T, out=da)
        np.multiply(a, a, out=a)
        np.subtract(1.0, a, out=a)
        da *= a
        np.matmul(x.T, da, out=g["w1"])
        np.sum(da, axis=0, out=g["b1"])
        for k in p:
            g[k] *= LR
            p[k] -= g[k]
        return value


def page_faults(fn, n=50):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(n):
        fn()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / n


def data(seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((64, 64)), rng.standard_normal((64, 10))


def check_same_numbers(h, x, y) -> None:
    """The jitted step and the handwritten one take the same step from the same start."""
    p_check, v_check = tg.jit(step)(init(h), x, y)
    ref = Handwritten(init(h), x, y)
    v_ref = ref()
    np.testing.assert_allclose(v_check, v_ref, rtol=1e-12)
    for k in p_check:
        np.testing.assert_allclose(p_check[k], ref.p[k], rtol=1e-10, atol=1e-12)


def stateful(fn, p):
    """A step that carries its parameters from call to call, as a training loop does."""
    state = {"p": p}

    def run():
        state["p"], value = fn(state["p"])
        return value

    return run


def systems(h, x, y, torch, jax, autograd):
    """name -> one training step, every one built (and compiled) here."""
    jstep, jdonate = tg.jit(step), tg.jit(step, donate_argnums=0)  # donate: update in place
    out = {
        "handwritten NumPy": Handwritten(init(h), x, y),
        "tracegrad jit": stateful(lambda p: jstep(p, x, y), init(h)),
        "tracegrad jit donate": stateful(lambda p: jdonate(p, x, y), init(h)),
        "tracegrad no jit": stateful(lambda p: step(p, x, y), init(h)),
    }
    out["tracegrad tensors"] = _torch_step(ttorch, h, x, y)  # the same code on the shim
    if jax is not None:
        out["jax.jit"] = _jax_step(jax, h, x, y)
    if torch is not None:
        out["PyTorch eager"] = _torch_step(torch, h, x, y)
    if autograd is not None:
        import autograd.numpy as anp

        def aloss(p, x, y):
            hidden = anp.tanh(anp.dot(x, p["w1"]) + p["b1"])
            return anp.mean((anp.dot(hidden, p["w2"]) + p["b2"] - y) ** 2)

        avg = autograd.value_and_grad(aloss)

        def astep(p):
            value, g = avg(p, x, y)
            return {k: p[k] - LR * g[k] for k in g}, value

        out["HIPS autograd"] = stateful(astep, init(h))
    return out


def _jax_step(jax, h, x, y):
    import jax.numpy as jnp

    def jloss(p, x, y):
        hidden = jnp.tanh(x @ p["w1"] + p["b1"])
        return jnp.mean((hidden @ p["w2"] + p["b2"] - y) ** 2)

    @jax.jit
    def jax_step(p, x, y):
        value, g = jax.value_and_grad(jloss)(p, x, y)
        return {k: p[k] - LR * g[k] for k in p}, value

    jx, jy = jnp.asarray(x), jnp.asarray(y)
    run = stateful(lambda p: jax_step(p, jx, jy), {k: jnp.asarray(v) for k, v in init(h).items()})
    return lambda: run().block_until_ready()  # jax dispatches asynchronously


def _torch_step(torch, h, x, y):
    tp = {k: torch.tensor(v, requires_grad=True) for k, v in init(h).items()}
    tx, ty = torch.tensor(x), torch.tensor(y)

    def run():
        for v in tp.values():
            v.grad = None
        value = torch.mean((torch.tanh(tx @ tp["w1"] + tp["b1"]) @ tp["w2"] + tp["b2"] - ty) ** 2)
        value.backward()
        with torch.no_grad():
            for v in tp.values():
                v -= LR * v.grad
        return value

    return run


FAULTED = ("handwritten NumPy", "tracegrad jit", "tracegrad jit donate")


def run(opts):
    torch, jax, autograd = optional("torch"), optional("jax"), optional("autograd")
    if note := skipped("torch", "jax", "autograd"):
        yield note
    x, y = data()
    faults = []
    for h in (32, 256, 2048):
        check_same_numbers(h, x, y)
        steps = systems(h, x, y, torch, jax, autograd)
        title = f"MLP training step, batch 64, 64 -> {h} -> 10, float64"
        yield compare(title, steps, "handwritten NumPy", quick=opts.quick).table()
        faults.append([str(h)] + [f"{page_faults(steps[name]):.0f}" for name in FAULTED])
    yield Table("page faults per step (minor, 50 steps)", ["H", *FAULTED], faults)


if __name__ == "__main__":
    cli(run, __doc__)
