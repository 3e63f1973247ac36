"""The NumPy code generator: a graph as one readable Python function of NumPy calls.

`source(graph)` writes one line per node from its primitive's `emit` rule, with the printer's
value names, a `del` of each intermediate right after its last use, array constants as extra
arguments and only validated plain params as literals; user strings (the graph's name) appear
only in an escaped comment. `compile_graph` compiles the text once under a unique filename
registered in `linecache`, so tracebacks and debuggers show the generated lines. A ufunc whose
result has the shape, dtype and memory layout of a dead intermediate writes into it (`out=`),
so large temporaries are not freed and allocated again (see `_plan_buffers`).
"""

from __future__ import annotations

import itertools
import keyword
import linecache
import re
import reprlib
import struct
import weakref
from collections.abc import Callable
from pathlib import Path

import attrs
import numpy as np

from tracegrad.ir.analysis import free_schedule, last_use, peak_bytes
from tracegrad.ir.graph import Edge, Graph, Node, arg_p, const_p
from tracegrad.ir.layout import Layout
from tracegrad.ir.printing import identifier, node_names

__all__ = ["Compiled", "compile_graph", "source"]

# -- literals ---------------------------------------------------------------------------------

_DTYPE_NAMES = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    + ["float16", "float32", "float64", "complex64", "complex128"]
)
_SUBSCRIPTS = re.compile(r"[a-zA-Z.,>-]*")
_INDEX_WORDS = frozenset(["array", "newaxis", "..."])
# the bits of float('nan') and float('-nan'): the only NaNs a literal can spell
_NAN_TEXT = {
    struct.pack("<d", float("nan")): "float('nan')",
    struct.pack("<d", float("-nan")): "float('-nan')",
}


def _float_text(v: float) -> str | None:
    """Python text that evaluates to exactly `v` (signed zeros, infinities, the two standard
    NaNs), or None for a NaN with another payload."""
    if v != v:
        return _NAN_TEXT.get(struct.pack("<d", v))
    if v in (float("inf"), float("-inf")):
        return "float('inf')" if v > 0 else "float('-inf')"
    return repr(v)  # shortest repr round-trips exactly; -0.0 reads back as -0.0


def _scalar_text(v) -> str | None:
    """The literal of a Python scalar constant (exact types only), or None if it has none.

    Only exact `bool`, `int`, `float`, `complex` qualify: NumPy scalars (even np.float64, a
    float subclass) promote differently and are passed in as arguments instead.
    """
    t = type(v)
    if t is bool or t is int:
        return repr(v)
    if t is float:
        return _float_text(v)
    if t is complex:
        re_, im = _float_text(v.real), _float_text(v.imag)
        return None if re_ is None or im is None else f"complex({re_}, {im})"
    return None


class _FloatParam(float):
    """A non-finite float param whose repr is valid code, so an emit's `{v!r}` writes it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return _float_text(float(self))


def _param_text(v) -> str:
    """A validated param (see `_Params`) as Python text: dtypes as `np.dtype('name')`."""
    if isinstance(v, np.dtype):
        return f"np.dtype({v.name!r})"
    if type(v) is tuple:
        return "(" + "".join(_param_text(x) + ", " for x in v) + ")"
    return repr(v)


class _ComplexParam(complex):
    __slots__ = ()

    def __repr__(self) -> str:
        return f"complex({_float_text(self.real)}, {_float_text(self.imag)})"


# -- params -----------------------------------------------------------------------------------


class _Params:
    """Validates a node's params before its emit rule writes them as literals."""

    def __init__(self, node: Node, name: str):
        self.node = node
        self.name = name

    def error(self, key: str, value, why: str) -> ValueError:
        return ValueError(
            f"codegen: cannot write param {key}={reprlib.repr(value)} of node {self.name!r} "
            f"({self.node.prim.name}) as a literal: {why}. Params written into generated code "
            "must be ints, floats, bools, None, tuples of them, dtypes, einsum subscripts or "
            "index structures"
        )

    def check(self, key: str, value):
        if key == "subscripts" and type(value) is str:
            if _SUBSCRIPTS.fullmatch(value):
                return value
            raise self.error(key, value, "einsum subscripts may hold only letters, '.', ',', '->'")
        if key == "index" and type(value) is tuple:
            return tuple(self.index_item(key, item) for item in value)
        return self.plain(key, value)

    def plain(self, key: str, value):
        t = type(value)
        if value is None or t is bool or t is int:
            return value
        if t is float or isinstance(value, np.float64):
            return self.float_(key, float(value))
        if t is complex or isinstance(value, np.complex128):
            value = complex(value)
            if _float_text(value.real) is None or _float_text(value.imag) is None:
                raise self.error(key, value, "a NaN with a payload has no literal")
            return value if np.isfinite(value) else _ComplexParam(value)
        if t is tuple:
            return tuple(self.plain(key, v) for v in value)
        if isinstance(value, np.bool_):
            return bool(value)
        if isinstance(value, np.integer):
            return int(value)
        if isinstance(value, np.dtype) or (
            isinstance(value, type) and issubclass(value, np.generic)
        ):
            try:
                dt = np.dtype(value)
            except TypeError:
                dt = None
            if dt is not None and dt.name in _DTYPE_NAMES and dt == np.dtype(dt.name):
                return dt
            raise self.error(key, value, f"only the dtypes {sorted(_DTYPE_NAMES)} are written")
        raise self.error(key, value, f"a {t.__name__} value has no validated literal")

    def float_(self, key: str, v: float):
        text = _float_text(v)
        if text is None:
            raise self.error(key, v, "a NaN with a payload has no literal")
        return v if text == repr(v) else _FloatParam(v)

    def index_item(self, key: str, item):
        t = type(item)
        if t is int:
            return item
        if isinstance(item, np.integer) and t is not np.bool_:
            return int(item)
        if t is str and item in _INDEX_WORDS:
            return item
        if t is tuple and len(item) == 4 and item[0] == "slice":
            if all(type(v) is int for v in item[1:]):
                return item
        if t is tuple and len(item) == 2 and item[0] == "bool" and type(item[1]) is bool:
            return item
        raise self.error(
            key,
            item,
            "an index item must be an int, 'array', 'newaxis', '...', ('slice', start, limit, "
            "stride) or ('bool', b)",
        )


# -- buffer reuse -----------------------------------------------------------------------------
#
# `np.<ufunc>(x, y, out=d)` gives the same bits as `np.<ufunc>(x, y)`, NaN signs included (in
# place too, for more than one element: checked for every ufunc of the elementwise family on
# every pair of special values). But the result takes d's strides, and a later reduction or
# matmul reads memory in stride order, so d must have exactly the strides NumPy would have
# allocated. NumPy's iterator allocates a ufunc result contiguous in the axis order of its
# inputs (order "K"); the planner tracks that order symbolically as a *token*: "C" where it is
# known to be C order (matmul results, constants and reductions in C order) and otherwise the
# value whose unknown order it inherits (a graph input, a transpose). Inputs with at most one
# axis longer than 1 have no say in the order; inputs that disagree make it unknown. Two fresh
# arrays with equal shape (no size-1 axes, whose strides allocators set differently), dtype
# and token have equal strides. A buffer is taken only when nothing live may alias it (a
# view, or any value of a primitive not known to return a fresh array, keeps its inputs'
# buffers alive) and no allocation happens between its death and its reuse, so the peak of
# live bytes never rises above the interpreter's.


def takes_out(prim) -> bool:
    """Whether `prim` is a plain ufunc call that may write into a dead buffer (`out=`): an
    elementwise layout, a ufunc `impl`, and an `emit` that writes exactly `np.<ufunc>(...)`."""
    hit = prim.memo.get("takes_out")
    if hit is None:
        hit = prim.memo["takes_out"] = (
            prim.layout is Layout.ELEMENTWISE
            and isinstance(prim.impl, np.ufunc)
            and prim.emit is not None
            and not prim.multiple_results
            and _plain_call(prim)
        )
    return hit


def _plain_call(prim) -> bool:
    names = [f"x{k}" for k in range(prim.impl.nin)]
    try:
        text = prim.emit(*names)
    except TypeError:  # an emit that takes params is not a plain call
        return False
    return text == f"np.{prim.impl.__name__}({', '.join(names)})"


def _neutral(shape) -> bool:
    # at most one axis longer than 1: no say in the order NumPy's iterator picks
    return sum(1 for d in shape if d > 1) <= 1


def _c_strides(a: np.ndarray) -> tuple[int, ...]:
    # what np.empty gives: C order, size-1 axes included
    strides, step = [], a.itemsize
    for d in reversed(a.shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def _plan_buffers(graph: Graph) -> dict[Node, Node]:
    """`{node: dead node whose array it writes into}`, for ufunc nodes (see above)."""
    nodes = graph.nodes
    n = len(nodes)
    last = last_use(graph)
    token: dict[Node, object] = {}  # order token of the values whose order is known
    keys: dict[Node, tuple] = {}  # fresh arrays that may serve as buffers
    bases: dict[Node, frozenset] = {}  # buffers each value may alias (only non-empty sets)
    neutral: dict[tuple, bool] = {}

    def voters(inputs):
        # inputs with a say in the iterator's order; an input of unknown order is its own token
        out = []
        for e in inputs:
            shape = e.node.out_avals[e.index].shape
            nt = neutral.get(shape)
            if nt is None:
                nt = neutral[shape] = _neutral(shape)
            if not nt:
                out.append((token.get(e.node, e), shape))
        return out

    def aliases(node):
        found = None
        for e in node.inputs:
            b = bases.get(e.node)
            if b:
                found = b if found is None or found == b else found | b
        if found:
            bases[node] = found

    for node in nodes:
        prim = node.prim
        if prim is const_p:
            value = node.params["value"]
            if isinstance(value, np.ndarray) and value.strides == _c_strides(value):
                token[node] = "C"
            continue
        if prim is arg_p or prim.multiple_results:
            aliases(node)
            continue
        aval = node.out_avals[0]
        layout = prim.layout
        if layout is Layout.ELEMENTWISE:
            vs = voters(node.inputs)
            first = vs[0][0] if vs else "C"
            if all(t == first for t, _ in vs):  # one order, or none: C
                if first == "C" or all(shape == aval.shape for _, shape in vs):
                    token[node] = first
        elif layout is Layout.KEEPS_C:
            if all(token.get(e.node) == "C" for e in node.inputs if e.aval.shape):
                token[node] = "C"
        elif layout is Layout.C:
            token[node] = "C"
        elif layout is not Layout.DENSE:  # may return a view of (or the same array as) an input
            base = node.inputs[prim.view_of].node if prim.view_of is not None else None
            if layout is Layout.SAME and base in token:
                token[node] = token[base]  # the input itself
            elif layout is Layout.CONTIGUOUS or (
                layout is Layout.RESHAPED and token.get(base) == "C"
            ):
                token[node] = "C"  # a reshape of a C-contiguous array is one too
            aliases(node)
            continue
        # Only shapes without size-1 axes: NumPy's allocators place those differently, and
        # their strides matter to matmul (BLAS or not)
        shape = aval.shape
        if shape and min(shape) > 1 and not aval.weak_type:
            keys[node] = (shape, aval.dtype, token.setdefault(node, node))
            bases[node] = frozenset((node,))
    # when each buffer's memory is last read, through itself or anything that may alias it
    death: dict[Node, int] = {}
    others: dict[Node, int] = {}
    for i, node in enumerate(nodes):
        bs = bases.get(node)
        if bs:
            end = last.get(node, i)
            for b in bs:
                if end > death.get(b, -1):
                    death[b] = end
                if b is not node and end > others.get(b, -1):
                    others[b] = end
    dies_at: list[list[Node]] = [[] for _ in range(n)]
    for b, k in death.items():
        if k < n:
            dies_at[k].append(b)
    plan: dict[Node, Node] = {}
    used: set[Node] = set()
    pool: dict[tuple, list[Node]] = {}
    for i, node in enumerate(nodes):
        key = keys.get(node)
        if key is not None and takes_out(node.prim):
            buf = None
            # in place: an input that dies here, read only directly (never one element, as
            # no key has size-1 axes: NumPy would take its reduction loop, `out is x` with
            # zero strides, whose NaN propagation can pick the other operand's sign)
            for e in node.inputs:
                d = e.node
                if keys.get(d) == key and d not in used and death[d] == i and others.get(d, -1) < i:
                    buf = d
                    break
            if buf is None and pool.get(key):
                buf = pool[key].pop()
            if buf is not None:
                plan[node] = buf
                used.add(buf)
        if node.prim is not const_p and node.prim.view_of is None and node not in plan:
            pool.clear()  # an allocation: holding dead buffers past it could raise the peak
        for d in dies_at[i]:
            if d not in used:
                pool.setdefault(keys[d], []).append(d)
    return plan


# -- generation -------------------------------------------------------------------------------


def _convert(kind: str) -> str:
    # a weak 0-d result stands for a Python scalar (NEP 50 promotion), as in the interpreter
    return {"b": "bool", "i": "int", "u": "int", "c": "complex"}.get(kind, "float")


def _function_name(graph: Graph) -> str:
    name = "f_" + identifier(graph.name, "graph")
    return name if name.isidentifier() and not keyword.iskeyword(name) else "f_graph"


@attrs.frozen
class _Code:
    """The generated function in parts, so `export` can write it with another header."""

    name: str
    comment: str
    input_names: tuple[str, ...]
    const_names: tuple[str, ...]
    const_values: tuple
    body: tuple[str, ...]
    reused: int = 0

    def text(self, params: list[str] | None = None) -> str:
        if params is None:
            params = list(self.input_names) + list(self.const_names)
        lines = [self.comment, f"def {self.name}({', '.join(params)}):", *self.body]
        return "\n".join(lines) + "\n"


def _plan_donations(graph: Graph, donated: frozenset[int]) -> dict[Node, Node]:
    """`{node: donated input it writes into}`: the caller gave these input buffers up.

    A node qualifies when it is a plain ufunc, it is the last reader of the donated input, its
    result has the input's shape and dtype, the result is only returned (so its memory
    layout, the input's, cannot change a later reduction's bits), and no view of the input
    is read at or after it. This is the parameter update of a training step (`w - lr * g`):
    it then happens in place.
    """
    if not donated:
        return {}
    last = last_use(graph)
    n = len(graph.nodes)
    pos = {node: i for i, node in enumerate(graph.nodes)}
    returned_only = {e.node for e in graph.outputs}
    for node in graph.nodes:
        for e in node.inputs:
            returned_only.discard(e.node)
    out_counts: dict[Node, int] = {}
    for e in graph.outputs:
        out_counts[e.node] = out_counts.get(e.node, 0) + 1
    # views of each input: their last reads count as reads of the input
    view_last: dict[Node, int] = {}
    base_of: dict[Node, Node] = {}
    for node in graph.nodes:
        if node.prim.view_of is not None and node.inputs:
            src = node.inputs[node.prim.view_of].node
            base = base_of.get(src, src)
            base_of[node] = base
            view_last[base] = max(view_last.get(base, -1), last.get(node, pos[node]))
    plan: dict[Node, Node] = {}
    taken: set[Node] = set()
    for i, e in enumerate(graph.inputs):
        if i not in donated or not is_float_aval(e.aval):
            continue
        arg = e.node
        j = last.get(arg)
        if j is None or j >= n or view_last.get(arg, -1) > j:
            continue
        node = graph.nodes[j]
        if (
            takes_out(node.prim)
            and node not in plan
            and node in returned_only
            and out_counts.get(node) == 1
            and arg not in taken
            and node.out_avals[0] == e.aval.strengthen()
            and e.aval.shape
            and all(x.node is not arg for x in graph.outputs)
        ):
            plan[node] = arg
            taken.add(arg)
    return plan


def is_float_aval(aval) -> bool:
    return aval.dtype.kind in "fc"


class _Generator:
    def __init__(self, graph: Graph, reuse_buffers: bool, donated: frozenset[int] = frozenset()):
        self.graph = graph
        # one-element values are never reused (see _plan_buffers): skip planning for graphs
        # of scalars, where it would be pure cost
        any_arrays = any(a.size > 1 for n in graph.nodes for a in n.out_avals)
        self.plan = _plan_buffers(graph) if reuse_buffers and any_arrays else {}
        for node, arg in _plan_donations(graph, donated).items():
            self.plan.setdefault(node, arg)
        self.names = node_names(graph)
        self.inputs = {e.node for e in graph.inputs}
        self.literals: dict[Node, str] = {}
        self.const_args: dict[Node, str] = {}  # in order of first read
        self.n_unnamed = 0
        self.impls: dict = {}  # primitive without an emit rule -> the name its impl is passed as

    def const_ref(self, node: Node) -> str:
        text = self.literals.get(node) or self.const_args.get(node)
        if text is not None:
            return text
        value = node.params["value"]
        text = _scalar_text(value)
        if text is not None:
            self.literals[node] = text
            return text
        named = self.names.get(node)
        if named is None:
            named = (f"_c{self.n_unnamed}",)
            self.n_unnamed += 1
        self.const_args[node] = named[0]
        return named[0]

    def ref(self, e: Edge) -> str:
        node = e.node
        if node.prim is const_p and node not in self.inputs:
            return self.const_ref(node)
        if node.prim is arg_p and node not in self.inputs:
            raise ValueError(
                f"codegen: graph {self.graph.name!r} reads an input that is not among its "
                "inputs; build it with Graph.from_outputs over its own inputs"
            )
        ns = self.names.get(node)
        if ns is None or not 0 <= e.index < len(ns):
            raise ValueError(
                f"codegen: graph {self.graph.name!r} reads output {e.index} of a "
                f"{node.prim.name} node that it never computes"
            )
        return ns[e.index]

    def impl_call(self, prim, args, params) -> str:
        """A call of `prim.impl`, passed in like an array constant, for a primitive without
        an emit rule (a user's, from tracegrad.extend): the same function the interpreter
        runs, with the params written as validated literals."""
        name = self.impls.get(prim)
        if name is None:
            name = self.impls[prim] = f"_impl{len(self.impls)}"
        kwargs = "".join(f", {k}={_param_text(v)}" for k, v in params.items())
        return f"{name}({', '.join(args)}{kwargs})"

    def node_line(self, node: Node) -> str:
        prim = node.prim
        targets = self.names[node]
        checker = _Params(node, targets[0])
        params = {k: checker.check(k, v) for k, v in node.params.items()}
        args = [self.ref(e) for e in node.inputs]
        buf = self.plan.get(node)
        if buf is not None:  # a plain ufunc (see takes_out)
            call = f"np.{prim.impl.__name__}({', '.join(args)}, out={self.names[buf][0]})"
            return f"    {targets[0]} = {call}"
        expr = _scalar_operator(node, args)
        if expr is None:
            if prim.emit is None:
                expr = self.impl_call(prim, args, params)
            else:
                expr = prim.emit(*args, **params)
        if not isinstance(expr, str) or "\n" in expr or "\r" in expr:
            raise ValueError(
                f"codegen: the emit rule of {prim.name} must return a one-line expression, "
                f"got {reprlib.repr(expr)}"
            )
        if prim.multiple_results:
            lhs = ", ".join(targets) + ("," if len(targets) == 1 else "")
            return f"    {lhs} = {expr}"
        aval = node.out_avals[0]
        if aval.weak_type and not aval.shape:
            expr = f"{_convert(aval.dtype.kind)}({expr})"
        return f"    {targets[0]} = {expr}"

    def generate(self) -> _Code:
        graph = self.graph
        input_names = [self.names[e.node][0] for e in graph.inputs]
        if len(set(input_names)) != len(input_names):
            raise ValueError(f"codegen: graph {graph.name!r} lists the same input twice")
        body: list[str] = []
        frees = free_schedule(graph)
        reused = set(self.plan.values())  # their names go when their taker has run
        for node, dead in zip(graph.nodes, frees):
            if node.prim is const_p or node.prim is arg_p:
                continue
            body.append(self.node_line(node))
            gone = [
                n
                for d in dead
                if d.prim is not const_p
                and d.prim is not arg_p
                and d not in self.inputs
                and d not in reused
                for n in self.names[d]
            ]
            if node in self.plan:
                gone.append(self.names[self.plan[node]][0])
            if gone:
                body.append(f"    del {', '.join(gone)}")
        outs = [self.ref(e) for e in graph.outputs]
        body.append(f"    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        raw = graph.name if isinstance(graph.name, str) else repr(graph.name)
        return _Code(
            name=_function_name(graph),
            comment=f"# graph {ascii(raw)}",
            input_names=tuple(input_names),
            const_names=tuple(self.const_args.values()) + tuple(self.impls.values()),
            const_values=tuple(n.params["value"] for n in self.const_args)
            + tuple(p.impl for p in self.impls),
            body=tuple(body),
            reused=len(self.plan),
        )


def source(graph: Graph, reuse_buffers: bool = True) -> str:
    """The Python text of `graph` as one NumPy function (what `compile_graph` compiles).

    With `reuse_buffers`, ufuncs write into dead intermediates of their shape, dtype and
    layout (`out=`); the results are the same bits either way.
    """
    return _Generator(graph, reuse_buffers).generate().text()


# -- compiling --------------------------------------------------------------------------------

_serial = itertools.count()


@attrs.frozen(eq=False, repr=False)
class Compiled:
    """A graph compiled to Python.

    `fn(*flat_inputs)` runs it on the graph's inputs (in order) and returns a tuple of its
    outputs; the constant arguments are bound as the function's defaults, so a call costs no
    Python work beyond the call itself. `memory` is the predicted peak of live intermediate
    bytes (`tracegrad.ir.analysis.peak_bytes`: buffer reuse never raises it, in place
    updates may lower the true peak below it). `reused` counts the `out=` writes.
    """

    fn: Callable
    source: str
    graph: Graph
    name: str
    filename: str
    const_names: tuple[str, ...]
    const_values: tuple
    memory: int
    reused: int
    _code: _Code

    def export(self, path) -> Path:
        """Write a standalone module defining the function; it imports only NumPy.

        Array constants go to an `.npz` beside the module (same stem) and are loaded at import
        as the function's default arguments. Returns the module's path.
        """
        path = Path(path)
        if path.suffix != ".py":
            raise ValueError(f"export: the module path must end in .py, got {str(path)!r}")
        code = self._code
        lines = ["# Generated by tracegrad.codegen; needs only NumPy.", "import numpy as np", ""]
        for name, value in zip(code.const_names, code.const_values):
            if callable(value):
                raise ValueError(
                    f"export: the graph calls {name} = {getattr(value, '__qualname__', value)!r}, "
                    "the impl of a primitive without an emit rule, which a module that needs "
                    "only NumPy cannot hold; give the primitive an emit rule"
                )
        if code.const_names:
            for name, value in zip(code.const_names, code.const_values):
                if np.asarray(value).dtype.hasobject:
                    raise ValueError(f"export: constant {name!r} has dtype object; cannot save it")
            np.savez(path.with_suffix(".npz"), *[np.asarray(v) for v in code.const_values])
            lines.append('with np.load(__file__[:-3] + ".npz", allow_pickle=False) as _npz:')
            for k, (name, value) in enumerate(zip(code.const_names, code.const_values)):
                # restore the kind of value the graph held: array, NumPy scalar, Python scalar
                if isinstance(value, np.ndarray):
                    restore = ""
                elif isinstance(value, np.generic):
                    restore = "[()]"
                else:
                    restore = ".item()"
                lines.append(f'    {name} = _npz["arr_{k}"]{restore}')
            lines.append("")
        params = list(code.input_names) + [f"{c}={c}" for c in code.const_names]
        lines.append(code.text(params))
        lines.append(f"__all__ = [{code.name!r}]\n")
        path.write_text("\n".join(lines))
        return path

    def __repr__(self) -> str:
        return f"<Compiled {self.name}: {len(self.graph.nodes)} nodes, {self.filename}>"


# IEEE arithmetic on 0-d values written as Python operators (a primitive's `operator`):
# NumPy's scalar fast path gives the same bits as the ufunc at a tenth of the cost (a ufunc
# call on a NumPy scalar builds a 0-d array). Only where an operand is a NumPy value: two
# Python scalars would do Python's own (unbounded-int) arithmetic, so weak-only operations
# keep the ufunc.


def _scalar_operator(node: Node, args: list[str]) -> str | None:
    op = node.prim.operator
    if op is None:
        return None
    aval = node.out_avals[0]
    if aval.shape or aval.dtype.kind not in "fc":
        return None
    if len(args) == 1:
        return f"({op}{args[0]})" if not node.inputs[0].aval.weak_type else None
    if all(e.aval.weak_type for e in node.inputs):
        return None
    if any(e.aval.shape for e in node.inputs):
        return None
    return f"({args[0]} {op} {args[1]})"


def compile_graph(
    graph: Graph, reuse_buffers: bool = True, donated: frozenset[int] = frozenset()
) -> Compiled:
    """Generate, compile (once) and load the Python function of `graph` (see `source`).

    `donated`: positions of inputs whose buffers the caller gives up (`jit`'s
    `donate_argnums`); a final elementwise update of such an input is written into it.
    """
    code = _Generator(graph, reuse_buffers, frozenset(donated)).generate()
    text = code.text()
    filename = f"<tracegrad-codegen {code.name}-{next(_serial)}>"
    # registered before compiling, so even a SyntaxError shows its line
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace = {"np": np}
    try:
        exec(compile(text, filename, "exec"), namespace)
    except BaseException:
        linecache.cache.pop(filename, None)
        raise
    fn = namespace.pop(code.name)  # no fn -> globals -> fn cycle
    fn.__defaults__ = code.const_values or None
    weakref.finalize(fn, linecache.cache.pop, filename, None)
    return Compiled(
        fn=fn,
        source=text,
        graph=graph,
        name=code.name,
        filename=filename,
        const_names=code.const_names,
        const_values=code.const_values,
        memory=peak_bytes(graph),
        reused=code.reused,
        code=code,
    )
