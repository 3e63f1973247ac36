"""Shared benchmark plumbing: one thread per library, best-of timing, optional peers."""

from __future__ import annotations

import time


def best_time(fn, *, repeat: int = 5, number: int | None = None, budget: float = 0.2) -> float:
    """Best per-call seconds over `repeat` rounds (each round long enough to time reliably)."""
    fn()
    if number is None:
        t0 = time.perf_counter()
        fn()
        once = max(time.perf_counter() - t0, 1e-7)
        number = max(1, int(budget / once))
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def optional(name: str):
    """The module `name` if installed (a peer to compare against), else None."""
    try:
        module = __import__(name)
    except ImportError:
        return None
    if name == "torch":
        module.set_num_threads(1)
    return module
