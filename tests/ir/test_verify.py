"""`verify` accepts traced graphs and catches each corruption (graphs built by hand)."""

from __future__ import annotations

import copy
import weakref

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
from tracegrad.ir import Aval, Edge, Graph, Node, Params, arg_node, const_node
from tracegrad.ir.verify import verify
from tracegrad.primitives import shape as sp
from tracegrad.primitives.elementwise import add_p, multiply_p, negative_p, sin_p
from tracegrad.primitives.shape import split_p

F64_3 = Aval((3,), np.float64)


def _node(prim, *edges, aval=F64_3, **params):
    return Node(prim, tuple(edges), Params(params), (aval,))


def _graph(inputs, outputs, nodes):
    return Graph(tuple(inputs), tuple(outputs), tuple(nodes))


def test_traced_graphs_verify_and_verify_returns_the_graph():
    def f(x, y):
        lo, hi = sp.split(x, (1,), 0)
        return np.sum(np.sin(lo) * 2.0 + y, axis=0), hi.T, 3.0, x

    g = tg.make_graph(f)(np.ones((3, 2)), np.float32(1))
    assert verify(g) is g


def test_nodes_are_immutable_and_copy_and_evolve_with_their_fields():
    x = arg_node(F64_3)
    node = _node(sin_p, Edge(x, 0))
    for name in ("prim", "inputs", "params", "out_avals", "other"):
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            setattr(node, name, None)
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            delattr(node, name)
    for twin in (copy.copy(node), copy.deepcopy(node)):
        assert type(twin) is Node and twin is not node
        assert twin.prim.name == "sin" and twin.out_avals == (F64_3,) and twin.params == {}
        assert twin.inputs[0][0].prim.name == "arg"
    changed = attrs.evolve(node, prim=negative_p)
    assert type(changed) is Node and changed.prim is negative_p and changed.inputs is node.inputs
    assert node.prim is sin_p  # (unchanged)
    assert weakref.ref(node)() is node


@given(st.integers(0, 3), st.sampled_from([np.float32, np.float64]))
def test_random_chains_verify(n, dtype):
    def f(x):
        for i in range(n):
            x = np.exp(x) if i % 2 else x * 0.5 + x
        return x

    g = tg.make_graph(f)(np.ones((2, 2), dtype))
    assert verify(g) is g


def test_forward_reference():
    x = arg_node(F64_3)
    a = _node(sin_p, Edge(x, 0))
    b = _node(negative_p, Edge(a, 0))
    g = _graph([Edge(x, 0)], [Edge(b, 0)], [b, a])  # b listed before the node it reads
    with pytest.raises(ValueError, match=r"node 0 \(negative.*input 0.*not defined before it"):
        verify(g)


def test_reading_an_arg_that_is_not_an_input():
    x, stray = arg_node(F64_3), arg_node(F64_3)
    a = _node(add_p, Edge(x, 0), Edge(stray, 0))
    with pytest.raises(ValueError, match=r"node 0 \(add.*input 1.*arg node"):
        verify(_graph([Edge(x, 0)], [Edge(a, 0)], [a]))


def test_edge_index_out_of_range():
    x = arg_node(F64_3)
    a = _node(sin_p, Edge(x, 0))
    b = _node(negative_p, Edge(a, 1))
    with pytest.raises(ValueError, match=r"input 0: it reads output 1 of a sin node, which has 1"):
        verify(_graph([Edge(x, 0)], [Edge(b, 0)], [a, b]))


def test_node_listed_twice():
    x = arg_node(F64_3)
    a = _node(sin_p, Edge(x, 0))
    with pytest.raises(ValueError, match=r"node 1 \(sin.*appears twice"):
        verify(_graph([Edge(x, 0)], [Edge(a, 0)], [a, a]))


def test_output_edge_undefined():
    x = arg_node(F64_3)
    a = _node(sin_p, Edge(x, 0))
    b = _node(negative_p, Edge(a, 0))
    with pytest.raises(ValueError, match=r"graph output 1: it reads a negative node .*not defined"):
        verify(_graph([Edge(x, 0)], [Edge(a, 0), Edge(b, 0)], [a]))


def test_output_edge_index_out_of_range():
    x = arg_node(F64_3)
    a = _node(sin_p, Edge(x, 0))
    with pytest.raises(ValueError, match=r"graph output 0: it reads output 2 of a sin node"):
        verify(_graph([Edge(x, 0)], [Edge(a, 2)], [a]))


@pytest.mark.parametrize(
    "wrong",
    [Aval((3,), np.float32), Aval((3,), np.float64, True), Aval((1, 3), np.float64)],
    ids=["dtype", "weak_type", "shape"],
)
def test_recorded_aval_disagrees_with_the_shape_rule(wrong):
    x = arg_node(F64_3)
    a = _node(sin_p, Edge(x, 0), aval=wrong)
    with pytest.raises(ValueError, match=r"node 0 \(sin.*shape rule gives \(f64\[3\]\)"):
        verify(_graph([Edge(x, 0)], [Edge(a, 0)], [a]))


def test_shape_rule_rejects_the_inputs():
    x, y = arg_node(F64_3), arg_node(Aval((4,), np.float64))
    a = _node(multiply_p, Edge(x, 0), Edge(y, 0))
    with pytest.raises(ValueError, match=r"shape rule rejects its inputs \(f64\[3\], f64\[4\]\)"):
        verify(_graph([Edge(x, 0), Edge(y, 0)], [Edge(a, 0)], [a]))


def test_wrong_arity_and_params():
    x = arg_node(F64_3)
    a = _node(sin_p, Edge(x, 0), Edge(x, 0))
    with pytest.raises(ValueError, match=r"sin takes 1 inputs, got 2"):
        verify(_graph([Edge(x, 0)], [Edge(a, 0)], [a]))
    b = _node(sin_p, Edge(x, 0), bogus=1)
    with pytest.raises(ValueError, match=r"sin has no params \['bogus'\]"):
        verify(_graph([Edge(x, 0)], [Edge(b, 0)], [b]))


def test_multiple_results_recorded_wrong():
    x = arg_node(F64_3)
    s = Node(split_p, (Edge(x, 0),), Params(indices=(1,), axis=0), (F64_3, F64_3))
    with pytest.raises(ValueError, match=r"shape rule gives \(f64\[1\], f64\[2\]\)"):
        verify(_graph([Edge(x, 0)], [Edge(s, 1)], [s]))


def test_graph_input_that_is_not_an_arg():
    c = const_node(np.ones(3))
    a = _node(sin_p, Edge(c, 0))
    with pytest.raises(ValueError, match=r"graph input 0: it is a const value, not an `arg` node"):
        verify(_graph([Edge(c, 0)], [Edge(a, 0)], [c, a]))


def test_arg_node_listed_among_nodes():
    x = arg_node(F64_3)
    a = _node(sin_p, Edge(x, 0))
    with pytest.raises(ValueError, match=r"node 0 \(arg.*(appears twice|is an `arg` node)"):
        verify(_graph([Edge(x, 0)], [Edge(a, 0)], [x, a]))
    y = arg_node(F64_3)
    with pytest.raises(ValueError, match=r"node 0 \(arg.*is an `arg` node"):
        verify(_graph([Edge(x, 0)], [Edge(a, 0)], [y, a]))


def test_not_an_edge():
    x = arg_node(F64_3)
    a = Node(sin_p, (x,), Params(), (F64_3,))  # a Node where an Edge belongs
    with pytest.raises(ValueError, match=r"input 0: it is a Node, not an Edge"):
        verify(_graph([Edge(x, 0)], [Edge(a, 0)], [a]))


def test_unlisted_constants_are_allowed_but_checked():
    x = arg_node(F64_3)
    c = const_node(np.ones(3))
    a = _node(add_p, Edge(x, 0), Edge(c, 0))
    g = _graph([Edge(x, 0)], [Edge(a, 0), Edge(c, 0)], [a])
    assert verify(g) is g
    bad = Node(c.prim, (), Params(value=np.ones(3)), (Aval((4,), np.float64),))
    b = _node(add_p, Edge(x, 0), Edge(bad, 0))
    with pytest.raises(
        ValueError, match=r"constant \(not listed in graph.nodes\) that is malformed"
    ):
        verify(_graph([Edge(x, 0)], [Edge(b, 0)], [b]))


def test_listed_constant_with_a_wrong_aval():
    x = arg_node(F64_3)
    bad = Node(const_node(1.0).prim, (), Params(value=1.0), (Aval((), np.float64),))  # not weak
    a = _node(add_p, Edge(x, 0), Edge(bad, 0))
    with pytest.raises(ValueError, match=r"node 0 \(const.*shape rule gives \(f64~\[\]\)"):
        verify(_graph([Edge(x, 0)], [Edge(a, 0)], [bad, a]))
