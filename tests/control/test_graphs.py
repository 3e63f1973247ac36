"""Graphs holding sub-graphs: printing (indented, as a jaxpr's), JSON, verify, simplification
inside the sub-graphs, the merged forward scan of a jitted gradient, the generated code (a nested
function and a Python loop), the memory analysis, and the effect nodes of debug prints."""

from __future__ import annotations

import gc
import json
import tracemalloc

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.codegen import compile_graph, source
from tracegrad.ir import dumps, loads, verify
from tracegrad.ir.analysis import peak_bytes
from tracegrad.primitives import control
from tracegrad.testing import assert_bitwise_equal


def _scan_sum(h, xs):
    return tg.scan(lambda c, x: (c * 0.5 + np.sin(x), c * x), h, xs)


GOLDEN = """\
# graph _scan_sum
graph scan_sum(a: f64[2], b: f64[3,2]):
  c: f64[2], d: f64[3,2] = scan[body={lambda_}, n_consts=0, n_carry=1, length=3, reverse=False] a b
    graph lambda_(a: f64[2], b: f64[2]):
      c: f64[2] = multiply a 0.5
      d: f64[2] = sin b
      e: f64[2] = add c d
      f: f64[2] = multiply a b
      return e, f
  return c, d"""


def test_sub_graphs_print_indented_under_their_node():
    g = tg.make_graph(_scan_sum)(np.ones(2), np.ones((3, 2)))
    assert str(g) == GOLDEN


def test_nested_branches_and_loops_print_one_level_deeper_each():
    def f(x):
        def body(i, v):
            return tg.cond(np.sum(v) > 0, lambda v: np.sin(v), lambda v: v * i, v)

        return tg.fori_loop(0, 3, body, x)

    lines = str(tg.make_graph(f)(np.ones(2))).splitlines()
    cond_line = next(k for k, line in enumerate(lines) if "= cond[branches=(" in line)
    assert lines[cond_line].startswith("      ")  # inside the scan's body
    assert lines[cond_line + 1].startswith("        graph lambda_(")  # its branches below it


def _while(x):
    return tg.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, np.cos(c[1]) * x), (0, x))


def _fori(v):
    return tg.fori_loop(0, 2, lambda i, c: np.sin(c) * c + i, v)


def _graphs():
    x, xs = np.linspace(0.1, 0.5, 3), np.linspace(0, 1, 6).reshape(2, 3)
    cases = [
        (tg.make_graph(_scan_sum)(x, xs), (x, xs)),
        (tg.make_graph(_while)(x), (x,)),
        (tg.make_graph(lambda v: tg.switch(2, [np.sin, np.cos, np.tanh], v))(x), (x,)),
        (tg.make_graph(tg.grad(lambda h, xs: np.sum(_scan_sum(h, xs)[1])))(x, xs), (x, xs)),
        (tg.make_graph(tg.vmap(tg.grad(lambda v: np.sum(_fori(v)))))(xs), (xs,)),
    ]
    return cases


@pytest.mark.parametrize("case", range(5))
def test_json_round_trip_verify_and_both_executors_agree(case):
    g, args = _graphs()[case]
    assert verify(g) is g
    g2 = loads(dumps(g))
    assert str(g2) == str(g) and dumps(g2) == dumps(g)
    assert verify(g2) is g2
    want = g(*args)
    assert_bitwise_equal(tg.tree.leaves(g2(*args)), tg.tree.leaves(want))
    compiled = compile_graph(g)
    assert_bitwise_equal(list(compiled.fn(*tg.tree.leaves(args))), tg.tree.leaves(want))


def _counted(n, x):
    return tg.while_loop(lambda c: c[0] < n, lambda c: (c[0] + 1, np.cos(c[1])), (0, x))[1]


def test_a_loop_run_on_concrete_values_records_its_trip_count():
    seen = []

    def f(x):
        out = _counted(3, x)
        seen.append(out.edge.node)
        return np.sum(out)

    tg.grad(f)(np.array([0.3, 0.4]))  # concrete: the loop ran 3 times and recorded it
    assert seen[0].prim is control.while_loop_p and seen[0].params["trips"] == 3
    tg.jit(tg.jvp, static_argnums=0)(f, (np.ones(2),), (np.ones(2),))  # under jit: abstract
    assert seen[1].params["trips"] is None


def test_recording_the_trip_count_does_not_run_the_loop_twice(capsys):
    """The loop that counts the trips gives its result to the node recorded after it: under
    tg.grad, the forward loop runs once (the reverse scan then runs the backward half)."""

    def f(x):
        def body(c):
            tg.debug.print("step {}", c[0])
            return c[0] + 1, np.sin(c[1])

        return np.sum(tg.while_loop(lambda c: c[0] < 3, body, (0, x))[1])

    x = np.array([0.3, 0.4])
    np.testing.assert_allclose(
        tg.grad(f)(x), np.cos(np.sin(np.sin(x))) * np.cos(np.sin(x)) * np.cos(x)
    )
    assert capsys.readouterr().out == "step 0\nstep 1\nstep 2\n"


def _with_trips(graph, trips):
    """`graph` with its while_loop node recorded for `trips` steps (as a concrete run does)."""
    new = {}
    nodes = []
    for n in graph.nodes:
        ins = tuple(tg.ir.Edge(new.get(e.node, e.node), e.index) for e in n.inputs)
        params = n.params
        if n.prim is control.while_loop_p:
            params = tg.ir.Params({**params, "trips": trips})
        new[n] = m = tg.ir.Node(n.prim, ins, params, n.out_avals)
        nodes.append(m)
    outs = tuple(tg.ir.Edge(new.get(e.node, e.node), e.index) for e in graph.outputs)
    return tg.ir.Graph(graph.inputs, outs, tuple(nodes), graph.in_tree, graph.out_tree)


def test_a_recorded_trip_count_round_trips_and_is_checked_on_every_run():
    x = np.array([0.3, 0.4])
    g = loads(dumps(_with_trips(tg.make_graph(_counted)(3, x), 3)))
    assert [n.params["trips"] for n in g.nodes if n.prim is control.while_loop_p] == [3]
    assert_bitwise_equal(g(3, x), _counted(3, x))
    assert_bitwise_equal(compile_graph(g).fn(3, x)[0], _counted(3, x))
    # the graph stands for the path taken: a run that takes another number of steps raises
    message = r"the loop ran 2 times, but this graph recorded it from a run of 3"
    with pytest.raises(ValueError, match=message):
        g(2, x)
    with pytest.raises(ValueError, match=message):
        compile_graph(g).fn(2, x)
    with pytest.raises(ValueError, match=r"the loop ran over 3 times"):
        g(5, x)


def test_loads_validates_sub_graphs_against_their_operands():
    g64 = tg.make_graph(_scan_sum)(np.ones(2), np.ones((3, 2)))
    g32 = tg.make_graph(_scan_sum)(np.ones(2, np.float32), np.ones((3, 2), np.float32))
    doc = json.loads(dumps(g64))
    doc["nodes"][0]["params"]["body"] = json.loads(dumps(g32))["nodes"][0]["params"]["body"]
    with pytest.raises(
        ValueError, match=r"node 0 \(scan\).*takes \(f32\[2\], f32\[2\]\), but got \(f64"
    ):
        loads(json.dumps(doc))


def test_verify_checks_sub_graphs():
    g = tg.make_graph(_scan_sum)(np.ones(2), np.ones((3, 2)))
    node = g.nodes[0]
    body = node.params["body"]
    sin = [n for n in body.nodes if n.prim.name != "sin"]  # read, but no longer computed
    broken = tg.ir.Graph(body.inputs, body.outputs, tuple(sin), name="broken")
    bad_node = tg.ir.Node(node.prim, node.inputs, tg.ir.Params({**node.params, "body": broken}),
                          node.out_avals)  # fmt: skip
    bad = tg.ir.Graph(g.inputs, tuple(tg.ir.Edge(bad_node, i) for i in range(2)), (bad_node,))
    with pytest.raises(ValueError, match=r"its sub-graph 0 \('broken'\) is bad: verify"):
        verify(bad)


# -- simplification ---------------------------------------------------------------------------


def test_simplify_works_inside_sub_graphs():
    def f(h, xs):
        return tg.scan(lambda c, x: (c + x.T.T, np.sum(x) * 1.0), h, xs)

    lowered = tg.jit(f).lower(np.ones(2), np.ones((3, 2)))
    (node,) = [n for n in lowered.graph.nodes if n.prim is control.scan_p]
    names = [n.prim.name for n in node.params["body"].nodes]
    assert names == ["add", "sum"], names  # x.T.T and s * 1.0 are gone
    assert_bitwise_equal(
        list(tg.jit(f)(np.ones(2), np.ones((3, 2)))), list(f(np.ones(2), np.ones((3, 2))))
    )


def test_a_jitted_gradient_runs_the_forward_loop_once():
    """Reverse mode adds a forward scan that also stacks residuals; simplify merges it with
    the scan already in the graph (the same loop on the same operands)."""

    def loss(h, xs):
        c, ys = _scan_sum(h, xs)
        return np.sum(c) + np.sum(ys**2)

    g = tg.jit(tg.value_and_grad(loss)).lower(np.ones(2), np.ones((3, 2))).graph
    scans = [n for n in g.nodes if n.prim is control.scan_p]
    assert [n.params["reverse"] for n in scans] == [False, True]  # one forward, one backward
    value, grad = tg.jit(tg.value_and_grad(loss))(np.ones(2), np.ones((3, 2)))
    want_value, want_grad = tg.value_and_grad(loss)(np.ones(2), np.ones((3, 2)))
    np.testing.assert_array_equal(value, want_value)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-14)


def test_dead_outputs_of_loops_and_branches_are_dropped():
    def f(h, xs):
        (c, _), (y_used, y_dead) = tg.scan(lambda c, x: (c, (c[0] * x, np.exp(x))), (h, 0.0), xs)
        a, b = tg.cond(np.sum(h) > 0, lambda v: (v * 2, np.cos(v)), lambda v: (v, v), h)
        return c + np.sum(y_used) + a

    g = tg.jit(f).lower(np.ones(2), np.ones((3, 2))).graph
    (scan,) = [n for n in g.nodes if n.prim is control.scan_p]
    (cond,) = [n for n in g.nodes if n.prim is control.cond_p]
    assert len(scan.out_avals) == 3  # the two carries and the one y read
    assert "exp" not in [n.prim.name for n in scan.params["body"].nodes]
    assert len(cond.out_avals) == 1
    assert_bitwise_equal(tg.jit(f)(np.ones(2), np.ones((3, 2))), f(np.ones(2), np.ones((3, 2))))


# -- generated code ---------------------------------------------------------------------------


def test_generated_code_is_a_nested_function_and_a_python_loop():
    g = tg.make_graph(_scan_sum)(np.ones(2), np.ones((3, 2)))
    text = source(g)
    assert text.count("def _sub0(") == 1 and "for _Li in range(3):" in text
    w = tg.make_graph(_while)(np.ones(2))
    assert "while _sub0(" in source(w)
    c = tg.make_graph(lambda x: tg.switch(1, [np.sin, np.cos], x))(np.ones(2))
    assert "(_sub0, _sub1)[min(max(int(" in source(c)


def test_export_writes_the_nested_functions(tmp_path):
    h, xs = np.ones(2), np.linspace(0, 1, 6).reshape(3, 2)
    g = tg.make_graph(lambda h, xs: tg.scan(lambda c, x: (c + x * np.arange(2.0), c), h, xs))(h, xs)
    compiled = compile_graph(g)
    path = compiled.export(tmp_path / "loop.py")
    namespace = {"__file__": str(path)}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    got = namespace[compiled.name](h, xs)
    assert_bitwise_equal(list(got), list(g(h, xs)))


# -- memory -----------------------------------------------------------------------------------

M = 1_000_000


def test_peak_bytes_counts_one_step_of_the_body_and_the_outputs():
    x = np.ones(M)

    def f(x):
        return tg.fori_loop(0, 5, lambda i, v: np.sin(v) + 1.0, x)

    g = tg.make_graph(f)(x)
    predicted = peak_bytes(g)
    g(x)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        out = g(x)
        measured = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    del out
    # the carry a step replaces, its intermediate and its result (and the int counter's bytes)
    assert abs(predicted - 3 * 8 * M) < 100
    assert abs(measured - predicted) <= 0.15 * predicted
