"""What the gradient benchmarks written as one program for several libraries share: the row
names, the peers' rows (jax.jit of jax.grad, PyTorch's `.backward()`, HIPS autograd's grad of
the same program), the calls in tracegrad's generated code, and the goal lines under a table.

A program is given as `program(numpy_like, asarray)`, the function of `x` written with that
library's NumPy (`numpy`, `jax.numpy`, `autograd.numpy`; `asarray` converts its constant
data), and `torch_program(torch)`, the same written with torch (float64).
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

from benchmarks.harness import Comparison

JIT, EAGER = "tracegrad jit(grad)", "tracegrad grad (no jit)"
JAX, TORCH, AUTOGRAD = "jax.jit(jax.grad)", "torch (.backward)", "HIPS autograd"


def add_peer_rows(out, check, x, program, torch_program, jax, torch, autograd) -> None:
    """The rows of the peers that are installed (None: not), each gradient at `x` checked
    (`check`) before it is timed."""
    if jax is not None:
        import jax.numpy as jnp

        jf, jx = jax.jit(jax.grad(program(jnp, jnp.asarray))), jnp.asarray(x)
        check(np.asarray(jf(jx)))
        out[JAX] = lambda: jf(jx).block_until_ready()
    if torch is not None:
        tf = torch_program(torch)

        def torch_grad():
            xt = torch.from_numpy(x).requires_grad_()
            tf(xt).backward()
            return xt.grad

        check(torch_grad().numpy())
        out[TORCH] = torch_grad
    if autograd is not None:
        import autograd.numpy as anp

        af = autograd.grad(program(anp, np.asarray))
        check(af(x))
        out[AUTOGRAD] = lambda: af(x)


def generated_calls(jitted, *args) -> str:
    """The functions the generated code calls, with counts: "np.linalg.solve x2, ..."."""
    calls = Counter(re.findall(r"=\s*([A-Za-z_][\w.]*)\(", jitted.lower(*args).source))
    return ", ".join(f"{name} x{k}" for name, k in calls.most_common())


def goal_note(cmp: Comparison, system: str, goal: float, label: str) -> str:
    """One line: the goal, the measured median ratio to the reference, met or not."""
    if system not in cmp.per_call:
        return f"goal: {system} within {goal:.1f}x of {label}: not measured"
    ratio = float(np.median(cmp.ratios(system)))
    verdict = "met" if ratio <= goal else "NOT met"
    return f"goal: {system} within {goal:.1f}x of {label}: {ratio:.2f}x, {verdict}"


def ahead_note(cmp: Comparison, system: str, peers: tuple[str, ...]) -> list[str]:
    """Lines comparing `system` with each measured peer, round by round (time / peer's)."""
    lines = []
    for peer in peers:
        if system in cmp.per_call and peer in cmp.per_call:
            ratio = float(np.median(cmp.ratios(system, peer)))
            verdict = "ahead" if ratio < 1 else "NOT ahead"
            lines.append(f"goal: {system} ahead of {peer}: time ratio {ratio:.2f}, {verdict}")
    return lines
