"""SAMPLES rows for checkpointing: `checkpoint` over a small smooth body, with or without the
residuals a policy saves as extra outputs (the `checkpoint_name` marks a body is traced with are
stripped when a checkpoint is bound, as `tg.checkpoint` does).

The bodies are smooth (sin, cos, products), so finite differences are fair; the saved outputs
are drawn with the policies `tg.checkpoint` uses, so the rows see what a user's graph holds.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests import strategies as S
from tests.primitives.samples.row import Sample
from tracegrad.api.jit import make_graph
from tracegrad.ir.graph import Graph
from tracegrad.primitives import custom
from tracegrad.transforms.custom_checkpoint import saved_residuals, strip_names

_BODIES = [
    lambda x, y: np.sin(x) * y,
    lambda x, y: (np.cos(x @ y.T) + 1.0, x * y),
    lambda x, y: np.sin(custom.checkpoint_name(x * y, "h")) * x,
]
_POLICIES = [
    ("nothing_saveable",),
    ("everything_saveable",),
    ("dots_saveable",),
    ("save_only_these_names", ("h",)),
]


def _checkpoint(data, dtype):
    shape = S.shapes(data, min_dims=2, max_dims=2, max_side=3)
    x = S.array(data, shape, dtype, -1.0, 1.0)
    y = S.array(data, shape, dtype, -1.0, 1.0)
    body = data.draw(st.sampled_from(_BODIES), label="body")
    graph, names = strip_names(make_graph(body)(x, y))
    policy = data.draw(st.sampled_from(_POLICIES), label="policy")
    saved = saved_residuals(graph, policy, names)
    if saved:
        outputs = tuple(graph.outputs) + tuple(saved)
        graph = Graph.from_outputs(graph.inputs, outputs, name=graph.name)
    return (x, y), {"body": graph, "n_saved": len(saved)}


SAMPLES = {
    custom.checkpoint_p: Sample(_checkpoint),
}
