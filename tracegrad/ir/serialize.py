"""`dumps`/`loads`: a graph as a versioned JSON document, validated on load (no pickle, no eval).

Values are numbered in order of definition: graph inputs `0 .. n_in - 1`, then node `k` is
value `n_in + k`; an edge is `[value, output index]` and may only name an earlier value.
Params carry explicit type tags (`{"float": "nan"}`, `{"tuple": [...]}`, `{"dtype": "float32"}`);
arrays appear only in `const` nodes, as `{dtype, shape, base64 data}`, and Python scalar
constants keep their Python type (weak typing depends on it). `loads` treats its input as
hostile: every malformed document raises `ValueError` (never another type), messages quote
untrusted data only cut short, params of conventional names are type-checked, every shape rule
is re-run against the recorded avals, and the values a document describes are bounded in all.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import math
import re
import reprlib
import struct

import numpy as np
import optree

from tracegrad import tree
from tracegrad.ir.graph import Edge, Graph, Node, Params, arg_node, arg_p, const_node, const_p
from tracegrad.ir.primitive import lookup
from tracegrad.ir.types import Aval
from tracegrad.ir.verify import check_shape_rule

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

# -- the types of conventional params -----------------------------------------------------------

_INT64 = range(-(2**63), 2**63)


def _int(v) -> bool:
    # sizes, axes and indices reach NumPy, which takes them as int64; a bool is not an int here
    return type(v) is int and v in _INT64


def _ints(v, max_len: int | None = MAX_NDIM) -> bool:
    """A tuple of int64 ints; per-axis tuples (a shape, slice bounds) hold at most MAX_NDIM."""
    return type(v) is tuple and (max_len is None or len(v) <= max_len) and all(map(_int, v))


def _int_pairs(v) -> bool:
    """pad's `pad_width`: one (before, after) pair of ints per axis."""
    return (
        type(v) is tuple
        and len(v) <= MAX_NDIM
        and all(type(p) is tuple and len(p) == 2 and _ints(p) for p in v)
    )


_INDEX_WORDS = frozenset({"array", "newaxis", "..."})


def _index_item(item) -> bool:
    """One item of gather's and scatter_add's `index` (see tracegrad.primitives.indexing)."""
    if type(item) is str:
        return item in _INDEX_WORDS
    if type(item) is not tuple or not item or type(item[0]) is not str:
        return _int(item)
    if item[0] == "slice":
        return len(item) == 4 and all(map(_int, item[1:]))
    return item[0] == "bool" and len(item) == 2 and type(item[1]) is bool


def _bool(v) -> bool:
    return type(v) is bool


_PER_AXIS = ("a tuple of at most 64 ints (int64)", _ints)
_FLAG = ("a bool", _bool)

# The types of params by name: every name a built-in primitive takes, with its exact type
# (the union where primitives differ: `axis` is a tuple for reductions, an int for
# concatenate). The names are conventions every primitive shares, a user's included (`axis`
# may also be None, NumPy's "all axes", which only a user's primitive takes). A param not
# listed here may hold any plain value; the shape rule re-run on load judges it.
PARAM_TYPES = {
    "axis": (
        "an int, a tuple of at most 64 ints (int64) or None",
        lambda v: v is None or _int(v) or _ints(v),
    ),
    # transpose's permutation, or tensordot's pair of contracted-axes tuples
    "axes": (
        "a tuple of ints or a pair of tuples of ints (at most 64, int64)",
        lambda v: _ints(v) or (type(v) is tuple and len(v) == 2 and all(map(_ints, v))),
    ),
    "shape": _PER_AXIS,
    "starts": _PER_AXIS,
    "limits": _PER_AXIS,
    "strides": _PER_AXIS,
    "reps": _PER_AXIS,
    "pad_width": ("a tuple of at most 64 (before, after) pairs of ints (int64)", _int_pairs),
    "indices": ("a tuple of ints (int64)", functools.partial(_ints, max_len=None)),
    "repeats": (
        "an int or a tuple of ints (int64)",
        lambda v: _int(v) or _ints(v, max_len=None),
    ),
    "index": (
        "a tuple of index items (an int, 'array', 'newaxis', '...', ('slice', start, limit, "
        "stride) or ('bool', b))",
        lambda v: type(v) is tuple and all(map(_index_item, v)),
    ),
    "keepdims": _FLAG,
    "reverse": _FLAG,
    "exclusive": _FLAG,
    "dtype": ("a dtype", lambda v: isinstance(v, np.dtype)),
    "constant_values": (
        "a Python int, float, bool or complex",
        lambda v: type(v) in (int, float, bool, complex),
    ),
    "subscripts": ("a string", lambda v: type(v) is str),
}

# -- dumps --------------------------------------------------------------------------------------


def dumps(graph: Graph) -> str:
    """`graph` as JSON text. Raises `ValueError` for what JSON cannot hold: Python callables,
    values of unknown types, arrays outside `const` nodes, namedtuple or custom pytrees."""
    return json.dumps(_Encoder().graph(graph, 0), separators=(",", ":"), allow_nan=False)


class _Encoder:
    """One `dumps` call; avals repeat, so their encodings are cached (and shared in the output)."""

    def __init__(self):
        self.avals: dict[Aval, dict] = {}

    def aval(self, a: Aval) -> dict:
        enc = self.avals.get(a)
        if enc is None:
            enc = {"shape": list(a.shape), "dtype": _dtype_name(a.dtype), "weak_type": a.weak_type}
            self.avals[a] = enc
        return enc

    def graph(self, graph: Graph, depth: int) -> dict:
        if not isinstance(graph.name, str):
            raise ValueError(f"dumps: the graph's name must be a string, got {graph.name!r:.40}")
        ids: dict[Node, int] = {}
        inputs = []
        for i, e in enumerate(graph.inputs):
            if e.node.prim is not arg_p or e.index != 0:  # (verify says more)
                raise ValueError(f"dumps: graph input {i} is not an `arg` node; run verify")
            if e.node in ids:
                raise ValueError(f"dumps: graph input {i} repeats input {ids[e.node]}")
            ids[e.node] = len(ids)
            inputs.append(self.aval(e.aval))
        nodes: list[dict] = []
        listed = set(graph.nodes)

        def ref(e: Edge, what) -> list[int]:
            n = e.node
            if n not in ids:
                if n.prim is not const_p or n in listed:
                    raise ValueError(
                        f"dumps: {what()} reads a {n.prim.name} value defined after "
                        "it or not at all; run tracegrad.ir.verify"
                    )
                # a constant not listed in graph.nodes: written where it is first read
                nodes.append(self.node(n, len(nodes), [], depth, listed=False))
                ids[n] = len(ids)
            if not 0 <= e.index < len(n.out_avals):
                raise ValueError(
                    f"dumps: {what()} reads output {e.index} of a {n.prim.name} "
                    f"node with {len(n.out_avals)} outputs"
                )
            return [ids[n], e.index]

        for node in graph.nodes:
            if node in ids:
                raise ValueError(f"dumps: a {node.prim.name} node appears twice in graph.nodes")
            if node.prim is arg_p:
                raise ValueError("dumps: an `arg` node is listed in graph.nodes; run verify")
            k = len(nodes)
            edges = [
                ref(e, lambda j=j, k=k, p=node.prim: f"node {k} ({p.name}), input {j},")
                for j, e in enumerate(node.inputs)
            ]
            nodes.append(self.node(node, k, edges, depth))
            ids[node] = len(ids)
        outputs = [ref(e, lambda j=j: f"graph output {j}") for j, e in enumerate(graph.outputs)]
        return {
            "format": FORMAT,
            "version": VERSION,
            "name": graph.name,
            "inputs": inputs,
            "outputs": outputs,
            "nodes": nodes,
            "in_tree": _encode_tree(graph.in_tree, "in_tree"),
            "out_tree": _encode_tree(graph.out_tree, "out_tree"),
        }

    def node(self, node: Node, k: int, edges, depth: int, listed: bool = True) -> dict:
        params = {}
        for name, value in node.params.items():
            params[name] = self.value(
                value,
                lambda name=name: f"node {k} ({node.prim.name}), param {name!r}",
                depth,
                node.prim is const_p and name == "value",
            )
        avals = node.out_avals
        out = {
            "prim": node.prim.name,
            "inputs": edges,
            "params": params,
            "out_avals": [self.aval(avals[0])]
            if len(avals) == 1
            else [self.aval(a) for a in avals],
        }
        if not listed:
            out["listed"] = False
        return out

    def value(self, v, where, depth: int, array_ok: bool = False):
        """`where()` names the param for messages (built only when one is needed)."""
        if depth > MAX_DEPTH:
            raise ValueError(f"dumps: {where()} is nested more than {MAX_DEPTH} levels deep")
        if isinstance(v, np.ndarray):
            if not array_ok:
                raise ValueError(f"dumps: {where()} is an array; arrays may only be `const` values")
            return {"array": _encode_array(v, where)}
        if isinstance(v, np.generic):  # before float: np.float64 is a float
            return {"scalar": _encode_array(np.asarray(v), where)}
        if isinstance(v, bool):  # before int: bool is an int
            return {"bool": v}
        if isinstance(v, int):
            return {"int": int(v)}
        if isinstance(v, float):
            return {"float": _float(float(v))}
        if isinstance(v, complex):
            return {"complex": [_float(v.real), _float(v.imag)]}
        if array_ok:
            raise ValueError(
                f"dumps: {where()} is a {type(v).__name__}, which cannot be a constant"
            )
        if v is None:
            return {"none": None}
        if isinstance(v, str):
            return {"str": v}
        if isinstance(v, np.dtype):
            _check_dtype_kind(v, where)
            return {"dtype": _dtype_name(v)}
        if isinstance(v, Aval):
            return {"aval": self.aval(v)}
        if type(v) is tuple:
            return {
                "tuple": [
                    self.value(x, lambda i=i: f"{where()}[{i}]", depth + 1) for i, x in enumerate(v)
                ]
            }
        if isinstance(v, Graph):
            return {"graph": self.graph(v, depth + 1)}
        if callable(v):
            raise ValueError(
                f"dumps: {where()} is a Python callable "
                f"({getattr(v, '__qualname__', type(v).__name__)}); graphs holding callables "
                "(custom rules) cannot be serialized"
            )
        raise ValueError(
            f"dumps: {where()} has type {type(v).__name__}, which cannot be serialized"
        )


_DTYPE_NAMES: dict[np.dtype, str] = {}  # a cache: a dtype's name never changes


def _dtype_name(dtype: np.dtype) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = dtype.name
        if np.dtype(name) != dtype:
            name = dtype.str  # keep a non-native byte order
        _DTYPE_NAMES[dtype] = name
    return name


def _float(x: float):
    """A float as JSON: finite ones as numbers, `"inf"`, `"-inf"`, `"nan"`, and any other NaN
    (sign bit, payload) as `"nan:<64-bit pattern in hex>"`, so every bit survives."""
    if math.isfinite(x):
        return x
    if not math.isnan(x):
        return "inf" if x > 0 else "-inf"
    bits = struct.pack(">d", x).hex()
    return "nan" if bits == _NAN_BITS else f"nan:{bits}"


_NAN_BITS = struct.pack(">d", math.nan).hex()


def _check_dtype_kind(dtype: np.dtype, where: str) -> None:
    if dtype.kind not in "biufc" or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(
            f"dumps: {where()} has dtype {dtype}; only bool, integer, float and complex "
            "dtypes can be serialized"
        )


def _encode_array(v: np.ndarray, where: str) -> dict:
    _check_dtype_kind(v.dtype, where)
    data = base64.b64encode(np.ascontiguousarray(v).tobytes()).decode("ascii")
    return {"dtype": _dtype_name(v.dtype), "shape": list(v.shape), "data": data}


def _encode_tree(spec, what: str):
    """A pytree structure as nested `{"kind": ...}` objects; iterative (post-order)."""
    if spec is None:
        return None
    if not isinstance(spec, optree.PyTreeSpec):
        raise ValueError(f"dumps: {what} is a {type(spec).__name__}, not a pytree structure")
    built: list[dict] = []  # encodings of finished subtrees, in order
    stack = [(spec, None)]
    while stack:
        s, children = stack.pop()
        if children is None:
            children = s.children()
            if children:
                stack.append((s, children))
                stack.extend((c, None) for c in reversed(children))
                continue
        enc = built[len(built) - len(children) :] if children else []
        del built[len(built) - len(children) :]
        built.append(_encode_tree_node(s, enc, what))
    return built[0]


def _encode_tree_node(s, enc: list, what: str) -> dict:
    kind = s.kind
    if kind == optree.PyTreeKind.LEAF:
        return {"kind": "leaf"}
    if kind == optree.PyTreeKind.NONE:
        return {"kind": "none"}
    if kind == optree.PyTreeKind.TUPLE:
        return {"kind": "tuple", "children": enc}
    if kind == optree.PyTreeKind.LIST:
        return {"kind": "list", "children": enc}
    if kind == optree.PyTreeKind.DICT:
        keys = s.entries()
        if not all(isinstance(k, str) for k in keys):
            raise ValueError(
                f"dumps: {what} holds a dict with non-string keys {keys!r:.80}, "
                "which cannot be serialized"
            )
        return {"kind": "dict", "keys": list(keys), "children": enc}
    raise ValueError(
        f"dumps: {what} holds a {getattr(s.type, '__name__', s.type)} structure ({kind.name}), "
        "which cannot be serialized: only tuples, lists, dicts with string keys and None can"
    )


# -- loads --------------------------------------------------------------------------------------


def loads(text: str | bytes, *, max_bytes: int = MAX_BYTES) -> Graph:
    """The graph a `dumps` document describes, every node checked against its primitive.

    Args:
      text: the JSON document (str, bytes or bytearray).
      max_bytes: the most bytes of values the document may describe in all: each graph
        input, each node's outputs and each constant counts (sub-graphs' too, and aval
        params), as often as the document records it. The default, `MAX_BYTES` (2 GiB),
        keeps a small hostile document from describing a huge computation; raise it to load
        a trusted document of a larger program.

    Returns:
      The `Graph`.

    Raises:
      ValueError: saying what is wrong, for every malformed or hostile document (messages
        quote the document only cut short), and for a negative `max_bytes`.
      TypeError: `text` is not text, or `max_bytes` is not an int.
    """
    if not isinstance(text, str | bytes | bytearray):
        raise TypeError(f"loads: expected JSON text (str or bytes), got {type(text).__name__}")
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool):
        raise TypeError(f"loads: max_bytes must be an int, got {type(max_bytes).__name__}")
    if max_bytes < 0:
        raise ValueError(f"loads: max_bytes must be non-negative, got {_show(max_bytes)}")
    try:
        doc = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise _error("the JSON document is nested too deeply") from None
    except ValueError as err:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise _error(f"not a valid JSON document: {err}") from None
    return _Decoder(max_bytes).graph(doc, 0)


def _reject_constant(name):
    raise ValueError(
        f"non-standard JSON constant {name} (non-finite floats are written as tagged strings)"
    )


def _no_duplicates(pairs):
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"duplicate key {_show(dup)}")
    return out


# -- messages: bounded, whatever the document holds ---------------------------------------------

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 6
_REPR.maxstring = _REPR.maxother = 40
_REPR.maxlong = 40


def _show(x, limit: int = 100) -> str:
    """`repr(x)` cut short: a message quoting a 10^6-wide shape, a 4,000-digit int or JSON
    nested 900 deep must not grow with it (reprlib stops at 6 items and 3 levels)."""
    try:
        return _clip(_REPR.repr(x), limit)
    except Exception:  # noqa: BLE001 - an int too long to print, a repr that raises
        return f"<a {type(x).__name__}>"


def _clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, keeping its start and its end (where a message
    usually says what to do)."""
    if len(text) <= limit:
        return text
    half = (limit - 5) // 2
    return f"{text[:half]} ... {text[len(text) - half :]}"


def _label(name: str) -> str:
    """A primitive's name as a document gives it, for messages: cut to 40 characters, and
    quoted when it holds control characters (a message must not carry terminal escapes)."""
    return name[:40] if name.isprintable() else _show(name, 40)


def _error(msg: str) -> ValueError:
    # every piece of untrusted data is already cut short; the cap is the last line of defense
    return ValueError(_clip(f"loads: {msg}", MAX_MESSAGE))


def _fail(msg: str):
    raise _error(msg)


def _expect(obj, typ, what: str):
    if not isinstance(obj, typ) or (typ is int and isinstance(obj, bool)):
        names = {
            dict: "an object",
            list: "a list",
            str: "a string",
            int: "an integer",
            bool: "true or false",
        }
        _fail(f"{what} must be {names.get(typ, typ.__name__)}, got {_json_type(obj)}")
    return obj


def _json_type(obj) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "null",
    }.get(type(obj), "a value")


def _keys(obj: dict, required: frozenset, what: str, optional: frozenset = frozenset()):
    missing = sorted(required - obj.keys())
    if missing:
        _fail(f"{what} is missing {missing}")
    extra = sorted(obj.keys() - required - optional)
    if extra:
        _fail(f"{what} has unknown keys {_show(extra)}")


# -- the decoder ----------------------------------------------------------------------------------


class _Decoder:
    """One `loads` call: decodes and validates, and counts the bytes of the values described.

    Avals repeat, so each distinct raw aval is validated once and its `Aval` and size shared;
    every occurrence counts against `max_bytes`, before any shape rule runs (a user's rule may
    allocate zeros of its inputs' shapes). Primitives are found by name among those defined
    now (`tracegrad.ir.primitive.lookup`: the built-in ones, and a user's while it exists).
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self.total = 0  # bytes of the values described so far
        self.avals: dict[tuple, tuple[Aval, int]] = {}

    def aval(self, raw, what) -> Aval:
        """A recorded aval, counted against `max_bytes`; `what()` names it for messages."""
        key = _aval_key(raw)
        found = None if key is None else self.avals.get(key)
        if found is None:
            a = _decode_aval(raw, what())
            found = (a, a.nbytes)
            if key is not None:
                self.avals[key] = found
        self.total += found[1]
        if self.total > self.max_bytes:
            self.too_big(what())
        return found[0]

    def too_big(self, what: str):
        _fail(
            f"{what}: the document describes more than max_bytes={self.max_bytes} bytes of "
            "values in all (graph inputs, node outputs and constants, sub-graphs included); "
            "to load a trusted document, raise the limit with loads(..., max_bytes=...)"
        )

    def graph(self, doc, depth: int) -> Graph:
        what = "the document" if depth == 0 else "a sub-graph"
        _expect(doc, dict, what)
        if doc.get("format") != FORMAT:
            _fail(
                f"{what} is not a tracegrad graph: format is {_show(doc.get('format'))}, "
                f"expected {FORMAT!r}"
            )
        version = doc.get("version")
        if type(version) is not int or version != VERSION:
            _fail(f"unsupported version {_show(version)}; this tracegrad reads version {VERSION}")
        _keys(doc, _GRAPH_KEYS, what)
        name = _expect(doc["name"], str, "name")
        values: list[Node] = []
        inputs = []
        for i, a in enumerate(_expect(doc["inputs"], list, "inputs")):
            node = arg_node(self.aval(a, lambda i=i: f"input {i}"))
            values.append(node)
            inputs.append(Edge(node, 0))
        nodes = []
        for k, entry in enumerate(_expect(doc["nodes"], list, "nodes")):
            node, listed = self.node(entry, k, values, depth)
            values.append(node)
            if listed:
                nodes.append(node)
        outputs = [
            _decode_edge(e, values, lambda j=j: f"output {j}")
            for j, e in enumerate(_expect(doc["outputs"], list, "outputs"))
        ]
        in_tree = _decode_tree(doc["in_tree"], "in_tree")
        out_tree = _decode_tree(doc["out_tree"], "out_tree")
        if out_tree is not None and out_tree.num_leaves != len(outputs):
            _fail(
                f"out_tree has {out_tree.num_leaves} leaves but the graph has {len(outputs)} "
                "outputs"
            )
        if in_tree is not None and in_tree.num_leaves > len(inputs):
            _fail(
                f"in_tree has {in_tree.num_leaves} leaves but the graph has only {len(inputs)} "
                "inputs"
            )
        return Graph(tuple(inputs), tuple(outputs), tuple(nodes), in_tree, out_tree, name)

    def node(self, entry, k: int, values: list[Node], depth: int) -> tuple[Node, bool]:
        if type(entry) is not dict:
            _expect(entry, dict, f"node {k}")
        keys = entry.keys()
        if keys != _NODE_KEYS:
            _keys(entry, _NODE_KEYS, f"node {k}", frozenset({"listed"}))
        name = entry["prim"]
        if type(name) is not str:
            _expect(name, str, f"node {k}: prim")
        where = f"node {k} ({_label(name)})"
        listed = entry.get("listed", True)
        if type(listed) is not bool:
            _fail(f"{where}: listed must be true or false")
        prim = _find_primitive(name, where)
        if not listed and prim is not const_p:
            _fail(f"{where}: only constants may be unlisted")
        in_edges = self.edges(entry["inputs"], values, where)
        raw_params = entry["params"]
        if type(raw_params) is not dict:
            _expect(raw_params, dict, f"{where}: params")
        params = {}
        for pname, raw in raw_params.items():
            is_value = prim is const_p and pname == "value"
            what = f"{where}, param {pname!r:.40}"
            value = self.value(raw, what, depth, is_value)
            expected = PARAM_TYPES.get(pname)
            if expected is not None and not is_value and not expected[1](value):
                _fail(f"{what} must be {expected[0]}, got {_show(value)}")
            params[pname] = value
        raw_avals = entry["out_avals"]
        if type(raw_avals) is not list:
            _expect(raw_avals, list, f"{where}: out_avals")
        out_avals = tuple(
            self.aval(a, lambda i=i: f"{where}, out_avals[{i}]") for i, a in enumerate(raw_avals)
        )
        if prim is const_p:
            if in_edges or params.keys() != {"value"}:
                _fail(f"{where}: a constant has no inputs and exactly one param, 'value'")
            node = const_node(params["value"])
            if node.out_avals != out_avals:
                _fail(
                    f"{where}: its value is {_clip(node.out_avals[0].str_short(), 200)} but the "
                    f"node records {_clip(_short(out_avals), 200)}"
                )
            return node, listed
        if not prim.multiple_results and len(out_avals) != 1:
            _fail(f"{where}: {prim.name} has one output, but the node records {len(out_avals)}")
        node = Node(prim, in_edges, Params(params), out_avals)
        _check_shape(node, where)
        return node, listed

    def edges(self, raw_inputs, values: list[Node], where: str) -> tuple[Edge, ...]:
        if type(raw_inputs) is not list:
            _expect(raw_inputs, list, f"{where}: inputs")
        edges = []
        n_values = len(values)
        for e in raw_inputs:  # the common case inline; anything odd goes to _decode_edge
            if type(e) is list and len(e) == 2:
                ref, index = e
                if type(ref) is int and type(index) is int and 0 <= ref < n_values:
                    producer = values[ref]
                    if 0 <= index < len(producer.out_avals):
                        edges.append(Edge(producer, index))
                        continue
            j = len(edges)
            edges.append(_decode_edge(e, values, lambda j=j: f"{where}, input {j}"))
        return tuple(edges)

    def value(self, raw, where: str, depth: int, is_const: bool):
        """A tagged param value; nested tuples are decoded with an explicit stack."""
        value, items = self.leaf(raw, where, depth, is_const)
        if items is None:
            return value
        frames: list[tuple[list, list, int]] = [(items, [], depth)]  # (raw, decoded, depth)
        while True:
            items, done, d = frames[-1]
            if len(done) == len(items):
                frames.pop()
                if not frames:
                    return tuple(done)
                frames[-1][1].append(tuple(done))
                continue
            if d + 1 > MAX_DEPTH:
                _fail(f"{where} is nested more than {MAX_DEPTH} levels deep")
            value, sub = self.leaf(items[len(done)], where, d + 1, False)
            if sub is None:
                done.append(value)
            else:
                frames.append((sub, [], d + 1))

    def leaf(self, raw, where: str, depth: int, is_const: bool):
        """(value, None) for a non-tuple tagged value, or (None, raw items) for a tuple."""
        if type(raw) is not dict or len(raw) != 1:
            _fail(f"{where}: a param value must be an object with one type tag, got {_show(raw)}")
        ((tag, body),) = raw.items()
        if is_const and tag not in _SCALAR_TAGS:
            _fail(
                f"{where}: a constant must be a Python int, float, bool, complex or an array "
                f"(or a NumPy scalar), not {_show(tag)}"
            )
        if tag == "int":
            return _expect(body, int, f"{where}: int"), None
        if tag == "tuple":
            return None, _expect(body, list, f"{where}: tuple")
        if tag == "bool":
            return _expect(body, bool, f"{where}: bool"), None
        if tag == "float":
            return _decode_float(body, where), None
        if tag == "str":
            return _expect(body, str, f"{where}: str"), None
        if tag == "none":
            if body is not None:
                _fail(f"{where}: none must be null")
            return None, None
        if tag == "dtype":
            return _decode_dtype(body, where), None
        if tag == "complex":
            if type(body) is not list or len(body) != 2:
                _fail(f"{where}: a complex must be [real, imag]")
            return complex(_decode_float(body[0], where), _decode_float(body[1], where)), None
        if tag == "aval":
            return self.aval(body, lambda: where), None
        if tag == "array":
            if not is_const:
                _fail(f"{where}: arrays may only appear as the value of a `const` node")
            return self.array(body, where), None
        if tag == "scalar":
            arr = self.array(body, where)
            if arr.shape != ():
                _fail(f"{where}: a NumPy scalar must have shape []")
            return arr[()], None
        if tag == "graph":
            if depth >= MAX_DEPTH:
                _fail(f"{where} is nested more than {MAX_DEPTH} levels deep")
            return self.graph(body, depth + 1), None
        _fail(f"{where}: unknown type tag {_show(tag)}")

    def array(self, raw, what: str) -> np.ndarray:
        """An array from `{dtype, shape, data}`; its size is checked before anything is
        decoded, against the bytes left (the node's aval, counted next, records the same)."""
        _expect(raw, dict, what)
        _keys(raw, _ARRAY_KEYS, what)
        dtype = _decode_dtype(raw["dtype"], what)
        shape = _decode_shape(raw["shape"], what)
        data = _expect(raw["data"], str, f"{what}: data")
        nbytes = math.prod(shape) * dtype.itemsize
        if len(data) != 4 * ((nbytes + 2) // 3):
            _fail(
                f"{what}: data holds {len(data)} base64 characters, but shape {_show(list(shape))} "
                f"of {dtype.name} needs {nbytes} bytes ({4 * ((nbytes + 2) // 3)} characters)"
            )
        if nbytes > self.max_bytes - self.total:
            self.too_big(what)
        try:
            buf = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as err:
            _fail(f"{what}: data is not valid base64: {err}")
        if len(buf) != nbytes:
            _fail(
                f"{what}: data decodes to {len(buf)} bytes, but shape {_show(list(shape))} of "
                f"{dtype.name} needs {nbytes}"
            )
        if dtype.kind == "b" and buf and max(buf) > 1:
            _fail(f"{what}: bool data holds bytes other than 0 and 1")
        return np.frombuffer(buf, dtype=dtype).reshape(shape)  # read-only: it views `buf`


def _aval_key(raw):
    """The cache key of a raw aval that looks well-formed, else None (then it is decoded, and
    rejected, on its own). Shapes must hold Python ints, so `[1]` and `[true]`, equal as
    tuples, never share a key."""
    if type(raw) is not dict or len(raw) != 3:
        return None
    shape, dtype, weak = raw.get("shape"), raw.get("dtype"), raw.get("weak_type")
    if type(shape) is not list or len(shape) > MAX_NDIM or type(dtype) is not str:
        return None
    if type(weak) is not bool or not all(type(d) is int for d in shape):
        return None
    return (tuple(shape), dtype, weak)


def _find_primitive(name: str, where: str):
    if name == "const":
        return const_p
    if name == "arg":
        _fail(f'{where}: `arg` values are graph inputs (the "inputs" list), not nodes')
    prim = lookup(name)
    if prim is None or not prim.registered:
        _fail(
            f"{where}: unknown primitive {_show(name, 42)}: no primitive of that name is "
            "defined now (a user's primitive must be defined before its graphs load)"
        )
    return prim


def _check_shape(node: Node, where: str) -> None:
    """Re-run the node's shape rule against its recorded avals. A rule (a user's too) may
    raise anything for inputs it was never meant to see, and its message may quote them at
    any length: every failure becomes a ValueError that names the node, cut short."""
    try:
        problem = check_shape_rule(node, [e.node.out_avals[e.index] for e in node.inputs])
    except Exception as err:  # noqa: BLE001 - even formatting the rule's answer may raise
        problem = f"its shape rule failed: {type(err).__name__}: {_error_text(err)}"
    if problem is not None:
        _fail(f"{where}: {_clip(problem, 600)}")


def _error_text(err: Exception) -> str:
    try:
        return _clip(str(err), 300)
    except Exception:  # noqa: BLE001 - a message that cannot be formatted is left out
        return "(its message cannot be shown)"


def _decode_edge(e, values: list[Node], what) -> Edge:
    if type(e) is not list or len(e) != 2 or type(e[0]) is not int or type(e[1]) is not int:
        _fail(f"{what()} must be [value, output index] (two integers), got {_show(e)}")
    ref, index = e
    if not 0 <= ref < len(values):
        _fail(
            f"{what()} refers to value {_show(ref)}, which is not defined before it (values 0 "
            f"to {len(values) - 1} are)"
        )
    node = values[ref]
    if not 0 <= index < len(node.out_avals):
        _fail(
            f"{what()} reads output {_show(index)} of value {ref} ({node.prim.name}), which has "
            f"{len(node.out_avals)} outputs"
        )
    return Edge(node, index)


def _short(avals) -> str:
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def _decode_shape(raw, what: str) -> tuple[int, ...]:
    _expect(raw, list, f"{what}: shape")
    if len(raw) > MAX_NDIM:
        _fail(f"{what}: shape has {len(raw)} axes; at most {MAX_NDIM} are allowed")
    size = 1
    for d in raw:
        if type(d) is not int or d < 0:
            _fail(f"{what}: shape {_show(raw)} must hold non-negative integers")
        size *= d
        if size > MAX_ELEMENTS:  # a zero later cannot make an absurd axis sane
            _fail(f"{what}: shape {_show(raw)} has over {MAX_ELEMENTS} elements")
    if any(d > MAX_ELEMENTS for d in raw):
        _fail(f"{what}: shape {_show(raw)} has an axis longer than {MAX_ELEMENTS}")
    return tuple(raw)


def _decode_dtype(raw, what: str) -> np.dtype:
    _expect(raw, str, f"{what}: dtype")
    if not _DTYPE_RE.fullmatch(raw):
        _fail(f"{what}: {_show(raw, 42)} is not a dtype name")
    try:
        dtype = np.dtype(raw)
    except Exception:  # noqa: BLE001 - NumPy raises TypeError or others for unknown names
        _fail(f"{what}: {raw!r} is not a dtype NumPy knows")
    if dtype.kind not in "biufc" or dtype.fields is not None or dtype.subdtype is not None:
        _fail(
            f"{what}: dtype {raw!r} is not allowed (only bool, integer, float and complex; "
            "object and structured dtypes never are)"
        )
    return dtype


def _decode_aval(raw, what: str) -> Aval:
    _expect(raw, dict, what)
    _keys(raw, _AVAL_KEYS, what)
    weak = raw["weak_type"]
    if type(weak) is not bool:
        _fail(f"{what}: weak_type must be true or false")
    return Aval(_decode_shape(raw["shape"], what), _decode_dtype(raw["dtype"], what), weak)


def _decode_float(raw, what: str) -> float:
    if isinstance(raw, str):
        if raw in _NONFINITE:
            return _NONFINITE[raw]
        if _NAN_RE.fullmatch(raw):
            x = struct.unpack(">d", bytes.fromhex(raw[4:]))[0]
            if math.isnan(x):
                return x
    if type(raw) not in (int, float):
        _fail(
            f"{what}: a float must be a number, 'inf', '-inf', 'nan' or 'nan:<NaN bits in hex>', "
            f"got {_show(raw, 42)}"
        )
    try:
        x = float(raw)
    except OverflowError:
        x = math.inf
    if not math.isfinite(x):  # JSON's 1e400 parses as inf: only the tags spell non-finite
        _fail(
            f"{what}: the number {_show(raw, 42)} does not fit a float (non-finite floats are "
            "written 'inf', '-inf' or 'nan')"
        )
    return x


# what a `const` value may be: Python scalars (weak), arrays, NumPy scalars
_SCALAR_TAGS = frozenset({"int", "float", "bool", "complex", "array", "scalar"})


_TREE_KINDS = frozenset({"leaf", "none", "tuple", "list", "dict"})


def _decode_tree(raw, what: str):
    """A pytree structure from nested `{"kind": ...}` objects; iterative, depth-limited."""
    if raw is None:
        return None
    kw = {"none_is_leaf": False, "namespace": tree.NAMESPACE}
    stack = [(raw, 0, False)]
    built: list = []  # specs of finished subtrees, in order
    while stack:
        obj, depth, expanded = stack.pop()
        if not expanded:
            if depth > MAX_DEPTH:
                _fail(f"{what} is nested more than {MAX_DEPTH} levels deep")
            _expect(obj, dict, what)
            kind = obj.get("kind")
            if type(kind) is not str or kind not in _TREE_KINDS:  # (a list kind is unhashable)
                _fail(
                    f"{what}: unknown structure kind {_show(kind, 42)} (expected one of "
                    f"{sorted(_TREE_KINDS)})"
                )
            if kind in ("leaf", "none"):
                _keys(obj, frozenset({"kind"}), f"{what} ({kind})")
                built.append(
                    optree.treespec_leaf(**kw) if kind == "leaf" else optree.treespec_none(**kw)
                )
                continue
            if kind == "dict":
                _keys(obj, frozenset({"kind", "keys", "children"}), f"{what} (dict)")
                keys = _expect(obj["keys"], list, f"{what}: keys")
                if not all(isinstance(k, str) for k in keys) or len(set(keys)) != len(keys):
                    _fail(f"{what}: dict keys must be distinct strings")
            else:
                _keys(obj, frozenset({"kind", "children"}), f"{what} ({kind})")
            children = _expect(obj["children"], list, f"{what}: children")
            if kind == "dict" and len(children) != len(obj["keys"]):
                _fail(f"{what}: a dict has {len(obj['keys'])} keys but {len(children)} children")
            stack.append((obj, depth, True))
            stack.extend((c, depth + 1, False) for c in reversed(children))
            continue
        n = len(obj["children"])
        kids = built[len(built) - n :]
        del built[len(built) - n :]
        if obj["kind"] == "tuple":
            built.append(optree.treespec_tuple(kids, **kw))
        elif obj["kind"] == "list":
            built.append(optree.treespec_list(kids, **kw))
        else:
            built.append(optree.treespec_dict(dict(zip(obj["keys"], kids)), **kw))
    return built[0]
