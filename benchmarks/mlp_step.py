"""An MLP training step (batch 64, 64 -> H -> 10, tanh, MSE, SGD) under jit, against a
handwritten NumPy step (the limit) and peers, one thread each, in one process.

Run: python -m benchmarks.mlp_step
The handwritten step updates the parameters in place and reuses temporaries where natural.
Ratios are time / handwritten.
"""

from __future__ import annotations

import resource

import numpy as np

import tracegrad as tg
from benchmarks.common import best_time, optional

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


def main(sizes=(32, 256, 2048)) -> None:
    torch = optional("torch")
    jax = optional("jax")
    autograd = optional("autograd")
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
    print(f"{'H':>5} {'handwritten us':>15}  ratios (time / handwritten); page faults per step")
    for h in sizes:
        t_ref, ratios, faults = measure(h, torch, jax, autograd)
        text = ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items())
        ftext = ", ".join(f"{k} {v:.0f}" for k, v in faults.items())
        print(f"{h:>5} {t_ref * 1e6:15.1f}  {text}\n{'':22}faults: {ftext}")


def measure(h, torch, jax, autograd):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((64, 64)), rng.standard_normal((64, 10))
    hand = Handwritten(init(h), x, y)
    jstep = tg.jit(step)
    state = {"p": init(h)}

    def run_jit():
        state["p"], value = jstep(state["p"], x, y)
        return value

    # same numbers: one step from the same start
    p_check, v_check = tg.jit(step)(init(h), x, y)
    ref = Handwritten(init(h), x, y)
    v_ref = ref()
    np.testing.assert_allclose(v_check, v_ref, rtol=1e-12)
    for k in p_check:
        np.testing.assert_allclose(p_check[k], ref.p[k], rtol=1e-10, atol=1e-12)

    t_ref = best_time(hand)
    ratios = {"tracegrad jit": best_time(run_jit) / t_ref}
    faults = {"handwritten": page_faults(hand), "tracegrad jit": page_faults(run_jit)}
    nojit = {"p": init(h)}

    def run_nojit():
        nojit["p"], value = step(nojit["p"], x, y)
        return value

    ratios["tracegrad no jit"] = best_time(run_nojit) / t_ref
    jdonate = tg.jit(step, donate_argnums=0)  # the update writes into the old parameters
    dstate = {"p": init(h)}

    def run_donate():
        dstate["p"], value = jdonate(dstate["p"], x, y)
        return value

    ratios["tracegrad jit donate"] = best_time(run_donate) / t_ref
    faults["tracegrad jit donate"] = page_faults(run_donate)
    if jax is not None:
        import jax.numpy as jnp

        def jloss(p, x, y):
            hidden = jnp.tanh(x @ p["w1"] + p["b1"])
            return jnp.mean((hidden @ p["w2"] + p["b2"] - y) ** 2)

        @jax.jit
        def jax_step(p, x, y):
            value, g = jax.value_and_grad(jloss)(p, x, y)
            return {k: p[k] - LR * g[k] for k in p}, value

        jp = {k: jnp.asarray(v) for k, v in init(h).items()}
        jx, jy = jnp.asarray(x), jnp.asarray(y)
        jstate = {"p": jp}

        def run_jax():
            jstate["p"], value = jax_step(jstate["p"], jx, jy)
            value.block_until_ready()

        ratios["jax.jit"] = best_time(run_jax) / t_ref
    if torch is not None:
        tp = {k: torch.tensor(v, requires_grad=True) for k, v in init(h).items()}
        tx, ty = torch.tensor(x), torch.tensor(y)

        def run_torch():
            for v in tp.values():
                v.grad = None
            value = torch.mean(
                (torch.tanh(tx @ tp["w1"] + tp["b1"]) @ tp["w2"] + tp["b2"] - ty) ** 2
            )
            value.backward()
            with torch.no_grad():
                for v in tp.values():
                    v -= LR * v.grad
            return value

        ratios["PyTorch eager"] = best_time(run_torch) / t_ref
    if autograd is not None:
        import autograd.numpy as anp

        def aloss(p, x, y):
            hidden = anp.tanh(anp.dot(x, p["w1"]) + p["b1"])
            return anp.mean((anp.dot(hidden, p["w2"]) + p["b2"] - y) ** 2)

        avg = autograd.value_and_grad(aloss)
        astate = {"p": init(h)}

        def run_autograd():
            value, g = avg(astate["p"], x, y)
            astate["p"] = {k: astate["p"][k] - LR * g[k] for k in g}
            return value

        ratios["HIPS autograd"] = best_time(run_autograd) / t_ref
    return t_ref, ratios, faults


if __name__ == "__main__":
    main()
