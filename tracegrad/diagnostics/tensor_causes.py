"""The causes the tensors' error messages add below PyTorch's first line: which node's saved
values were freed, by which `backward()` call; why a tensor has no `grad_fn` (an operation
under `no_grad`, a `detach()`); which in-place operation changed a saved tensor.

What is recorded, and when: the freeing `backward()` call always (one stack walk per backward
call, kept in the released `GradFn`'s `_versions` slot, unused once its values are freed);
everything else only while `tg.config.provenance` (or a debug switch) is on, since a stack walk
per operation would cost more than the 5% an always-on record may (provenance.py). The
messages say how to turn it on when they lack a line.
"""

from __future__ import annotations

import weakref

from tracegrad.diagnostics import provenance

#: the user's line of the backward call that is releasing saved values now (None outside one)
FREEING: list = [None]


class _ByIdentity:
    """A table keyed weakly by object identity. (A WeakKeyDictionary compares keys with
    `==`, which for tensors is an elementwise operation, not a bool.)"""

    def __init__(self):
        self._data: dict[int, tuple] = {}

    def __setitem__(self, obj, value) -> None:
        key = id(obj)
        self._data[key] = (weakref.ref(obj, lambda _, k=key: self._data.pop(k, None)), value)

    def get(self, obj, default=None):
        hit = self._data.get(id(obj))
        return hit[1] if hit is not None and hit[0]() is obj else default


_MARKS = _ByIdentity()  # tensor -> (why, site)
_INPLACE: dict[int, list] = {}  # id(cell) -> [(version after, site), ...], bounded
_INPLACE_LIMIT = 10_000

_TURN_ON = (
    "Set tg.config.provenance = True (or the environment variable TRACEGRAD_PROVENANCE=1) "
    "to have this message name {what}."
)


def _where(site) -> str:
    return provenance.Origin("", site).location()


# -- freed saved values ------------------------------------------------------------------------


def freed(fn) -> str:
    """The lines added to PyTorch's "backward through the graph a second time" message."""
    node = fn.node
    aval = node.out_avals[0]
    what = f"`{node.prim.name}` of a {aval.dtype.name} {aval.shape} value"
    origin = provenance.origin_of(node)
    if origin is not None and origin.site is not None:
        what += f", created at {origin.location()}"
    lines = [f"The saved values of {fn.name()} ({what}) were freed"]
    site = fn._versions  # after release: the freeing backward call's line (see release)
    lines[0] += f" by the backward call at {_where(site)}." if site else "."
    lines.append(
        "Pass retain_graph=True to that call to keep them, or recompute the forward pass "
        "before the second backward."
    )
    if origin is None:
        lines.append(_TURN_ON.format(what="the line that created the node"))
    return "\n" + "\n".join(lines)


# -- tensors without grad_fn -------------------------------------------------------------------


def mark(result, why: str) -> None:
    """Remember why the tensor(s) `result` take no gradient: "no_grad", "detach" or "leaf"
    (created without requires_grad)."""
    site = provenance.user_site()
    for t in result if isinstance(result, tuple) else (result,):
        _MARKS[t] = (why, site)


def mark_unrecorded(result: tuple, args, needs: bool) -> None:
    """Results of an operation that recorded no node: computed with grad mode off from a
    tensor that requires grad (`needs`), or from a marked tensor (the mark passes on)."""
    if needs:
        mark(result, "no_grad")
        return
    for a in args:
        found = _MARKS.get(a)
        if found is not None:
            for t in result:
                _MARKS[t] = found
            return


def no_grad_fn(t) -> str:
    """The lines added to PyTorch's "element i of tensors does not require grad" message."""
    found = _MARKS.get(t)
    if found is not None:
        why, site = found
        if why == "no_grad":
            return (
                "\nIt comes from a value computed under no_grad() (or with grad mode off), at "
                f"{_where(site)}: that operation recorded no graph. Compute it outside no_grad()."
            )
        if why == "detach":
            return (
                f"\nIt comes from detach() at {_where(site)}, which shares the values but not "
                "the graph. Use the tensor before detach() to differentiate through it."
            )
        return (
            f"\nIt comes from a leaf created without requires_grad=True at {_where(site)}. "
            "Pass requires_grad=True there (or call .requires_grad_()) to differentiate it."
        )
    text = (
        "\nIt is a leaf that does not require grad: created without requires_grad=True "
        "(tensor(..., requires_grad=True) or .requires_grad_()), or computed only from tensors "
        "that do not require grad"
    )
    if not provenance.enabled():
        return (
            text
            + ", under no_grad(), or by detach(). "
            + _TURN_ON.format(what="which, with its line")
        )
    return text + "."


# -- in-place changes of saved tensors ---------------------------------------------------------


def changed_in_place(cell) -> None:
    """An in-place operation just bumped `cell`'s version: remember the user's line."""
    if len(_INPLACE) > _INPLACE_LIMIT:
        _INPLACE.clear()
    _INPLACE.setdefault(id(cell), []).append((cell.version, provenance.user_site()))


def version_changed(cell, saved_version: int) -> str:
    """The lines added to PyTorch's "modified by an inplace operation" message."""
    changes = [
        (v, site) for v, site in _INPLACE.get(id(cell), ()) if saved_version < v <= cell.version
    ]
    if not changes:
        # nothing recorded: PyTorch's message alone (its hint already says how to learn more;
        # with tracegrad, tg.config.provenance names the line, see docs/debugging.md)
        return ""
    lines = [f"version {v}: changed in place at {_where(site)}" for v, site in changes]
    return (
        f"\nThe saved tensor was at version {saved_version} when the graph saved it; "
        + "; ".join(lines)
        + "."
    )


def created(t, why: str):
    """`t`, remembered as a tensor without grad_fn (`why`: "leaf" or "detach") while
    provenance is on; a call the tensors make where such tensors are created."""
    if provenance.enabled():
        mark(t, why)
    return t


def rebound(cell) -> None:
    """An in-place change outside the in-place methods (`t.data = v`), remembered while
    provenance is on."""
    if provenance.enabled():
        changed_in_place(cell)
