"""Checkpointing (`tg.checkpoint`): peak memory and time of a gradient through a deep tanh chain.

Run: python -m benchmarks.checkpoint_memory [--quick]
The task: L layers of x = tanh(x @ W_i), x and each W_i 256 x 256 float64 (512 KiB each),
loss sum(x_final), the gradient with respect to x (the activations are what checkpointing
saves; a gradient with respect to every W_i adds L x 512 KiB of output to either side).
Unchecked, reverse mode keeps every layer's output (tanh's derivative reads it) and its input
to the product: about one 512 KiB array per layer. Checkpointed in blocks of B layers, the
forward pass keeps only each block's input, and the backward pass recomputes one block at a
time: about L/B + B arrays, least at B = sqrt(L).

Method. Peak memory is tracemalloc's peak (NumPy reports its array buffers to it) during one
gradient call, minus what was traced before it, after a warm-up call (the jitted systems compile
then); the weights are allocated before tracing starts. Times come from the shared harness
(`compare`: alternating rounds, ratio to the unchecked gradient of the same mode, median and
quartiles). Table 1: L = 64, blocks of 8, eager `tg.grad` and `tg.jit(tg.grad)`; the issue's
bars are a peak at most 0.5x and a time at most 1.4x the unchecked gradient's. Table 2:
sqrt(L) blocks for L = 16, 64, 144, 256 under jit: the checkpointed peak over sqrt(L) stays
flat while the unchecked one grows with L.
"""

from __future__ import annotations

import gc
import math
import tracemalloc

import numpy as np

from benchmarks.harness import Table, compare, quartiles
from benchmarks.report import cli

N = 256
MB = 2**20


def make_data(layers: int):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, N))
    # 1/sqrt(N) keeps the pre-activations of order one through the layers
    return x, [rng.standard_normal((N, N)) / np.sqrt(N) for _ in range(layers)]


def loss_fn(tg, ws, block: int | None):
    """sum(tanh chain), checkpointed in blocks of `block` layers (None: not at all)."""

    def layers(x, *block_ws):
        for w in block_ws:
            x = np.tanh(x @ w)
        return x

    step = tg.checkpoint(layers) if block else layers
    size = block or len(ws)

    def loss(x):
        for i in range(0, len(ws), size):
            x = step(x, *ws[i : i + size])
        return np.sum(x)

    return loss


def gradient(block: int | None, ws, jit: bool):
    import tracegrad as tg

    grad = tg.grad(loss_fn(tg, ws, block))
    return tg.jit(grad) if jit else grad


def peak_mb(fn, x) -> float:
    """tracemalloc's peak during `fn(x)` beyond what was live before (after a warm-up)."""
    fn(x)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = fn(x)
        peak = tracemalloc.get_traced_memory()[1] - base
        del out
    finally:
        tracemalloc.stop()
    return peak / MB


def _check(fn, ref, x) -> None:
    np.testing.assert_allclose(fn(x), ref(x), rtol=1e-12, atol=1e-14)


def blocks_table(quick: bool) -> Table:
    layers, block = 64, 8
    x, ws = make_data(layers)
    rows, notes = [], []
    for jit in (False, True):
        mode = "jit(grad)" if jit else "grad"
        plain, ckpt = gradient(None, ws, jit), gradient(block, ws, jit)
        _check(ckpt, plain, x)
        p_plain, p_ckpt = peak_mb(plain, x), peak_mb(ckpt, x)
        systems = {
            "unchecked": lambda plain=plain: plain(x),
            "checkpointed": lambda ckpt=ckpt: ckpt(x),
        }
        timing = compare(mode, systems, "unchecked", quick=quick)
        lo, med, hi = quartiles(timing.ratios("checkpointed"))
        rows.append([mode, "unchecked", f"{p_plain:.1f}", "1.00", "1.00"])
        rows.append(
            [mode, f"blocks of {block}", f"{p_ckpt:.1f}", f"{p_ckpt / p_plain:.2f}",
             f"{med:.2f} ({lo:.2f}-{hi:.2f})"]
        )  # fmt: skip
        notes.append(
            f"{mode}: peak ratio {p_ckpt / p_plain:.2f} (bar 0.5), time ratio {med:.2f} (bar 1.4)"
        )
    return Table(
        f"Gradient of a {layers}-layer tanh(x @ W) chain, {N}x{N} float64",
        ["mode", "checkpointing", "peak MiB", "peak ratio", "time ratio (quartiles)"],
        rows,
        notes,
    )


def sqrt_table() -> Table:
    rows = []
    for layers in (16, 64, 144, 256):
        block = math.isqrt(layers)
        x, ws = make_data(layers)
        p_plain = peak_mb(gradient(None, ws, True), x)
        p_ckpt = peak_mb(gradient(block, ws, True), x)
        root = math.sqrt(layers)
        rows.append(
            [str(layers), str(block), f"{p_plain:.1f}", f"{p_ckpt:.1f}",
             f"{p_plain / layers:.2f}", f"{p_ckpt / root:.2f}"]
        )  # fmt: skip
        del ws
    return Table(
        "sqrt(L) checkpointing under jit(grad): peak MiB against depth",
        ["L", "block", "unchecked", "checkpointed", "unchecked / L", "checkpointed / sqrt(L)"],
        rows,
        ["O(L) unchecked against O(sqrt(L)) checkpointed: the last two columns stay flat"],
    )


def run(opts):
    yield blocks_table(opts.quick)
    yield sqrt_table()


if __name__ == "__main__":
    cli(run, __doc__)
