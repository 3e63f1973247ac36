"""The nodes of the shim's recorded graph: `GradFn` (PyTorch's `grad_fn`) and `AccumulateGrad`
(PyTorch's `torch.autograd.graph`).

An eager tensor operation that records builds an immutable IR `Node` (the same class a trace
builds) and wraps it in a `GradFn`: the small mutable part PyTorch keeps on its autograd nodes.
It holds the values the node's vjp rule reads (released after a backward pass unless
`retain_graph`), version stamps of the tensors they came from, and hooks. `next_functions`
points at the producers' `GradFn`s, so a `GradFn` keeps its whole upstream graph alive and
nothing points back: dropping the last tensor of a graph frees it by reference counting.
"""

from __future__ import annotations

import itertools
import weakref

from tracegrad.diagnostics import tensor_causes
from tracegrad.ir.graph import Edge, Node, arg_node
from tracegrad.ir.types import interned_aval, shape_of
from tracegrad.torch.grad_mode import is_anomaly_enabled
from tracegrad.torch.hooks import RemovableHandle
from tracegrad.torch.tensor import _NO_NEXT, Tensor, type_string
from tracegrad.transforms.vjp import stand_in as _stand_in

FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward."
)

_VERSION_HINT = (
    "Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
    "with torch.autograd.set_detect_anomaly(True, check_nan=False)."
)
_VERSION_HINT_ANOMALY = (
    "Hint: the backtrace further above shows the operation that failed to compute its "
    "gradient. The variable in question was changed in there or anywhere later. Good luck!"
)


def torch_name(node: Node) -> str:
    """PyTorch's name for this node's backward: the primitive's `torch_name` (a function of
    the input avals where PyTorch names by operand, `PowBackward0`/`PowBackward1`), or one
    derived from the primitive's name (`sin` -> `SinBackward0`)."""
    prim = node.prim
    name = prim.torch_name
    if name is None:
        return "".join(part.capitalize() for part in prim.name.split("_")) + "Backward0"
    if callable(name):
        return name(*(e.aval for e in node.inputs))
    return name


_counter = itertools.count()


class _Hooks:
    """Node pre- and post-hooks, shared by GradFn and AccumulateGrad."""

    __slots__ = ()

    def register_prehook(self, fn) -> RemovableHandle:
        """`fn(grad_outputs) -> new grad_outputs or None`, before the node runs."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        self._pre_hooks.append(fn)
        return RemovableHandle(self._pre_hooks, fn)

    def register_hook(self, fn) -> RemovableHandle:
        """`fn(grad_inputs, grad_outputs) -> new grad_inputs or None`, after the node ran."""
        if self._post_hooks is None:
            self._post_hooks = []
        self._post_hooks.append(fn)
        return RemovableHandle(self._post_hooks, fn)


# (module constants: CPython 3.11 reads a class's attribute unspecialized, a global specialized)
_SAVED, _NOTHING, _FREED = 0, 1, 2


class GradFn(_Hooks):
    """A recorded node: the IR `Node`, what its backward reads, its hooks and its producers."""

    __slots__ = (
        "node",
        "_next",
        "_shown",
        "_values",
        "_outs",
        "_versions",
        "_state",
        "_pre_hooks",
        "_post_hooks",
        "_tensor_hooks",
        "_retained",
        "_name",
        "_metadata",
        "_pinned",
        "_on_release",
        "_seq",
        "__weakref__",
    )

    # _state: SAVED (values held), NOTHING (the rule needs no values), FREED (released)
    SAVED, NOTHING, FREED = _SAVED, _NOTHING, _FREED

    def __init__(self, node: Node, next_functions: tuple, values, outs: tuple, versions):
        self.node = node
        self._seq = next(_counter)  # creation order is topological order
        self._next = next_functions  # what the engine walks: one entry per node input
        self._shown = None  # what `next_functions` shows, when a composite sets it
        if not node.prim.vjp_reads:  # the rule reads shapes and dtypes only
            self._state = _NOTHING
            self._values = self._outs = self._versions = None
        else:
            self._state = _SAVED
            self._values = values
            self._outs = outs  # one value per output (None: the rule reads none)
            self._versions = versions
        self._pre_hooks = self._post_hooks = self._tensor_hooks = self._retained = None
        self._name = None
        self._metadata = None
        self._pinned = False
        self._on_release = None  # a custom Function's ctx frees what it saved

    def name(self) -> str:
        return self._name or torch_name(self.node)

    @property
    def next_functions(self) -> tuple:
        """The producers of this node's inputs, as PyTorch lists them: a condition (bool) and
        an input PyTorch takes as a Python number (the primitive's `torch_scalar_inputs`) are
        not inputs there; composites show their own inputs."""
        if self._shown is not None:
            return self._shown
        node = self.node
        scalars = node.prim.torch_scalar_inputs
        return tuple(
            nxt
            for i, (nxt, e) in enumerate(zip(self._next, node.inputs))
            if e.aval.dtype.kind != "b" and not (i in scalars and e.aval.weak_type)
        )

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def __repr__(self) -> str:
        return f"<{self.name().removeprefix('torch::autograd::')} object at {id(self):#x}>"

    # -- saved values -------------------------------------------------------------------------
    def release(self) -> None:
        if self._on_release is not None:
            self._on_release()
        # pinned: a custom Function's node, whose saved values live in its ctx (freed there)
        if self._state == _SAVED and not self._pinned:
            self._state = _FREED
            self._values = self._outs = None
            # freed: the slot now keeps the freeing backward call's line, for the message
            self._versions = tensor_causes.FREEING[0]

    def saved(self, as_tensors: bool) -> tuple[list, object]:
        """The inputs and output(s) the vjp rule reads: arrays, or tensors to record through
        (`create_graph`). Raises PyTorch's errors for released or modified values."""
        state = self._state
        node = self.node
        if state == _NOTHING:
            ins = [_stand_in(e[0].out_avals[e[1]]) for e in node.inputs]
            return ins, self._stood_in_outs()
        if state == _FREED:
            raise RuntimeError(FREED + tensor_causes.freed(self))
        for cell, version, owner in self._versions:
            if cell.version != version:
                if isinstance(owner, int):  # output `owner` of this node
                    owner = (self, owner)
                else:  # an input tensor (held weakly): named by its node now, as PyTorch
                    t = owner()
                    owner = (t._grad_fn, t._index) if t is not None and t._grad_fn else None
                raise RuntimeError(_version_message(cell, version, owner))
        # a value the rule does not read was not saved (None): a stand-in of its shape
        values = self._values
        if not as_tensors:
            for v in values:
                if v is None:
                    values = [
                        _stand_in(e[0].out_avals[e[1]]) if v is None else v
                        for v, e in zip(values, node.inputs)
                    ]
                    break
            outs = self._outs
            if node.prim.multiple_results:
                return values, self._stood_in_outs() if outs is None else outs
            # (the common case: one output, a stand-in when the rule does not read it)
            return values, _stand_in(node.out_avals[0]) if outs is None else outs[0]
        # inputs as tensors linked into the graph: a handle on the producer's output, the leaf
        # itself, or the constant's value (no reference to user tensors: no cycles)
        ins = []
        for (nxt, index), value, e in zip(self._next, values, node.inputs):
            if value is None:
                ins.append(_stand_in(e.aval))
            elif isinstance(nxt, GradFn):
                ins.append(Tensor._wrap(value, nxt, index))
            elif nxt is not None:
                ins.append(nxt.variable)
            else:
                ins.append(value)
        if self._outs is None:
            return ins, self._stood_in_outs()
        outs = [Tensor._wrap(v, self, i) for i, v in enumerate(self._outs)]
        return ins, node.prim.result(outs)

    def _stood_in_outs(self):
        """Stand-ins for the outputs of a node whose rule does not read them, as the rule
        takes them (one value, or a tuple for a primitive with several outputs)."""
        node = self.node
        if not node.prim.multiple_results:  # the common case, without a tuple
            return _stand_in(node.out_avals[0])
        return tuple([_stand_in(a) for a in node.out_avals])

    # PyTorch's `grad_fn._saved_self` / `_saved_other` / `_saved_result`, as properties (not
    # a `__getattr__`: that would put every attribute read of a node, the backward pass's
    # included, on CPython's unspecialized path)
    _saved_self = property(lambda self: self._saved(0))
    _saved_other = property(lambda self: self._saved(1))
    _saved_result = property(lambda self: self._saved(-1))

    def _saved(self, index: int):
        if index >= len(self.node.inputs):  # `_saved_other` of a one-input node
            raise AttributeError(f"'{self.name()}' object has no attribute '_saved_other'")
        if self._state == _SAVED:  # a value the rule does not read was not saved
            held = self._outs if index == -1 else self._values[index]
            if held is None:
                return None
        ins, out = self.saved(as_tensors=True)
        return out if index == -1 else ins[index]


class AccumulateGrad(_Hooks):
    """The node of a leaf that requires grad: the backward pass ends here, adding into `.grad`.

    It holds its tensor; the tensor holds it weakly (as in PyTorch), so there is no cycle."""

    __slots__ = ("variable", "node", "_pre_hooks", "_post_hooks", "__weakref__")
    next_functions = _next = ()

    def __init__(self, variable, node: Node):
        self.variable = variable
        self.node = node
        self._pre_hooks = self._post_hooks = None

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    @property
    def metadata(self) -> dict:
        return {}

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


def _version_message(cell, version, owner) -> str:
    described = f"[{type_string(cell.value.dtype, shape_of(cell.value))}]"
    if owner is not None:
        fn, index = owner
        name = fn.name()
        name = name[: -len("Backward0")] if name.endswith("Backward0") else name
        described += f", which is output {index} of {name},"
    hint = _VERSION_HINT_ANOMALY if is_anomaly_enabled() else _VERSION_HINT
    return (
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: {described} is at version {cell.version}; expected version {version} "
        f"instead. {hint}" + tensor_causes.version_changed(cell, version)
    )


# -- a tensor's place in the graph ------------------------------------------------------------


def edge_and_fn(t: Tensor):
    """The edge `t`'s value flows along, and the node that receives its grad: its `GradFn`
    and output index, or a leaf's `AccumulateGrad` (made once, held weakly by the tensor)."""
    fn = t._grad_fn
    if fn is not None:
        return Edge(fn.node, t._index), (fn, t._index)
    if t._requires_grad:
        acc = accumulator(t)
        return Edge(acc.node, 0), (acc, 0)
    return None, _NO_NEXT


def accumulator(t: Tensor) -> AccumulateGrad:
    """The `AccumulateGrad` node of leaf `t` (the tensor holds it weakly, as PyTorch does)."""
    acc = t._acc() if t._acc is not None else None
    if acc is None:
        value = t._cell.value
        acc = AccumulateGrad(t, arg_node(interned_aval(value.shape, value.dtype)))
        t._acc = weakref.ref(acc)
    return acc
