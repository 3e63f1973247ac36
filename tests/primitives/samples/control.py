"""SAMPLES rows for the control-flow primitives (cond, while_loop, scan).

Each draws operands and a sub-graph from a small menu of smooth bodies (sin, cos, products,
sums: no kinks, so finite differences are fair), traced with `make_graph` for the drawn shapes
and dtype. The while_loop counts with an integer carry against a const bound, so its trip count
is known and recorded (`trips`), as it is for a loop first run on concrete values: its reverse
mode is a scan of that length. cond's index may fall outside the branches (it is clamped).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from tests import strategies as S
from tests.primitives.samples.row import Sample
from tracegrad.api.jit import make_graph
from tracegrad.primitives import control


def _graph(fn, *examples):
    return make_graph(fn)(*examples)


# bodies of a scan: (k, c, x) -> (c, y), elementwise in k, c, x of one shape
_SCAN_BODIES = [
    lambda k, c, x: (np.sin(c) * x + k, c * x),
    lambda k, c, x: (c * np.cos(x) - k * c, (np.sin(x) + c, k * x)),
    lambda k, c, x: (c + x * k, ()),
]


def _scan(data, dtype):
    shape = S.shapes(data, max_dims=2, max_side=3)
    length = data.draw(st.integers(0, 4), label="length")
    body = data.draw(st.sampled_from(_SCAN_BODIES), label="body")
    k = S.array(data, shape, dtype, -1.0, 1.0)
    c = S.array(data, shape, dtype, -1.0, 1.0)
    xs = S.array(data, (length, *shape), dtype, -1.0, 1.0)
    graph = _graph(body, k, c, xs[0] if length else np.zeros(shape, dtype))
    params = {
        "body": graph,
        "n_consts": 1,
        "n_carry": 1,
        "length": length,
        "reverse": data.draw(st.booleans(), label="reverse"),
    }
    return (k, c, xs), params


def _counted_scan(data, dtype):
    """A scan with an integer carry beside the float one (a fori_loop's counter)."""
    shape = S.shapes(data, max_dims=2, max_side=3)
    length = data.draw(st.integers(0, 4), label="length")
    c = S.array(data, shape, dtype, -1.0, 1.0)

    def body(i, c):
        return i + 1, np.sin(c) * 0.5 + c * i.astype(c.dtype) * 0.25

    graph = _graph(body, np.int64(0), c)
    params = {"body": graph, "n_consts": 0, "n_carry": 2, "length": length, "reverse": False}
    return (np.asarray(0, np.int64), c), params


def _while(data, dtype):
    shape = S.shapes(data, max_dims=2, max_side=3)
    trips = data.draw(st.integers(0, 4), label="trips")
    k = S.array(data, shape, dtype, -1.0, 1.0)
    c = S.array(data, shape, dtype, -1.0, 1.0)
    n = np.asarray(trips, np.int64)
    cond = _graph(lambda n, i, c: i < n, n, n, c)
    body = _graph(lambda k, i, c: (i + 1, np.sin(c) * k + c * 0.5), k, n, c)
    params = {
        "cond_graph": cond,
        "body": body,
        "n_cond_consts": 1,
        "n_consts": 1,
        "trips": trips,
    }
    return (n, k, np.asarray(0, np.int64), c), params


_BRANCHES = [
    lambda x, y: np.sin(x) * y,
    lambda x, y: x * y + x,
    lambda x, y: np.cos(y) - x * 2.0,
]


def _cond(data, dtype):
    shape = S.shapes(data, max_dims=2, max_side=3)
    x = S.array(data, shape, dtype, -1.0, 1.0)
    y = S.array(data, shape, dtype, -1.0, 1.0)
    n = data.draw(st.integers(1, 3), label="branches")
    branches = tuple(_graph(b, x, y) for b in _BRANCHES[:n])
    if n == 2 and data.draw(st.booleans(), label="bool index"):
        index = np.asarray(data.draw(st.booleans(), label="pred"))
    else:  # out of range on purpose now and then: the index is clamped
        index = np.asarray(data.draw(st.integers(-1, n), label="index"), np.int64)
    return (index, x, y), {"branches": branches}


def _either(*draws):
    def draw(data, dtype):
        return data.draw(st.sampled_from(draws), label="sample kind")(data, dtype)

    return draw


SAMPLES = {
    control.scan_p: Sample(_either(_scan, _counted_scan)),
    control.while_loop_p: Sample(_while),
    control.cond_p: Sample(_cond),
}
