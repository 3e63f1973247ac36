"""`to_dot` output accepted by Graphviz itself (the oracle), where `dot` is installed."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.ir import to_dot

DOT = shutil.which("dot")


@pytest.mark.skipif(DOT is None, reason="Graphviz's dot is not installed")
def test_graphviz_renders_the_dot_text_of_a_gradient_graph():
    def f(x):
        return np.sum(np.tanh(x) * x) + np.max(x[1:]) * 2.0

    graph = tg.make_graph(tg.grad(f))(np.linspace(-1.0, 1.0, 4))
    result = subprocess.run(
        [DOT, "-Tsvg"], input=to_dot(graph), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "<svg" in result.stdout
    # every node of the graph is drawn (one <g class="node"> per node with a name)
    assert result.stdout.count('class="node"') >= len(graph.nodes) - 5
