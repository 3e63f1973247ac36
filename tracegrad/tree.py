"""Pytrees (`tg.tree`): nested containers of arrays, on optree in tracegrad's own namespace.

Tuples, lists, dicts (keys sorted), namedtuples and `None` (an empty subtree, not a leaf) are
containers; everything else, arrays, Python scalars and tracers included, is a leaf. User
classes join with `register`.
"""

from __future__ import annotations

from collections.abc import Callable

import optree

NAMESPACE = "tracegrad"

PyTreeDef = optree.PyTreeSpec


def flatten(tree) -> tuple[list, PyTreeDef]:
    return optree.tree_flatten(tree, none_is_leaf=False, namespace=NAMESPACE)


def unflatten(treedef: PyTreeDef, leaves):
    return optree.tree_unflatten(treedef, leaves)


def leaves(tree) -> list:
    return optree.tree_leaves(tree, none_is_leaf=False, namespace=NAMESPACE)


def structure(tree) -> PyTreeDef:
    return optree.tree_structure(tree, none_is_leaf=False, namespace=NAMESPACE)


def map(fn: Callable, tree, *rest):  # noqa: A001 - mirrors jax.tree.map
    return optree.tree_map(fn, tree, *rest, none_is_leaf=False, namespace=NAMESPACE)


def register(cls: type, flatten_fn: Callable, unflatten_fn: Callable) -> type:
    """Make `cls` a container: `flatten_fn(obj) -> (children, aux)`,
    `unflatten_fn(aux, children) -> obj`, with `aux` hashable (it is part of jit cache keys)."""
    optree.register_pytree_node(cls, flatten_fn, unflatten_fn, namespace=NAMESPACE)
    return cls


def broadcast_prefix(prefix_tree, full_tree) -> list:
    """Leaves of `prefix_tree` repeated to match `full_tree`'s leaves (for `in_axes`, `argnums`)."""
    return optree.broadcast_prefix(prefix_tree, full_tree, none_is_leaf=False, namespace=NAMESPACE)
