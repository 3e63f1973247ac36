"""Source generation: one line of NumPy per node, the `del`s, and the function around them.

`_Generator` turns a graph into a `_Code` (the function in parts, so that `Compiled.export`
can write it with another header) and `source` returns its text. Params become literals
through `literals`, `out=` targets come from `buffers`; compiling and loading the text is left
to `compiled`, so the text can be read and tested without executing it.
"""

from __future__ import annotations

import keyword
import re
import reprlib

import attrs

from tracegrad.backends.check import lowered_code, lowering_error, promoted_args, scalar_only
from tracegrad.codegen.buffers import _plan_buffers, _plan_donations
from tracegrad.codegen.chunks import SEGMENT_NODES, segmented_body, wants_segments
from tracegrad.codegen.literals import _param_text, _Params, _scalar_text
from tracegrad.ir.analysis import free_schedule
from tracegrad.ir.graph import Edge, Graph, Node, arg_p, const_p
from tracegrad.ir.printing import identifier, node_names

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
    # a large graph's segment functions, (name, source text), which `body` calls in order;
    # they read the constants as globals, so the function then takes only the inputs
    segments: tuple[tuple[str, str], ...] = ()
    # another library's code (tracegrad.backends): the NumPy names it calls, lowered
    used: frozenset = frozenset()

    def text(self, params: list[str] | None = None) -> str:
        if params is None:
            params = list(self.input_names)
            if not self.segments:
                params += list(self.const_names)
        lines = [text for _, text in self.segments]
        lines += [self.comment, f"def {self.name}({', '.join(params)}):", *self.body]
        return "\n".join(lines) + "\n"


@attrs.frozen
class Nested:
    """A sub-graph param as an emit rule sees it: the nested function written for the graph
    (`name`), which takes its inputs and returns a tuple of its outputs, and their avals."""

    name: str
    in_avals: tuple
    out_avals: tuple


class _Generator:
    """Writes one graph's function. A sub-graph a node holds becomes a nested function written
    just before the node's line by a child generator; constants, impls and passed-in params
    of every level are arguments of the outermost function, under names unique across levels
    (a nested function reads them from the enclosing scope)."""

    def __init__(
        self,
        graph: Graph,
        reuse_buffers: bool,
        donated: frozenset[int] = frozenset(),
        root: _Generator | None = None,
        backend=None,
    ):
        self.graph = graph
        # another array library (tracegrad.backends): no out= writes, no donation, the
        # primitives' array-API emit rules, and every NumPy name checked to have a lowering
        self.backend = backend if root is None else root.backend
        if self.backend is not None:
            reuse_buffers, donated = False, frozenset()
        self.used: set[str] = set()  # (the root's: the NumPy names the code calls)
        self.reuse_buffers = reuse_buffers
        self._root = root  # (None for the root itself: no self-reference cycle to collect)
        self.n_nested = 0  # (the root's counts name nested functions)
        self.shared_args: dict[Node, str] = {}  # (the root's: constants of nested functions)
        self.passed: dict[int, tuple[str, object]] = {}  # (the root's: passed-in params)
        # one-element values are never reused (see _plan_buffers): skip planning for graphs
        # of scalars, where it would be pure cost
        any_arrays = any(a.size > 1 for n in graph.nodes for a in n.out_avals)
        self.plan = _plan_buffers(graph) if reuse_buffers and any_arrays else {}
        for node, arg in _plan_donations(graph, donated).items():
            self.plan[node] = arg  # the donated buffer, over a dead temporary: no new array
        self.names = node_names(graph)
        self.inputs = {e.node for e in graph.inputs}
        self.literals: dict[Node, str] = {}
        self.const_args: dict[Node, str] = {}  # in order of first read
        self.n_unnamed = 0
        self.impls: dict = {}  # primitive without an emit rule -> the name its impl is passed as

    @property
    def root(self) -> _Generator:
        return self._root or self

    def const_ref(self, node: Node) -> str:
        text = self.literals.get(node) or self.const_args.get(node)
        if text is not None:
            return text
        value = node.params["value"]
        text = _scalar_text(value)
        if text is not None:
            self.literals[node] = text
            return text
        if self.root is not self:  # a nested function: a name unique across all levels
            root = self.root
            name = root.shared_args.get(node)
            if name is None:
                name = root.shared_args[node] = f"_k{len(root.shared_args)}"
            return name
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
        impls = self.root.impls
        name = impls.get(prim)
        if name is None:
            name = impls[prim] = f"_impl{len(impls)}"
        kwargs = "".join(
            f", {k}={v.name if isinstance(v, _PassedIn) else _param_text(v)}"
            for k, v in params.items()
        )
        return f"{name}({', '.join(args)}{kwargs})"

    def pass_in(self, value) -> _PassedIn:
        """A param with no literal (a callable, a string, a graph), for a primitive without an
        emit rule: passed to the function as an argument, as its impl is; never written out."""
        passed = self.root.passed
        hit = passed.get(id(value))
        if hit is None:
            hit = passed[id(value)] = (f"_p{len(passed)}", value)
        return _PassedIn(hit[0])

    def nested(self, graph: Graph, lines: list[str]) -> Nested:
        """Write `graph` as a nested function (its lines appended to `lines`)."""
        root = self.root
        name = f"_sub{root.n_nested}"
        root.n_nested += 1
        child = _Generator(graph, self.reuse_buffers, root=root)  # (the root's backend)
        body, inputs = child.body_lines()
        lines.append(f"    def {name}({', '.join(inputs)}):")
        lines.extend("    " + line for line in body)
        return Nested(name, graph.in_avals, graph.out_avals)

    def node_params(self, node: Node, targets, lines: list[str]) -> dict:
        """The params an emit rule (or the impl call) gets: sub-graphs as nested functions,
        others checked to be writable as literals (or passed in, without an emit rule)."""
        checker = _Params(node, targets[0] if targets else "?")
        emits = node.prim.emit is not None
        params = {}
        for k, v in node.params.items():
            if emits and isinstance(v, Graph):
                params[k] = self.nested(v, lines)
            elif emits and type(v) is tuple and v and all(isinstance(u, Graph) for u in v):
                params[k] = tuple(self.nested(u, lines) for u in v)
            elif emits:
                params[k] = checker.check(k, v)
            else:
                try:
                    params[k] = checker.check(k, v)
                except ValueError:
                    params[k] = self.pass_in(v)
        return params

    def node_lines(self, node: Node) -> list[str]:
        """The lines of one node: nested functions of its sub-graphs, the statements its emit
        rule writes, and the assignment of its outputs."""
        prim = node.prim
        targets = self.names.get(node, ())
        lines: list[str] = []
        params = self.node_params(node, targets, lines)
        args = [self.ref(e) for e in node.inputs]
        buf = self.plan.get(node)
        if buf is not None:  # a plain ufunc (see takes_out)
            call = f"np.{prim.impl.__name__}({', '.join(args)}, out={self.names[buf][0]})"
            return [f"    {targets[0]} = {call}"]
        backend = self.backend
        if backend is not None and scalar_only(node) and backend.name != "jax":
            backend = None  # Python scalars only: NumPy's code, with `_np` NumPy itself
            numpy_text = True
        else:
            numpy_text = False
        if backend is not None:
            args = promoted_args(node, args, backend)
        expr = _scalar_operator(node, args)
        if expr is None:
            if prim.emit is None:
                if backend is not None:
                    raise lowering_error(prim, backend, "it has no emit rule (it runs its impl)")
                expr = self.impl_call(prim, args, params)
            elif backend is not None and prim.emit_array_api is not None:
                try:
                    expr = prim.emit_array_api(*args, **params)
                except NotImplementedError as why:
                    raise lowering_error(prim, backend, str(why)) from None
            else:
                expr = prim.emit(*args, **params)
        statements: list = []
        if isinstance(expr, list):  # statements, then the value's expression
            *statements, expr = expr
        if backend is not None:  # every NumPy (and SciPy) name lowered, or refused
            statements, expr = lowered_code(prim, backend, statements, expr, self.root.used)
        if numpy_text:
            statements = [_NP.sub("_np.", line) for line in statements]
            expr = _NP.sub("_np.", expr)
        for line in statements:
            _check_line(prim, line)
            lines.append(f"    {line}")
        _check_line(prim, expr)
        if prim.multiple_results:
            if not targets:
                return [*lines, f"    {expr}"]
            lhs = ", ".join(targets) + ("," if len(targets) == 1 else "")
            return [*lines, f"    {lhs} = {expr}"]
        aval = node.out_avals[0]
        if aval.weak_type and not aval.shape and backend is None:
            expr = f"{_convert(aval.dtype.kind)}({expr})"
        return [*lines, f"    {targets[0]} = {expr}"]

    def dead_names(self, node: Node, dead, reused) -> list[str]:
        """The names to `del` after `node` runs: the values that die there (`dead`, from
        `free_schedule`), but a buffer taken with `out=` only once its taker (`node`) ran."""
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
        return gone

    def body_lines(self) -> tuple[list[str], list[str]]:
        """(the function's body lines, its input names)."""
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
            body.extend(self.node_lines(node))
            gone = self.dead_names(node, dead, reused)
            if gone:
                body.append(f"    del {', '.join(gone)}")
        outs = [self.ref(e) for e in graph.outputs]
        body.append(f"    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        return body, input_names

    def generate(self, segment_nodes: int | None = None) -> _Code:
        """The function's code; a large graph's as segments (see `chunks`; `segment_nodes`
        forces that form with segments of that many nodes)."""
        graph = self.graph
        parts: list = []
        if wants_segments(graph, segment_nodes):
            parts, body = segmented_body(self, segment_nodes or SEGMENT_NODES)
            input_names = [self.names[e.node][0] for e in graph.inputs]
            if len(set(input_names)) != len(input_names):
                raise ValueError(f"codegen: graph {graph.name!r} lists the same input twice")
        else:
            body, input_names = self.body_lines()
        raw = graph.name if isinstance(graph.name, str) else repr(graph.name)
        passed = list(self.passed.values())
        return _Code(
            name=_function_name(graph),
            comment=f"# graph {ascii(raw)}",
            input_names=tuple(input_names),
            const_names=tuple(self.const_args.values())
            + tuple(self.shared_args.values())
            + tuple(self.impls.values())
            + tuple(name for name, _ in passed),
            const_values=tuple(n.params["value"] for n in self.const_args)
            + tuple(n.params["value"] for n in self.shared_args)
            + tuple(p.impl for p in self.impls)
            + tuple(value for _, value in passed),
            body=tuple(body),
            reused=len(self.plan),
            segments=tuple(parts),
            used=frozenset(self.used),
        )


@attrs.frozen
class _PassedIn:
    name: str


_NP = re.compile(r"(?<![\w.])np\.")  # NumPy's names in emitted text


def _check_line(prim, line) -> None:
    if not isinstance(line, str) or "\n" in line or "\r" in line:
        raise ValueError(
            f"codegen: the emit rule of {prim.name} must return a one-line expression (or a "
            f"list of one-line statements ending with one), got {reprlib.repr(line)}"
        )


def source(graph: Graph, reuse_buffers: bool = True) -> str:
    """The Python text of `graph` as one NumPy function (what `compile_graph` compiles).

    With `reuse_buffers`, ufuncs write into dead intermediates of their shape, dtype and
    layout (`out=`); the results are the same bits either way.
    """
    return _Generator(graph, reuse_buffers).generate().text()


# IEEE arithmetic on 0-d values written as Python operators (a primitive's `operator`):
# NumPy's scalar fast path gives the same bits as the ufunc at a tenth of the cost (a ufunc
# call on a NumPy scalar builds a 0-d array). Only where an operand is a NumPy value: two
# Python scalars would do Python's own (unbounded-int) arithmetic, so weak-only operations
# keep the ufunc. Not for a complex product: NumPy's scalar multiply rounds differently from
# the ufunc's loop (about 4 random complex64 or complex128 products in 10 differ in a last
# bit), so it keeps the ufunc too.
_UFUNC_ONLY = {("*", "c")}


def _scalar_operator(node: Node, args: list[str]) -> str | None:
    op = node.prim.operator
    if op is None:
        return None
    aval = node.out_avals[0]
    if aval.shape or aval.dtype.kind not in "fc" or (op, aval.dtype.kind) in _UFUNC_ONLY:
        return None
    if len(args) == 1:
        return f"({op}{args[0]})" if not node.inputs[0].aval.weak_type else None
    if all(e.aval.weak_type for e in node.inputs):
        return None
    if any(e.aval.shape for e in node.inputs):
        return None
    return f"({args[0]} {op} {args[1]})"
