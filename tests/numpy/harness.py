"""One check per `tracegrad.numpy` name, shared by the tests of each family.

`check_name(name, args, **kwargs)` runs NumPy's function and ours on the same arguments and
asserts, for the float dtypes the caller gives:

- forward values bit for bit against NumPy: `tnp.<name>` outside any trace, `np.<name>` on
  tracers (traced by `make_graph` and run by the interpreter) and under `jit`;
- derivatives of both modes against central finite differences (`tracegrad.testing.
  check_grads`, first order by default) for the float arguments, unless `differentiable=False`
  (then `grad` must give zeros or refuse: the name is a step function or returns indices);
- `vmap` over a batch of two against a Python loop over the same two inputs.

`np_fn` overrides NumPy's function (for a method or a name NumPy spells differently); a
`static` tuple names argument positions that stay Python values (axes, shapes, flags).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.testing import assert_bitwise_equal, check_grads

FLOATS = (np.float32, np.float64)


def _float_positions(args, static) -> list[int]:
    return [
        i
        for i, a in enumerate(args)
        if i not in static and isinstance(a, np.ndarray) and a.dtype.kind == "f"
    ]


def _with(args, positions, values):
    out = list(args)
    for i, v in zip(positions, values):
        out[i] = v
    return out


def check_name(
    name: str,
    args: Sequence,
    kwargs: dict | None = None,
    *,
    np_fn: Callable | None = None,
    static: Sequence[int] = (),
    differentiable: bool = True,
    order: int = 1,
    vmap: bool = True,
    jit: bool = True,
    atol=None,
    rtol=None,
    eps=None,
) -> None:
    """Check `tracegrad.numpy.<name>` against `numpy.<name>` on `args` (see the module)."""
    kwargs = dict(kwargs or {})
    theirs = np_fn or getattr(np, name)
    ours = getattr(tnp, name)
    static = tuple(static)
    label = f"{name}({', '.join(_shape_text(a) for a in args)}{_kw_text(kwargs)})"

    expected = theirs(*args, **kwargs)
    assert_bitwise_equal(ours(*args, **kwargs), expected, f"{label}: tnp outside a trace")

    dynamic = [i for i, a in enumerate(args) if i not in static and _is_array(a)]

    def on_dynamic(*values):
        return theirs(*_with(args, dynamic, values), **kwargs)

    dyn_args = [args[i] for i in dynamic]
    if dynamic:
        graph = tg.make_graph(on_dynamic)(*dyn_args)
        assert_bitwise_equal(graph(*dyn_args), expected, f"{label}: np.{name} on tracers")
        if jit:
            assert_bitwise_equal(
                tg.jit(on_dynamic)(*dyn_args), expected, f"{label}: jit", nan_payloads=False
            )

    floats = _float_positions(args, static)
    if floats and differentiable:

        def on_floats(*values):
            return theirs(*_with(args, floats, values), **kwargs)

        check_grads(
            on_floats,
            tuple(args[i] for i in floats),
            order=order,
            modes=("fwd", "rev"),
            atol=atol,
            rtol=rtol,
            eps=eps,
        )
    elif floats:

        def total(*values):
            out = theirs(*_with(args, floats, values), **kwargs)
            return tnp.sum(tnp.astype(out, np.float64)) if _is_array(out) else 0.0

        try:
            grads = tg.grad(total, argnums=tuple(range(len(floats))))(*(args[i] for i in floats))
        except TypeError:
            pass  # refusing is right for a function with no derivative
        else:
            for g in grads:
                np.testing.assert_array_equal(g, np.zeros_like(g), err_msg=f"{label}: grad")

    if vmap and dynamic:
        batched = [np.stack([a, _perturbed(a)]) for a in dyn_args]
        got = tg.vmap(on_dynamic)(*batched)
        want = [on_dynamic(*(b[k] for b in batched)) for k in range(2)]
        want = tg.tree.map(lambda *leaves: np.stack(leaves), *want)
        assert_bitwise_equal(got, want, f"{label}: vmap against a loop", nan_payloads=False)


def _is_array(a) -> bool:
    return isinstance(a, np.ndarray | np.generic)


def _perturbed(a: np.ndarray) -> np.ndarray:
    """A second batch member: floats moved a little, the rest reversed along the first axis."""
    if a.dtype.kind == "f":
        return (a * np.asarray(0.75, a.dtype) + np.asarray(0.125, a.dtype)).astype(a.dtype)
    return a[::-1].copy() if a.ndim else a.copy()


def _shape_text(a) -> str:
    if isinstance(a, np.ndarray):
        return f"{a.dtype.name}{list(a.shape)}"
    return repr(a)


def _kw_text(kwargs: dict) -> str:
    return "".join(f", {k}={v!r}" for k, v in kwargs.items())
