"""Per-operation overhead of the PyTorch-style shim, against PyTorch eager and HIPS autograd.

Run: python -m benchmarks.shim_chain
- forward + backward of a 1,000-op chain on tiny (0-d) float64 tensors, microseconds per
  operation, split into recording (forward) and the backward pass;
- the same chain through the functional `tg.grad` (tracing, no shim);
- a 10^6-node chain recorded, differentiated and freed (the scale requirement).
One thread per library, one process, best of several rounds.
"""

from __future__ import annotations

import gc
import time

import numpy as np

import tracegrad as tg
from benchmarks.common import best_time, optional
from benchmarks.grad_overhead import N_OPS, chain


def _forward_backward(make_leaf, lib):
    def run():
        x = make_leaf()
        chain(lib)(x).backward()
        return x.grad

    return run


def _split(leaf, rounds: int = 30) -> tuple[float, float]:
    """Best forward and best backward time over `rounds`, timed apart in each round."""
    forward = backward = float("inf")
    for _ in range(rounds):
        x = leaf()
        t0 = time.perf_counter()
        y = chain(tg)(x)
        t1 = time.perf_counter()
        y.backward()
        del y
        t2 = time.perf_counter()
        forward, backward = min(forward, t1 - t0), min(backward, t2 - t1)
    return forward, backward


def main() -> None:
    torch = optional("torch")
    autograd = optional("autograd")

    leaf = lambda: tg.tensor(0.3, dtype=np.float64, requires_grad=True)  # noqa: E731
    rows = []
    t_total = best_time(_forward_backward(leaf, tg))
    t_forward, t_backward = _split(leaf)
    rows.append(("tracegrad shim, forward + backward", t_total))
    rows.append(("  of which recording (forward)", t_forward))
    rows.append(("  of which backward (and freeing)", t_backward))
    rows.append(("tracegrad tg.grad (functional)", best_time(lambda: tg.grad(chain(np))(0.3))))
    if torch is not None:
        t_leaf = lambda: torch.tensor(0.3, dtype=torch.float64, requires_grad=True)  # noqa: E731
        rows.append(
            ("PyTorch eager, forward + backward", best_time(_forward_backward(t_leaf, torch)))
        )
    if autograd is not None:
        import autograd.numpy as anp

        rows.append(("HIPS autograd grad", best_time(lambda: autograd.grad(chain(anp))(0.3))))
    print("1,000-op chain of 0-d float64 tensors (us per op), one thread each")
    for name, t in rows:
        ratio = t / t_total
        print(f"  {name:<38} {t / N_OPS * 1e6:8.2f} us/op   {ratio:5.2f}x the shim")

    n = 10**6
    x = tg.tensor(1.0, dtype=np.float64, requires_grad=True)
    gc.collect()
    t0 = time.perf_counter()
    y = x
    for _ in range(n):
        y = y + 1e-9
    t1 = time.perf_counter()
    y.backward()
    t2 = time.perf_counter()
    del y
    t3 = time.perf_counter()
    print(
        f"10^6-node chain: record {(t1 - t0) / n * 1e6:.2f} us/node, backward "
        f"{(t2 - t1) / n * 1e6:.2f} us/node, free {(t3 - t2) / n * 1e6:.2f} us/node; "
        f"x.grad = {x.grad.item()}"
    )


if __name__ == "__main__":
    main()
