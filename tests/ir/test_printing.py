"""The printer (golden listings, names, literals) and the Graphviz writer."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
from tracegrad.ir import Aval, Edge, Graph, Node, Params, Primitive, arg_node, const_node
from tracegrad.ir.dot import to_dot
from tracegrad.ir.printing import format_graph, identifier, literal, value_names
from tracegrad.primitives import shape as sp
from tracegrad.primitives.elementwise import add_p, negative_p, sin_p

F64_3 = Aval((3,), np.float64)

# -- golden listings --------------------------------------------------------------------------


def test_golden_float32_with_weak_scalar_and_two_outputs():
    def f(x, s):
        y = x * s
        return np.sum(np.tanh(y) + 1.0, axis=0, keepdims=True), y

    g = tg.make_graph(f)(np.ones((2, 3), np.float32), 2.0)
    assert str(g) == (
        "# graph f\n"
        "graph f(a: f32[2,3], b: f64~[]):\n"
        "  c: f32[2,3] = multiply a b\n"
        "  d: f32[2,3] = tanh c\n"
        "  e: f32[2,3] = add d 1.0\n"
        "  f: f32[1,3] = sum[axis=(0,), keepdims=True] e\n"
        "  return f, c"
    )


C = np.array([1.0, -2.0])


def test_golden_constants_and_a_multiple_result_node():
    def g(x):
        lo, hi = sp.split(x, (1,), 0)
        return lo * C + np.float32(0.5), np.maximum(hi, 0) - 3

    graph = tg.make_graph(g)(np.ones((3, 2)))
    assert str(graph) == (
        "# graph g\n"
        "graph g(a: f64[3,2]):\n"
        "  b: f64[2] = const[value=[ 1., -2.]]\n"
        "  c: f64[1,2], d: f64[2,2] = split[indices=(1,), axis=0] a\n"
        "  e: f64[1,2] = multiply c b\n"
        "  f: f64[1,2] = add e 0.5:f32[]\n"
        "  g: f64[2,2] = maximum d 0\n"
        "  h: f64[2,2] = subtract g 3\n"
        "  return f, h"
    )


def test_golden_lambda_name_inputs_returned_and_literal_outputs():
    graph = tg.make_graph(lambda x, y: (x.T.reshape(-1) / y, x, np.nan))(
        np.zeros((2, 3), np.float32), 3
    )
    assert str(graph) == (
        "# graph <lambda>\n"
        "graph lambda_(a: f32[2,3], b: i64~[]):\n"
        "  c: f32[3,2] = transpose[axes=(1, 0)] a\n"
        "  d: f32[6] = reshape[shape=(6,)] c\n"
        "  e: f32[6] = divide d b\n"
        "  return e, a, nan"
    )


def test_big_array_constants_show_no_data():
    w = np.arange(100.0)
    graph = tg.make_graph(lambda x: x + w)(np.ones(100))
    lines = str(graph).splitlines()
    assert lines[2] == "  b: f64[100] = const"
    assert lines[3] == "  c: f64[100] = add a b"


# -- names ------------------------------------------------------------------------------------


def _chain(n: int, prim=negative_p, aval=F64_3, name="f") -> Graph:
    x = arg_node(aval)
    e = Edge(x, 0)
    nodes = []
    for _ in range(n):
        node = Node(prim, (e,), Params(), (aval,))
        nodes.append(node)
        e = Edge(node, 0)
    return Graph((Edge(x, 0),), (e,), tuple(nodes), name=name)


def test_names_follow_definition_order_and_match_the_listing():
    g = _chain(30)
    names = value_names(g)
    order = [names[g.inputs[0]]] + [names[Edge(n, 0)] for n in g.nodes]
    assert order[:4] == ["a", "b", "c", "d"]
    assert order[25:28] == ["z", "ba", "bb"]
    lines = str(g).splitlines()[2:-1]
    for line, node in zip(lines, g.nodes):
        assert line.startswith(f"  {names[Edge(node, 0)]}: f64[3] = negative ")


def test_names_skip_keywords_builtins_and_np():
    g = _chain(800)
    names = list(value_names(g).values())
    assert len(set(names)) == len(names) == 801
    for bad in ("np", "if", "in", "is", "as", "or", "id", "abs", "all", "any", "del", "def"):
        assert bad not in names
    assert all(n.isidentifier() for n in names)


def test_scalar_constants_get_no_name_and_print_inline():
    g = tg.make_graph(lambda x: x * 2.0 + np.float32(1.5))(np.ones(3))
    names = value_names(g)
    assert sorted(names.values()) == ["a", "b", "c"]
    assert "multiply a 2.0" in str(g)
    assert "add b 1.5:f32[]" in str(g)


@given(st.text(max_size=12))
def test_identifier_is_always_a_safe_name(name):
    s = identifier(name)
    assert s.isidentifier()
    import keyword

    assert not keyword.iskeyword(s) and not keyword.issoftkeyword(s)


def test_identifier_examples():
    assert identifier("<lambda>") == "lambda_"
    assert identifier("f") == "f"
    assert identifier("") == "f"
    assert identifier("2x") == "f_2x"
    assert identifier("class") == "class_"
    assert identifier("a b.c") == "a_b_c"
    assert identifier(None) == "f"
    assert identifier("np") == "np_"  # generated code must still reach NumPy and builtins
    assert identifier("sum") == "sum_"


def test_literals():
    assert literal(2.0) == "2.0"
    assert literal(3) == "3"
    assert literal(float("-inf")) == "-inf"
    assert literal(np.asarray(np.float32(0.1))) == "0.1:f32[]"
    assert literal(np.asarray(np.int8(-3))) == "-3:i8[]"


# -- params and odd graphs --------------------------------------------------------------------


def _call_shape(*avals, graph):
    return graph.out_avals[0]


call_p = Primitive("call", impl=lambda *xs, graph: graph(*xs), shape=_call_shape)


def test_subgraph_params_print_as_references():
    inner = _chain(2, name="<inner fn>")
    x = arg_node(F64_3)
    node = Node(call_p, (Edge(x, 0),), Params(graph=inner), (F64_3,))
    g = Graph((Edge(x, 0),), (Edge(node, 0),), (node,))
    assert "  b: f64[3] = call[graph={inner_fn}] a" in str(g)


def test_string_params_stay_on_one_line():
    x = arg_node(F64_3)
    node = Node(negative_p, (Edge(x, 0),), Params(note='a "b"\nc'), (F64_3,))
    g = Graph((Edge(x, 0),), (Edge(node, 0),), (node,), name="bad\nname")
    lines = str(g).splitlines()
    assert lines[0] == "# graph bad\\nname"
    assert lines[1] == "graph bad_name(a: f64[3]):"
    assert lines[2] == "  b: f64[3] = negative[note='a \"b\"\\nc'] a"


def test_a_broken_graph_still_prints():
    x, y = arg_node(F64_3), arg_node(F64_3)
    node = Node(add_p, (Edge(x, 0), Edge(y, 3)), Params(), (F64_3,))  # y is not an input
    g = Graph((Edge(x, 0),), (Edge(node, 0),), (node,))
    assert "c: f64[3] = add a ?" in str(g)


def test_unlisted_array_constant_prints_where_it_is_read():
    c = const_node(np.ones(3))
    x = arg_node(F64_3)
    node = Node(add_p, (Edge(x, 0), Edge(c, 0)), Params(), (F64_3,))
    g = Graph((Edge(x, 0),), (Edge(node, 0),), (node,))
    assert str(g).splitlines()[2:] == [
        "  b: f64[3] = const[value=[1., 1., 1.]]",
        "  c: f64[3] = add a b",
        "  return c",
    ]
    assert value_names(g)[Edge(c, 0)] == "b"


# -- Graphviz -----------------------------------------------------------------------------------

_QUOTED = r'"(?:[^"\\\n]|\\.)*"'
_NODE_LINE = re.compile(rf"  (n\d+) \[label=({_QUOTED})(?:, [a-z]+=(?:[\w.]+|{_QUOTED}))*\];")
_EDGE_LINE = re.compile(r"  (n\d+) -> (n\d+) \[label=\d+(?:, taillabel=\d+)?\];")


def _parse_dot(text: str):
    lines = text.splitlines()
    assert re.fullmatch(rf"digraph {_QUOTED} \{{", lines[0])
    assert lines[-1] == "}"
    nodes, edges = {}, []
    for line in lines[1:-1]:
        if m := _NODE_LINE.fullmatch(line):
            assert m.group(1) not in nodes
            nodes[m.group(1)] = m.group(2)
        elif m := _EDGE_LINE.fullmatch(line):
            assert m.group(1) in nodes and m.group(2) in nodes  # producers come first
            edges.append((m.group(1), m.group(2)))
        else:
            assert line in ("  rankdir=TB;", '  node [shape=box, fontname="monospace"];'), line
    return nodes, edges


def test_dot_has_one_edge_per_node_input():
    def f(x, y):
        lo, hi = sp.split(x, (1,), 0)
        return np.sin(lo) * 2.0 + y, hi * hi, x

    g = tg.make_graph(f)(np.ones(3), np.float32(1))
    nodes, edges = _parse_dot(to_dot(g))
    assert len(edges) == sum(len(n.inputs) for n in g.nodes)
    labels = "".join(nodes.values())
    for name in value_names(g).values():
        assert f"{name}: " in labels
    assert "split[indices=(1,), axis=0]" in labels


def test_dot_escapes_user_strings():
    x = arg_node(F64_3)
    node = Node(negative_p, (Edge(x, 0),), Params(note='q"\\ -> n0 ];\n'), (F64_3,))
    g = Graph((Edge(x, 0),), (Edge(node, 0),), (node,), name='evil" ]; n9 -> n9 \\')
    text = to_dot(g)
    nodes, edges = _parse_dot(text)
    assert edges == [("n0", "n1")]
    assert text.startswith('digraph "evil\\" ]; n9 -> n9 \\\\" {')


def test_dot_of_a_chain():
    g = _chain(50, prim=sin_p)
    nodes, edges = _parse_dot(to_dot(g))
    assert len(nodes) == 51 and len(edges) == 50


def test_format_graph_is_str():
    g = _chain(3)
    assert format_graph(g) == str(g)
