"""`einsum`: NumPy's Einstein summation, a multilinear primitive with any number of operands.

Subscripts are normalized to explicit form (`'ij,jk->ik'`), so equal contractions give equal
nodes. NumPy's `optimize` is a param: False (one `c_einsum` call), or the contraction path
`np.einsum_path` finds for the operands' shapes, resolved when the node is made, so the run
follows NumPy's own pairwise contractions (and gives their bits) without a string in the
graph. Each operand's cotangent is an einsum of the output cotangent with the other operands
onto that operand's labels (with diagonals put back for repeated labels), computed only for
the operands that need one (with a greedy path when the forward one had a path); the jvp is
the sum of the einsums with one operand replaced by its tangent.
"""

from __future__ import annotations

import functools
import operator
import re
import string
from collections import Counter

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import READS_INPUTS, Primitive, per_input, rule_for
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import series
from tracegrad.primitives.broadcasting import broadcast_to
from tracegrad.primitives.broadcasting import sum as reduce_sum
from tracegrad.primitives.products import (
    MULTILINEAR_JVP,
    cast_like,
    shapes_text,
    strong_result_type,
)
from tracegrad.primitives.views import move_axis, reshape

_VALID = re.compile(r"[a-zA-Z.,>-]*\Z")
_LETTERS = string.ascii_uppercase + string.ascii_lowercase  # NumPy's label order


def _check_term(term: str, subscripts: str):
    if "." in term.replace("...", "", 1) or term.count("...") > 1:
        raise ValueError(
            f"einsum: invalid subscripts {subscripts!r}: '.' may only appear as one '...' "
            "per operand"
        )


def normalize_subscripts(subscripts: str, nops: int) -> str:
    """Subscripts in explicit form (`'ij,jk->ik'`), spaces removed, checked for `nops`
    operands. Implicit outputs become NumPy's: the labels used once, in alphabetical order,
    after `'...'` when an operand has one."""
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts must be a string, got {type(subscripts).__name__}")
    s = subscripts.replace(" ", "")
    if not _VALID.match(s):
        raise ValueError(
            f"einsum: invalid subscripts {subscripts!r}: only letters, ',', '->' and '...' "
            "are allowed"
        )
    arrows = s.count("->")
    if arrows > 1 or s.count("-") != arrows or s.count(">") != arrows:
        raise ValueError(
            f"einsum: invalid subscripts {subscripts!r}: '->' may appear once, and '-' or "
            "'>' only as part of it"
        )
    lhs, arrow, rhs = s.partition("->")
    terms = lhs.split(",")
    for t in terms + [rhs]:
        _check_term(t, subscripts)
    if nops < 1:
        raise ValueError("einsum: at least one operand is required")
    if len(terms) != nops:
        raise ValueError(
            f"einsum: subscripts {subscripts!r} name {len(terms)} operands, but {nops} "
            f"{'was' if nops == 1 else 'were'} given"
        )
    counts = Counter(c for t in terms for c in t if c != ".")
    if not arrow:
        rhs = ("..." if any("..." in t for t in terms) else "") + "".join(
            sorted((c for c, n in counts.items() if n == 1), key=_LETTERS.index)
        )
    else:
        for c in rhs.replace("...", ""):
            if c not in counts:
                raise ValueError(
                    f"einsum: output label {c!r} of {subscripts!r} appears in no operand"
                )
            if rhs.count(c) > 1:
                raise ValueError(f"einsum: output label {c!r} of {subscripts!r} is repeated")
    return ",".join(terms) + "->" + rhs


def _label_name(c: str, ell: str) -> str:
    return "'...'" if c in ell else repr(c)


@functools.lru_cache(maxsize=2048)
def expand_subscripts(subscripts: str, shapes: tuple) -> tuple[tuple[str, ...], str, tuple]:
    """Normalized `subscripts` with `'...'` replaced by fresh letters for these operand
    shapes: `(operand terms, output term, ((label, size), ...))`. Sizes broadcast across
    operands (NumPy's einsum lets a label of size 1 meet any size)."""
    lhs, rhs = subscripts.split("->")
    terms = lhs.split(",")
    used = set(subscripts)
    free = [c for c in _LETTERS if c not in used]
    ell_nd = []
    for i, (t, shp) in enumerate(zip(terms, shapes)):
        named = len(t.replace("...", ""))
        if len(shp) < named or ("..." not in t and len(shp) != named):
            raise ValueError(
                f"einsum: operand {i} has shape {tuple(shp)} ({len(shp)} axes), but its "
                f"subscripts {t!r} in {subscripts!r} name {named}"
            )
        ell_nd.append(len(shp) - named)
    m = max(ell_nd)
    if m > len(free):
        raise ValueError(f"einsum: too many axes for the 52 available labels in {subscripts!r}")
    ell = "".join(free[:m])
    exp = tuple(t.replace("...", ell[m - k :]) for t, k in zip(terms, ell_nd))
    if "..." in rhs:
        out = rhs.replace("...", ell)
    elif m:
        raise ValueError(
            f"einsum: operands of shapes {shapes_text(*shapes)} have '...' axes, but the "
            f"output of {subscripts!r} has no '...' to put them in"
        )
    else:
        out = rhs
    sizes: dict[str, int] = {}
    where: dict[str, int] = {}
    for i, (t, shp) in enumerate(zip(exp, shapes)):
        local: dict[str, int] = {}
        for c, d in zip(t, shp):
            if c in local and local[c] != d:
                raise ValueError(
                    f"einsum: operand {i} of shape {tuple(shp)} repeats label {c!r} on axes of "
                    f"sizes {local[c]} and {d}; a repeated label takes a diagonal, which needs "
                    "equal sizes"
                )
            local[c] = d
        for c, d in local.items():
            prev = sizes.get(c)
            if prev is None or prev == 1:
                sizes[c], where[c] = d, i
            elif d != 1 and d != prev:
                j = where[c]
                raise ValueError(
                    f"einsum: shapes {shapes_text(*shapes)} do not align for {subscripts!r}: "
                    f"label {_label_name(c, ell)} has size {prev} in operand {j} but {d} in "
                    f"operand {i}; sizes of a label must be equal (or 1, which broadcasts)"
                )
    return exp, out, tuple(sorted(sizes.items()))


def _path_text(optimize) -> str:
    return "einsum_path" if optimize is False else repr(["einsum_path", *optimize])


def resolve_optimize(optimize, subscripts: str, shapes) -> bool | tuple:
    """NumPy's `optimize` argument as the einsum param: False, or a contraction path (a tuple
    of operand-position tuples). True, None, 'greedy', 'optimal' and (name, memory_limit) are
    resolved by `np.einsum_path` on the shapes (the path depends on nothing else), and
    `np.einsum(..., optimize=['einsum_path', *path])` then contracts exactly as NumPy does for
    the original argument; an explicit `['einsum_path', ...]` list is checked and kept."""
    if optimize is False:
        return False
    if isinstance(optimize, list | tuple) and len(optimize) and optimize[0] == "einsum_path":
        path = tuple(_path_step(step) for step in optimize[1:])
        check_path(path, len(shapes))
        return path
    stand_ins = [np.broadcast_to(np.empty(()), s) for s in shapes]  # shapes only, no memory
    try:
        path, _ = np.einsum_path(subscripts, *stand_ins, optimize=optimize)
    except (TypeError, KeyError):
        raise ValueError(
            f"einsum: optimize={optimize!r} is not one of NumPy's: False, True, 'greedy', "
            "'optimal', a (name, memory_limit) pair or a path ['einsum_path', (i, j), ...]"
        ) from None
    return tuple(_path_step(step) for step in path[1:])


def _path_step(step) -> tuple[int, ...]:
    try:
        return tuple(operator.index(i) for i in step)
    except TypeError:
        raise ValueError(
            f"einsum: a contraction path step must be a tuple of operand positions, got {step!r}"
        ) from None


def check_path(path, nops: int) -> None:
    """Raise unless `path` contracts `nops` operands to one: each step names distinct
    positions among the operands left, and its result goes to the end of the list."""
    if not path:
        raise ValueError(
            f"einsum: contraction path {_path_text(path)} has no step; a path must contract "
            "the operands to one"
        )
    left = nops
    for step in path:
        if not step or len(set(step)) != len(step) or not all(0 <= i < left for i in step):
            raise ValueError(
                f"einsum: contraction path {_path_text(path)} is invalid for {nops} operands: "
                f"step {step} must name distinct positions among the {left} operands left"
            )
        left -= len(step) - 1
    if left != 1:
        raise ValueError(
            f"einsum: contraction path {_path_text(path)} leaves {left} operands of {nops}; "
            "a path must contract them all to one"
        )


def einsum(subscripts: str, *operands, optimize=False, dtype=None):
    """`np.einsum(subscripts, *operands, optimize=optimize, dtype=dtype)`; subscripts are
    normalized to explicit form and `optimize` resolved to a path (`resolve_optimize`).
    `dtype` is recorded only when given (casting was checked by the caller)."""
    subscripts = normalize_subscripts(subscripts, len(operands))
    params = {"subscripts": subscripts}
    path = resolve_optimize(optimize, subscripts, [shape_of(x) for x in operands])
    if path is not False:
        params["optimize"] = path
    if dtype is not None:
        params["dtype"] = np.dtype(dtype)
    return bind(einsum_p, *operands, **params)


def _einsum_shape(*avals: Aval, subscripts, optimize=False, dtype=None):
    if normalize_subscripts(subscripts, len(avals)) != subscripts:
        raise ValueError(f"einsum: subscripts {subscripts!r} are not in normalized form")
    if optimize is not False:
        check_path(optimize, len(avals))
    _, out, sizes = expand_subscripts(subscripts, tuple(a.shape for a in avals))
    sizes = dict(sizes)
    if dtype is None:
        dtype = strong_result_type("einsum", *avals)
    return Aval(tuple(sizes[c] for c in out), dtype)


def _einsum_operand_bar(g, operands, i, subscripts, optimize):
    """Cotangent of operand `i`: `g` contracted with the other operands onto operand i's
    labels. Labels that only operand i has are broadcast, broadcast (size-1) axes summed,
    and repeated labels (diagonals) put back on the diagonal with identity matrices."""
    shapes = tuple(shape_of(x) for x in operands)
    terms, out, _ = expand_subscripts(subscripts, shapes)
    term, shape = terms[i], shapes[i]
    own = dict(zip(term, shape))
    uniq = "".join(dict.fromkeys(term))
    others = [j for j in range(len(operands)) if j != i]
    avail = set(out).union(*(terms[j] for j in others))
    kept = "".join(c for c in uniq if c in avail)
    spec = ",".join([out] + [terms[j] for j in others]) + "->" + kept
    # a forward einsum with a path gets a greedy path for its cotangents too: each is an
    # einsum of as many operands, which one c_einsum call would contract all at once
    r = einsum(spec, g, *(operands[j] for j in others), optimize=optimize is not False)
    # a label of size 1 here that met a longer axis elsewhere: sum it back (keepdims)
    rs = shape_of(r)
    summed = tuple(k for k, c in enumerate(kept) if own[c] == 1 and rs[k] != 1)
    if summed:
        r = reduce_sum(r, summed, True)
    # labels only this operand has (summed in it alone): every element gets the same value
    kept_shape = tuple(shape_of(r)[kept.index(c)] if c in kept else 1 for c in uniq)
    if shape_of(r) != kept_shape:
        r = reshape(r, kept_shape)
    uniq_shape = tuple(own[c] for c in uniq)
    if shape_of(r) != uniq_shape:
        r = broadcast_to(r, uniq_shape)
    if len(uniq) < len(term):
        r = _embed_diagonals(r, uniq, term, own, subscripts)
    return cast_like(r, operands[i])


def _embed_diagonals(r, uniq, term, own, subscripts):
    # r has one axis per distinct label; the operand repeats some. Each repeat gets a fresh
    # label tied to the first occurrence by an identity matrix: einsum('i,ij->ij', r, eye).
    free = iter(c for c in _LETTERS if c not in subscripts and c not in term)
    target, eyes, eye_terms = [], [], []
    seen = set()
    for c in term:
        if c in seen:
            f = next(free)
            target.append(f)
            eye_terms.append(c + f)
            eyes.append(np.eye(own[c], dtype=dtype_of(r)))
        else:
            seen.add(c)
            target.append(c)
    spec = ",".join([uniq] + eye_terms) + "->" + "".join(target)
    return einsum(spec, r, *eyes)


@functools.cache
def _einsum_vjp(i: int):
    """The rule of operand `i` (one per position, made once)."""

    def rule(g, *operands, out, subscripts, optimize=False, dtype=None):
        if not carries_derivative(operands[i]) or not _inexact(dtype):
            return None
        return _einsum_operand_bar(g, operands, i, subscripts, optimize)

    return rule


def _inexact(dtype) -> bool:
    """Whether a result of `dtype=` (None: the operands' own) can carry a derivative."""
    return dtype is None or np.dtype(dtype).kind in "fc"


def _einsum_jvp(prim):
    """The multilinear jvp, none for an integer or bool `dtype=` result."""
    multilinear = MULTILINEAR_JVP.factory(prim)

    def jvp(primals, tangents, *, out, **params):
        if not _inexact(params.get("dtype")):
            return None
        return multilinear(primals, tangents, out=out, **params)

    return jvp


def _options(optimize, dtype) -> dict:
    # the keywords np.einsum takes for the params (casting was checked when the node was made)
    kwargs = {}
    if optimize is not False:
        kwargs["optimize"] = ["einsum_path", *optimize]
    if dtype is not None:
        kwargs.update(dtype=dtype, casting="unsafe")
    return kwargs


def _einsum_emit(*names, subscripts, optimize=False, dtype=None):
    extra = ""
    if optimize is not False:
        extra += f", optimize={['einsum_path', *optimize]!r}"
    if dtype is not None:
        extra += f", dtype=np.{np.dtype(dtype).name}, casting='unsafe'"
    return f"np.einsum({subscripts!r}, {', '.join(names)}{extra})"


def _einsum_impl(*operands, subscripts, optimize=False, dtype=None):
    return np.einsum(subscripts, *operands, **_options(optimize, dtype))


def _label_batch_axis(x, dim, term, label):
    """`term` with `label` for the batch axis `dim` of `x` (and `x`, the batch axis moved
    out of the '...' axes if it sat among them)."""
    if "..." not in term:
        return x, term[:dim] + label + term[dim:]
    p = term.index("...")
    k = len(shape_of(x)) - 1 - (len(term) - 3)  # axes the '...' stands for
    if dim <= p:
        return x, term[:dim] + label + term[dim:]
    if dim >= p + k:
        at = dim - k + 3
        return x, term[:at] + label + term[at:]
    return move_axis(x, dim, p), term[:p] + label + term[p:]


def _einsum_batch(args, dims, *, subscripts, **options):
    # one fresh label for the batch axis of every batched operand, first in the output
    lhs, rhs = subscripts.split("->")
    label = next((c for c in _LETTERS if c not in subscripts), None)
    if label is None:
        raise ValueError(
            f"einsum: cannot batch {subscripts!r}: it uses all 52 labels, none is left for "
            "the batch axis; split the einsum into smaller ones"
        )
    operands, terms = [], []
    for x, d, t in zip(args, dims, lhs.split(",")):
        if d is not None:
            x, t = _label_batch_axis(x, d, t, label)
        operands.append(x)
        terms.append(t)
    spec = ",".join(terms) + "->" + label + rhs
    # the path names operand positions, which batching keeps
    return bind(einsum_p, *operands, subscripts=spec, **options), 0


einsum_p = Primitive(
    "einsum",
    impl=_einsum_impl,
    shape=_einsum_shape,
    jvp=rule_for(_einsum_jvp),
    vjp=per_input(_einsum_vjp),
    batch=_einsum_batch,
    emit=_einsum_emit,
    vjp_reads=READS_INPUTS,
    bilinear=True,
    taylor=series.MULTILINEAR,
)

PRIMITIVES = (einsum_p,)
