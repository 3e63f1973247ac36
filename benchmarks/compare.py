"""Two revisions of tracegrad, timed in alternating child processes: is B slower than A?

Run: python -m benchmarks.compare REV_A REV_B [--rounds 5] [--quick] [--threshold 0.05]
Each revision is checked out as a detached git worktree in a temporary directory (removed
afterwards). Round k runs a child for A, then one for B (A, B, A, B, ...); each child imports
tracegrad from its worktree (checked through `tracegrad.__file__`) and measures, with the
current benchmarks/ code (compare_child.py; the worktrees' own benchmarks/ may be older), the
medians over alternating inner rounds (benchmarks/harness.py) of the jitted MLP step of
mlp_step.py (batch 64, 64 -> H -> 10, H = 32 and 256), its gradient without jit (H = 32), and
the 1,000-op scalar chain of grad_overhead.py through `tg.grad` and through the tensors'
`.backward()`, per op. The ratio B/A is taken per round, from the two
children that ran back to back, and summarised by its median and range over rounds, since a
change in machine load between rounds moves both children of a round alike.

The exit status is 1 when a median ratio exceeds 1 + threshold (B slower than A by more than
5% by default), 2 when a revision fails to import or run, else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.compare_child import MEASUREMENTS
from benchmarks.harness import fmt_time, markdown_table
from benchmarks.report import emit, environment, load_average

REPO = Path(__file__).resolve().parent.parent
CHILD = Path(__file__).resolve().parent / "compare_child.py"


class ChildFailed(RuntimeError):
    pass


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def describe(rev: str) -> tuple[str, str]:
    """(full commit, one-line description) of `rev`."""
    commit = git("rev-parse", "--verify", f"{rev}^{{commit}}")
    return commit, git("log", "-1", "--format=%h %s", commit)[:100]


def run_child(worktree: Path, rounds: int, target: float) -> dict:
    env = os.environ.copy()  # the thread variables benchmarks/__init__.py set
    env["PYTHONPATH"] = str(worktree)
    cmd = [sys.executable, "-P", str(CHILD), str(rounds), str(target)]
    # cwd outside any checkout, so nothing is imported from the current directory by accident
    proc = subprocess.run(cmd, cwd=worktree.parent, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ChildFailed("\n".join(proc.stderr.strip().splitlines()[-15:]))
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    where = Path(result["tracegrad_file"]).resolve()
    if not where.is_relative_to(worktree.resolve()):
        raise ChildFailed(f"tracegrad was imported from {where}, not from {worktree}")
    return result


def summarise(runs: dict[str, list[dict]]) -> tuple[list[list[str]], dict[str, list[float]]]:
    """Table rows, and each measurement's B/A per round."""
    rows, ratios_of = [], {}
    pairs = list(zip(runs["A"], runs["B"]))
    for name in MEASUREMENTS:
        a = [float(np.median(r["per_call"][name])) for r in runs["A"]]
        b = [float(np.median(r["per_call"][name])) for r in runs["B"]]
        ratios = [rb / ra for ra, rb in zip(a, b)]
        ratios_of[name] = ratios
        # load only ever adds time, so the fastest inner round is the least disturbed one
        best = [min(rb["per_call"][name]) / min(ra["per_call"][name]) for ra, rb in pairs]
        spread = max(
            max(np.percentile(r["per_call"][name], 75) / np.median(r["per_call"][name]) - 1, 0)
            for r in runs["A"] + runs["B"]
        )
        rows.append(
            [
                name,
                fmt_time(float(np.median(a))),
                fmt_time(float(np.median(b))),
                f"{float(np.median(ratios)):.3f}",
                f"{min(ratios):.3f} - {max(ratios):.3f}",
                ", ".join(f"{r:.3f}" for r in ratios),
                f"{float(np.median(best)):.3f}",
                f"{spread * 100:.1f}%",
            ]
        )
    return rows, ratios_of


def checks_agree(runs: dict[str, list[dict]]) -> list[str]:
    a, b = runs["A"][0]["checks"], runs["B"][0]["checks"]
    lines = []
    for key in a:
        if key not in b:
            continue
        same = a[key] == b[key]
        close = np.allclose(a[key], b[key], rtol=1e-10, atol=0)
        verdict = "identical" if same else "agree to 1e-10" if close else "DIFFER"
        lines.append(f"{key}: {verdict}" + ("" if same else f" (A {a[key]}, B {b[key]})"))
    return lines


def alternate(revs: dict[str, tuple[str, str]], rounds: int, inner: int, target: float):
    """Children A, B, A, B, ... in fresh worktrees, removed afterwards: {label: [results]}."""
    tmp = Path(tempfile.mkdtemp(prefix="tracegrad-compare-"))
    trees: dict[str, Path] = {}
    runs: dict[str, list[dict]] = {label: [] for label in revs}
    try:
        for label, (commit, _) in revs.items():
            trees[label] = tmp / label.lower()
            git("worktree", "add", "--detach", str(trees[label]), commit)
        for k in range(rounds):
            for label in revs:
                try:
                    runs[label].append(run_child(trees[label], inner, target))
                except ChildFailed as e:
                    raise ChildFailed(f"revision {label} ({revs[label][1]}) failed:\n{e}") from None
            print(f"round {k + 1}/{rounds} done", file=sys.stderr, flush=True)
    finally:
        for path in trees.values():
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)],
                capture_output=True,
            )
        shutil.rmtree(tmp, ignore_errors=True)
    return runs


def verdict(ratios_of: dict[str, list[float]], threshold: float) -> tuple[str, bool]:
    slower = [n for n, r in ratios_of.items() if np.median(r) > 1 + threshold]
    text = (
        f"B slower than A by more than {threshold:.0%}: {', '.join(slower)}"
        if slower
        else f"no slowdown beyond {threshold:.0%} (median B/A <= {1 + threshold:.2f})"
    )
    noisy = [n for n, r in ratios_of.items() if max(r) - min(r) > 2 * threshold]
    if noisy:
        text += (
            f" (but the B/A range is wider than {2 * threshold:.0%} for "
            f"{', '.join(noisy)}: more --rounds or a quieter machine)"
        )
    return text, bool(slower)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev_a")
    parser.add_argument("rev_b")
    parser.add_argument("--rounds", type=int, default=5, help="A,B pairs of children (>= 3)")
    parser.add_argument("--quick", action="store_true", help="fewer inner rounds per child")
    parser.add_argument("--threshold", type=float, default=0.05, help="allowed slowdown")
    opts = parser.parse_args(argv)
    if opts.rounds < 3:
        parser.error("--rounds must be at least 3: a ratio from fewer pairs has no spread")
    inner, target = (7, 0.02) if opts.quick else (15, 0.03)
    revs = {"A": describe(opts.rev_a), "B": describe(opts.rev_b)}
    emit(f"# benchmarks.compare: {opts.rev_a} (A) against {opts.rev_b} (B)\n")
    lines = environment(opts.quick) + [f"- {k}: {desc}" for k, (_, desc) in revs.items()]
    emit("\n".join(lines + [f"- load average (1, 5, 15 min) before: {load_average()}"]))
    try:
        runs = alternate(revs, opts.rounds, inner, target)
    except ChildFailed as e:
        emit(f"```\n{e}\n```")
        return 2
    rows, ratios_of = summarise(runs)
    columns = ["measurement", "A median", "B median", "B/A median", "B/A range", "per round"]
    columns += ["B/A of best", "worst child q75/median"]
    emit(f"### B/A over {opts.rounds} rounds of alternating children\n")
    emit("\n".join(markdown_table(columns, rows)))
    text, slower = verdict(ratios_of, opts.threshold)
    notes = [
        f"tracegrad imported from: A {runs['A'][0]['tracegrad_file']}, "
        f"B {runs['B'][0]['tracegrad_file']}",
        f"each child: {inner} inner rounds of ~{target * 1e3:.0f} ms per measurement; A and B "
        "medians are the median over children of each child's median",
        "B/A of best: the ratio of the fastest inner round of each child, median over rounds "
        "(less sensitive to load from other processes)",
        "worst child q75/median: the largest (75th percentile / median - 1) of the inner "
        "rounds of any one child, the noise within a child",
        *checks_agree(runs),
        text,
    ]
    emit("\n".join(f"- {n}" for n in notes))
    emit(f"- load average (1, 5, 15 min) after: {load_average()}")
    return 1 if slower else 0


if __name__ == "__main__":
    sys.exit(main())
