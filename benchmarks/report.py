"""What a benchmark report records besides its numbers, and the command line every benchmark
shares: the machine, the versions, the thread settings and the load average before and after,
because a ratio means little without the conditions it was measured under.

`cli(run)` runs a benchmark's `run(opts)`, which yields markdown strings and `harness.Table`s,
printing each as it comes; `--summary PATH` also appends the tables' summary rows to PATH as
JSON lines, which is how `python -m benchmarks` builds its combined table.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from benchmarks.harness import Table

PEERS = ("torch", "jax", "autograd")
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS")


def optional(name: str):
    """The module `name` if installed (a peer to compare against), else None; pinned to one
    thread (torch) and float64 (jax), as every benchmark here wants."""
    try:
        module = importlib.import_module(name)
    except ImportError:
        return None
    if name == "torch":
        module.set_num_threads(1)
        try:
            module.set_num_interop_threads(1)
        except RuntimeError:  # allowed once per process, before any parallel work
            pass
    if name == "jax":
        module.config.update("jax_enable_x64", True)
    return module


def skipped(*names: str) -> str:
    """A note naming the peers among `names` that are not installed ("" if all are)."""
    missing = [n for n in names if importlib.util.find_spec(n) is None]
    return f"not installed, skipped: {', '.join(missing)}" if missing else ""


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def git_commit(repo: Path) -> str | None:
    """Short commit of `repo`, with "+dirty" when tracegrad/ has uncommitted changes.

    `--no-optional-locks` keeps `git status` from refreshing the index: reading must not
    change the repository another engineer is working in."""
    try:
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "--no-optional-locks", "-C", str(repo), "status", "--porcelain"]
            + ["--untracked-files=no", "--", "tracegrad"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty else "")


def tracegrad_location() -> Path | None:
    """The directory tracegrad would be imported from, found without importing it."""
    spec = importlib.util.find_spec("tracegrad")
    return Path(spec.origin).parent if spec and spec.origin else None


def load_average() -> str:
    return " / ".join(f"{v:.2f}" for v in os.getloadavg())


def environment(quick: bool) -> list[str]:
    """Markdown bullet lines describing the machine, the versions and the settings."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    versions = [f"Python {platform.python_version()}", f"numpy {_version('numpy')}"]
    where = tracegrad_location()
    commit = git_commit(where.parent) if where else None
    versions.append(
        f"tracegrad {_version('tracegrad')} at {commit or 'unknown commit'} ({where or 'absent'})"
    )
    for dist in ("torch", "jax", "jaxlib", "autograd", "scipy"):
        v = _version(dist)
        versions.append(f"{dist} {v}" if v else f"{dist} not installed")
    threads = ", ".join(f"{v}={os.environ.get(v, '(unset)')}" for v in _THREAD_VARS)
    return [
        f"- date: {time.strftime('%Y-%m-%d %H:%M:%S %z')}; mode: {'quick' if quick else 'full'}",
        f"- machine: {platform.platform()}; CPU {_cpu_model()}; {os.cpu_count()} cores"
        + (f" ({usable} usable by this process)" if usable else ""),
        "- versions: " + "; ".join(versions),
        f"- threads: {threads}; torch.set_num_threads(1)",
    ]


Run = Callable[[argparse.Namespace], Iterable["str | Table"]]


def cli(run: Run, doc: str | None, add_arguments=None, argv=None) -> None:
    """The shared entry point: `python -m benchmarks.<name> [--quick] [--no-header]`."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0] if doc else None)
    parser.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("BENCH_QUICK", "") not in ("", "0"),
        help="fewer rounds and sizes, well under a minute (also BENCH_QUICK=1)",
    )
    parser.add_argument("--no-header", action="store_true", help="omit machine and load lines")
    parser.add_argument("--summary", type=Path, help="append summary rows here as JSON lines")
    if add_arguments is not None:
        add_arguments(parser)
    opts = parser.parse_args(argv)
    name = _module_name(run)
    title = " ".join((doc or name).strip().split("\n\n")[0].split())  # the first paragraph
    if not opts.no_header:
        emit(f"# benchmarks.{name}: {title}\n")
        emit(
            "\n".join(
                environment(opts.quick)
                + [f"- load average (1, 5, 15 min) before: {load_average()}"]
            )
        )
    for item in run(opts):
        if isinstance(item, Table):
            emit(item.markdown())
            if opts.summary:
                _append_summary(opts.summary, name, item)
        else:
            emit(item)
    if not opts.no_header:
        emit(f"- load average (1, 5, 15 min) after: {load_average()}")


def _module_name(run: Run) -> str:
    """The benchmark's short name (mlp_step for benchmarks/mlp_step.py), however it was
    started: `python -m`, runpy or an import."""
    spec = getattr(run, "__globals__", {}).get("__spec__")
    if spec is not None:
        return spec.name.rsplit(".", 1)[-1]
    return run.__module__.rsplit(".", 1)[-1]


def emit(text: str) -> None:
    print(text + "\n", flush=True)  # flushed: `python -m benchmarks` streams the children


def _append_summary(path: Path, benchmark: str, table: Table) -> None:
    with path.open("a") as f:
        for system, value, ratio in table.summary:
            row = {"benchmark": benchmark, "case": table.title, "system": system}
            f.write(json.dumps(row | {"value": value, "ratio": ratio}) + "\n")
