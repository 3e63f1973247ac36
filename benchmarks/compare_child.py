"""The measuring half of `python -m benchmarks.compare`: one revision's medians, as JSON.

Run by compare.py as `python -P benchmarks/compare_child.py ROUNDS TARGET` with PYTHONPATH set
to one revision's worktree (and the thread variables of benchmarks/__init__.py already in the
environment). `-P` keeps this script's directory off sys.path. tracegrad is imported first, so
it comes from the worktree; only then is the repository holding this file put first on
sys.path, so `benchmarks` (the measurement code) comes from here, not from the worktree's own
older copy, and is the same for both revisions. The code measured calls only `tg.jit`,
`tg.value_and_grad`, `tg.grad`, the tensors of `tracegrad.torch` and NumPy, which every
revision compared has.
"""

import json
import sys
from pathlib import Path

MEASUREMENTS = (
    "mlp_step jit, H=32",
    "mlp_step jit, H=256",
    "1,000-op chain tg.grad, per op",
    "mlp_step value_and_grad without jit, H=32",
    "1,000-op chain, tensors .backward(), per op",
)


def main(rounds: int, target: float) -> dict:
    import numpy as np

    import tracegrad as tg  # from PYTHONPATH: the revision under test

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks.grad_overhead import N_OPS, chain
    from benchmarks.harness import compare
    from benchmarks.mlp_step import data, init, loss, step

    x, y = data()

    def mlp(h):
        jstep = tg.jit(step)
        state = {"p": init(h)}

        def run():
            state["p"], value = jstep(state["p"], x, y)
            return value

        return run

    import tracegrad.torch as torch

    def eager_mlp():
        p, vg = init(32), tg.value_and_grad(loss)
        return lambda: vg(p, x, y)

    def tensors_chain():
        t = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)
        chain(torch)(t).backward()
        return t.grad

    measured = (mlp(32), mlp(256), lambda: tg.grad(chain(np))(0.3), eager_mlp(), tensors_chain)
    systems = dict(zip(MEASUREMENTS, measured))
    result = compare("compare", systems, MEASUREMENTS[0], quick=False, rounds=rounds, target=target)
    per = {MEASUREMENTS[2]: N_OPS, MEASUREMENTS[4]: N_OPS}
    checks = {}  # numbers both revisions should agree on (bit for bit, unless a rule changed)
    for h in (32, 256):
        p, value = tg.jit(step)(init(h), x, y)
        checks[f"H={h} loss, sum of new parameters"] = [float(value)] + [
            float(np.sum(p[k])) for k in sorted(p)
        ]
    checks["chain gradient"] = [float(tg.grad(chain(np))(0.3))]
    return {
        "tracegrad_file": tg.__file__,
        "per_call": {k: (v / per.get(k, 1)).tolist() for k, v in result.per_call.items()},
        "calls": result.calls,
        "checks": checks,
    }


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), float(sys.argv[2]))), flush=True)
