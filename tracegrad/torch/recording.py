"""Recording: a tensor operation that requires grad becomes an IR node and its `GradFn`.

`bind` hands any primitive call with a tensor argument (outside a trace) to `record`. It runs
the primitive's NumPy implementation and, in grad mode with an input that requires grad,
builds the same immutable `Node`/`Edge` a trace would, wrapped in a `GradFn` that holds what
the node's vjp rule reads (the primitive's `vjp_reads`) and version stamps of the tensors
those values came from. Results are new tensors; they require grad when the result is
floating point. Non-differentiable primitives with float results (floor, sign) are recorded
too, as in PyTorch: their results require grad and pass a zero gradient.
"""

from __future__ import annotations

import traceback
import weakref

import numpy as np

from tracegrad import config
from tracegrad.diagnostics import checks, provenance, tensor_causes
from tracegrad.ir.graph import EMPTY_PARAMS, Edge, Node, Params, arg_node, new_edge
from tracegrad.ir.types import SCALAR_AVALS, aval_of, interned_aval
from tracegrad.torch.grad_mode import _anomaly, _enabled
from tracegrad.torch.graph import GradFn, edge_and_fn
from tracegrad.torch.tensor import _NO_NEXT, Tensor, _Cell, _readonly


def record(prim, args, params) -> Tensor | tuple[Tensor, ...]:
    """Run `prim` on the arrays behind `args`; record a node when an input requires grad.

    `bind` calls this for any operation with a tensor argument outside a trace. Results are
    new tensors; they require grad when grad mode is on, an input requires grad, the
    primitive is differentiable and the result is floating point.
    """
    values = []
    wants = 0  # bit i set: args[i] is a tensor that requires grad
    bit = 1
    for a in args:
        if isinstance(a, Tensor):
            values.append(a._cell.value)
            if a._requires_grad:
                wants |= bit
        else:
            values.append(a)
        bit += bit
    needs = wants != 0
    out = prim.impl(*values, **params)
    if config.debug_nans or config.debug_infs:  # tracegrad.diagnostics
        checks.check(prim.name, values, prim.results(out), provenance.current())
    # Non-differentiable primitives with float results (floor, sign) are recorded too: as in
    # PyTorch their results require grad and pass a zero gradient.
    if not (needs and _enabled.get()):
        if config.provenance or config.debug_nans or config.debug_infs:
            return _unrecorded_result(out, prim, args, needs)  # tracegrad.diagnostics: why
        if not prim.multiple_results:  # the common case, kept short
            return _result(out, prim, args)
        return tuple([_result(o, prim, args) for o in out])
    edges = []
    nexts = []
    versions = []
    stamps = _stamped_inputs(prim, len(args), wants)
    reads = prim.vjp_reads
    for i, (a, v) in enumerate(zip(args, values)):
        if isinstance(a, Tensor):
            fn = a._grad_fn
            if fn is not None:  # the common case, inlined: an edge into a recorded node
                index = a._index
                edge, nxt = new_edge(Edge, (fn.node, index)), (fn, index)
            else:
                edge, nxt = edge_and_fn(a)
                if edge is None:
                    edge = _constant_edge(v)
            if i in stamps or (
                v.dtype.kind not in "fc" and ("inputs" in reads or "indices" in reads)
            ):  # (an integer or bool input is an index or condition: read if any is)
                # weakly: the tensor may later point at a node that saved it (y += y.exp())
                versions.append((a._cell, a._cell.version, weakref.ref(a)))
        else:
            edge = _constant_edge(v)
            nxt = _NO_NEXT
        edges.append(edge)
        nexts.append(nxt)
    params = Params(params) if params else EMPTY_PARAMS
    saved = _saved_inputs(prim, args, values, stamps)
    result = _record_node(prim, args, saved, edges, nexts, versions, out, params)
    if config.provenance or config.debug_nans or config.debug_infs:
        provenance.note_result(result)  # tracegrad.diagnostics: the user's line
    return _with_stack(result) if _anomaly.get()[0] else result


_NONE: frozenset = frozenset()


def _stamped_inputs(prim, n_args: int, wants: int) -> frozenset | range:
    """Positions of the float inputs whose values this node's backward will read, so an
    in-place change of them must raise at backward: PyTorch saves exactly those (`x * 3`
    saves no `x`, `X @ w` with a constant `X` saves `X` but not `w`: a bilinear rule reads
    an input only for the other inputs' gradients). `wants` has bit i set when input i
    requires grad; the answer depends on nothing else, so it is kept on the primitive per
    pattern (for up to 8 inputs: a variadic primitive's patterns are too many to keep)."""
    if "inputs" not in prim.vjp_reads:
        return _NONE
    key = ("stamped_inputs", n_args, wants)
    found = prim.memo.get(key)
    if found is None:
        grad = [(wants >> i) & 1 for i in range(n_args)]
        n = sum(grad)
        if prim.bilinear:
            found = frozenset(i for i in range(n_args) if n - grad[i] > 0)
        else:
            found = range(n_args) if n else _NONE
        if n_args <= 8:
            prim.memo[key] = found
    return found


def _saved_inputs(prim, args, values, stamps) -> tuple:
    """The input values the node's vjp rule reads, None for the others, so a node saves what
    PyTorch's saves (`tanh` its result, not its input; `x @ W` with a constant `W` no `x`)
    and a long chain holds one value per node, not two. Kept: the float inputs `stamps`
    names (all of them for a bilinear rule that computes every cotangent at once), integer
    and bool inputs when the rule reads inputs or indices, and Python numbers (small, and
    a rule may read a scalar operand whatever it claims). A writeable NumPy array that is
    not a tensor's is copied: the caller could write into it before the backward pass."""
    reads = prim.vjp_reads
    if not reads:
        return values  # a node that saves nothing drops them all (GradFn.NOTHING)
    indices = "inputs" in reads or "indices" in reads
    joined = prim.bilinear and prim.input_vjp is None and "inputs" in reads
    saved = []
    for i, (a, v) in enumerate(zip(args, values)):
        if not isinstance(v, np.ndarray):
            saved.append(v)
            continue
        read = (i in stamps or (joined and bool(stamps))) if v.dtype.kind in "fc" else indices
        if read:
            copy = v.flags.writeable and not isinstance(a, Tensor)
            saved.append(_readonly(v.copy()) if copy else v)
        else:
            saved.append(None)
    return tuple(saved)


def _with_stack(result):
    """Anomaly mode: the node keeps the stack that created it, for the backward's report."""
    first = result[0] if isinstance(result, tuple) else result
    fn = first._grad_fn or (result[-1]._grad_fn if isinstance(result, tuple) else None)
    if fn is not None:
        frames = traceback.extract_stack()
        while frames and frames[-1].filename.startswith(_PACKAGE_DIR):  # end at user code
            frames.pop()
        fn.metadata["traceback_"] = traceback.format_list(frames)
    return result


_PACKAGE_DIR = __file__.rsplit("/", 1)[0] + "/"


def _record_node(prim, args, values, edges, nexts, versions, out, params):
    if not prim.multiple_results:  # the common case, kept short
        out = _readonly(out)
        node = Node(prim, tuple(edges), params, (interned_aval(out.shape, out.dtype),))
        saved_out = (out,) if "output" in prim.vjp_reads else None  # (None: not read)
        fn = GradFn(node, tuple(nexts), values, saved_out, versions)
        return _output_tensor(fn, 0, out, prim, args, versions)
    outs = tuple([_readonly(o) for o in out])
    node = Node(prim, tuple(edges), params, tuple([aval_of(o) for o in outs]))
    fn = GradFn(node, tuple(nexts), values, outs if "output" in prim.vjp_reads else None, versions)
    return tuple([_output_tensor(fn, i, o, prim, args, versions) for i, o in enumerate(outs)])


def _output_tensor(fn, i: int, value, prim, args, versions) -> Tensor:
    """The tensor of output `i` of a recorded node."""
    cell = _Cell(value)
    t = Tensor.__new__(Tensor)
    t._init(cell, fn, i)
    if value.dtype.kind not in "fc":
        t._grad_fn = None
        t._requires_grad = False
    elif fn._state == GradFn.SAVED and "output" in prim.vjp_reads:
        versions.append((cell, 0, i))  # output i of this node (an int: no cycle)
    if prim.view_of is not None:
        t._base = _root_base(args[prim.view_of])
    return t


def _unrecorded_result(out, prim, args, needs: bool):
    """Results that record no node, marked with why (grad mode off while an input requires
    grad, or an input marked so) for a later backward to say (diagnostics.tensor_causes)."""
    result = tuple(_result(o, prim, args) for o in prim.results(out))
    tensor_causes.mark_unrecorded(result, args, needs)
    return prim.result(result)


def _result(out, prim, args) -> Tensor:
    t = Tensor._wrap(out)
    if prim.view_of is not None:
        t._base = _root_base(args[prim.view_of])
    return t


def _root_base(x):
    """The tensor a view ultimately looks into (views of views share their root)."""
    if not isinstance(x, Tensor):
        return None
    return x._base if x._base is not None else x


_SCALAR_EDGES: dict = {}


def _constant_edge(value) -> Edge:
    """The edge of an `arg` node standing for a constant input (its value is saved with the
    GradFn). Python scalars of one type share one node: it only carries their aval."""
    if isinstance(value, np.ndarray | np.generic):
        return Edge(arg_node(interned_aval(value.shape, value.dtype)), 0)
    kind = type(value)
    edge = _SCALAR_EDGES.get(kind)
    if edge is None:
        edge = _SCALAR_EDGES[kind] = Edge(arg_node(SCALAR_AVALS[kind]), 0)
    return edge
