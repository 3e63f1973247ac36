"""SAMPLES rows for the products: compatible shapes (1-D operands, broadcast batch axes,
size-0 and size-1 axes), einsum subscripts drawn from a list of common forms (with NumPy's
contraction paths of `optimize` too), and the gufuncs' broadcast loop axes.

Products are multilinear, so any finite values will do: central finite differences are
exact up to rounding.
"""

from __future__ import annotations

from hypothesis import strategies as st

from tests import strategies as S
from tests.primitives.samples.row import FLOATS, Sample
from tracegrad.primitives import einsum as es
from tracegrad.primitives import products

SIDE = st.integers(0, 4)


def _side(data, label):
    return data.draw(SIDE, label=label)


def matmul_shapes(data):
    """Two shapes np.matmul accepts: 1-D promotion and broadcast batch axes included."""
    kind = data.draw(st.sampled_from(["vv", "vm", "mv", "mm"]), label="matmul kind")
    k = _side(data, "k")
    xb, yb = S.broadcast_shapes(data, 2, max_dims=2)
    n, m = _side(data, "n"), _side(data, "m")
    xs = (k,) if kind[0] == "v" else tuple(xb) + (n, k)
    ys = (k,) if kind[1] == "v" else tuple(yb) + (k, m)
    return xs, ys


def dot_shapes(data):
    """Two shapes np.dot accepts: scalars, 1-D and N-d operands."""
    kind = data.draw(st.sampled_from(["scalar", "vv", "nv", "nm"]), label="dot kind")
    if kind == "scalar":
        s = S.shapes(data, max_dims=2)
        return ((), s) if data.draw(st.booleans(), label="scalar first") else (s, ())
    k = _side(data, "k")
    xs = S.shapes(data, max_dims=2) + (k,) if kind != "vv" else (k,)
    if kind == "nm":
        lead = S.shapes(data, max_dims=1)
        return xs, lead + (k, _side(data, "m"))
    return xs, (k,)


def tensordot_case(data):
    """(shape_a, shape_b, axes) with `axes` a normalized pair of tuples."""
    sa = S.shapes(data, max_dims=3)
    n = data.draw(st.integers(0, len(sa)), label="contracted")
    axes_a = tuple(data.draw(st.permutations(range(len(sa))), label="axes a")[:n])
    free_b = S.shapes(data, max_dims=2)
    nb = n + len(free_b)
    axes_b = tuple(data.draw(st.permutations(range(nb)), label="axes b")[:n])
    sb, free = [0] * nb, iter(free_b)
    for i in range(nb):
        sb[i] = sa[axes_a[axes_b.index(i)]] if i in axes_b else next(free)
    return sa, tuple(sb), (axes_a, axes_b)


EINSUM_SUBSCRIPTS = [
    "ij,jk->ik",
    "i,i->",
    "ii->i",
    "ij->ji",
    "bij,bjk->bik",
    "ij,j->i",
    "i,j->ij",
    "...ij,...jk->...ik",
    "ij,jk",
    "ii",
    "ij->",
    "iij,jk->ik",
    "ijk,kl,lm->im",
    "i,i->i",
    "ij,ij->ij",
    "...i,...i->...",
]


def einsum_case(data, subscripts=None):
    """(subscripts, shapes): label sizes drawn once, some operand axes set to 1 (NumPy's
    einsum broadcasts a size-1 axis against any size), '...' from broadcastable shapes."""
    if subscripts is None:
        subscripts = data.draw(st.sampled_from(EINSUM_SUBSCRIPTS), label="subscripts")
    lhs = subscripts.split("->")[0]
    terms = lhs.split(",")
    labels = sorted(set(lhs) - {",", "."})
    sizes = {c: _side(data, f"size {c}") for c in labels}
    ells = S.broadcast_shapes(data, len(terms), max_dims=2)
    shapes = []
    for t, ell in zip(terms, ells):
        named = t.replace("...", "")
        shape = []
        for c in named:
            # a label that occurs once in this operand may be 1 here (broadcast)
            one = named.count(c) == 1 and data.draw(st.integers(0, 5), label="one") == 0
            shape.append(1 if one else sizes[c])
        shapes.append((tuple(ell) if "..." in t else ()) + tuple(shape))
    return subscripts, tuple(shapes)


def _matmul(data, dtype):
    xs, ys = matmul_shapes(data)
    return (S.array(data, xs, dtype), S.array(data, ys, dtype)), {}


def _dot(data, dtype):
    xs, ys = dot_shapes(data)
    return (S.array(data, xs, dtype), S.array(data, ys, dtype)), {}


def _tensordot(data, dtype):
    sa, sb, axes = tensordot_case(data)
    return (S.array(data, sa, dtype), S.array(data, sb, dtype)), {"axes": axes}


def _einsum(data, dtype):
    subscripts, shapes = einsum_case(data)
    ops = tuple(S.array(data, s, dtype) for s in shapes)
    params = {"subscripts": es.normalize_subscripts(subscripts, len(ops))}
    # NumPy's contraction path of optimize=True: pairwise contractions (matmul via bmm_einsum)
    if data.draw(st.booleans(), label="optimize"):
        params["optimize"] = es.resolve_optimize(True, params["subscripts"], shapes)
    return ops, params


def gufunc_shapes(data, core_x, core_y):
    """Operand shapes for a product gufunc: broadcast loop axes, then the core axes from
    `core_x(sizes)` and `core_y(sizes)` with sizes drawn once (n and m, 0 to 4)."""
    lx, ly = S.broadcast_shapes(data, 2, max_dims=2)
    sizes = {"n": _side(data, "n"), "m": _side(data, "m")}
    return tuple(lx) + core_x(sizes), tuple(ly) + core_y(sizes)


def _gufunc(core_x, core_y):
    def draw(data, dtype):
        xs, ys = gufunc_shapes(data, core_x, core_y)
        return (S.array(data, xs, dtype), S.array(data, ys, dtype)), {}

    return draw


_N = lambda s: (s["n"],)  # noqa: E731 - the core axes of each gufunc, side by side
_MN = lambda s: (s["m"], s["n"])  # noqa: E731
_NM = lambda s: (s["n"], s["m"])  # noqa: E731


# either operand may be an integer array of its shape (a scalar would change the product)
_INT_ARRAYS = ((0, -3, 3, False), (1, -3, 3, False))

SAMPLES = {
    products.matmul_p: Sample(_matmul, ints=_INT_ARRAYS, complex=FLOATS, mixed=True),
    products.dot_p: Sample(_dot, ints=_INT_ARRAYS, complex=FLOATS, mixed=True),
    products.tensordot_p: Sample(_tensordot, ints=_INT_ARRAYS, complex=FLOATS, mixed=True),
    es.einsum_p: Sample(_einsum, ints=_INT_ARRAYS, complex=FLOATS, mixed=True),
    products.vecdot_p: Sample(_gufunc(_N, _N), ints=_INT_ARRAYS, complex=FLOATS, mixed=True),
    products.matvec_p: Sample(_gufunc(_MN, _N), ints=_INT_ARRAYS, complex=FLOATS, mixed=True),
    products.vecmat_p: Sample(_gufunc(_N, _NM), ints=_INT_ARRAYS, complex=FLOATS, mixed=True),
}
