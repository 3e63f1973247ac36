"""`einsum`: NumPy's Einstein summation, a multilinear primitive with any number of operands.

Subscripts are normalized to explicit form (`'ij,jk->ik'`), so equal contractions give equal
nodes. Each operand's cotangent is an einsum of the output cotangent with the other operands
onto that operand's labels (with diagonals put back for repeated labels), computed only for
the operands that need one; the jvp is the sum of the einsums with one operand replaced by
its tangent.
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import READS_INPUTS, Primitive, per_input
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
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


def einsum(subscripts: str, *operands):
    """`np.einsum(subscripts, *operands)` (optimize=False); subscripts are normalized to
    explicit form."""
    return bind(einsum_p, *operands, subscripts=normalize_subscripts(subscripts, len(operands)))


def _einsum_shape(*avals: Aval, subscripts):
    if normalize_subscripts(subscripts, len(avals)) != subscripts:
        raise ValueError(f"einsum: subscripts {subscripts!r} are not in normalized form")
    _, out, sizes = expand_subscripts(subscripts, tuple(a.shape for a in avals))
    sizes = dict(sizes)
    return Aval(tuple(sizes[c] for c in out), strong_result_type("einsum", *avals))


def _einsum_operand_bar(g, operands, i, subscripts):
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
    r = einsum(spec, g, *(operands[j] for j in others))
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

    def rule(g, *operands, out, subscripts):
        if not carries_derivative(operands[i]):
            return None
        return _einsum_operand_bar(g, operands, i, subscripts)

    return rule


def _einsum_emit(*names, subscripts):
    return f"np.einsum({subscripts!r}, {', '.join(names)})"


def _einsum_impl(*operands, subscripts):
    return np.einsum(subscripts, *operands)


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


def _einsum_batch(args, dims, *, subscripts):
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
    return bind(einsum_p, *operands, subscripts=spec), 0


einsum_p = Primitive(
    "einsum",
    impl=_einsum_impl,
    shape=_einsum_shape,
    jvp=MULTILINEAR_JVP,
    vjp=per_input(_einsum_vjp),
    batch=_einsum_batch,
    emit=_einsum_emit,
    vjp_reads=READS_INPUTS,
    bilinear=True,
)

PRIMITIVES = (einsum_p,)
