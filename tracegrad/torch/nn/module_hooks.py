"""Module hooks: `Module.__call__` with forward pre-hooks, forward hooks and full backward hooks.

The backward hooks work as PyTorch's `BackwardHook`: the module's tensor inputs and outputs pass
through an identity `autograd.Function`. The outputs' identity node runs first in the backward
pass and captures the gradients of the outputs (after the backward pre-hooks, which may replace
them); the inputs' identity node runs last and calls the backward hooks with the gradients of
the inputs, which a hook's return value replaces.
"""

from __future__ import annotations

import warnings

from tracegrad.torch.function import Function
from tracegrad.torch.grad_mode import is_grad_enabled
from tracegrad.torch.tensor import Tensor

_NO_INPUT_GRAD = (
    "Full backward hook is firing when gradients are computed with respect to module outputs "
    "since no inputs require gradients. See "
    "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
    "#torch.nn.Module.register_full_backward_hook for more details."
)


class BackwardHookFunction(Function):
    """The identity on tensors, whose backward hands the gradients to a callback (the first
    argument) and passes on what it returns. Outputs of inputs that need no gradient are not
    differentiable, as PyTorch's. Missing gradients reach the callback as zeros when
    `materialize` (the inputs' side: PyTorch's hooks see zeros there), else as None."""

    @staticmethod
    def forward(ctx, callback, materialize, *tensors):
        ctx.callback = callback
        ctx.set_materialize_grads(materialize)
        outs = tuple(Tensor._wrap(t._cell.value) for t in tensors)
        ctx.mark_non_differentiable(*[o for o, t in zip(outs, tensors) if not t.requires_grad])
        return outs

    @staticmethod
    def backward(ctx, *grads):
        return (None, None, *ctx.callback(grads))


def _pack(indices, values, size: int) -> tuple:
    out = [None] * size
    for i, v in zip(indices, values):
        out[i] = v
    return tuple(out)


class BackwardHook:
    """One call's backward hooks: set up on the inputs before `forward`, on the outputs after."""

    def __init__(self, module, user_hooks, user_pre_hooks) -> None:
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.n_inputs = -1
        self.input_index = None
        self.n_outputs = -1
        self.output_index = None

    def _apply_on_tensors(self, callback, materialize: bool, args):
        index = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in index]
        if not (any(t.requires_grad for t in tensors) and is_grad_enabled()):
            return args, None
        new = BackwardHookFunction.apply(callback, materialize, *tensors)
        out = list(args)
        for i, t in zip(index, new):
            out[i] = t
        return tuple(out), index

    def _input_grads(self, grads):
        """The inputs' gradients: the hooks see (and may replace) them with the outputs'."""
        if self.grad_outputs is None:  # the gradient reached the inputs without the outputs
            return grads
        res = _pack(self.input_index, grads, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError(
                    "Backward hook returned an invalid number of grad_input, "
                    f"got {len(out)}, but expected {len(res)}"
                )
            res = out
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_index)

    def _output_grads(self, grads):
        """The outputs' gradients, after the backward pre-hooks."""
        self.grad_outputs = _pack(self.output_index, grads, self.n_outputs)
        for hook in self.user_pre_hooks:
            out = hook(self.module, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(self.grad_outputs):
                raise RuntimeError(
                    "Backward pre hook returned an invalid number of grad_output, "
                    f"got {len(out)}, but expected {len(self.grad_outputs)}"
                )
            self.grad_outputs = out
        local = self.grad_outputs
        if self.input_index is None:  # no input needs a gradient: the hooks fire here
            warnings.warn(_NO_INPUT_GRAD, UserWarning, stacklevel=2)
            none = _pack([], [], self.n_inputs)
            for hook in self.user_hooks:
                res = hook(self.module, none, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient should "
                        "always return None or None for all gradients."
                    )
            self.grad_outputs = None
        return tuple(local[i] for i in self.output_index)

    def setup_input_hook(self, args):
        res, self.input_index = self._apply_on_tensors(self._input_grads, True, args)
        self.n_inputs = len(args)
        return res

    def setup_output_hook(self, result):
        is_tuple = isinstance(result, tuple)
        args = result if is_tuple else (result,)
        res, self.output_index = self._apply_on_tensors(self._output_grads, False, args)
        self.n_outputs = len(args)
        return res if is_tuple else res[0]


def _call_forward_hooks(module, hooks, args, kwargs, result, called):
    for entry in hooks:
        hook, with_kwargs, always_call = entry
        if always_call:
            called.add(id(entry))
        out = hook(module, args, kwargs, result) if with_kwargs else hook(module, args, result)
        if out is not None:
            result = out
    return result


def call_with_hooks(module, args, kwargs):
    """`Module.__call__` when the module has hooks (PyTorch's `_call_impl`)."""
    d = module.__dict__
    pre_hooks, hooks = d["_forward_pre_hooks"], d["_forward_hooks"]
    backward_hooks, backward_pre_hooks = d["_backward_hooks"], d["_backward_pre_hooks"]
    result = None
    called: set[int] = set()
    try:
        for hook, with_kwargs in list(pre_hooks):
            if with_kwargs:
                out = hook(module, args, kwargs)
                if out is not None:
                    if isinstance(out, tuple) and len(out) == 2:
                        args, kwargs = out
                    else:
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of (new_args, "
                            f"new_kwargs), but got {out}."
                        )
            else:
                out = hook(module, args)
                if out is not None:
                    args = out if isinstance(out, tuple) else (out,)
        bw_hook = None
        if backward_hooks or backward_pre_hooks:
            bw_hook = BackwardHook(
                module, [h for (h,) in backward_hooks], [h for (h,) in backward_pre_hooks]
            )
            args = bw_hook.setup_input_hook(args)
        result = module.forward(*args, **kwargs)
        result = _call_forward_hooks(module, list(hooks), args, kwargs, result, called)
        if bw_hook is not None:
            if not isinstance(result, Tensor | tuple):
                warnings.warn(
                    "For backward hooks to be called, module output should be a Tensor or a "
                    f"tuple of Tensors but received {type(result)}",
                    stacklevel=3,
                )
            result = bw_hook.setup_output_hook(result)
        return result
    except Exception:
        for entry in list(hooks):
            hook, with_kwargs, always_call = entry
            if not always_call or id(entry) in called:
                continue
            try:
                out = (
                    hook(module, args, kwargs, result)
                    if with_kwargs
                    else hook(module, args, result)
                )
                if out is not None:
                    result = out
            except Exception as e:  # noqa: BLE001 - PyTorch silences it, with a warning
                warnings.warn(
                    "module forward hook with ``always_call=True`` raised an exception that was "
                    f"silenced as another error was raised in forward: {e}",
                    stacklevel=3,
                )
        raise
