"""`loads` on randomly damaged `dumps` documents: it raises only `ValueError`, with a short
message, or it returns a graph that verifies, describes at most `max_bytes` and round-trips;
either way it allocates little (tracemalloc), however large the document says its values are.
"""

from __future__ import annotations

import json
import random
import tracemalloc

import numpy as np
from hypothesis import given, reject, settings
from hypothesis import strategies as st

import tracegrad as tg
from tests.ir.test_serialize import described_bytes
from tracegrad.ir import Aval, Edge, Graph, Node, Params, Primitive, arg_node, verify
from tracegrad.ir.serialize import MAX_BYTES, dumps, loads

PEAK = 50 * 2**20  # what one `loads` of these small documents may allocate at most
MESSAGE = 1000  # characters

# -- the documents --------------------------------------------------------------------------------

fuzz_call_p = Primitive(
    "serialize_fuzz_call",
    impl=lambda *xs, graph: graph(*xs),
    shape=lambda *avals, graph: graph.out_avals[0],
)


def _constants(x, s):
    # scalar constants (weak), an array constant, reductions with axis and keepdims
    return np.sum(np.sin(x) * 2.0, axis=0, keepdims=True) + s, x.reshape(3, 1) + np.arange(3.0)


def _structures(d, xs, nothing):
    # pytrees in and out (dict, list, None) and np.split's several outputs
    lo, hi = np.split(d["b"], [1], axis=0)
    return {"lo": lo * xs[0], "hi": [hi.T, None], "x": np.cumsum(xs[1][1:, ::2], axis=1)}


def _products(x, y):
    return np.einsum("ij,kj->ik", x, y), np.tensordot(x, y, axes=([1], [1])), x[[0, 1], 1:]


def _backward(x):
    return np.sum(np.cumprod(x)) + np.sum(np.pad(x, 1)[::2] * np.tile(x, 2)[[0, 3]].sum())


def _sub_graph() -> Graph:
    inner = tg.make_graph(lambda x: np.tanh(x) * 3.0)(np.ones(3))
    x = arg_node(Aval((3,), np.float64))
    node = Node(fuzz_call_p, (Edge(x, 0),), Params(graph=inner), inner.out_avals)
    return Graph((Edge(x, 0),), (Edge(node, 0),), (node,), name="outer")


GRAPHS = [
    tg.make_graph(_constants)(np.ones(3), 1.0),
    tg.make_graph(_structures)({"b": np.ones((3, 2))}, [2.5, np.ones((3, 4))], None),
    tg.make_graph(_products)(np.ones((2, 3)), np.ones((4, 3))),
    tg.make_graph(tg.grad(_backward))(np.linspace(0.5, 1.5, 3)),
    _sub_graph(),
]
DOCS = [dumps(g) for g in GRAPHS]
# small enough that a mutated shape is soon over it, large enough for every undamaged document
SMALL_LIMIT = 2 * max(described_bytes(g) for g in GRAPHS)

# -- mutations ------------------------------------------------------------------------------------

_WORDS = st.sampled_from(
    ["", "leaf", "tuple", "dict", "none", "array", "graph", "aval", "int", "float", "str"]
    + ["float64", "int8", "O", ">f8", "f8,i4", "nan", "inf", "-inf", "nan:7ff8000000000001"]
    + ["const", "arg", "sin", "sum", "split", "einsum", "tracegrad.graph", "AAAA", "x" * 10**5]
)
_KEYS = st.sampled_from(
    ["kind", "children", "keys", "shape", "dtype", "weak_type", "data", "listed", "prim"]
    + ["inputs", "params", "out_avals", "value", "axis", "int", "tuple", "float", "bool"]
    + ["graph", "aval", "array", "scalar", "complex", "none", "str", "format", "version"]
) | st.text(max_size=4)
_INTS = st.integers() | st.sampled_from([0, 1, -1, 2**31, 2**40, 2**63, -(2**63) - 1, 10**4000])
_SCALARS = st.none() | st.booleans() | _INTS | st.floats() | st.text(max_size=6) | _WORDS
_JSON = st.recursive(
    _SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_KEYS, children, max_size=3),
    max_leaves=10,
)
# shapes over the small limit, the default one (2 GiB) or the per-value one; wide lists
_SHAPES = [[64, 64], [2**20], [2**28, 2], [2**30], [2**16] * 2, [0, 2**31], [2**20] * 3, [1] * 65]
_BIG = st.sampled_from(_SHAPES + [[[0, 0]] * 1000, [0] * 10**4, [[]] * 10**4])
_DEEP_TEXT = "<deep>"  # replaced, after json.dumps, by brackets nested deeper than any limit


def _locations(doc) -> list[tuple]:
    """(container, key) of every value in `doc`, found without recursion, in a fixed shuffled
    order: hypothesis favours early choices, which would otherwise always be the same keys."""
    out, stack = [], [doc]
    while stack:
        obj = stack.pop()
        if isinstance(obj, dict):
            items = list(obj.items())
        elif isinstance(obj, list):
            items = list(enumerate(obj))
        else:
            continue
        out.extend((obj, k) for k, _ in items)
        stack.extend(v for _, v in items)
    random.Random(len(out)).shuffle(out)
    return out


def _retyped(v):
    """The same content as another JSON type: strings in numeric places and the like."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int | float):
        return str(v)
    if isinstance(v, str):
        return [v]
    if isinstance(v, list):
        return {str(i): x for i, x in enumerate(v)}
    if isinstance(v, dict):
        return list(v.values())
    return 0


def _copy(v):
    return json.loads(json.dumps(v))  # values are never shared: a later mutation edits one


def _nested(v, data):
    depth = data.draw(st.sampled_from([1, 2, 10, 100, "text"]), label="depth")
    if depth == "text":  # deeper than json.dumps could write: spliced into the text later
        return _DEEP_TEXT
    for _ in range(depth):
        v = data.draw(st.sampled_from([[v], {"tuple": [v]}, {"kind": "tuple", "children": [v]}]))
    return v


# "nearby" and "transplant" keep a document plausible (an edge to another value, an axis one
# further, one node's aval in another's place), so that many damaged documents still load;
# "grow" gives an aval or an array a large shape, to reach the limits on sizes
MUTATIONS = ["replace", "nearby", "transplant", "retype", "delete", "duplicate", "add", "big"]
MUTATIONS += ["nest", "nearby", "transplant", "grow", "grow"]


def _mutate(doc, data) -> None:
    where = _locations(doc)
    if not where:
        return
    obj, key = where[data.draw(st.integers(0, len(where) - 1), label="location")]
    kind = data.draw(st.sampled_from(MUTATIONS), label="mutation")
    value = obj[key]
    if kind == "replace":
        obj[key] = data.draw(_JSON, label="value")
    elif kind == "nearby" and type(value) is int:
        obj[key] = value + data.draw(st.integers(-3, 3), label="step")
    elif kind == "transplant":
        other, other_key = where[data.draw(st.integers(0, len(where) - 1), label="from")]
        obj[key] = _copy(other[other_key])
    elif kind == "retype":
        obj[key] = _retyped(value)
    elif kind == "delete":
        del obj[key]
    elif kind == "duplicate" and isinstance(obj, list):
        obj.insert(key, _copy(value))
    elif kind == "add" and isinstance(obj, dict):
        obj[data.draw(_KEYS, label="key")] = data.draw(_JSON, label="value")
    elif kind == "big":
        obj[key] = _copy(data.draw(_BIG, label="big"))
    elif kind == "nest":
        obj[key] = _nested(value, data)
    elif kind == "grow":
        shaped = [v for v, k in where if k == "shape" and isinstance(v, dict)]
        if shaped:
            target = shaped[data.draw(st.integers(0, len(shaped) - 1), label="aval")]
            target["shape"] = list(data.draw(st.sampled_from(_SHAPES), label="shape"))


def _damaged(data) -> str:
    doc = json.loads(data.draw(st.sampled_from(DOCS), label="document"))
    for _ in range(data.draw(st.integers(1, 4), label="mutations")):
        _mutate(doc, data)
    try:
        text = json.dumps(doc)  # (NaN and inf floats come out as NaN and Infinity)
    except RecursionError:  # nested too deeply for json.dumps itself: the text route does it
        reject()
    depth = data.draw(st.sampled_from([1000, 10**5]), label="deep")
    return text.replace(json.dumps(_DEEP_TEXT), "[" * depth + "]" * depth)


# -- the test -------------------------------------------------------------------------------------


def _load_measured(text: str, max_bytes: int):
    """(graph or None, ValueError or None, peak bytes allocated by `loads`)."""
    outer = tracemalloc.is_tracing()
    if not outer:
        tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        try:
            graph, error = loads(text, max_bytes=max_bytes), None
        except ValueError as err:  # anything else fails the test, with its traceback
            graph, error = None, err
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        if not outer:
            tracemalloc.stop()
    return graph, error, peak


def test_the_undamaged_documents_load_within_the_small_limit():
    for g, text in zip(GRAPHS, DOCS):
        assert described_bytes(g) <= SMALL_LIMIT
        assert str(loads(text, max_bytes=SMALL_LIMIT)) == str(g)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_damaged_documents_raise_value_errors_or_load_within_limits(data):
    text = _damaged(data)
    max_bytes = data.draw(st.sampled_from([MAX_BYTES, SMALL_LIMIT]), label="max_bytes")
    graph, error, peak = _load_measured(text, max_bytes)
    assert peak < PEAK, peak
    if error is not None:
        assert len(str(error)) < MESSAGE, str(error)[:MESSAGE]
        return
    assert described_bytes(graph) <= max_bytes
    assert verify(graph) is graph
    assert str(loads(dumps(graph), max_bytes=max_bytes)) == str(graph)
