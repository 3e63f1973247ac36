"""`torch.utils.checkpoint.checkpoint` on the tensors: the function's activations are not kept
but recomputed in the backward pass, with PyTorch's non-reentrant semantics (gradients reach
the inputs and the parameters the function reads, `autograd.grad` works).

As PyTorch does, the backward pass runs the Python function again. The call runs once, on
fresh leaves, recording as usual; its recording shows which parameters (leaves that require
grad) the function reads, and its outputs become those of one `CheckpointFunction` node
(an `autograd.Function`) whose inputs are the tensor arguments and those parameters. The
recording is then dropped, so the node saves only its inputs. Its backward re-runs the
function on fresh leaves with grad enabled and differentiates that recording with
`autograd.grad`, inputs and parameters at once. (The functional `tg.checkpoint` transform
cannot serve here: the tensors do not keep the constant operands of operations whose backward
reads nothing, `x + 1.0`, so a recording cannot always be replayed as a graph.)
"""

from __future__ import annotations

import warnings

from tracegrad import tree
from tracegrad.torch import graph as autograd_graph
from tracegrad.torch.engine import grad as autograd_grad
from tracegrad.torch.function import Function
from tracegrad.torch.generator import default_generator
from tracegrad.torch.grad_mode import _enabled, enable_grad
from tracegrad.torch.graph import AccumulateGrad
from tracegrad.torch.tensor import Tensor

_REENTRANT_WARNING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting "
    "in PyTorch 2.9, calling checkpoint without use_reentrant will raise an exception. "
    "use_reentrant=False is recommended, but if you need to preserve the current default "
    "behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants."
)


def _check_options(use_reentrant, context_fn, determinism_check, debug, kwargs) -> None:
    if use_reentrant is None:
        warnings.warn(_REENTRANT_WARNING, stacklevel=3)
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if context_fn is not None:
        raise NotImplementedError("torch.utils.checkpoint.checkpoint: context_fn is not supported")
    if determinism_check not in ("default", "none"):
        raise ValueError(
            f"determinism_check should be one of ['default', 'none'], but got {determinism_check}"
        )
    if debug:
        raise NotImplementedError("torch.utils.checkpoint.checkpoint: debug is not supported")


class _Call:
    """One checkpointed call: the function, its arguments (tensor positions marked), and the
    outputs of the first run."""

    def __init__(self, function, args, kwargs, preserve_rng_state: bool):
        self.function, self.args, self.kwargs = function, list(args), kwargs
        self.positions = [
            i for i, a in enumerate(args) if isinstance(a, Tensor) and a.dtype.kind in "fc"
        ]
        # the global stream as the first run found it, so the rerun draws the same numbers
        self.rng = default_generator.get_state() if preserve_rng_state else None

    def run(self, tensors):
        """The function on `tensors` in the float tensor arguments' places."""
        args = list(self.args)
        for i, t in zip(self.positions, tensors):
            args[i] = t
        return self.function(*args, **self.kwargs)

    def rerun(self, tensors):
        """`run` again, drawing random numbers from the first run's state (PyTorch's
        `preserve_rng_state`), and leaving the global stream where it was."""
        if self.rng is None:
            return self.run(tensors)
        current = default_generator.get_state()
        default_generator.set_state(self.rng)
        try:
            return self.run(tensors)
        finally:
            default_generator.set_state(current)


class CheckpointFunction(Function):
    """The node of a checkpointed call: inputs are the tensor arguments, then the parameters
    the function reads; outputs are the first run's (computed before the node is recorded)."""

    @staticmethod
    def forward(ctx, call: _Call, outputs: list, *inputs):
        ctx.call = call
        ctx.save_for_backward(*inputs)
        return tuple(outputs) if len(outputs) > 1 else outputs[0]

    @staticmethod
    def backward(ctx, *grads):
        call, saved = ctx.call, ctx.saved_tensors
        n = len(call.positions)
        fresh = [t.detach().requires_grad_(True) for t in saved[:n]]
        with enable_grad():
            flat = tree.leaves(call.rerun(fresh))
        pairs = [
            (o, g)
            for o, g in zip(_recorded(flat), grads)
            if g is not None and o._grad_fn is not None
        ]
        wrt = fresh + list(saved[n:])
        if not pairs:
            return (None, None) + (None,) * len(wrt)
        outs, gs = zip(*pairs)
        got = autograd_grad(outs, wrt, gs, create_graph=_enabled.get(), allow_unused=True)
        return (None, None) + tuple(got)


def _recorded(flat) -> list:
    return [o for o in flat if isinstance(o, Tensor) and o._grad_fn is not None]


def checkpoint(
    function,
    *args,
    use_reentrant: bool | None = None,
    context_fn=None,
    determinism_check: str = "default",
    debug: bool = False,
    preserve_rng_state: bool = True,
    **kwargs,
):
    """`function(*args, **kwargs)`, whose intermediate values the backward pass recomputes
    instead of keeping (PyTorch's `torch.utils.checkpoint.checkpoint`).

    tracegrad implements one variant, PyTorch's non-reentrant one, whatever `use_reentrant`
    says (None warns as PyTorch does): gradients flow to every tensor argument and to the
    parameters (leaves) the function reads, and `autograd.grad` works. The function runs
    again in the backward pass, so it must compute the same values again; with
    `preserve_rng_state` (the default) it draws the same random numbers from the global stream
    (dropout masks, `randn`) as the first run did. A tensor the
    function reads that was computed outside it (not a leaf) must be passed as an argument.
    """
    _check_options(use_reentrant, context_fn, determinism_check, debug, kwargs)
    if not _enabled.get():
        return function(*args, **kwargs)
    call = _Call(function, args, kwargs, preserve_rng_state)
    fresh = [args[i].detach().requires_grad_(True) for i in call.positions]
    start = next(autograd_graph._counter)
    out = call.run(fresh)
    flat, out_tree = tree.flatten(out)
    recorded = [k for k, o in enumerate(flat) if isinstance(o, Tensor) and o._grad_fn is not None]
    if not recorded:
        return out
    params = _parameters([flat[k] for k in recorded], fresh, start)
    outputs = [flat[k].detach() for k in recorded]
    del out, fresh
    inputs = [args[i] for i in call.positions] + params
    results = CheckpointFunction.apply(call, outputs, *inputs)
    results = results if isinstance(results, tuple) else (results,)
    for k, r in zip(recorded, results):
        flat[k] = r
    return tree.unflatten(out_tree, flat)


def _parameters(outs, fresh, start: int) -> list:
    """The leaves requiring grad that the recording of the call reads, besides its own fresh
    arguments; a tensor computed before the call (not a leaf) is refused."""
    own = {id(t) for t in fresh}
    params, seen = [], set()
    stack = [o._grad_fn for o in outs]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        if isinstance(fn, AccumulateGrad):
            if id(fn.variable) not in own:
                params.append(fn.variable)
            continue
        if fn._seq < start:
            raise NotImplementedError(
                "torch.utils.checkpoint.checkpoint: the function uses a tensor computed "
                "outside it that requires grad (not a leaf); pass it to the checkpointed "
                "function as an argument"
            )
        stack.extend(nxt for nxt, _ in fn._next)
    return params


__all__ = ["checkpoint"]
