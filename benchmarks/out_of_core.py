"""Out of core: the loss and gradient of a logistic regression over a dask X that never sits in
memory whole, `tg.jit(tg.value_and_grad(loss))` on dask arrays against the same computation
written by hand in dask.array.

Run: python -m benchmarks.out_of_core [--quick] [--huge] [--allocator default]
The task: X is N x 16 float64 generated chunk by chunk by dask (`da.random.default_rng(0)`,
chunks of 500,000 rows, 64 MB), y = (X @ w_true + X[:, 0] * X[:, 1] > 0) a dask expression of
X, w a NumPy vector of 16 (taken in as one chunk); loss = mean(logaddexp(0, X @ w) - y * X @ w).
tracegrad runs its generated code through dask and returns lazy arrays; the handwritten
system builds the forward loss and the closed-form gradient X.T @ (sigmoid(X @ w) - y) / N
itself. Each system's call builds the lazy graph and evaluates loss and gradient with one
`dask.compute(v, g)`; both build their graph afresh on every call, so graph building counts.

Time. At N = 2,000,000 (quick: 200,000, chunks of 50,000) both systems alternate in rounds
in this process (benchmarks/harness.py: one call per system per round, ratio per round,
median and quartiles), on dask's threaded scheduler with 2 workers.

Memory. At N = 20,000,000 (X: 2.56 GB; `--huge`: 80,000,000, 10.2 GB, the issue's 10 GB
run; quick: 2,000,000),
each (system, scheduler) runs in its own fresh child process (`--child SYSTEM SCHEDULER N`),
as benchmarks/memory.py does: a warm-up call on a small X (imports, tracing, starting the
cluster), the collector and `malloc_trim(0)`, VmRSS as the baseline, VmHWM reset
(`echo 5 > /proc/self/clear_refs`), then one call at full size, after which VmHWM is read.
Reported: the process's peak (VmHWM, the goal is <= 1 GB) and the peak above the baseline.
Schedulers: "threads", dask's threaded scheduler with num_workers=2; "distributed", a
`LocalCluster(n_workers=2, threads_per_worker=1, processes=True)`, where the client process
(which also hosts the scheduler) is measured the same way and each worker process reports its
own VmRSS before and VmHWM after the call (reset likewise). The children's results (loss and
gradient) are compared between systems: relative difference max|a - b| / max|b|, goal
<= 1e-12.

The allocator: glibc's mmap threshold fixed at 128 KiB in the children and the workers, as
in benchmarks/memory.py, so freed chunks go back to the system at once; `--allocator default`
leaves it to glibc. One BLAS thread per process, as in every benchmark here; dask's own
workers give the parallelism.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import Table, compare, fmt_time
from benchmarks.memory import _reset_peak, _status_kb, _trim
from benchmarks.report import cli

D = 16
CHUNK = 500_000
N_TIME, N_MEMORY, N_HUGE = 2_000_000, 20_000_000, 80_000_000
QUICK_CHUNK, QUICK_N_TIME, QUICK_N_MEMORY = 50_000, 200_000, 2_000_000
WARMUP_N = 100_000
SYSTEMS = ("tracegrad jit(value_and_grad)", "handwritten dask.array")
REFERENCE = "handwritten dask.array"
SCHEDULERS = ("threads", "distributed")
WORKERS = 2
GOAL_MB = 1024
MB = 2**20


def loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def make_data(n: int, chunk: int):
    """X (n x 16) and y, lazy: nothing is generated before a compute."""
    import dask.array as da

    X = da.random.default_rng(0).standard_normal((n, D), chunks=(chunk, D))
    w_true = np.linspace(-1.0, 1.0, D)
    y = ((X @ w_true + X[:, 0] * X[:, 1]) > 0).astype(np.float64)
    return np.full(D, 0.1), X, y


def handwritten(w, X, y):
    """The forward loss and the closed-form gradient, lazily, in dask.array."""
    import dask.array as da

    z = X @ w
    value = da.mean(da.logaddexp(0.0, z) - y * z)
    grad = X.T @ ((1.0 / (1.0 + da.exp(-z)) - y) / X.shape[0])
    return value, grad


def build(system: str):
    """A function (w, X, y) -> (loss, gradient) as NumPy values, one dask.compute each."""
    import dask

    if system == REFERENCE:
        fn = handwritten
    else:
        import tracegrad as tg

        fn = tg.jit(tg.value_and_grad(loss))

    def run(w, X, y):
        v, g = dask.compute(*fn(w, X, y))
        return float(v), np.asarray(g)

    return run


def rel_diff(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


# -- in the child (and on the workers) ---------------------------------------------------------


def _settle() -> dict:
    """On a worker (or here): collect, trim, reset the peak; the baseline RSS in kB."""
    gc.collect()
    _trim()
    return {"rss_kb": _status_kb("VmRSS"), "exact": _reset_peak()}


def _peak() -> dict:
    """On a worker (or here): the peak RSS since the last reset, in kB."""
    return {"hwm_kb": _status_kb("VmHWM"), "maxrss_kb": resource.getrusage(0).ru_maxrss}


def child(system: str, scheduler: str, n: int, chunk: int) -> dict:
    import dask

    run = build(system)
    cluster = client = None
    if scheduler == "threads":
        dask.config.set(scheduler="threads", num_workers=WORKERS)
    else:
        from dask.distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=WORKERS,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
        )
        client = Client(cluster)
    try:
        run(*make_data(WARMUP_N, WARMUP_N // 4))  # imports, tracing, the cluster's first tasks
        workers_before = client.run(_settle) if client else {}
        here = _settle()
        w, X, y = make_data(n, chunk)
        t0 = time.perf_counter()
        value, grad = run(w, X, y)
        seconds = time.perf_counter() - t0
        peak = _peak()
        workers_after = client.run(_peak) if client else {}
    finally:
        if client is not None:
            client.close()
            cluster.close()
    exact = here["exact"]
    peak_kb = peak["hwm_kb"] if exact else peak["maxrss_kb"]
    workers = [
        {
            "baseline_mb": workers_before[addr]["rss_kb"] / 1024,
            "peak_mb": (
                workers_after[addr]["hwm_kb"]
                if workers_before[addr]["exact"]
                else workers_after[addr]["maxrss_kb"]
            )
            / 1024,
        }
        for addr in sorted(workers_after)
    ]
    return {
        "baseline_mb": here["rss_kb"] / 1024,
        "peak_mb": peak_kb / 1024,
        "method": "VmHWM" if exact else "ru_maxrss",
        "time": seconds,
        "value": value,
        "grad": grad.tolist(),
        "workers": workers,
    }


# -- in the parent -----------------------------------------------------------------------------


MMAP_THRESHOLD = str(128 * 1024)


def spawn(system: str, scheduler: str, n: int, chunk: int, allocator: str) -> dict:
    """Run one child; its last line of output is its JSON result."""
    root = Path(__file__).resolve().parent.parent
    cmd = [sys.executable, "-m", "benchmarks.out_of_core", "--child", system, scheduler]
    cmd += [str(n), str(chunk)]
    env = os.environ.copy()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    if allocator == "fixed":
        env["MALLOC_MMAP_THRESHOLD_"] = MMAP_THRESHOLD  # inherited by the cluster's workers
    else:
        env.pop("MALLOC_MMAP_THRESHOLD_", None)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        return {"error": f"child failed ({proc.returncode}): {tail}"}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["child_seconds"] = time.perf_counter() - t0
    return out


def time_table(n: int, chunk: int, quick: bool) -> tuple[Table, str]:
    import dask

    dask.config.set(scheduler="threads", num_workers=WORKERS)
    w, X, y = make_data(n, chunk)
    runs = {name: build(name) for name in SYSTEMS}
    results = {name: run(w, X, y) for name, run in runs.items()}  # also the warm-up
    ref_v, ref_g = results[REFERENCE]
    check = []
    for name, (v, g) in results.items():
        if name != REFERENCE:
            dv, dg = rel_diff(v, ref_v), rel_diff(g, ref_g)
            ok = "ok" if max(dv, dg) <= 1e-12 else "ABOVE 1e-12"
            check.append(f"{name} vs {REFERENCE} at N = {n:,}: loss {dv:.1e}, gradient {dg:.1e}")
            check[-1] += f" (relative; goal <= 1e-12: {ok})"
    systems = {name: (lambda run=run: run(w, X, y)) for name, run in runs.items()}
    rounds = 3 if quick else 9
    gb = n * D * 8 / 1e9
    title = f"loss and gradient, N = {n:,} x {D} float64 ({gb:.2f} GB of X), chunks of {chunk:,}"
    notes = [f"dask threaded scheduler, {WORKERS} workers; one call = build the graph + compute"]
    table = compare(
        title, systems, REFERENCE, quick=quick, notes=notes, rounds=rounds, target=1e-3
    ).table()
    return table, "\n".join(f"- agreement: {c}" for c in check)


def memory_table(n: int, chunk: int, allocator: str) -> Table:
    rows, summary, agree = [], [], []
    for scheduler in SCHEDULERS:
        results = {name: spawn(name, scheduler, n, chunk, allocator) for name in SYSTEMS}
        ref = results[REFERENCE]
        for name, r in results.items():
            if "error" in r:
                rows.append([name, scheduler, r["error"], "", "", "", "", ""])
                continue
            goal = "yes" if r["peak_mb"] <= GOAL_MB else "NO"
            workers = ", ".join(f"{x['peak_mb']:.0f}" for x in r["workers"]) or "-"
            workers_base = ", ".join(f"{x['baseline_mb']:.0f}" for x in r["workers"]) or "-"
            rows.append(
                [
                    name,
                    scheduler,
                    f"{r['peak_mb']:.0f}",
                    f"{r['peak_mb'] - r['baseline_mb']:.0f}",
                    goal,
                    workers,
                    workers_base,
                    fmt_time(r["time"]),
                ]
            )
            summary.append(
                (f"{name} [{scheduler}]", f"{r['peak_mb']:.0f} MB peak RSS", fmt_time(r["time"]))
            )
            if name != REFERENCE and "error" not in ref:
                dv = rel_diff(r["value"], ref["value"])
                dg = rel_diff(r["grad"], ref["grad"])
                ok = "ok" if max(dv, dg) <= 1e-12 else "ABOVE 1e-12"
                agree.append(
                    f"agreement [{scheduler}]: loss {dv:.1e}, gradient {dg:.1e} "
                    f"(relative, {name} vs {REFERENCE}; goal <= 1e-12: {ok})"
                )
    gb = n * D * 8 / 1e9
    methods = {r.get("method") for r in results.values()} - {None}
    notes = [
        "peak = VmHWM of the process during one full-size call (reset after a warm-up on "
        f"{WARMUP_N:,} rows), each (system, scheduler) in a fresh process; "
        f"above baseline = peak - VmRSS after the warm-up; goal: peak <= {GOAL_MB} MB; "
        f"via {', '.join(sorted(methods)) or '?'}",
        f"threads: dask's threaded scheduler, num_workers={WORKERS}; distributed: "
        f"LocalCluster(n_workers={WORKERS}, threads_per_worker=1, processes=True), the client "
        "process (which hosts the scheduler too) measured as above, workers' peak VmHWM and "
        "baseline VmRSS listed per worker",
        "allocator: glibc, mmap threshold "
        + ("fixed at 128 KiB" if allocator == "fixed" else "left to glibc (dynamic)"),
        *agree,
    ]
    columns = [
        "system",
        "scheduler",
        "peak RSS MB",
        "above baseline MB",
        f"<= {GOAL_MB} MB",
        "workers' peak MB",
        "workers' baseline MB",
        "wall time",
    ]
    title = f"peak RSS, N = {n:,} x {D} float64 ({gb:.2f} GB of X), chunks of {chunk:,}"
    return Table(title, columns, rows, notes, summary)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--huge", action="store_true", help=f"memory at N = {N_HUGE:,} (default {N_MEMORY:,})"
    )
    parser.add_argument(
        "--allocator",
        choices=("fixed", "default"),
        default="fixed",
        help="glibc's mmap threshold fixed at 128 KiB (default) or left dynamic",
    )


def run(opts):
    if opts.quick:
        n_time, n_memory, chunk = QUICK_N_TIME, QUICK_N_MEMORY, QUICK_CHUNK
    else:
        n_time, n_memory, chunk = N_TIME, N_HUGE if opts.huge else N_MEMORY, CHUNK
    table, check = time_table(n_time, chunk, opts.quick)
    yield table
    yield check
    yield memory_table(n_memory, chunk, opts.allocator)


def main(argv) -> None:
    if "--child" in argv:
        i = argv.index("--child")
        system, scheduler, n, chunk = argv[i + 1], argv[i + 2], int(argv[i + 3]), int(argv[i + 4])
        print(json.dumps(child(system, scheduler, n, chunk)), flush=True)
    else:
        cli(run, __doc__, add_arguments, argv)


if __name__ == "__main__":
    main(sys.argv[1:])
