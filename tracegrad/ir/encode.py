"""`dumps`: a graph as JSON text (the format is described in `tracegrad.ir.document`).

What JSON cannot hold (callables, arrays outside `const` nodes, custom pytrees) is refused with
a `ValueError`; every bit of a float survives (NaN payloads in hex); repeated avals are shared.
"""

from __future__ import annotations

import base64
import json
import math
import struct

import numpy as np

from tracegrad.ir.document import FORMAT, MAX_DEPTH, VERSION
from tracegrad.ir.graph import Edge, Graph, Node, arg_p, const_p
from tracegrad.ir.pytree_json import _encode_tree
from tracegrad.ir.types import Aval


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
