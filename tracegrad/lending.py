"""Constants an eager call borrows instead of copying.

A graph's constant is a read-only array (DESIGN.md §1). `const_node` copies a writeable one,
which is what a graph that outlives its call needs (jit's cache, make_graph, vjp_fn,
linearize's function): the caller may write into the array afterwards. A graph that lives
only inside one eager call (`tg.grad`) needs no copy, and copying every weight on every
call was most of that call's memory (benchmarks/memory.py: 200 MB of weights per gradient
of a 100-layer network). Such a call borrows the caller's array instead: `lend` makes it
read-only until the call gives it back (`give_back`), so the graph still holds a read-only
array, and a function that writes into an array it has already used fails at the write
instead of silently changing the gradient.
"""

from __future__ import annotations

import threading

import numpy as np

# id -> [array, holds, flipped]: each lent array, and each array it is a view of (so that a
# view of a lent array is known to be lent too), held while any call holds it
_LENT: dict[int, list] = {}
_LENT_LOCK = threading.Lock()


def array_chain(a: np.ndarray):
    """`a` and the arrays it is a view of."""
    while isinstance(a, np.ndarray):
        yield a
        a = a.base


def lend(value: np.ndarray, lent: list) -> None:
    """Make `value` read-only until `give_back(lent)`: a call borrows it without a copy. A
    caller's own read-only array is left alone (const_node trusts it already)."""
    with _LENT_LOCK:
        entry = _LENT.get(id(value))
        if entry is None and value.base is None:  # the common case: an array of its own
            if value.flags.writeable:
                value.setflags(False)
                _LENT[id(value)] = [value, 1, True]
                lent.append(value)
            return
        if entry is None or not entry[2]:
            if not value.flags.writeable:
                return
            value.setflags(False)  # (cheaper than through the `flags` object)
            if entry is not None:
                entry[2] = True  # a base of an array lent earlier, now lent itself
        a = value
        while isinstance(a, np.ndarray):  # array_chain, inlined: a call lends many arrays
            entry = _LENT.get(id(a))
            if entry is None:
                _LENT[id(a)] = [a, 1, a is value]
            else:
                entry[1] += 1
            a = a.base
        lent.append(value)


def give_back(lent: list) -> None:
    """End the loans `lend` recorded in `lent`: arrays no other call holds are writeable
    again."""
    if not lent:
        return
    ended = []
    views = False  # whether an ended loan is a view (of an array or of another buffer)
    with _LENT_LOCK:
        for value in lent:
            a = value
            while isinstance(a, np.ndarray):
                entry = _LENT[id(a)]
                entry[1] -= 1
                if entry[1] == 0:
                    del _LENT[id(a)]
                    if entry[2]:
                        ended.append(a)
                        views = views or a.base is not None
                a = a.base
        lent.clear()
        if views and any(isinstance(a.base, np.ndarray) for a in ended):
            # an array before its views: a view of a read-only array cannot be made writeable
            ended.sort(key=lambda a: sum(1 for _ in array_chain(a)))
        for a in ended:
            try:
                a.setflags(write=True)
            except ValueError:  # its base was made read-only meanwhile, by its owner
                pass


def is_lent(value: np.ndarray) -> bool:
    """Whether `value` is read-only only because an eager call borrows it (or what it views)."""
    return any(id(a) in _LENT for a in array_chain(value))


def frozen_copy(value: np.ndarray) -> np.ndarray:
    """A read-only copy of `value` (what a graph that outlives the call keeps)."""
    copy = value.copy()
    copy.flags.writeable = False
    return copy
