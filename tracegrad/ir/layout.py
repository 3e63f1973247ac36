"""Memory layout: what a primitive's output looks like in memory, declared on the primitive.

Strides decide bits. NumPy's reductions and products read memory in stride order, so
`np.sum(x.T)` and `np.sum(np.ascontiguousarray(x.T))` can differ in the last bits, and a value
that aliases another must not be overwritten while the other lives. Three passes need to know
layouts: the simplifier (may `x * 1` become `x`? only where both have the same strides), the
memory analysis (a view owns no bytes and keeps its base alive) and the code generator (may a
ufunc write into a dead buffer with `out=`? only one of the strides NumPy would allocate).
Each primitive declares one `Layout`; every pass reads that one declaration.
"""

from __future__ import annotations

import enum


class Layout(enum.Enum):
    """How a primitive's output sits in memory (a field of every `Primitive`).

    Fresh layouts describe a newly allocated array, never an input or a view of one; view
    layouts describe a view of the input at position `Primitive.view_of`.
    """

    #: may be an input, a view of one, or new, with any strides: assume nothing (the default)
    UNKNOWN = "unknown"
    #: new, allocated by NumPy's iterator in the axis order of the inputs (ufuncs, `where`):
    #: C order when every input is
    ELEMENTWISE = "elementwise"
    #: new, C order when every input is, some dense order otherwise (reductions, `astype`)
    KEEPS_C = "keeps_c"
    #: new and dense, in an order of its own (advanced indexing)
    DENSE = "dense"
    #: new, always C order (matmul, np.zeros-based results)
    C = "c"
    #: C order, but the input itself when it already was (np.ascontiguousarray)
    CONTIGUOUS = "contiguous"
    #: a view of the input, any strides (slices, broadcasts, flips)
    VIEW = "view"
    #: a view of the input with its axes permuted: dense when the input is
    PERMUTED = "permuted"
    #: a view of the input in C order when the input is (reshape, expand_dims, squeeze); a
    #: reshape whose input's strides allow no view copies it in C order instead
    RESHAPED = "reshaped"
    #: the input itself (stop_gradient)
    SAME = "same"

    @property
    def fresh(self) -> bool:
        """A new array that aliases nothing."""
        return self in _FRESH

    @property
    def view(self) -> bool:
        """A view of the input at `view_of`: it owns no bytes and keeps that input alive."""
        return self in _VIEWS


_FRESH = frozenset({Layout.ELEMENTWISE, Layout.KEEPS_C, Layout.DENSE, Layout.C})
_VIEWS = frozenset({Layout.VIEW, Layout.PERMUTED, Layout.RESHAPED, Layout.SAME})

# The simplifier's classes of a value's layout at run time, derived from the declarations
# (`classify`): what it may assume when it replaces one value by another.
C_ORDER = 0  # C-contiguous (or of size <= 1, where strides do not matter)
DENSE = 1  # a fresh array: dense, positive strides, axes in some order
ANY = 2  # unknown: a graph input, a broadcast or flipped view, a copy or a view


def classify(layout: Layout, inputs: list[int], base: int) -> int:
    """The class of a node's output from its primitive's layout, its inputs' classes and the
    class of input `view_of` (`base`, for views)."""
    if layout is Layout.ELEMENTWISE or layout is Layout.KEEPS_C:
        return C_ORDER if all(c == C_ORDER for c in inputs) else DENSE
    if layout is Layout.C or layout is Layout.CONTIGUOUS:
        return C_ORDER
    if layout is Layout.DENSE:
        return DENSE
    if layout is Layout.SAME:
        return base
    if layout is Layout.RESHAPED:
        return C_ORDER if base == C_ORDER else ANY
    if layout is Layout.PERMUTED:
        # even a square matrix's transpose, whose aval is its input's, is not C order
        return DENSE if base != ANY else ANY
    return ANY
