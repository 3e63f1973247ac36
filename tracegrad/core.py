"""The core below the primitives: `bind`, `Tracer`, and the trace context.

`bind(prim, *args, **params)` runs `prim.impl` on plain values; inside a trace it records a
node into the innermost trace instead (and, when every input carries a value, computes that
value too: concrete tracing, DESIGN.md §3). Outer tracers met inside an inner trace are
captured as extra `arg` inputs, so a graph traced at one level can be re-run on the tracers
of the level above it: that is how nested transforms compose.

Over 600 lines: `Trace` (recording, its values and constants) and `Tracer` (the NumPy array
protocol every traced value answers) are one mechanism that `bind` runs on each operation;
what stands alone moved out (`tracegrad.lending`: the constants an eager call borrows).
"""

from __future__ import annotations

import math
import struct
from contextvars import ContextVar

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from tracegrad import config
from tracegrad.diagnostics import checks as _checks
from tracegrad.diagnostics import provenance as _provenance
from tracegrad.errors import (
    ConcretizationError,
    EscapedTracerError,
    array_conversion_error,
    user_frame_location,
    user_frame_source,
)
from tracegrad.ir.graph import (
    EMPTY_PARAMS,
    Edge,
    Graph,
    Node,
    Params,
    arg_node,
    arg_p,
    const_node,
    const_p,
    new_edge,
    with_consts,
)
from tracegrad.ir.primitive import Primitive
from tracegrad.ir.types import Aval, interned_aval, is_float
from tracegrad.lending import frozen_copy, is_lent, lend

_current_trace: ContextVar[Trace | None] = ContextVar("tracegrad_trace", default=None)


def current_trace() -> Trace | None:
    return _current_trace.get()


def bind(prim: Primitive, *args, **params):
    """Apply `prim` to `args`: eagerly on values, or recorded into the innermost trace."""
    trace = _current_trace.get()
    if trace is not None:
        return trace.bind(prim, args, params)
    return bind_eager(prim, args, params)


def bind_eager(prim: Primitive, args, params):
    """`prim` on values; a `Boxed` argument (the shim's Tensor) takes over the call."""
    for a in args:
        if isinstance(a, Boxed):
            return a._bind_eager(prim, args, params)
    if config.debug_nans or config.debug_infs:  # tracegrad.diagnostics: check each result
        return _checks.checked_impl(prim, args, params)
    return prim.impl(*args, **params)


class Boxed(NDArrayOperatorsMixin):
    """A value that records the operations applied to it: a `Tracer` inside a trace, or the
    shim's eager `Tensor`. NumPy functions reach tracegrad through it, and `bind` hands it any
    call it takes part in outside a trace (`_bind_eager`). The NumPy-facing wrappers test for
    this class, not for `Tracer`, so both kinds pass through them unconverted."""

    __slots__ = ()

    def _bind_eager(self, prim: Primitive, args, params):
        raise NotImplementedError

    def _constant_value(self):
        """The value to use when this object meets tracers in a trace (a Tensor: its array)."""
        raise NotImplementedError

    def _stop_gradient(self):
        """This value as a constant for differentiation (`tg.stop_gradient` of a Tensor)."""
        raise NotImplementedError


class Trace:
    """Records the nodes that `bind` creates while a function runs on tracers.

    Nodes are kept in creation order, which is topological. A trace hash-conses nodes on
    `(prim, inputs, params)` unless `cse=False` (the shim's eager recording, where two equal
    calls are two `grad_fn`s with their own hooks). Concrete values, when inputs have them,
    are kept per node in `values` until the transform that started the trace has used them.

    Two switches serve a trace whose graph lives only inside one eager call (`tg.grad`):
    `lent`, a list, makes the trace borrow its constant arrays instead of copying them
    (`tracegrad.lending`; only when every enclosing trace lends too, since a graph re-run one
    level up becomes part of that level's graph); `reverse_only` keeps in `values` only the
    values a reverse pass will read (`_keep_inputs`), so the forward pass holds what a
    handwritten gradient would, not every intermediate.
    """

    def __init__(
        self,
        parent: Trace | None,
        *,
        cse: bool = True,
        keep_values: bool = True,
        lent: list | None = None,
        reverse_only: bool = False,
    ):
        self.parent = parent
        self.level = 0 if parent is None else parent.level + 1
        self.nodes: list[Node] = []
        self.consts: list[Node] = []  # the `const` nodes `const_edge` made, in that order
        self.values: dict[Node, object] = {}
        self.alive = True
        self.cse = cse
        self.keep_values = keep_values
        self.lent = lent if parent is None or parent.lent is not None else None
        # debug mode checks each backward step against every forward value: keep them all
        self.reverse_only = (
            reverse_only
            and keep_values
            and not (config.provenance or config.debug_nans or config.debug_infs)
        )
        self._cse_table: dict = {}
        self._carries: dict[Node, bool] = {}  # see Tracer._carries_derivative
        self._scalar_consts: dict = {}
        self._float_consts: dict[float, Edge] = {}
        self._array_consts: dict[int, tuple[object, Edge]] = {}
        # outer tracers used inside this trace, each captured as an extra `arg` input
        self.captured: dict[Edge, Tracer] = {}
        self.captured_outer: list[Tracer] = []

    # -- inputs --------------------------------------------------------------------------
    def new_arg(self, aval: Aval, val=None) -> Tracer:
        node = arg_node(aval)
        if val is not None and self.keep_values:
            self.values[node] = (val,)
        return Tracer(self, new_edge(Edge, (node, 0)), aval, val)

    def constant(self, value) -> Tracer:
        """A tracer of this trace for a constant: operations on it are recorded, not folded
        (a gradient's seed under tracing, which would otherwise fold into full-size arrays)."""
        edge = self.const_edge(value)
        aval = edge.aval
        return Tracer(self, edge, aval, value if self.keep_values else None)

    def const_edge(self, value) -> Edge:
        if type(value) is float and value:  # the common case: keyed by value, not by bits
            edge = self._float_consts.get(value)  # (0.0 and -0.0 go below; NaN never matches)
            if edge is None:
                edge = self._float_consts[value] = new_edge(Edge, (self._const(value), 0))
            return edge
        if isinstance(value, np.ndarray):
            hit = self._array_consts.get(id(value))
            if hit is not None:
                return hit[1]
            if self.lent is not None:
                lend(value, self.lent)  # read-only now, so const_node keeps it as it is
                node = self._const(value)
            elif not value.flags.writeable and is_lent(value):
                # read-only only while an eager call holds it: this graph may outlive that
                node = self._const(frozen_copy(value))
            else:
                node = self._const(value)
            edge = new_edge(Edge, (node, 0))
            self._array_consts[id(value)] = (value, edge)  # keep `value` alive: ids are reused
            return edge
        if isinstance(value, list | tuple):
            return self.const_edge(np.asarray(value))
        # floats by their bits: 0.0 and -0.0 (or two NaN payloads) are not the same constant
        key = (type(value), struct.pack("<d", value) if type(value) is float else value)
        edge = self._scalar_consts.get(key)
        if edge is None:
            if isinstance(value, np.generic):
                value = np.asarray(value)  # NumPy scalars are strong: keep them as 0-d arrays
                value.flags.writeable = False
            elif not isinstance(value, bool | int | float | complex):
                raise TypeError(
                    f"tracegrad: cannot use a value of type {type(value).__name__} in a traced "
                    "operation; pass arrays, Python scalars or tracers"
                )
            edge = Edge(self._const(value), 0)
            self._scalar_consts[key] = edge
        return edge

    def _const(self, value) -> Node:
        node = const_node(value)
        self.consts.append(node)
        return node

    def captured_outer_of(self, node: Node) -> Tracer | None:
        """The enclosing trace's tracer that the `arg` node `node` stands for, if it was
        captured (None for this trace's own inputs)."""
        for inner, outer in zip(self.captured.values(), self.captured_outer):
            if inner.edge.node is node:
                return outer
        return None

    def lift(self, t: Tracer) -> Tracer:
        """This trace's stand-in for tracer `t` of an enclosing trace (captured once)."""
        inner = self.captured.get(t.edge)
        if inner is not None:
            return inner
        anc = self.parent
        while anc is not None and anc is not t._trace:
            anc = anc.parent
        if anc is None:
            t._escaped(None)
        inner = self.new_arg(t.aval, t.val)
        self.captured[t.edge] = inner
        self.captured_outer.append(t)
        return inner

    # -- recording -----------------------------------------------------------------------
    def bind(self, prim: Primitive, args, params):
        # The hot path of every traced operation (issue 20): each line here runs once per op,
        # so the common cases (one output, no params, a Python-float constant) are written out
        # inline rather than through the helpers below, which keep the general cases.
        edges = []
        vals = []
        avals = []  # (a tracer's aval is its edge's: read here, not from the edges below)
        concrete = True
        has_tracer = False
        for a in args:
            if isinstance(a, Tracer):
                has_tracer = True
                if a._trace is not self:
                    a = self.lift(a)
                edges.append(a.edge)
                avals.append(a.aval)
                if a.val is None:
                    concrete = False
                vals.append(a.val)
            else:
                if isinstance(a, Boxed):  # a shim Tensor inside a trace is a constant array
                    self._check_constant_tensor(a, prim)
                    a = a._constant_value()
                edges.append(None)
                avals.append(None)
                vals.append(a)
        if not has_tracer:
            # Nothing traced flows in: a constant computation, evaluated now (folded), or an
            # eager Tensor operation that records itself.
            return bind_eager(prim, args, params)
        if None in edges:
            for i, e in enumerate(edges):
                if e is None:
                    e = edges[i] = self.const_edge(vals[i])
                    avals[i] = e[0].out_avals[0]
        in_edges = tuple(edges)
        if params:
            params = Params(params)
            pkey = params.key()  # (one pass over the params serves CSE and the shape memo)
        else:
            params = EMPTY_PARAMS
            pkey = ()
        key = (prim, pkey, *in_edges) if self.cse else None
        if key is not None:
            try:
                node = self._cse_table.get(key)
            except TypeError:  # unhashable params: never shared
                key = node = None
            if node is not None:
                return self._shared(node, prim, vals, params, concrete)
        try:  # the shape memo's hit, inline (`_shape_rule` computes and keeps a miss)
            out_avals = prim.shape_memo.get((pkey, *avals))
        except TypeError:  # unhashable params (a constant's array)
            out_avals = None
        if out_avals is None:
            out_avals = _shape_rule(prim, avals, params, pkey)
        node = Node(prim, in_edges, params, out_avals)
        self.nodes.append(node)
        if key is not None:
            self._cse_table[key] = node
        if not concrete:
            if config.provenance or config.debug_nans or config.debug_infs:
                _diagnose(node, vals, None)
            return self._wrap(node, None)
        if prim.multiple_results:
            out = prim.impl(*vals, **params)
            vals_out = tuple([_weak_value(v, a) for v, a in zip(out, out_avals)])
        else:  # the common case, written out
            fast = prim.float_impl
            if (
                fast is not None
                and type(vals[0]) in _REAL_SCALARS
                and type(vals[-1]) in _REAL_SCALARS
            ):
                out = fast(*vals)  # the scalars' own arithmetic: NumPy's bits, a tenth the cost
            else:
                out = prim.impl(*vals, **params)
                aval = out_avals[0]
                if aval.weak_type and not aval.shape and isinstance(out, np.ndarray | np.generic):
                    out = out.item()  # a weak result stands for a Python scalar (NEP 50)
            vals_out = (out,)
        if self.reverse_only:
            plan = prim.memo.get("reverse_reads") or _reverse_reads(prim)
            if plan[0] or (  # numbers cost less kept than stood in for
                (type(vals_out[0]) is not np.ndarray or vals_out[0].nbytes <= _SMALL)
                if len(vals_out) == 1
                else _small(vals_out)
            ):
                self.values[node] = vals_out
            if plan[1]:
                self._keep_inputs(node, plan, vals)
        elif self.keep_values:
            self.values[node] = vals_out
        if config.provenance or config.debug_nans or config.debug_infs:
            _diagnose(node, vals, vals_out)
        if prim.multiple_results:
            return self._wrap(node, vals_out)
        return Tracer(self, new_edge(Edge, (node, 0)), out_avals[0], vals_out[0])

    def _shared(self, node: Node, prim: Primitive, vals, params, concrete: bool):
        """The tracers of `node`, recorded before with the same inputs and params (CSE)."""
        if not concrete:
            return self._wrap(node, None)
        kept = self.values.get(node)
        if kept is not None and all(v is not None for v in kept):
            return self._wrap(node, kept)
        # a shared node whose values no reverse rule reads (not kept): computed again
        return self._wrap(node, _computed(prim, vals, params, node.out_avals))

    def _keep_inputs(self, node: Node, plan, vals) -> None:
        """Keep the input values the vjp rule of `node` reads (`plan`: `_reverse_reads` of its
        primitive) under their producers.

        With `reverse_only`, a trace keeps a node's outputs only if its own rule reads them
        (or they are small: numbers cost less kept than stood in for), and the inputs its
        consumers' rules read; a large value no rule reads is held by its tracer alone and
        freed with it, as a handwritten gradient frees it (the matmul before a tanh: tanh's
        rule reads its output). Any traced input may want a cotangent (which ones do is known
        only when the reverse pass starts); constants never do, and hold their own values.
        With the outputs `trace_flat` keeps and what `backward_pass`'s `free` drops, each
        value lives until its last reader has run."""
        _, inputs, bilinear = plan
        edges = node.inputs
        if bilinear:  # it reads an input only for another input's cotangent
            traced = 0
            for e in edges:
                traced += e[0].prim is not const_p
            if traced == 1:
                return
        for (src, k), v in zip(edges, vals):
            if src.prim is const_p:
                continue
            if inputs == "indices" and src.out_avals[k].dtype.kind in "fc":
                continue  # it reads only the integer and bool inputs (indices, conditions)
            self.keep_output(src, k, v)

    def keep_output(self, node: Node, index: int, value) -> None:
        """Keep `value` as output `index` of `node` (a value a reverse pass will read)."""
        kept = self.values.get(node)
        if kept is None:
            n = len(node.out_avals)
            self.values[node] = (
                (value,) if n == 1 else tuple(value if i == index else None for i in range(n))
            )
        elif kept[index] is None:
            self.values[node] = kept[:index] + (value,) + kept[index + 1 :]

    def _check_constant_tensor(self, t, prim) -> None:
        """A tensor read while tracing concretely (under `tg.grad`) is read at call time; one
        baked into an abstractly traced graph (jit, make_graph) would keep its value at trace
        time even after an in-place update: a silent stale value, so it is refused."""
        trace = self
        while trace is not None:
            if not trace.keep_values:
                raise TypeError(
                    f"tracegrad: a tensor of shape {t.shape} is used in `{prim.name}` inside a "
                    "function traced by jit or make_graph, which would bake its current value "
                    "into the compiled graph (later in-place updates would be ignored). Pass it "
                    "as an argument instead (for example t.detach().numpy(), or the parameters "
                    "as a pytree of arrays)."
                )
            trace = trace.parent

    def _wrap(self, node: Node, vals):
        """The tracers of `node`'s outputs (`vals`: their values, or None), as `bind` returns
        them: one tracer, or a tuple for a primitive with several outputs."""
        avals = node.out_avals
        if len(avals) == 1 and not node.prim.multiple_results:  # the common case, kept short
            val = None if vals is None else vals[0]
            return Tracer(self, new_edge(Edge, (node, 0)), avals[0], val)
        if vals is None:
            vals = (None,) * len(avals)
        return tuple(Tracer(self, Edge(node, i), a, v) for i, (a, v) in enumerate(zip(avals, vals)))

    def output_edge(self, x) -> Edge:
        """The edge for an output of the traced function (tracer, outer tracer or constant)."""
        if isinstance(x, Tracer):
            if x._trace is not self:
                x = self.lift(x)
            return x.edge
        return self.const_edge(
            x if isinstance(x, np.ndarray | bool | int | float | complex) else np.asarray(x)
        )

    def graph(self, inputs, outputs, *, in_tree=None, out_tree=None, name="f", prune=True) -> Graph:
        """The graph of the nodes reachable from `outputs`, in the order they were recorded,
        after the constants they read (in the order this trace made them; one walk finds
        both, where `with_consts` would walk the nodes again).

        `prune=False` serves a graph that one backward pass reads once, at the top level
        (`tg.grad`): every node recorded, after every constant, without the walk; a node no
        output reads costs that pass one skipped step. (A nested level is pruned anyway: it
        is re-run one level up.)"""
        if not prune and self.parent is None:
            return Graph(
                tuple(inputs), tuple(outputs), (*self.consts, *self.nodes), in_tree, out_tree, name
            )
        reach: set[Node] = set()
        stack = [e[0] for e in outputs]
        n_consts = 0
        while stack:
            n = stack.pop()
            if n in reach:
                continue
            reach.add(n)
            if n.inputs:
                for e in n.inputs:
                    stack.append(e[0])
            elif n.prim is const_p:
                n_consts += 1
        nodes = [n for n in self.nodes if n in reach]
        consts = [n for n in self.consts if n in reach]
        if len(consts) != n_consts:  # a constant this trace did not make (none do today)
            consts = [n for n in with_consts(nodes, outputs) if n.prim is const_p]
        return Graph(tuple(inputs), tuple(outputs), (*consts, *nodes), in_tree, out_tree, name)


def _diagnose(node: Node, vals, vals_out) -> None:
    """Debug mode (tracegrad.diagnostics): record `node`'s origin, check its values."""
    _provenance.note(node)
    if vals_out is not None and _checks.checking():
        _checks.check_node(node, vals, vals_out)


def _shape_rule(prim: Primitive, avals, params, pkey: tuple) -> tuple:
    """The output avals, one per output (`prim.results` of `prim.shape(*avals, **params)`),
    memoized per primitive: programs repeat signatures. `pkey` is `params.key()` (params
    told apart by their floats' bits)."""
    memo = prim.shape_memo
    try:
        key = (pkey, *avals)
        out = memo.get(key)
    except TypeError:  # unhashable params (a constant's array)
        return prim.results(prim.shape(*avals, **params))
    if out is None:
        out = prim.shape(*avals, **params)
        # the shared avals, so that the keys they become are compared by identity
        if isinstance(out, Aval):
            out = interned_aval(out.shape, out.dtype, out.weak_type)
        out = prim.results(out)
        if len(memo) > 10_000:
            memo.clear()
        memo[key] = out
    return out


def _reverse_reads(prim: Primitive) -> tuple:
    """What a reverse pass reads of a node of `prim`, from its facts, memoized on it: (its
    outputs, its inputs: "all", "indices" or None, bilinear with a rule per input)."""
    reads = prim.vjp_reads if prim.differentiable else frozenset()  # (no rule ever runs)
    inputs = "all" if "inputs" in reads else "indices" if "indices" in reads else None
    plan = ("output" in reads, inputs, prim.bilinear and prim.input_vjp is not None)
    prim.memo["reverse_reads"] = plan
    return plan


#: the operand types `Primitive.float_impl` computes on: Python floats (a Python float result,
#: as `.item()` of the ufunc's) and NumPy's real scalars (NumPy's scalar arithmetic: the
#: ufunc's bits and result type, tests/test_tracer_operators.py)
_REAL_SCALARS = frozenset({float, np.float64, np.float32, np.float16})

_SMALL = 1024  # bytes: an array no larger costs less than the node's own bookkeeping


def _small(vals: tuple) -> bool:
    """Whether values are numbers or arrays of at most `_SMALL` bytes."""
    for v in vals:
        if isinstance(v, np.ndarray) and v.nbytes > _SMALL:
            return False
    return True


def _computed(prim: Primitive, vals, params, out_avals) -> tuple:
    """`prim`'s output values on `vals`, one per output."""
    out = prim.impl(*vals, **params)
    if prim.multiple_results:
        return tuple(_weak_value(v, a) for v, a in zip(out, out_avals))
    return (_weak_value(out, out_avals[0]),)  # the common case, kept short


def _weak_value(val, aval: Aval):
    # A weak-typed result stands for a Python scalar; keep it one so NumPy 2 promotes it weakly.
    if aval.weak_type and not aval.shape and isinstance(val, np.ndarray | np.generic):
        return val.item()
    return val


class new_trace:
    """Context manager: a new innermost trace; on exit its tracers are dead (escape checks).
    The arguments are `Trace`'s."""

    def __init__(
        self,
        *,
        cse: bool = True,
        keep_values: bool = True,
        lent: list | None = None,
        reverse_only: bool = False,
    ):
        self.cse = cse
        self.keep_values = keep_values
        self.lent = lent
        self.reverse_only = reverse_only

    def __enter__(self) -> Trace:
        self.trace = Trace(
            _current_trace.get(),
            cse=self.cse,
            keep_values=self.keep_values,
            lent=self.lent,
            reverse_only=self.reverse_only,
        )
        self.token = _current_trace.set(self.trace)
        return self.trace

    def __exit__(self, *exc):
        _current_trace.reset(self.token)
        self.trace.alive = False
        self.trace._cse_table = {}
        self.trace._carries = {}
        return False


def _numpy_dispatch():
    # Tracer operators look functions up at call time (DESIGN.md §3); the table lives in
    # tracegrad.numpy, above this module in the import order.
    global _dispatch
    if _dispatch is None:
        from tracegrad.numpy import _dispatch as d

        _dispatch = d
    return _dispatch


_dispatch = None


class Tracer(Boxed):
    """A value inside a trace: an edge of the graph being built, its aval, and (when concrete)
    its value. Operators and NumPy functions on a tracer record nodes.

    The operators come from NumPy's operator mixin (through `__array_ufunc__`), except the
    common arithmetic and comparisons (`+ - * / ** @`, unary `-`, `< <= > >= == !=`), which
    `tracegrad.numpy._operators` replaces with methods binding the primitive directly for
    tracer, scalar and array operands (the mixin's route for any other operand); it replaces
    `__array_ufunc__` likewise, so a plain elementwise ufunc call (`np.sin(t)`) binds its
    primitive without the dispatcher's frames."""

    __slots__ = ("_trace", "edge", "aval", "val")
    __array_priority__ = 1000

    def __init__(self, trace: Trace, edge: Edge, aval: Aval, val=None):
        self._trace = trace
        self.edge = edge
        self.aval = aval
        self.val = val

    # -- what NumPy code reads ------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.aval.shape

    @property
    def dtype(self) -> np.dtype:
        return self.aval.dtype

    @property
    def ndim(self) -> int:
        return len(self.aval.shape)

    @property
    def size(self) -> int:
        return self.aval.size

    @property
    def T(self):
        return _numpy_dispatch().namespace.transpose(self)

    @property
    def real(self):
        return _numpy_dispatch().namespace.real(self)

    @property
    def imag(self):
        return _numpy_dispatch().namespace.imag(self)

    @property
    def mT(self):
        return _numpy_dispatch().namespace.swapaxes(self, -1, -2)

    def __len__(self) -> int:
        if not self.aval.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.aval.shape[0]

    def __iter__(self):
        if not self.aval.shape:
            raise TypeError("iteration over a 0-d traced array")
        for i in range(self.aval.shape[0]):
            yield self[i]

    def __repr__(self) -> str:
        kind = "concrete" if self.val is not None else "abstract"
        return f"Tracer<{self.aval.str_short()}, {kind}>"

    # -- dispatch -------------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _numpy_dispatch().array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _numpy_dispatch().array_function(func, args, kwargs)

    def __getitem__(self, index):
        return _numpy_dispatch().namespace.getitem(self, index)

    def __setitem__(self, index, value):
        raise TypeError(
            "tracegrad: traced arrays are immutable, so `x[i] = v` cannot be recorded; write "
            "x = x.at[i].set(v) (or .add, .multiply, .min, .max), as in JAX"
        )

    @property
    def at(self):
        """JAX's functional index updates: `x.at[i].set(v)` returns the updated array."""
        return _numpy_dispatch().namespace.at(self)

    def _bind_eager(self, prim, args, params):
        self._escaped(prim.name)

    def _constant_value(self):
        self._escaped(None)

    # -- conversions: concrete values answer, abstract ones raise -----------------------------
    def _concrete(self, what: str):
        self._check_alive(what)
        if self.val is None:
            raise ConcretizationError(
                f"{what} needs a concrete value, but this {self.aval.str_short()} value is traced "
                f"abstractly (under jit, vmap or make_graph), at {user_frame_source()}.\n"
                "Mark the argument static (static_argnums), use tracegrad.numpy.where, or tg.cond/"
                "tg.switch for a branch and tg.fori_loop/tg.while_loop/tg.scan for a loop."
            )
        return self.val

    def __bool__(self):
        return bool(self._concrete("bool() of a traced value (Python `if`/`while`/`and`/`or`)"))

    # A conversion to a Python number keeps the value and drops the derivative: refused for a
    # value that carries one (the gradient would silently be zero), allowed for one that does
    # not (integers, comparisons, values behind stop_gradient), so control flow on concrete
    # values keeps working. `.item()` is the explicit way to take a constant.
    def __int__(self):
        return int(self._number("int"))

    def __float__(self):
        return float(self._number("float"))

    def __complex__(self):
        return complex(self._number("complex"))

    # math.trunc, math.floor and math.ceil: Python ints, and math.* conversions all the same
    def __trunc__(self):
        return math.trunc(self._number("int"))

    def __floor__(self):
        return math.floor(self._number("int"))

    def __ceil__(self):
        return math.ceil(self._number("int"))

    def __index__(self):
        v = self._concrete("using a traced value as an index or a shape")
        return np.asarray(v).__index__()

    def __round__(self, ndigits=None):
        if ndigits is None:  # round(x): a Python int, as NumPy's scalars give
            return round(self._number("int"))
        return _numpy_dispatch().namespace.round(self, ndigits)

    def item(self):
        """The value as a Python scalar: a constant taken on purpose (its derivative is zero,
        as `.item()` is in JAX and PyTorch). Under jit or vmap there is no single concrete
        value, and this raises ConcretizationError."""
        return np.asarray(self._concrete("item() of a traced value")).item()

    def tolist(self):
        """The values as nested Python numbers: refused for a value that carries a derivative,
        like float() (take a constant on purpose with tg.stop_gradient(x).tolist())."""
        kind = {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}
        return np.asarray(self._number(kind.get(self.aval.dtype.kind, "float"))).tolist()

    def _number(self, kind: str):
        """The value as a Python `kind` (int, float, complex), unless a derivative flows
        into it: float(x), int(x), complex(x), round(x), math.* functions and storing x into
        a NumPy array all come here, and each would silently give a zero gradient."""
        value = self._concrete(f"{kind}() of a traced value")
        if self._carries_derivative():
            raise TypeError(
                f"tracegrad: converting a traced {self.aval.str_short()} value that carries a "
                f"derivative to a Python {kind} would drop the derivative (the gradient would "
                f"silently be zero), at {user_frame_source()}. float(), int(), complex(), "
                "round(), math.* functions and storing into a NumPy array (out[i] = x) all "
                "convert.\nUse the tracegrad.numpy function (np.sin(x), not math.sin(x)), "
                "build arrays with tracegrad.numpy.array/stack or x.at[i].set(v) instead of "
                "storing into a NumPy array, or take a constant on purpose with x.item() or "
                "tg.stop_gradient(x)."
            )
        return value

    def _carries_derivative(self) -> bool:
        """Whether a derivative flows into this value from the trace's inputs: it is inexact
        and some path of differentiable primitives leads to it from an input (not only from
        constants, integers or `stop_gradient`). One walk back, remembered per node."""
        if not is_float(self.aval.dtype):
            return False
        memo = self._trace._carries
        stack = [self.edge.node]
        while stack:
            node = stack[-1]
            if node in memo:
                stack.pop()
                continue
            if node.prim is arg_p:
                # an input of this trace, or a value captured from an enclosing one (which
                # carries a derivative only if it does there)
                outer = self._trace.captured_outer_of(node)
                memo[node] = True if outer is None else outer._carries_derivative()
            elif node.prim is const_p or not node.prim.differentiable:
                memo[node] = False
            else:
                ins = [e.node for e in node.inputs if is_float(e.aval.dtype)]
                pending = [n for n in ins if n not in memo]
                if pending:
                    stack.extend(pending)
                    continue
                memo[node] = any(memo[n] for n in ins)
            stack.pop()
        return memo[self.edge.node]

    def __array__(self, dtype=None, copy=None):
        # a SciPy function that converts its argument is named with its tracegrad.scipy twin
        raise array_conversion_error(self.aval, _numpy_dispatch().scipy_replacement())

    def _check_alive(self, what):
        if not self._trace.alive:
            self._escaped(what)

    def _escaped(self, what):
        raise EscapedTracerError(
            f"tracegrad: a tracer ({self.aval.str_short()}) was used outside the transformation "
            f"that created it{' (in ' + what + ')' if what else ''}, at {user_frame_location()}. "
            "It probably escaped through a global, a closure or an attribute; return values "
            "from the transformed function instead of storing them."
        )

    # (the usual ndarray methods, .sum, .reshape, .astype, .mean, with NumPy's signatures, are
    # tracegrad.numpy's functions, put on the class by tracegrad.numpy._methods)


def is_tracer(x) -> bool:
    return isinstance(x, Tracer)


__all__ = [
    "Boxed",
    "ConcretizationError",
    "EscapedTracerError",
    "Trace",
    "Tracer",
    "bind",
    "current_trace",
    "new_trace",
    "arg_p",
    "const_p",
    "is_tracer",
]
