"""`loads`: the graph a JSON document describes, read as hostile input (no pickle, no eval).

Every malformed document raises `ValueError` (never another type), params of conventional names
are type-checked, every shape rule is re-run against the recorded avals, and the values a
document describes are bounded in all (`max_bytes`).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import struct

import numpy as np

from tracegrad.ir.document import (
    _ARRAY_KEYS,
    _AVAL_KEYS,
    _DTYPE_RE,
    _GRAPH_KEYS,
    _NAN_RE,
    _NODE_KEYS,
    _NONFINITE,
    FORMAT,
    MAX_BYTES,
    MAX_DEPTH,
    MAX_ELEMENTS,
    MAX_NDIM,
    VERSION,
)
from tracegrad.ir.graph import Edge, Graph, Node, Params, arg_node, const_node, const_p
from tracegrad.ir.load_errors import _clip, _error, _expect, _fail, _keys, _label, _show
from tracegrad.ir.param_types import PARAM_TYPES
from tracegrad.ir.primitive import lookup
from tracegrad.ir.pytree_json import _decode_tree
from tracegrad.ir.types import Aval, avals_short
from tracegrad.ir.verify import check_shape_rule


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
                    f"node records {_clip(avals_short(out_avals), 200)}"
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
