"""The code generator on large graphs: one function against segments, and the first call of
`jit(grad(f))` up to a 10^6-op chain.

Run: python -m benchmarks.jit_large_graphs [--quick] [--million]
- For the simplified gradient graph of a scalar chain (sin, *0.9, *0.3, + per step; 10^3 to
  10^5 ops, quick: to 10^4), `compile_graph` as one function (`segment_nodes=0`) and as
  segments of 1,000 nodes: seconds to generate and compile, the peak of Python's heap while
  doing it (tracemalloc: the compiler's own arenas included), and the time of one call. This
  locates the crossover `tracegrad.codegen.chunks.CHUNK_NODES` stands for.
- With --million, the first call of `tg.jit(tg.grad(chain))` at 10^4, 10^5 and 10^6 ops, each
  in a fresh child process: seconds, microseconds per node of the compiled graph, and the
  child's peak RSS (VmHWM, the interpreter's ~70 MB included). About five minutes.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import time
import tracemalloc

import numpy as np

import tracegrad as tg
from benchmarks.harness import Table, compare, fmt_time, quartiles
from benchmarks.jit_overhead import chain
from benchmarks.report import cli
from tracegrad.codegen import compile_graph
from tracegrad.transforms.simplify import simplify

MB = 2**20


def _compile(graph, segment_nodes):
    tracemalloc.start()
    t0 = time.perf_counter()
    compiled = compile_graph(graph, segment_nodes=segment_nodes)
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return compiled, seconds, peak


def forms(opts):
    x = np.float64(0.3)
    rows = []
    for n in (1000, 10_000) if opts.quick else (1000, 5000, 10_000, 100_000):
        graph = simplify(tg.make_graph(tg.grad(chain(n)))(x))
        row = [str(n), str(len(graph.nodes))]
        fns = {}
        for name, size in (("one function", 0), ("segments", 1000)):
            compiled, seconds, peak = _compile(graph, size)
            fns[name] = functools.partial(compiled.fn, x)
            row += [fmt_time(seconds), f"{peak / MB:.0f} MB"]
            del compiled
        calls = compare(f"{n} ops", fns, "one function", quick=opts.quick)
        r25, r50, r75 = quartiles(calls.ratios("segments"))
        row += [
            fmt_time(float(np.median(calls.per_call["one function"]))),
            f"{r50:.3f} ({r25:.3f} - {r75:.3f})",
        ]
        rows.append(row)
    columns = ["ops", "nodes"]
    for form in ("one function", "segments"):
        columns += [f"{form}: compile", f"{form}: heap peak"]
    columns += ["call (one function)", "call ratio segments / one (quartiles)"]
    notes = [
        "compile = generate + compile + load, once; heap peak by tracemalloc during it",
        "calls on a 0-d float64 (each node a NumPy scalar operation), the two forms alternating",
        "in rounds (benchmarks/harness.py)",
    ]
    return Table(
        "one function against segments (simplified grad graph of a chain)", columns, rows, notes
    )


_CHILD = """
import json, resource, sys, time
import numpy as np
import tracegrad as tg
from benchmarks.jit_overhead import chain
n = int(sys.argv[1])
x = np.float64(0.3)
f = tg.jit(tg.grad(chain(n)))
t0 = time.perf_counter()
f(x)
seconds = time.perf_counter() - t0
nodes = len(f.lower(x).graph.nodes)
with open("/proc/self/status") as status:  # VmHWM: this process image's peak (ru_maxrss
    # would carry the parent's peak across fork and exec)
    hwm = [line for line in status if line.startswith("VmHWM:")]
maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
rss = int(hwm[0].split()[1]) * 1024 if hwm else maxrss * 1024
print(json.dumps({"seconds": seconds, "nodes": nodes, "rss": rss}))
"""


def first_calls():
    rows = []
    for n in (10_000, 100_000, 1_000_000):
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, str(n)], check=True, capture_output=True, text=True
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        per = r["seconds"] / r["nodes"]
        rows.append(
            [
                str(n),
                str(r["nodes"]),
                fmt_time(r["seconds"]),
                fmt_time(per),
                f"{r['rss'] / MB:.0f} MB",
            ]
        )
    columns = ["ops", "nodes", "first call", "per node", "peak RSS"]
    notes = ["a fresh process per size: trace + simplify + generate + compile + one run"]
    return Table("first call of jit(grad(chain)), fresh processes", columns, rows, notes)


def add_arguments(parser) -> None:
    parser.add_argument("--million", action="store_true", help="also the 10^6-op first call")


def run(opts):
    yield forms(opts)
    if opts.million:
        yield first_calls()


if __name__ == "__main__":
    cli(run, __doc__, add_arguments)
