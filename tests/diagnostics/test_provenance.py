"""Provenance: nodes record the user's line (and backward nodes their forward primitive) only
while a switch is on; re-tracing, jit's simplification and the vjp split keep the records."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tests.diagnostics.helpers import line_of
from tracegrad.diagnostics.provenance import origin_of
from tracegrad.transforms.vjp import vjp_graph

HERE = __file__


def f(x):
    y = np.sin(x)  # LINE: sin
    return np.sum(y * y)  # LINE: sum


@pytest.fixture
def switched():
    saved = tg.config.provenance
    tg.config.provenance = True
    yield
    tg.config.provenance = saved


def _sites(graph) -> dict[str, set]:
    """Per primitive name, the (forward primitive, line, order) of its nodes' origins."""
    out: dict[str, set] = {}
    for node in graph.nodes:
        o = origin_of(node)
        if o is not None:
            where = None if o.site is None else f"{o.site[0]}:{o.site[1]}"
            out.setdefault(node.prim.name, set()).add((o.prim, where, o.order))
    return out


def test_forward_nodes_record_the_user_line(switched):
    sites = _sites(tg.make_graph(f)(np.ones(3)))
    assert sites["sin"] == {("sin", line_of(HERE, "sin"), 0)}
    assert sites["sum"] == {("sum", line_of(HERE, "sum"), 0)}


def test_backward_nodes_name_their_forward_primitive(switched):
    sites = _sites(tg.make_graph(tg.grad(f))(np.ones(3)))
    assert ("sin", line_of(HERE, "sin"), 1) in sites["cos"]  # sin's derivative
    # the backward multiplies belong to the derivatives of y * y and of sin
    assert ("multiply", line_of(HERE, "sum"), 1) in sites["multiply"]
    assert ("sin", line_of(HERE, "sin"), 1) in sites["multiply"]


def test_jit_keeps_lines_through_simplification(switched):
    g = tg.jit(tg.grad(f))
    g(np.ones(3))
    graph = g.lower(np.ones(3)).graph
    assert ("sin", line_of(HERE, "sin"), 1) in _sites(graph)["cos"]


def test_vjp_split_keeps_lines(switched):
    # the linear graph rebuilds the nodes that read residuals: they keep their origins
    linear = vjp_graph(tg.make_graph(f)(np.ones(3))).linear
    sites = _sites(linear)
    assert ("sin", line_of(HERE, "sin"), 1) in sites["multiply"]
    assert ("multiply", line_of(HERE, "sum"), 1) in sites["multiply"]


def test_nothing_recorded_when_off():
    saved = (tg.config.provenance, tg.config.debug_nans, tg.config.debug_infs)
    tg.config.provenance = tg.config.debug_nans = tg.config.debug_infs = False
    try:
        graph = tg.make_graph(tg.grad(f))(np.ones(3))
    finally:
        tg.config.provenance, tg.config.debug_nans, tg.config.debug_infs = saved
    assert all(origin_of(n) is None for n in graph.nodes)
