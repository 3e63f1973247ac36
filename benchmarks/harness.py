"""Alternating rounds: the systems of one benchmark take turns inside one process.

Round k runs every system once, each for a batch of calls sized to `target` seconds, in an
order rotated by k. A change in machine load (the machine is shared) then lands on all systems
of a round alike, so the ratio computed within each round stays put while absolute times
drift; the median and quartiles over rounds show both the value and how much to trust it.
Best-of-N timings taken one system after another, as these benchmarks did before, let a load
shift between two systems move their ratio.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Settings:
    rounds: int
    target: float  # seconds per system per round


FULL = Settings(rounds=21, target=0.04)
QUICK = Settings(rounds=5, target=0.02)


def settings(quick: bool) -> Settings:
    return QUICK if quick else FULL


@dataclass(frozen=True)
class Timed:
    """A system that times itself: `fn(n)` runs n calls and returns the seconds that count.

    For measurements that exclude part of each call (the forward half of forward + backward),
    which a plain loop around the whole call cannot separate."""

    fn: Callable[[int], float]


def _loop(fn: Callable[[], object]) -> Callable[[int], float]:
    def timer(n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        return time.perf_counter() - t0

    return timer


def _calibrate(timer: Callable[[int], float], target: float) -> int:
    """Calls per batch so one batch takes about `target` seconds."""
    timer(1)  # the first call compiles, imports and fills caches; never timed
    # grow the batch until it takes a fifth of the target (timeit's autorange): one call of a
    # few microseconds is mostly clock noise, and the first calls after warm-up run slow
    n = 1
    while (elapsed := timer(n)) < target / 5:
        n *= 2 if elapsed > target / 50 else 10
    elapsed = min(elapsed, timer(n))  # once more: a stray slow batch would shrink every batch
    return max(1, round(n * target / elapsed))


def quartiles(values) -> tuple[float, float, float]:
    """(25th percentile, median, 75th percentile)."""
    q25, q50, q75 = np.percentile(np.asarray(values, dtype=float), [25, 50, 75])
    return float(q25), float(q50), float(q75)


@dataclass
class Comparison:
    """Per-call seconds of each system, one entry per round, and the reference system."""

    title: str
    reference: str
    per_call: dict[str, np.ndarray]
    calls: dict[str, int]
    per: int = 1  # report time per `per` units (operations of a chain), not per call
    unit: str = "call"
    notes: list[str] = field(default_factory=list)

    def ratios(self, name: str, against: str | None = None) -> np.ndarray:
        """time(name) / time(against) within each round."""
        return self.per_call[name] / self.per_call[against or self.reference]

    def table(self) -> Table:
        rounds = len(self.per_call[self.reference])
        scale = 1.0 / self.per
        rows, summary = [], []
        for name, times in self.per_call.items():
            t25, t50, t75 = quartiles(times * scale)
            r25, r50, r75 = quartiles(self.ratios(name))
            label = f"{name} (reference)" if name == self.reference else name
            rows.append(
                [
                    label,
                    fmt_time(t50),
                    f"{fmt_time(t25)} - {fmt_time(t75)}",
                    f"{r50:.2f}",
                    f"{r25:.2f} - {r75:.2f}",
                    str(self.calls[name]),
                ]
            )
            summary.append(
                (name, f"{fmt_time(t50)}/{self.unit}", f"{r50:.2f} [{r25:.2f}, {r75:.2f}]")
            )
        notes = [
            f"ratio = time / {self.reference}, computed in each of {rounds} rounds; "
            "median and quartiles (25th - 75th percentile) over rounds"
        ] + self.notes
        columns = [
            "system",
            f"median per {self.unit}",
            "quartiles",
            "ratio median",
            "ratio quartiles",
            "calls/round",
        ]
        return Table(self.title, columns, rows, notes, summary)


def compare(
    title: str,
    systems: dict[str, Callable[[], object] | Timed],
    reference: str,
    *,
    quick: bool,
    per: int = 1,
    unit: str = "call",
    notes: list[str] | None = None,
    rounds: int | None = None,
    target: float | None = None,
) -> Comparison:
    """Time `systems` in alternating rounds; `reference` is the one ratios are taken against.

    The systems must be fully built (data allocated, functions traced or compiled) before
    this is called: the first call of each is a warm-up that is never timed, and after it the
    collector is run and its survivors frozen, so collections during the rounds scan only the
    garbage the measured code makes, not the setup's objects."""
    cfg = settings(quick)
    rounds = rounds or cfg.rounds
    target = target or cfg.target
    names = list(systems)
    assert reference in names, (reference, names)
    timers = {name: (s.fn if isinstance(s, Timed) else _loop(s)) for name, s in systems.items()}
    calls = {name: _calibrate(timer, target) for name, timer in timers.items()}
    times: dict[str, list[float]] = {name: [] for name in names}
    gc.collect()
    gc.freeze()
    try:
        for k in range(rounds):
            shift = k % len(names)
            for name in names[shift:] + names[:shift]:
                times[name].append(timers[name](calls[name]) / calls[name])
    finally:
        gc.unfreeze()  # the next benchmark's setup may turn these objects into garbage
    per_call = {name: np.asarray(ts) for name, ts in times.items()}
    return Comparison(title, reference, per_call, calls, per, unit, list(notes or []))


@dataclass
class Table:
    """A titled markdown table, plus rows for the combined summary of `python -m benchmarks`:
    (system, value, ratio to the reference)."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    summary: list[tuple[str, str, str]] = field(default_factory=list)

    def markdown(self) -> str:
        return "\n".join(
            [f"### {self.title}", ""]
            + markdown_table(self.columns, self.rows)
            + [""]
            + [f"- {note}" for note in self.notes]
        )


def markdown_table(columns: list[str], rows: list[list[str]]) -> list[str]:
    """Lines of a markdown table padded to line up in a terminal too."""
    widths = [max(len(str(c)) for c in col) for col in zip(columns, *rows)]

    def line(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    return [line(columns), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [
        line(r) for r in rows
    ]


def fmt_time(seconds: float) -> str:
    """Three significant digits in the unit that suits the value."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{_digits(seconds / scale)} {unit}"
    return f"{_digits(seconds / 1e-9)} ns"


def _digits(v: float) -> str:
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"
