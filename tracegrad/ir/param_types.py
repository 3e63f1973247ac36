"""`PARAM_TYPES`: the type `loads` requires of each conventional param name.

Every name a built-in primitive takes is listed with its exact type, so a document cannot hand
a rule `reverse='False'` or a float axis; other params are judged by the shape rule re-run on load.
"""

from __future__ import annotations

import functools

import numpy as np

from tracegrad.ir.document import MAX_NDIM

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
    "unique": _FLAG,
    "dtype": ("a dtype", lambda v: isinstance(v, np.dtype)),
    "constant_values": (
        "a Python int, float, bool or complex",
        lambda v: type(v) in (int, float, bool, complex),
    ),
    "subscripts": ("a string", lambda v: type(v) is str),
    "order": ("an int (int64)", _int),
    # sorting: sort/argsort's stability, partition's kth, searchsorted's side and batch axes,
    # nonzero's static size and one fill value per axis
    "stable": _FLAG,
    "kth": ("a tuple of ints (int64)", functools.partial(_ints, max_len=None)),
    "right": _FLAG,
    "weak": _FLAG,  # astype: a weakly typed result
    "batch_dims": ("an int in [0, 64]", lambda v: _int(v) and 0 <= v <= MAX_NDIM),
    "size": ("a non-negative int (int64)", lambda v: _int(v) and v >= 0),
    "fill_value": ("a tuple of at most 64 ints (int64)", _ints),
    # einsum's contraction path (np.einsum_path's steps without the 'einsum_path' tag), or False
    "optimize": (
        "False or a tuple of tuples of ints (a contraction path)",
        lambda v: v is False or (type(v) is tuple and all(_ints(p, max_len=None) for p in v)),
    ),
    # correlate's mode by NumPy's code (0 valid, 1 same, 2 full), or qr's mode by name
    "mode": (
        "0, 1 or 2 (correlate's valid, same, full) or 'reduced', 'complete', 'r', 'raw' (qr's)",
        lambda v: (
            (type(v) is int and 0 <= v <= 2)
            or (type(v) is str and v in ("reduced", "complete", "r", "raw"))
        ),
    ),
}

# control flow (tracegrad.primitives.control): sub-graphs, operand counts, a scan's length and
# the recorded trip count of a while_loop run on concrete values (None under jit)
from tracegrad.ir.graph import Graph as _Graph  # noqa: E402 - (appended to this shared table)

_COUNT = ("a non-negative int (int64)", lambda v: _int(v) and v >= 0)
PARAM_TYPES.update(
    {
        "body": ("a graph", lambda v: isinstance(v, _Graph)),
        "cond_graph": ("a graph", lambda v: isinstance(v, _Graph)),
        "branches": (
            "a non-empty tuple of graphs",
            lambda v: type(v) is tuple and len(v) > 0 and all(isinstance(g, _Graph) for g in v),
        ),
        "n_consts": _COUNT,
        "n_carry": _COUNT,
        "n_cond_consts": _COUNT,
        "length": _COUNT,
        "trips": ("None or a non-negative int (int64)", lambda v: v is None or _int(v) and v >= 0),
    }
)

# SciPy's special functions (tracegrad.primitives.special, present with SciPy): the
# multivariate normal's allow_singular (logsumexp takes axis and keepdims, as the reductions);
# typed with or without SciPy, so a graph's params read the same everywhere
PARAM_TYPES["allow_singular"] = _FLAG

# checkpointing (tracegrad.primitives.custom): how many of a checkpoint body's outputs are the
# residuals its policy saves
PARAM_TYPES["n_saved"] = _COUNT

# linear algebra (tracegrad.primitives.linalg): NumPy's arguments of the same names
_OPTIONAL_FLOAT = ("None or a float", lambda v: v is None or type(v) is float)
PARAM_TYPES.update(
    {
        "UPLO": ("'L' or 'U'", lambda v: type(v) is str and v in ("L", "U")),
        "upper": _FLAG,
        "full_matrices": _FLAG,
        "compute_uv": _FLAG,
        "hermitian": _FLAG,
        "rcond": _OPTIONAL_FLOAT,
        "rtol": (
            "None, a float or 'unset'",
            lambda v: v is None or type(v) is float or v == "unset",
        ),
    }
)

# the Fourier transforms (tracegrad.primitives.fft): the length per transformed axis, NumPy's
# norm, and fft's direction
PARAM_TYPES.update(
    {
        "s": _PER_AXIS,
        "norm": (
            '"backward", "ortho" or "forward"',
            lambda v: type(v) is str and v in ("backward", "ortho", "forward"),
        ),
        "inverse": _FLAG,
    }
)

# SciPy's linear algebra (tracegrad.primitives.scipy_linalg, present with SciPy): SciPy's
# arguments of the same names (trmm, the rules' triangular product, takes lower and trans too)
PARAM_TYPES.update(
    {
        "lower": _FLAG,
        "unit_diagonal": _FLAG,
        "other_triangle": _FLAG,  # cholesky_vjp: cho_factor's c, whose other triangle is a's
        "check_finite": _FLAG,
        "trans": ("0, 1 or 2 (SciPy's 'N', 'T', 'C')", lambda v: type(v) is int and 0 <= v <= 2),
        # solve_banded's (l, u): the numbers of lower and upper diagonals
        "nlower": ("a non-negative int", lambda v: _int(v) and v >= 0),
        "nupper": ("a non-negative int", lambda v: _int(v) and v >= 0),
    }
)

# SciPy's ODE solvers (tracegrad.primitives.ode, present with SciPy): the right-hand side's
# graph and odeint's / solve_ivp's options of the same names (rtol is linear algebra's entry);
# solve_ivp's method is an index into tracegrad.primitives.ode.METHODS
_FLOAT = ("a float", lambda v: type(v) is float)
PARAM_TYPES.update(
    {
        "func": ("a graph", lambda v: isinstance(v, _Graph)),
        "atol": _OPTIONAL_FLOAT,
        "tcrit": (
            "None or a tuple of floats",
            lambda v: v is None or (type(v) is tuple and all(type(x) is float for x in v)),
        ),
        "h0": _FLOAT,
        "hmax": _FLOAT,
        "hmin": _FLOAT,
        "mxstep": _COUNT,
        "mxhnil": _COUNT,
        "mxordn": _COUNT,
        "mxords": _COUNT,
        "checked": _FLAG,  # odeint's: a failed integration raises (a derivative's)
        # solve_ivp's RK23, RK45, DOP853, or scipy.signal's convolve's 'auto', 'direct', 'fft'
        "method": (
            "0, 1 or 2 (an index into the methods)",
            lambda v: type(v) is int and 0 <= v <= 2,
        ),
        "t_end": _OPTIONAL_FLOAT,
        "first_step": _OPTIONAL_FLOAT,
        "max_step": _OPTIONAL_FLOAT,
    }
)

# SciPy's convolutions (tracegrad.primitives.scipy_signal, present with SciPy): convolve2d's and
# correlate2d's boundary (an index into 'fill', 'wrap', 'symm') and fill value; their `mode` is
# NumPy's code and convolve's `method` an index, as above
PARAM_TYPES.update(
    {
        "boundary": ("0, 1 or 2 (fill, wrap, symm)", lambda v: type(v) is int and 0 <= v <= 2),
        "fillvalue": (
            "a Python int, float, bool or complex",
            lambda v: type(v) in (int, float, bool, complex),
        ),
    }
)
