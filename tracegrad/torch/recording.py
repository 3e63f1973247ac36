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
from tracegrad.torch.tensor import _NO_NEXT, Tensor, _Cell, _ndarray, _readonly


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
    saved = []  # what the vjp rule reads of each input (None: not read, so not kept)
    versions = []
    plan = prim.memo.get(("input_plan", len(args), wants))  # (`_plan`'s hit, inline)
    stamp, keep, indices = plan if plan is not None else _plan(prim, len(args), wants)
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
            # (a tensor's array is read-only: kept as it is)
            if v.dtype.kind in "fc":
                if stamp[i]:
                    # weakly: the tensor may later point at a node that saved it (y += y.exp())
                    versions.append((a._cell, a._cell.version, weakref.ref(a)))
                saved.append(v if keep[i] else None)
            elif indices:  # an integer or bool input is an index or condition
                versions.append((a._cell, a._cell.version, weakref.ref(a)))
                saved.append(v)
            else:
                saved.append(None)
        else:
            edge = _constant_edge(v)
            nxt = _NO_NEXT
            if isinstance(v, _ndarray):
                # a writeable array is copied: the caller could write into it before backward
                if keep[i] if v.dtype.kind in "fc" else indices:
                    saved.append(_readonly(v.copy()) if v.flags.writeable else v)
                else:
                    saved.append(None)
            else:  # a Python number: small, and a rule may read a scalar operand anyway
                saved.append(v)
        edges.append(edge)
        nexts.append(nxt)
    params = Params(params) if params else EMPTY_PARAMS
    if prim.multiple_results:
        result = _record_outputs(prim, args, tuple(saved), edges, nexts, versions, out, params)
    else:  # the common case, written out
        out = _readonly(out)
        node = Node(prim, tuple(edges), params, (interned_aval(out.shape, out.dtype),))
        saved_out = (out,) if "output" in prim.vjp_reads else None  # (None: not read)
        fn = GradFn(node, tuple(nexts), tuple(saved), saved_out, versions)
        cell = _Cell(out)  # `_output_tensor`, written out
        result = Tensor.__new__(Tensor)
        result._init(cell, fn, 0)
        if out.dtype.kind not in "fc":
            result._grad_fn = None
            result._requires_grad = False
        elif saved_out is not None:
            versions.append((cell, 0, 0))  # the output, saved: its version is checked too
        if prim.view_of is not None:
            result._base = _root_base(args[prim.view_of])
    if config.provenance or config.debug_nans or config.debug_infs:
        provenance.note_result(result)  # tracegrad.diagnostics: the user's line
    return _with_stack(result) if _anomaly.get()[0] else result


def _plan(prim, n_args: int, wants: int) -> tuple:
    """What a node of `prim` keeps of its inputs, given which require grad (`wants`: bit i
    set when input i does): per position, whether a float input is version-stamped (an
    in-place change of it must raise at backward) and whether it is kept, and whether integer
    and bool inputs (indices, conditions) are stamped and kept. It depends on nothing else,
    so it is kept on the primitive per pattern (for up to 8 inputs: a variadic primitive's
    patterns are too many to keep).

    PyTorch saves exactly the inputs the backward reads: `x * 3` saves no `x`, `X @ w` with
    a constant `X` saves `X` but not `w` (a bilinear rule reads an input only for the other
    inputs' gradients), `tanh` its result and not its input; so a long chain holds one value
    per node, not two. A bilinear rule that computes every cotangent at once keeps all its
    float inputs when it reads any."""
    key = ("input_plan", n_args, wants)
    found = prim.memo.get(key)
    if found is None:
        reads = prim.vjp_reads
        stamps = _stamped_inputs(prim, n_args, wants)
        joined = prim.bilinear and prim.input_vjp is None and "inputs" in reads and bool(stamps)
        found = (
            tuple([i in stamps for i in range(n_args)]),
            tuple([i in stamps or joined for i in range(n_args)]),
            "inputs" in reads or "indices" in reads,
        )
        if n_args <= 8:
            prim.memo[key] = found
    return found


_NONE: frozenset = frozenset()


def _stamped_inputs(prim, n_args: int, wants: int) -> frozenset | range:
    """Positions of the float inputs whose values this node's backward reads (see `_plan`)."""
    if "inputs" not in prim.vjp_reads:
        return _NONE
    grad = [(wants >> i) & 1 for i in range(n_args)]
    n = sum(grad)
    if prim.bilinear:
        return frozenset(i for i in range(n_args) if n - grad[i] > 0)
    return range(n_args) if n else _NONE


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


def _record_outputs(prim, args, values, edges, nexts, versions, out, params):
    """`record`'s node and tensors for a primitive with several outputs."""
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
_ARRAY_TYPES = (np.ndarray, np.generic)


def _constant_edge(value) -> Edge:
    """The edge of an `arg` node standing for a constant input (its value is saved with the
    GradFn). Python scalars of one type share one node: it only carries their aval."""
    if isinstance(value, _ARRAY_TYPES):
        return Edge(arg_node(interned_aval(value.shape, value.dtype)), 0)
    kind = type(value)
    edge = _SCALAR_EDGES.get(kind)
    if edge is None:
        edge = _SCALAR_EDGES[kind] = Edge(arg_node(SCALAR_AVALS[kind]), 0)
    return edge
