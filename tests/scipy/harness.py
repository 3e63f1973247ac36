"""One check per tracegrad.scipy function, shared by the tests of tracegrad.scipy (the
scipy.special and scipy.stats twin of tests/numpy/harness.py's `check_name`).

`check_function(ours, theirs, args)` asserts, on `args` (float32 and float64 ones as given):

- values bit for bit against SciPy's `theirs`: `ours` outside any trace, traced (`make_graph`,
  run by the interpreter) and under `jit` (the code generator's text) — with `on_tracers`,
  the traced call is SciPy's own function (a scipy.special ufunc reaching tracegrad);
- derivatives of both modes against central finite differences (`tracegrad.testing.
  check_grads`, to `order`) in the arguments at `wrt` (default: every float array);
- `vmap` over a batch of two against a Python loop over the same two inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import tracegrad as tg
from tracegrad.testing import assert_bitwise_equal, check_grads


def _with(args, positions, values):
    out = list(args)
    for i, v in zip(positions, values):
        out[i] = v
    return out


def _is_array(a) -> bool:
    return isinstance(a, np.ndarray | np.generic)


def _perturbed(a):
    if a.dtype.kind == "f":
        return (a * np.asarray(0.875, a.dtype) + np.asarray(0.0625, a.dtype)).astype(a.dtype)
    return a.copy()


def check_function(
    ours: Callable,
    theirs: Callable,
    args: Sequence,
    kwargs: dict | None = None,
    *,
    on_tracers: bool = False,
    wrt: Sequence[int] | None = None,
    order: int = 2,
    vmap: bool = True,
    atol=None,
    rtol=None,
    eps=None,
    label: str = "",
) -> None:
    kwargs = dict(kwargs or {})
    label = label or getattr(theirs, "__name__", "function")
    expected = theirs(*args, **kwargs)
    assert_bitwise_equal(ours(*args, **kwargs), expected, f"{label}: outside a trace")

    traced_fn = theirs if on_tracers else ours
    dynamic = [i for i, a in enumerate(args) if _is_array(a)]

    def on_dynamic(*values):
        return traced_fn(*_with(args, dynamic, values), **kwargs)

    values = [args[i] for i in dynamic]
    graph = tg.make_graph(on_dynamic)(*values)
    assert_bitwise_equal(graph(*values), expected, f"{label}: traced")
    assert_bitwise_equal(tg.jit(on_dynamic)(*values), expected, f"{label}: jit", nan_payloads=False)

    if wrt is None:
        wrt = [i for i in dynamic if np.asarray(args[i]).dtype.kind == "f"]
    if wrt and order:

        def on_floats(*floats):
            return ours(*_with(args, wrt, floats), **kwargs)

        check_grads(
            on_floats, tuple(args[i] for i in wrt), order=order, atol=atol, rtol=rtol, eps=eps
        )

    if vmap and dynamic:
        batched = [np.stack([v, _perturbed(np.asarray(v))]) for v in values]

        def on_batch(*vs):
            return ours(*_with(args, dynamic, vs), **kwargs)

        got = tg.vmap(on_batch)(*batched)
        want = [on_batch(*(b[k] for b in batched)) for k in range(2)]
        want = tg.tree.map(lambda *leaves: np.stack(leaves), *want)
        assert_bitwise_equal(got, want, f"{label}: vmap against a loop", nan_payloads=False)
