"""Provenance: where each IR node came from — the user's source line, and for a node of a
backward pass the forward primitive (and its line) whose derivative it helps compute.

Design. `Node` is immutable and compared by identity, and graphs are freed by reference
counting alone, so provenance is not a field of the node but a side table keyed weakly by it
(`_ORIGINS`): an entry lives exactly as long as its node, serialization, printing and hashing
never see it, and a node built with provenance off costs nothing. The table is filled only
while `config.provenance`, `config.debug_nans` or `config.debug_infs` is on: measured on the
1,000-op chain (benchmarks/diagnostics_overhead.py), provenance costs 30-35% per eager
operation, beyond the issue's 5% budget for an always-on record. The stack walk itself costs
2-3% of an operation; the weak table (a weakref with a callback per node, run again when the node is
freed) and the backward bookkeeping are the rest, so an always-on line would need a slot on
`Node` itself, not a side table.

Where entries come from:
- `Trace.bind` and the tensors' `record` call `note(node)`: the node inherits the origin in
  `_current` when one is set, else gets the user's frame (`Origin(prim, site, 0)`);
- `vjp_step` (of `backward_pass` and of the tensors' engine) sets `_current` to
  `derivative(node)` while a node's vjp rule runs, so every node the rule binds is "order 1
  of sqrt at f.py:3";
- the interpreter sets `_current` to the origin of the node it re-binds, so re-tracing a
  graph (jit of grad, nested transforms) keeps the user's lines;
- passes that rebuild a node (`partial._rebuild`, simplification) call `inherit(old, new)`.
"""

from __future__ import annotations

import linecache
import os
import sys
import weakref
from contextvars import ContextVar

import numpy as np

from tracegrad import config

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
_INTERNAL_PREFIXES = ("<tracegrad", "<__array_function__", "<frozen ")


class Origin:
    """The user-level operation a node belongs to: `prim` (the forward primitive's name),
    `site` (`(filename, lineno)` of the user's line that created it, or None) and `order`
    (0 for the forward node itself, 1 for nodes of its derivative, 2 for the derivative of
    those, ...)."""

    __slots__ = ("prim", "site", "order")

    def __init__(self, prim: str, site: tuple[str, int] | None, order: int = 0):
        self.prim = prim
        self.site = site
        self.order = order

    def location(self) -> str:
        """`file.py:12` and the line's code in backticks, or `an unrecorded line`."""
        if self.site is None:
            return "an unrecorded line (turn tg.config.provenance on before tracing)"
        fname, line = self.site
        text = linecache.getline(fname, line).strip()
        return f"{fname}:{line}" + (f" (`{text[:120]}`)" if text else "")

    def same_op(self, other: Origin | None) -> bool:
        return other is not None and (self.prim, self.site) == (other.prim, other.site)

    def __repr__(self) -> str:
        return f"Origin({self.prim!r}, {self.site!r}, order={self.order})"


_ORIGINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_current: ContextVar[Origin | None] = ContextVar("tracegrad_origin", default=None)
_internal_files: dict[str, bool] = {}


def enabled() -> bool:
    """Whether nodes record their origin now (provenance or a debug check is on)."""
    return config.provenance or config.debug_nans or config.debug_infs


def _internal(fname: str) -> bool:
    hit = _internal_files[fname] = (
        fname.startswith(_PKG_DIR)
        or fname.startswith(_NUMPY_DIR)
        or fname.startswith(_INTERNAL_PREFIXES)
    )
    return hit


def user_site() -> tuple[str, int] | None:
    """`(filename, lineno)` of the innermost frame outside tracegrad and NumPy (a file's
    verdict is cached: the walk costs one dict lookup per frame)."""
    frame = sys._getframe(1)
    known = _internal_files
    while frame is not None:
        fname = frame.f_code.co_filename
        internal = known.get(fname)
        if internal is None:
            internal = _internal(fname)
        if not internal:
            return fname, frame.f_lineno
        frame = frame.f_back
    return None


def note(node) -> None:
    """Record `node`'s origin: the one being run or differentiated now, else the user's line."""
    origin = _current.get()
    if origin is None:
        origin = Origin(node.prim.name, user_site(), 0)
    _ORIGINS[node] = origin


def origin_of(node) -> Origin | None:
    return _ORIGINS.get(node)


def inherit(old, new) -> None:
    """A pass rebuilt (or rewrote) `old` as `new`: the new node keeps the old one's origin,
    unless it has one of its own (a shared node, or `old`'s own input)."""
    if not _ORIGINS or new is old:  # (the common case: provenance was never on)
        return
    origin = _ORIGINS.get(old)
    if origin is not None and new not in _ORIGINS:
        _ORIGINS[new] = origin


def derivative(node) -> Origin:
    """The origin of the nodes that differentiate `node` (one order higher)."""
    origin = _ORIGINS.get(node)
    if origin is None:
        return Origin(node.prim.name, None, 1)
    return Origin(origin.prim, origin.site, origin.order + 1)


def current() -> Origin | None:
    return _current.get()


def enter(origin: Origin | None):
    """Make `origin` the current one (for nodes bound and values checked); returns a token
    for `leave`."""
    return _current.set(origin)


def leave(token) -> None:
    _current.reset(token)


def within(origin: Origin | None, fn, *args):
    """`fn(*args)` with `origin` current: the nodes it binds, and the values it checks,
    belong to `origin`."""
    token = _current.set(origin)
    try:
        return fn(*args)
    finally:
        _current.reset(token)


def rebind(bind, node, vals):
    """`bind(node.prim, *vals, **node.params)` with `node`'s origin current: the interpreter's
    step in debug mode, so a graph re-run into a trace (or checked) keeps its user lines."""
    token = _current.set(_ORIGINS.get(node) or _current.get())
    try:
        return bind(node.prim, *vals, **node.params)
    finally:
        _current.reset(token)


def note_result(result) -> None:
    """Record the origin of the node behind a recorded tensor operation's result(s)."""
    for t in result if isinstance(result, tuple) else (result,):
        fn = t._grad_fn
        if fn is not None:
            note(fn.node)
            return
