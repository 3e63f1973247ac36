"""The JSON document of a graph: its format tag, version, limits and the keys of its objects.

Values are numbered in order of definition: graph inputs `0 .. n_in - 1`, then node `k` is
value `n_in + k`; an edge is `[value, output index]` naming an earlier value. Params carry type
tags (`{"float": "nan"}`, `{"tuple": [...]}`); arrays appear only in `const` nodes, as `{dtype,
shape, base64 data}`, and Python scalar constants keep their type (weak typing depends on it).
"""

from __future__ import annotations

import math
import re

FORMAT = "tracegrad.graph"
VERSION = 1
MAX_ELEMENTS = 2**31  # per array or aval: anything larger is taken as a corrupt document
MAX_NDIM = 64  # NumPy's own limit
MAX_DEPTH = 32  # nesting of params (tuples in tuples, sub-graphs) and of pytree structures
# `loads`' default `max_bytes`: a bound on the bytes of all the values a document describes
# (each input, each node's outputs, each constant, sub-graphs' too), not on the peak of a run.
# Per-value limits are not enough: a 685-byte document can describe 16 GiB of intermediates,
# each under MAX_ELEMENTS. 2 GiB leaves room for sizable programs; a trusted document of a
# larger one loads with a larger `max_bytes`.
MAX_BYTES = 2**31
MAX_MESSAGE = 800  # characters: a message never grows with the document that caused it

_GRAPH_KEYS = frozenset(
    {"format", "version", "name", "inputs", "outputs", "nodes", "in_tree", "out_tree"}
)
_NODE_KEYS = frozenset({"prim", "inputs", "params", "out_avals"})
_AVAL_KEYS = frozenset({"shape", "dtype", "weak_type"})
_ARRAY_KEYS = frozenset({"dtype", "shape", "data"})
_DTYPE_RE = re.compile(r"[<>=|]?[A-Za-z][A-Za-z0-9]{0,15}")
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_NAN_RE = re.compile(r"nan:[0-9a-f]{16}")
