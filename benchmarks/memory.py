"""Peak memory of one gradient of a deep tanh network, each system in a fresh process.

Run: python -m benchmarks.memory [--quick] [--layers N]
The task: 100 layers (quick: 25) of x = tanh(x @ W_i), batch 256, width 512, float64, loss
sum(x_final); the gradient with respect to x only, and with respect to all W_i. The handwritten
NumPy gradient (forward keeping the activations, backward by hand, each activation dropped
once used) is the limit: about one activation per layer (1 MB each) for x, plus the 2 MB
gradient of each W_i for W.

Method. Each (system, scenario) runs in its own child process (`--child SYSTEM SCENARIO`), so
no system inherits another's heap, caches or imports. The child allocates the data, builds
the system (converting the data to torch or JAX arrays, building tracegrad tensors), and calls
the gradient once: that call compiles the jitted systems and loads whatever the others load
lazily. It then drops the result, runs the collector and `malloc_trim(0)` (so memory the
warm-up freed does not sit in the baseline), reads VmRSS as the baseline,
resets the kernel's peak-RSS counter (`echo 5 > /proc/self/clear_refs` resets VmHWM), calls
the gradient once more, and reads VmHWM while the gradient is still held. The reported peak is
VmHWM - baseline: the memory the gradient computation needs beyond the task's own data,
including its output (1 MB for x, 200 MB for W at 100 layers). Where VmHWM cannot be reset the
child falls back to `ru_maxrss` (the peak of the whole process, so the warm-up call and setup
count too) and says so. Further calls time the gradient (median).

The allocator. By default the children run with glibc's mmap threshold fixed at 128 KiB
(`MALLOC_MMAP_THRESHOLD_`, its initial value): every array of 128 KiB or more is then mapped
when allocated and unmapped when freed, so RSS follows the arrays a system keeps alive. Left to
itself glibc raises the threshold to the size of the first large block freed (up to 32 MiB),
after which 1-2 MB arrays come from the heap and a freed 1 MB activation cannot hold a 2 MB
weight gradient: RSS then also measures fragmentation, which depends on allocation order more
than on what a system keeps (the handwritten W gradient then peaks at activations plus
gradients, not their maximum). `--allocator default` measures that instead. Mapping each array
afresh costs page faults (a few per cent of these times), in every system alike.

Caveats. RSS counts resident pages, not live arrays: memory an allocator caches or fragments
counts, and pages allocated but never touched do not. VmHWM is the larger of the RSS now and
the RSS the kernel recorded before each unmapping (munmap, madvise), so no peak escapes it, but
the RSS counters are per-CPU and approximate to a fraction of a MB. Systems differ in where
the input copies live (torch shares NumPy's buffers, JAX and tracegrad tensors may copy them);
those copies are setup and are excluded. One thread per library, as in every benchmark here.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.harness import Table, fmt_time
from benchmarks.report import cli

LAYERS, BATCH, WIDTH = 100, 256, 512
SCENARIOS = {"x": "gradient with respect to x only", "W": "gradient with respect to all W_i"}
SYSTEMS = {  # name -> the module it needs (None: always there)
    "handwritten NumPy": None,
    "tracegrad jit(grad)": None,
    "tracegrad grad (eager)": None,
    "tracegrad tensors": None,
    "HIPS autograd": "autograd",
    "PyTorch eager": "torch",
    "jax.jit(jax.grad)": "jax",
}
REFERENCE = "handwritten NumPy"
MB = 2**20


def make_data(layers: int):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, WIDTH))
    # 1/sqrt(width) keeps the pre-activations of order one through the layers
    ws = [rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH) for _ in range(layers)]
    return x, ws


def numpy_grad(x, ws, wrt: str):
    """The limit: forward keeping the activations, backward by hand, each activation freed
    as soon as the backward pass has used it."""
    acts = [x]
    for w in ws:
        acts.append(np.tanh(acts[-1] @ w))
    g = np.ones_like(acts[-1])  # d sum(x_final) / d x_final
    w_bars = [None] * len(ws)
    for i in reversed(range(len(ws))):
        out = acts.pop()
        g *= 1.0 - out * out  # through tanh: g is now d loss / d (x_i @ W_i)
        del out
        if wrt == "W":
            w_bars[i] = acts[-1].T @ g
            if i == 0:
                break  # d loss / d x is not asked for
        g = g @ ws[i].T
    return g if wrt == "x" else w_bars


def build(system: str, x, ws, wrt: str):
    """A no-argument function computing the gradient as NumPy arrays (a list)."""
    argnums = 0 if wrt == "x" else 1
    if system == REFERENCE:
        return lambda: _as_list(numpy_grad(x, ws, wrt))
    if system.startswith("tracegrad"):
        import tracegrad as tg

        if system == "tracegrad tensors":
            return _tensor_grad(tg, x, ws, wrt)

        def loss(x, ws):
            for w in ws:
                x = np.tanh(x @ w)
            return np.sum(x)

        grad = tg.grad(loss, argnums=argnums)
        grad = tg.jit(grad) if system == "tracegrad jit(grad)" else grad
        return lambda: _as_list(grad(x, ws))
    if system == "HIPS autograd":
        import autograd
        import autograd.numpy as anp

        def aloss(x, ws):
            for w in ws:
                x = anp.tanh(anp.dot(x, w))
            return anp.sum(x)

        agrad = autograd.grad(aloss, argnum=argnums)
        return lambda: _as_list(agrad(x, ws))
    if system == "PyTorch eager":
        return _torch_grad(x, ws, wrt)
    if system == "jax.jit(jax.grad)":
        return _jax_grad(x, ws, argnums)
    raise ValueError(f"unknown system {system!r}")


def _as_list(g):
    return [g] if isinstance(g, np.ndarray) else list(g)


def _tensor_grad(tg, x, ws, wrt):
    tx = tg.tensor(x, requires_grad=wrt == "x")
    tws = [tg.tensor(w, requires_grad=wrt == "W") for w in ws]
    leaves = [tx] if wrt == "x" else tws

    def run():
        y = tx
        for w in tws:
            y = (y @ w).tanh()
        y.sum().backward()
        grads = [t.grad for t in leaves]
        for t in leaves:
            t.grad = None  # the returned list holds the only reference: del frees it
        return [g.numpy() for g in grads]

    return run


def _torch_grad(x, ws, wrt):
    import torch

    torch.set_num_threads(1)
    tx = torch.from_numpy(x).requires_grad_(wrt == "x")  # shares NumPy's buffers
    tws = [torch.from_numpy(w).requires_grad_(wrt == "W") for w in ws]
    leaves = [tx] if wrt == "x" else tws

    def run():
        y = tx
        for w in tws:
            y = torch.tanh(y @ w)
        y.sum().backward()
        grads = [t.grad for t in leaves]
        for t in leaves:
            t.grad = None
        return [g.numpy() for g in grads]

    return run


def _jax_grad(x, ws, argnums):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def loss(x, ws):
        for w in ws:
            x = jnp.tanh(x @ w)
        return jnp.sum(x)

    grad = jax.jit(jax.grad(loss, argnums=argnums))
    jx, jws = jnp.asarray(x), [jnp.asarray(w) for w in ws]

    def run():
        g = jax.block_until_ready(grad(jx, jws))  # jax dispatches asynchronously
        return [np.asarray(a) for a in _as_list(g)]  # views of JAX's buffers on the CPU

    return run


# -- in the child ------------------------------------------------------------------------------


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS; False where the kernel does not allow it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return _status_kb("VmHWM") <= _status_kb("VmRSS") + 256  # within 1 MB
    except (OSError, KeyError):
        return False


def _trim() -> None:
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: its allocator keeps its own policy


def child(system: str, wrt: str, layers: int, reps: int) -> dict:
    x, ws = make_data(layers)
    run = build(system, x, ws, wrt)
    out = run()  # warm-up: compiles jit, imports lazily loaded modules
    del out
    gc.collect()
    _trim()
    baseline = _status_kb("VmRSS")
    exact = _reset_peak()
    t0 = time.perf_counter()
    out = run()
    times = [time.perf_counter() - t0]
    peak = _status_kb("VmHWM") if exact else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    checks = [float(sum(np.sum(g) for g in out)), float(sum(np.sum(g * g) for g in out))]
    output_bytes = sum(g.nbytes for g in out)
    del out
    for _ in range(reps - 1):
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    return {
        "baseline_mb": baseline * 1024 / MB,
        "peak_mb": (peak - baseline) * 1024 / MB,
        "method": "VmHWM" if exact else "ru_maxrss",
        "time": float(np.median(times)),
        "reps": len(times),
        "checks": checks,
        "output_mb": output_bytes / MB,
    }


# -- in the parent -----------------------------------------------------------------------------


MMAP_THRESHOLD = str(128 * 1024)


def spawn(system: str, wrt: str, layers: int, reps: int, allocator: str) -> dict:
    """Run one child; its last line of output is its JSON result."""
    root = Path(__file__).resolve().parent.parent
    cmd = [sys.executable, "-m", "benchmarks.memory", "--child", system, wrt]
    cmd += ["--layers", str(layers), "--reps", str(reps)]
    env = os.environ.copy()
    if allocator == "fixed":
        env["MALLOC_MMAP_THRESHOLD_"] = MMAP_THRESHOLD  # see the module docstring
    else:
        env.pop("MALLOC_MMAP_THRESHOLD_", None)
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        return {"error": f"child failed ({proc.returncode}): {tail}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def scenario_table(wrt: str, layers: int, reps: int, allocator: str) -> Table:
    import importlib.util

    results, notes = {}, []
    for system, module in SYSTEMS.items():
        if module is not None and importlib.util.find_spec(module) is None:
            notes.append(f"{system}: {module} not installed, skipped")
            continue
        results[system] = spawn(system, wrt, layers, reps, allocator)
    ref = results[REFERENCE]
    rows, summary = [], []
    for system, r in results.items():
        if "error" in r:
            rows.append([system, r["error"], "", "", "", "", ""])
            continue
        ratio = r["peak_mb"] / ref["peak_mb"]
        agree = np.allclose(r["checks"], ref["checks"], rtol=1e-8)
        label = f"{system} (reference)" if system == REFERENCE else system
        rows.append(
            [
                label,
                f"{r['peak_mb']:.1f}",
                f"{ratio:.2f}",
                f"{fmt_time(r['time'])}",
                f"{r['baseline_mb']:.0f}",
                r["method"],
                "yes" if agree else f"NO: {r['checks']}",
            ]
        )
        summary.append(
            (system, f"{r['peak_mb']:.1f} MB peak, {fmt_time(r['time'])}", f"{ratio:.2f}")
        )
    data_mb = (BATCH * WIDTH + layers * WIDTH * WIDTH) * 8 / MB
    out_mb = ref["output_mb"]
    notes = [
        f"peak = VmHWM during one gradient - VmRSS after setup and a warm-up call, in a fresh "
        f"process per system; the data ({data_mb:.0f} MB) is setup; the gradient itself is "
        f"{out_mb:.0f} MB and counts",
        f"time: median of {reps} gradient(s) in the same child; agrees: gradient sum and sum of "
        "squares match the handwritten ones (rtol 1e-8)",
        "allocator: glibc, mmap threshold "
        + ("fixed at 128 KiB" if allocator == "fixed" else "left to glibc (dynamic)"),
    ] + notes
    columns = ["system", "peak MB", "ratio", "time/gradient", "RSS after setup MB", "via", "agrees"]
    title = f"{layers} x tanh(x @ W), batch {BATCH}, width {WIDTH}, float64: {SCENARIOS[wrt]}"
    return Table(title, columns, rows, notes, summary)


def add_arguments(parser) -> None:
    parser.add_argument("--layers", type=int, help=f"layers (default {LAYERS}; quick: 25)")
    parser.add_argument("--reps", type=int, help="gradients timed per child (default 3)")
    parser.add_argument(
        "--allocator",
        choices=("fixed", "default"),
        default="fixed",
        help="glibc's mmap threshold fixed at 128 KiB (default) or left dynamic",
    )


def run(opts):
    layers = opts.layers or (25 if opts.quick else LAYERS)
    reps = opts.reps or (1 if opts.quick else 3)
    for wrt in SCENARIOS:
        yield scenario_table(wrt, layers, reps, opts.allocator)


def main(argv) -> None:
    if "--child" in argv:
        i = argv.index("--child")
        system, wrt = argv[i + 1], argv[i + 2]
        layers = int(argv[argv.index("--layers") + 1]) if "--layers" in argv else LAYERS
        reps = int(argv[argv.index("--reps") + 1]) if "--reps" in argv else 3
        print(json.dumps(child(system, wrt, layers, reps)), flush=True)
    else:
        cli(run, __doc__, add_arguments, argv)


if __name__ == "__main__":
    main(sys.argv[1:])
