"""`autograd.Function`: user-defined forward and backward, PyTorch's way.

`MyFn.apply(*args)` runs `forward(ctx, *args)` on tensors without recording, then records one
node for the whole call: a primitive made for the class (one per class and output count)
whose vjp rule calls `backward(ctx, *grad_outputs)`. The node, its `GradFn`, hooks,
`retain_graph` and `create_graph` then behave as for any other operation; with
`create_graph=True` the backward runs in grad mode, so a backward written with tensor
operations can be differentiated again. A complex backward gets and returns PyTorch's
gradients (the conjugates of the pass's cotangents, `engine.torch_gradient`).

The ctx holds what forward saved. A saved output is kept as its array (a tensor handle is
rebuilt when `saved_tensors` is read), and the ctx reaches its `GradFn` weakly, so the
graph has no reference cycle and is freed by reference counting like the rest.
"""

from __future__ import annotations

import functools
import weakref

import numpy as np

from tracegrad.ir.graph import Node, Params
from tracegrad.ir.primitive import Primitive
from tracegrad.ir.types import aval_of
from tracegrad.primitives.broadcasting import unbroadcast
from tracegrad.torch.engine import torch_gradient
from tracegrad.torch.grad_mode import _enabled, no_grad
from tracegrad.torch.graph import FREED, GradFn, edge_and_fn
from tracegrad.torch.recording import _constant_edge
from tracegrad.torch.tensor import Tensor, _readonly


class FunctionCtx:
    """What `forward` leaves for `backward`: saved tensors and flags."""

    def __init__(self, needs_input_grad: tuple[bool, ...]):
        self.needs_input_grad = needs_input_grad
        self.materialize_grads = True
        self._saved: list | None = []
        self._non_differentiable: set[int] = set()
        self._fn = None  # weak reference to the GradFn, set when the node is recorded

    def save_for_backward(self, *tensors) -> None:
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    "save_for_backward can only save variables, but argument "
                    f"{tensors.index(t)} is of type {type(t).__name__}"
                )
        self._saved = list(tensors)

    @property
    def saved_tensors(self) -> tuple:
        if self._saved is None:
            raise RuntimeError(FREED)
        fn = self._fn() if self._fn is not None else None
        return tuple(
            Tensor._wrap(s[1], fn, s[2]) if isinstance(s, tuple) and fn else s for s in self._saved
        )

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)

    def mark_dirty(self, *tensors) -> None:
        raise NotImplementedError(
            "mark_dirty: in-place changes of inputs inside Function.forward are not supported by "
            "the tracegrad shim; return a new tensor instead"
        )

    def _release(self) -> None:
        self._saved = None


class Function:
    """Subclass with static `forward(ctx, *args)` and `backward(ctx, *grad_outputs)` (or
    `forward(*args)` plus `setup_context(ctx, inputs, output)`), then call `.apply`."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    setup_context = None

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use "
            "new-style autograd function with static forward method."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        needs = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        ctx = FunctionCtx(needs)
        with no_grad():
            if cls.setup_context is not None:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        if not (any(needs) and _enabled.get()):
            return output
        return _record(cls, ctx, args, output)


def once_differentiable(backward):
    """Marks a backward as not differentiable again: it runs without recording."""

    @functools.wraps(backward)
    def wrapper(ctx, *grad_outputs):
        with no_grad():
            return backward(ctx, *grad_outputs)

    return wrapper


# -- the node ---------------------------------------------------------------------------------

_PRIMS: dict = {}


def _prim_for(cls, n_outputs: int) -> Primitive:
    key = (cls, n_outputs)
    prim = _PRIMS.get(key)
    if prim is None:
        prim = Primitive(
            cls.__name__,
            impl=_no_impl,
            shape=_no_impl,
            vjp=_function_vjp,
            multiple_results=n_outputs > 1,
            registered=False,  # named after a user's class: never looked up, never serialized
        )
        _PRIMS[key] = prim
    return prim


def _no_impl(*args, **params):
    raise NotImplementedError(
        "a custom autograd.Function node only runs through Function.apply; it cannot be traced "
        "or interpreted as a graph"
    )


def _record(cls, ctx: FunctionCtx, args, output):
    single = not isinstance(output, tuple)
    outputs = (output,) if single else output
    tensor_args = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    edges, nexts, values = [], [], []
    for i in tensor_args:
        a = args[i]
        edge, nxt = edge_and_fn(a)
        edges.append(edge if edge is not None else _constant_edge(a._cell.value))
        nexts.append(nxt)
        values.append(a._cell.value)
    outs = [o for o in outputs if isinstance(o, Tensor)]
    for o in outs:
        if any(o is args[i] for i in tensor_args):
            raise NotImplementedError(
                f"{cls.__name__}.forward returned one of its inputs; return a new tensor "
                "(for example `x.clone()`)"
            )
    arrays = [_readonly(o._cell.value) for o in outs]
    node = Node(
        _prim_for(cls, len(outs)),
        tuple(edges),
        Params(ctx=ctx, cls=cls, n_args=len(args), positions=tuple(tensor_args)),
        tuple(aval_of(a) for a in arrays),
    )
    fn = GradFn(node, tuple(nexts), tuple(values), tuple(arrays), [])
    fn._pinned = True  # what backward needs lives in the ctx, released below
    fn._name = f"{cls.__name__}Backward"
    fn._on_release = ctx._release
    ctx._fn = weakref.ref(fn)
    # saved outputs become (marker, array, index): no cycle output -> fn -> ctx -> output
    if ctx._saved:
        ctx._saved = [
            next((("out", arrays[k], k) for k, o in enumerate(outs) if o is s), s)
            for s in ctx._saved
        ]
    for k, o in enumerate(outs):
        if id(o) in ctx._non_differentiable or o.dtype.kind not in "fc":
            continue
        o._grad_fn = fn
        o._index = k
        o._requires_grad = True
    return output


def _function_vjp(bar, *primals, out, ctx, cls, n_args, positions):
    bars = bar if isinstance(bar, tuple) else (bar,)
    outs = out if isinstance(out, tuple) else (out,)
    grads = []
    for b, o in zip(bars, outs):
        if b is None and ctx.materialize_grads:
            b = np.zeros(np.shape(o), np.asarray(o).dtype)
        b = torch_gradient(b)  # the user's backward is written for PyTorch's convention
        grads.append(b if b is None or isinstance(b, Tensor) else Tensor._wrap(b))
    result = cls.backward(ctx, *grads)
    result = result if isinstance(result, tuple) else (result,)
    name = f"{cls.__name__}Backward"
    if len(result) != n_args:
        raise RuntimeError(
            f"function {name} returned an incorrect number of gradients (expected {n_args}, "
            f"got {len(result)})"
        )
    create = _enabled.get()  # the engine records the backward pass iff create_graph
    cotangents = []
    for p, x in zip(positions, primals):
        g = result[p]
        if g is None:
            cotangents.append(None)
            continue
        if not isinstance(g, Tensor):
            g = Tensor._wrap(np.asarray(g))
        shape = np.shape(x)
        if g.shape != shape:
            try:
                # as PyTorch: the input's shape must expand to the gradient's, which is summed
                expandable = np.broadcast_shapes(shape, g.shape) == g.shape
            except ValueError:
                expandable = False
            if not expandable:
                raise RuntimeError(
                    f"Function {name} returned an invalid gradient at index {p} - got "
                    f"{list(g.shape)} but expected shape compatible with {list(shape)}"
                )
            g = _sum_to(g, shape)
        cotangents.append(torch_gradient(g if create else g._cell.value))
    return tuple(cotangents)


def _sum_to(g: Tensor, shape) -> Tensor:
    return unbroadcast(g, shape)


__all__ = ["Function", "FunctionCtx", "once_differentiable"]
