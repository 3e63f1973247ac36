"""Every benchmark, one after another, into one markdown report.

Run: python -m benchmarks [--quick] [--out benchmarks/results.md] [--only mlp_step,memory]
Each benchmark runs in its own process (`python -m benchmarks.<name> --no-header`), so none
inherits another's imports, caches or frozen objects; its tables stream to stdout as they
come. The machine, the versions and the load average are recorded once at the top; the
combined table (every system of every benchmark with its ratio to that table's reference)
comes next, then each benchmark's own tables. The report is written to `--out` at the end.
`benchmarks.compare`, which needs two revisions, is not part of this run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import markdown_table
from benchmarks.report import emit, environment, load_average

BENCHMARKS = (
    "mlp_step",
    "grad_overhead",
    "jit_overhead",
    "jit_large_graphs",
    "hessian",
    "shim_mlp_step",
    "shim_cnn_step",
    "shim_lstm_step",
    "shim_chain",
    "chain_scaling",
    "memory",
    "rnn_scan",
    "mixture_likelihood",
    "gp_likelihood",
    "spectral_loss",
    "taylor_derivatives",
    "checkpoint_memory",
    "diagnostics_overhead",
)
HERE = Path(__file__).resolve().parent


def run_one(name: str, quick: bool, summary: Path) -> tuple[str, float]:
    """The markdown a benchmark printed (streamed to stdout too) and its wall time."""
    cmd = [sys.executable, "-m", f"benchmarks.{name}", "--no-header", "--summary", str(summary)]
    cmd += ["--quick"] if quick else []
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=HERE.parent, stdout=subprocess.PIPE, text=True)
    lines = []
    for line in proc.stdout:
        print(line, end="", flush=True)
        lines.append(line)
    if proc.wait() != 0:
        lines.append(f"\n**benchmarks.{name} failed with status {proc.returncode}** (see stderr)\n")
    return "".join(lines).strip(), time.perf_counter() - t0


def combined(summary: Path) -> list[str]:
    rows = []
    for line in summary.read_text().splitlines() if summary.exists() else []:
        r = json.loads(line)
        rows.append([r["benchmark"], r["case"], r["system"], r["value"], r["ratio"]])
    columns = ["benchmark", "case", "system", "median", "ratio to reference [quartiles]"]
    return markdown_table(columns, rows)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="each benchmark's quick mode")
    parser.add_argument("--out", type=Path, default=HERE / "results.md", help="report file")
    parser.add_argument("--only", help="comma-separated benchmark names (default: all)")
    opts = parser.parse_args(argv)
    names = opts.only.split(",") if opts.only else list(BENCHMARKS)
    unknown = set(names) - set(BENCHMARKS)
    if unknown:
        parser.error(f"unknown benchmarks: {', '.join(sorted(unknown))}")
    header = environment(opts.quick)
    before = load_average()
    load = f"- load average (1, 5, 15 min) before: {before}"
    emit("# tracegrad benchmarks\n\n" + "\n".join(header + [load]))
    sections, failed = [], False
    with tempfile.TemporaryDirectory() as tmp:
        summary = Path(tmp) / "summary.jsonl"
        for name in names:
            emit(f"## benchmarks.{name}")
            text, seconds = run_one(name, opts.quick, summary)
            failed |= "failed with status" in text
            sections.append(f"## benchmarks.{name} ({seconds:.0f} s)\n\n{text}")
        table = combined(summary)
    after = load_average()
    title = "## All systems (median per call or per op; ratio to the reference of its table)"
    emit(f"{title}\n\n" + "\n".join(table))
    emit(f"- load average (1, 5, 15 min) after: {after}")
    report = [
        "# tracegrad benchmarks",
        "",
        *header,
        f"- load average (1, 5, 15 min): before {before}; after {after}",
        "",
        title,
        "",
        *table,
        "",
    ]
    opts.out.write_text("\n".join(report) + "\n" + "\n\n".join(sections) + "\n")
    print(f"written to {opts.out}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
