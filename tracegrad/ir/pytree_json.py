"""Pytree structures (a graph's `in_tree` and `out_tree`) as nested `{"kind": ...}` objects.

Only tuples, lists, dicts with string keys and None are written; both directions are iterative
and reading is depth-limited, so a deep structure never hits Python's recursion limit.
"""

from __future__ import annotations

import optree

from tracegrad import tree
from tracegrad.ir.document import MAX_DEPTH
from tracegrad.ir.load_errors import _expect, _fail, _keys, _show


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
