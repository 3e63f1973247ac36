"""The products: NumPy's matmul/dot/tensordot/einsum/inner/outer/vdot/kron on tracers give
NumPy's values bit for bit (float32, float64 and mixed), the shape rules raise clear errors,
and the vjp/jvp rules agree with central finite differences (checked directly on arrays).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
import tracegrad.numpy as tnp
from tests import strategies as S
from tests.primitives.samples.linalg import (
    EINSUM_SUBSCRIPTS,
    dot_shapes,
    einsum_case,
    matmul_shapes,
    tensordot_case,
)
from tracegrad.ir.types import aval_of
from tracegrad.primitives import einsum as es
from tracegrad.primitives import products
from tracegrad.transforms.vjp import call_vjp

F32, F64 = np.float32, np.float64
DTYPE_PAIRS = st.sampled_from([(F32, F32), (F64, F64), (F32, F64), (F64, F32)])


def assert_traced_equal(f, *args, prim=None):
    """`make_graph(f)(*args)` run on args equals `f(*args)` in NumPy: bits, shape, dtype;
    the graph's declared output aval agrees too, and (if given) the graph uses `prim`."""
    graph = tg.make_graph(f)(*args)
    got, want = graph(*args), f(*args)
    want_arr = np.asarray(want)
    assert np.asarray(got).dtype == want_arr.dtype
    np.testing.assert_array_equal(got, want, strict=True)
    assert graph.out_avals[0].shape == want_arr.shape
    assert graph.out_avals[0].dtype == want_arr.dtype
    if prim is not None:
        assert prim in {n.prim.name for n in graph.nodes}, str(graph)


def _pair(data, xs, ys, dtypes):
    return S.array(data, xs, dtypes[0]), S.array(data, ys, dtypes[1])


# -- forward values equal NumPy's, bit for bit -------------------------------------------------


@given(data=st.data(), dtypes=DTYPE_PAIRS)
def test_matmul_operator_and_function_match_numpy(data, dtypes):
    x, y = _pair(data, *matmul_shapes(data), dtypes)
    assert_traced_equal(lambda a, b: a @ b, x, y, prim="matmul")
    assert_traced_equal(lambda a, b: np.matmul(a, b), x, y, prim="matmul")
    assert_traced_equal(lambda a: a @ y, x)  # a constant right operand
    assert_traced_equal(lambda b: x @ b, y)  # ndarray.__matmul__ defers to the tracer


@given(data=st.data(), dtypes=DTYPE_PAIRS)
def test_dot_matches_numpy(data, dtypes):
    x, y = _pair(data, *dot_shapes(data), dtypes)
    assert_traced_equal(lambda a, b: np.dot(a, b), x, y, prim="dot")
    assert_traced_equal(lambda a, b: a.dot(b), x, y, prim="dot")


@given(data=st.data(), dtypes=DTYPE_PAIRS)
def test_tensordot_matches_numpy(data, dtypes):
    sa, sb, (axes_a, axes_b) = tensordot_case(data)
    x, y = _pair(data, sa, sb, dtypes)
    # the same contraction written with negative axes normalizes to the same node
    neg_a = tuple(i - len(sa) for i in axes_a)
    for axes in ((axes_a, axes_b), (neg_a, axes_b), (list(axes_a), list(axes_b))):
        assert_traced_equal(
            lambda a, b, ax=axes: np.tensordot(a, b, axes=ax), x, y, prim="tensordot"
        )


@given(data=st.data(), dtypes=DTYPE_PAIRS, n=st.integers(0, 2))
def test_tensordot_int_axes_match_numpy(data, dtypes, n):
    sa = S.shapes(data, min_dims=n, max_dims=3)
    sb = sa[len(sa) - n :] + S.shapes(data, max_dims=2)
    x, y = _pair(data, sa, sb, dtypes)
    assert_traced_equal(lambda a, b: np.tensordot(a, b, n), x, y, prim="tensordot")
    if n == 2 and len(sa) >= 2:
        assert_traced_equal(lambda a, b: np.tensordot(a, b), x, y)


@given(data=st.data(), dtypes=DTYPE_PAIRS)
def test_einsum_matches_numpy(data, dtypes):
    subscripts, shapes = einsum_case(data)
    ops = [S.array(data, s, dtypes[i % 2]) for i, s in enumerate(shapes)]
    assert_traced_equal(lambda *o: np.einsum(subscripts, *o), *ops, prim="einsum")
    spaced = " " + subscripts.replace(",", " , ") + " "  # NumPy ignores spaces
    assert_traced_equal(lambda *o: np.einsum(spaced, *o), *ops)


@given(data=st.data(), dtypes=DTYPE_PAIRS)
def test_einsum_implicit_output_order_matches_numpy(data, dtypes):
    subscripts = data.draw(st.sampled_from(["Ba,a", "aB,B", "ba,ab", "zA,Az", "i,i", "ij"]))
    _, shapes = einsum_case(data, subscripts)
    ops = [S.array(data, s, dtypes[i % 2]) for i, s in enumerate(shapes)]
    assert_traced_equal(lambda *o: np.einsum(subscripts, *o), *ops)


@given(data=st.data())
def test_einsum_sublist_form_matches_numpy(data):
    x = S.array(data, (2, 3))
    y = S.array(data, (3, 4))
    assert_traced_equal(lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2]), x, y)
    assert_traced_equal(lambda a, b: np.einsum(a, [Ellipsis, 30], b, [30, 2]), x, y)


@given(data=st.data(), dtypes=DTYPE_PAIRS)
def test_inner_outer_vdot_kron_match_numpy(data, dtypes):
    k = data.draw(st.integers(0, 4))
    sa = S.shapes(data, max_dims=2) + (k,)
    sb = S.shapes(data, max_dims=2) + (k,)
    x, y = _pair(data, sa, sb, dtypes)
    assert_traced_equal(lambda a, b: np.inner(a, b), x, y, prim="dot")
    assert_traced_equal(lambda a, b: np.outer(a, b), x, y, prim="multiply")
    assert_traced_equal(lambda a, b: np.kron(a, b), x, y, prim="multiply")
    flat = S.array(data, (x.size,), dtypes[1])
    assert_traced_equal(lambda a, b: np.vdot(a, b), x, flat, prim="dot")
    assert_traced_equal(lambda a, b: np.vdot(a.T, b), x, flat)
    assert_traced_equal(lambda a, b: np.vdot(a[::2], b[::2]), flat, flat)


@given(data=st.data(), dtypes=DTYPE_PAIRS)
def test_inner_and_kron_with_scalars_and_mixed_ranks_match_numpy(data, dtypes):
    s = S.shapes(data, max_dims=3)
    x, y = _pair(data, (), s, dtypes)
    for f in (np.inner, np.kron, np.outer, np.dot):
        assert_traced_equal(lambda a, b, f=f: f(a, b), x, y)
        assert_traced_equal(lambda a, b, f=f: f(b, a), x, y)
    z = S.array(data, S.shapes(data, max_dims=1), dtypes[0])
    assert_traced_equal(lambda a, b: np.kron(a, b), z, y)
    assert_traced_equal(lambda a, b: np.kron(b, a), z, y)


@given(data=st.data(), dtypes=DTYPE_PAIRS)
def test_cross_matches_numpy(data, dtypes):
    sa, sb = S.broadcast_shapes(data, 2, max_dims=2)
    x, y = _pair(data, tuple(sa) + (3,), tuple(sb) + (3,), dtypes)
    assert_traced_equal(lambda a, b: np.cross(a, b), x, y, prim="subtract")
    xt, yt = np.moveaxis(x, -1, 0), np.moveaxis(y, -1, 0)
    axisc = data.draw(st.integers(-1, max(len(sa), len(sb))), label="axisc")
    assert_traced_equal(lambda a, b: np.cross(a, b, axisa=0, axisb=0, axisc=axisc), xt, yt)


def test_cross_errors():
    with pytest.raises(ValueError, match=r"^cross: shapes \(4,\) and \(3,\): the vector axes"):
        _trace(lambda a, b: np.cross(a, b), (4,), (3,))
    with pytest.raises(NotImplementedError, match="2-element vectors"):
        _trace(lambda a, b: np.cross(a, b), (2,), (3,))


@given(data=st.data(), dtypes=DTYPE_PAIRS)
def test_python_scalar_operands_match_numpy(data, dtypes):
    x = S.array(data, S.shapes(data, max_dims=2), dtypes[0])
    assert_traced_equal(lambda a: np.dot(a, 2.5), x)
    assert_traced_equal(lambda a: np.dot(2.5, a), x)
    assert_traced_equal(lambda a: np.einsum("...,->...", a, 2.5), x)
    assert_traced_equal(lambda a: np.outer(a, 2.5), x)


DTYPES_ALL = st.sampled_from([np.bool_, np.int8, np.int64, np.float16, F32, F64])


@given(data=st.data(), d1=DTYPES_ALL, d2=DTYPES_ALL)
def test_result_dtypes_match_numpy_for_all_dtype_pairs(data, d1, d2):
    x = S.array(data, (2, 3), d1, 0, 2)
    y = S.array(data, (3, 2), d2, 0, 2)
    assert_traced_equal(lambda a, b: a @ b, x, y)
    assert_traced_equal(lambda a, b: np.dot(a, b), x, y)
    assert_traced_equal(lambda a, b: np.tensordot(a, b, 1), x, y)
    assert_traced_equal(lambda a, b: np.einsum("ij,jk", a, b), x, y)
    assert_traced_equal(lambda a: np.einsum("ij->", a), x)


def test_tnp_functions_on_plain_arrays_are_numpy():
    x = np.arange(6.0).reshape(2, 3)
    y = np.arange(12.0, dtype=F32).reshape(3, 4)
    for ours, theirs in (
        (tnp.matmul(x, y), x @ y),
        (tnp.dot(x, y), np.dot(x, y)),
        (tnp.tensordot(x, y, 1), np.tensordot(x, y, 1)),
        (tnp.einsum("ij,jk", x, y), np.einsum("ij,jk", x, y)),
        (tnp.inner(x, x), np.inner(x, x)),
        (tnp.outer(x, y), np.outer(x, y)),
        (tnp.vdot(x, x), np.vdot(x, x)),
        (tnp.kron(x, y), np.kron(x, y)),
    ):
        np.testing.assert_array_equal(ours, theirs, strict=True)


def test_emitted_code_evaluates_to_the_same_values():
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 3))
    cases = [
        (products.matmul_p, (x, y), {}),
        (products.dot_p, (x, y), {}),
        (products.tensordot_p, (x, y), {"axes": ((1, 2), (1, 0))}),
        (es.einsum_p, (x, y), {"subscripts": es.normalize_subscripts("bij,jk", 2)}),
    ]
    for prim, args, params in cases:
        names = [f"v{i}" for i in range(len(args))]
        code = prim.emit(*names, **params)
        got = eval(code, {"np": np, **dict(zip(names, args))})  # noqa: S307 - our own text
        np.testing.assert_array_equal(got, prim.impl(*args, **params), strict=True)


# -- normalization of params ------------------------------------------------------------------


def test_einsum_subscripts_normalize_to_explicit_form():
    norm = es.normalize_subscripts
    assert norm("ij,jk", 2) == "ij,jk->ik"
    assert norm("ii", 1) == "ii->"
    assert norm(" i j , j k -> i k ", 2) == "ij,jk->ik"
    assert norm("...ij,...jk", 2) == "...ij,...jk->...ik"
    assert norm("Ba,a", 2) == "Ba,a->B"  # NumPy's order: upper case first
    assert norm("ij->ji", 1) == "ij->ji"


def test_tensordot_axes_normalize_to_pairs_of_tuples():
    norm = products.normalize_tensordot_axes
    assert norm(2, (2, 3, 4), (3, 4, 5)) == ((1, 2), (0, 1))
    assert norm(0, (2,), (3,)) == ((), ())
    assert norm((1, 0), (2, 3), (3, 4)) == ((1,), (0,))
    assert norm(([-1, 0], [0, -1]), (2, 3), (3, 2)) == ((1, 0), (0, 1))


# -- errors -----------------------------------------------------------------------------------


def _trace(f, *shapes):
    return tg.make_graph(f)(*(tg.Aval(s, F64) for s in shapes))


def test_matmul_mismatch_message_names_both_shapes():
    msg = (
        "matmul: shapes (2, 3) and (4, 5) do not align: the last axis of the first (3) must "
        "equal the second-to-last axis of the second (4)"
    )
    with pytest.raises(ValueError, match=re.escape(msg)):
        _trace(lambda a, b: a @ b, (2, 3), (4, 5))


@given(data=st.data())
def test_matmul_errors(data):
    k1 = data.draw(st.integers(0, 4))
    k2 = data.draw(st.integers(0, 4).filter(lambda k: k != k1))
    xs = S.shapes(data, max_dims=2) + (k1,)
    ys = (k2,) if data.draw(st.booleans()) else (k2, data.draw(st.integers(0, 3)))
    with pytest.raises(ValueError, match=r"^matmul: shapes .* do not align") as err:
        _trace(lambda a, b: np.matmul(a, b), xs, ys)
    assert str(xs) in str(err.value) and str(ys) in str(err.value)


def test_matmul_scalar_and_batch_errors():
    with pytest.raises(ValueError, match=r"^matmul: shapes \(\) and \(3,\).*multiply"):
        _trace(lambda a, b: a @ b, (), (3,))
    with pytest.raises(
        ValueError,
        match=r"^matmul: shapes \(2, 1, 3\) and \(3, 3, 4\) do not "
        r"broadcast in their batch axes \(2,\) and \(3,\)",
    ):
        _trace(lambda a, b: a @ b, (2, 1, 3), (3, 3, 4))


@given(data=st.data())
def test_dot_errors(data):
    k1 = data.draw(st.integers(0, 4))
    k2 = data.draw(st.integers(0, 4).filter(lambda k: k != k1))
    xs = S.shapes(data, max_dims=2) + (k1,)
    ys = (k2,) if data.draw(st.booleans()) else (k2, 2)
    with pytest.raises(ValueError, match=r"^dot: shapes .* do not align") as err:
        _trace(lambda a, b: np.dot(a, b), xs, ys)
    assert str(xs) in str(err.value) and str(ys) in str(err.value)


def test_tensordot_errors():
    with pytest.raises(
        ValueError,
        match=re.escape(
            "tensordot: shapes (2, 3) and (4, 5) do not align: axis 1 of the first (3) must "
            "equal axis 0 of the second (4)"
        ),
    ):
        _trace(lambda a, b: np.tensordot(a, b, 1), (2, 3), (4, 5))
    with pytest.raises(ValueError, match=r"^tensordot: .*same length"):
        _trace(lambda a, b: np.tensordot(a, b, ([0, 1], [0])), (2, 3), (2, 5))
    with pytest.raises(np.exceptions.AxisError, match=r"^tensordot: axis 2 is out of bounds"):
        _trace(lambda a, b: np.tensordot(a, b, ([2], [0])), (2, 3), (2, 5))
    with pytest.raises(ValueError, match=r"^tensordot: axes \(0, 0\) of the first .*repeat"):
        _trace(lambda a, b: np.tensordot(a, b, ([0, -2], [0, 1])), (2, 3), (2, 2))
    with pytest.raises(ValueError, match=r"^tensordot: axes=3 .*\(2, 3\) and \(3, 4\)"):
        _trace(lambda a, b: np.tensordot(a, b, 3), (2, 3), (3, 4))


def test_einsum_errors():
    def bad(subscripts, *shapes, exc=ValueError, match):
        with pytest.raises(exc, match=match):
            _trace(lambda *o: np.einsum(subscripts, *o), *shapes)

    bad(
        "ij,jk->ik",
        (2, 3),
        (4, 5),
        match=re.escape(
            "einsum: shapes (2, 3) and (4, 5) do not align for 'ij,jk->ik': label 'j' has size 3 "
            "in operand 0 but 4 in operand 1"
        ),
    )
    bad("...i,...i", (2, 3), (4, 3), match=r"^einsum: shapes .* label '...' has size 2")
    bad("ij,jk->ik$", (2, 3), (3, 4), match=r"^einsum: invalid subscripts 'ij,jk->ik\$'")
    bad("i2,jk", (2, 3), (3, 4), match=r"^einsum: invalid subscripts")
    bad("ij->i->", (2, 3), match=r"^einsum: invalid subscripts .*'->' may appear once")
    bad("i-j", (2, 3), match=r"^einsum: invalid subscripts")
    bad("i.j", (2, 3), match=r"^einsum: invalid subscripts .*'\.\.\.'")
    bad("ij,jk", (2, 3), match=r"^einsum: subscripts 'ij,jk' name 2 operands, but 1 was given")
    bad(
        "ijk",
        (2, 3),
        match=r"^einsum: operand 0 has shape \(2, 3\) \(2 axes\), but its "
        r"subscripts 'ijk'",
    )
    bad("ij->k", (2, 3), match=r"^einsum: output label 'k' of 'ij->k' appears in no operand")
    bad("ij->ii", (2, 3), match=r"^einsum: output label 'i' of 'ij->ii' is repeated")
    bad("ii->i", (2, 3), match=r"^einsum: operand 0 of shape \(2, 3\) repeats label 'i'")
    bad("...i->i", (2, 3), match=r"^einsum: .*no '...' to put them in")
    with pytest.raises(TypeError, match=r"^einsum: subscripts must be a string"):
        es.einsum(3, np.ones(2))


def test_unsupported_arguments_raise_not_implemented():
    x = tg.Aval((2, 2), F64)
    with pytest.raises(NotImplementedError, match="einsum: order='F' is not supported"):
        tg.make_graph(lambda a: np.einsum("ij,jk", a, a, order="F"))(x)
    with pytest.raises(NotImplementedError, match="dot: argument out="):
        tnp.dot(np.ones(2), np.ones(2), out=np.ones(()))
    with pytest.raises(NotImplementedError, match="matmul"):
        tg.make_graph(lambda a: np.matmul(a, a, dtype=F32))(x)


C64, C128 = np.complex64, np.complex128
COMPLEX_PAIRS = st.sampled_from([(C64, C64), (C128, C128), (F32, C64), (C128, F64), (C64, F64)])


def _maybe_complex(data, shape, dtype):
    x = S.array(data, shape, np.float64 if np.dtype(dtype).kind == "c" else dtype)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * S.array(data, shape)
    return x.astype(dtype)


@given(data=st.data(), dtypes=COMPLEX_PAIRS)
def test_complex_products_match_numpy(data, dtypes):
    """Complex and mixed real/complex operands: NumPy's bits, vdot conjugating its first."""
    k = data.draw(st.integers(0, 4))
    sa = S.shapes(data, max_dims=2) + (k,)
    sb = S.shapes(data, max_dims=2) + (k,)
    x, y = _maybe_complex(data, sa, dtypes[0]), _maybe_complex(data, sb, dtypes[1])
    assert_traced_equal(lambda a, b: np.inner(a, b), x, y, prim="dot")
    assert_traced_equal(lambda a, b: np.outer(a, b), x, y, prim="multiply")
    assert_traced_equal(lambda a, b: np.kron(a, b), x, y, prim="multiply")
    flat = _maybe_complex(data, (x.size,), dtypes[1])
    assert_traced_equal(lambda a, b: np.vdot(a, b), x, flat, prim="dot")
    assert_traced_equal(lambda a, b: np.vdot(a.T, b), x, flat)
    assert_traced_equal(lambda a, b: np.vdot(b, a), x, flat)
    xm, ym = (_maybe_complex(data, s, d) for s, d in zip(matmul_shapes(data), dtypes))
    assert_traced_equal(lambda a, b: a @ b, xm, ym, prim="matmul")
    subscripts, shapes = einsum_case(data)
    ops = [_maybe_complex(data, s, dtypes[i % 2]) for i, s in enumerate(shapes)]
    assert_traced_equal(lambda *o: np.einsum(subscripts, *o), *ops)


def test_inner_and_vdot_errors():
    with pytest.raises(
        ValueError,
        match=re.escape(
            "inner: shapes (2, 3) and (4, 5) do not align: the last axis of the first (3) must "
            "equal the last axis of the second (5)"
        ),
    ):
        _trace(lambda a, b: np.inner(a, b), (2, 3), (4, 5))
    with pytest.raises(ValueError, match=r"^vdot: shapes \(2, 3\) and \(5,\) have 6 and 5"):
        _trace(lambda a, b: np.vdot(a, b), (2, 3), (5,))


# -- derivative rules against finite differences (called directly on arrays) ------------------


def _check_rules(prim, args, params, rng, drop):
    """<u, J v> from the jvp rule and <J^T u, v> from the vjp rule equal central finite
    differences of `impl`; `drop[i]` makes tangent i a symbolic zero."""
    out = prim.impl(*args, **params)
    u = rng.standard_normal(np.shape(out))
    vs = [None if d else rng.standard_normal(np.shape(a)) for a, d in zip(args, drop)]
    eps = 1e-6

    def at(t):
        return prim.impl(*[a if v is None else a + t * v for a, v in zip(args, vs)], **params)

    fd = float(np.sum(u * (np.asarray(at(eps)) - np.asarray(at(-eps))))) / (2 * eps)
    bars = call_vjp(prim, u, *args, out=out, **params)
    assert len(bars) == len(args)
    for b, a in zip(bars, args):
        assert np.shape(b) == np.shape(a) and np.asarray(b).dtype == a.dtype
    by_vjp = sum(float(np.sum(b * v)) for b, v in zip(bars, vs) if v is not None)
    t_out = prim.jvp(tuple(args), tuple(vs), out=out, **params)
    if all(d for d in drop):
        assert t_out is None
        by_jvp = 0.0
    else:
        assert np.shape(t_out) == np.shape(out)
        by_jvp = float(np.sum(u * t_out))
    scale = max(1.0, abs(fd), *(float(np.max(np.abs(b)) if np.size(b) else 0) for b in bars))
    assert abs(by_vjp - fd) <= 1e-7 * scale, (by_vjp, fd)
    assert abs(by_jvp - fd) <= 1e-7 * scale, (by_jvp, fd)


def _drops(data, n):
    return data.draw(st.lists(st.booleans(), min_size=n, max_size=n), label="zero tangents")


@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_matmul_rules_match_finite_differences(data, seed):
    xs, ys = matmul_shapes(data)
    args = (S.array(data, xs), S.array(data, ys))
    _check_rules(products.matmul_p, args, {}, np.random.default_rng(seed), _drops(data, 2))


@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_dot_rules_match_finite_differences(data, seed):
    xs, ys = dot_shapes(data)
    args = (S.array(data, xs), S.array(data, ys))
    _check_rules(products.dot_p, args, {}, np.random.default_rng(seed), _drops(data, 2))


@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_tensordot_rules_match_finite_differences(data, seed):
    sa, sb, axes = tensordot_case(data)
    args = (S.array(data, sa), S.array(data, sb))
    _check_rules(
        products.tensordot_p, args, {"axes": axes}, np.random.default_rng(seed), _drops(data, 2)
    )


@pytest.mark.parametrize("subscripts", EINSUM_SUBSCRIPTS)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_einsum_rules_match_finite_differences(subscripts, data, seed):
    _, shapes = einsum_case(data, subscripts)
    args = tuple(S.array(data, s) for s in shapes)
    params = {"subscripts": es.normalize_subscripts(subscripts, len(args))}
    _check_rules(es.einsum_p, args, params, np.random.default_rng(seed), _drops(data, len(args)))


@pytest.mark.parametrize(
    "prim, shapes, params",
    [
        (products.matmul_p, ((4, 2, 3), (3, 5)), {}),
        (products.matmul_p, ((2, 3), (4, 3, 5)), {}),
        (products.dot_p, ((2, 3), (4, 3, 5)), {}),
        (products.tensordot_p, ((2, 3, 4), (4, 3)), {"axes": ((1, 2), (1, 0))}),
        (es.einsum_p, ((3, 3), (3,)), {"subscripts": "ii,j->ij"}),
    ],
)
def test_cotangents_take_each_operands_dtype(prim, shapes, params):
    # a float32 operand of a float64 product gets a float32 cotangent; an int operand none
    a = np.ones(shapes[0], F32)
    for b in (np.ones(shapes[1], F64), np.ones(shapes[1], np.int64)):
        out = prim.impl(a, b, **params)
        a_bar, b_bar = call_vjp(prim, np.ones(np.shape(out), out.dtype), a, b, out=out, **params)
        assert a_bar.dtype == F32 and a_bar.shape == a.shape
        if b.dtype.kind == "i":
            assert b_bar is None
        else:
            assert b_bar.dtype == F64 and b_bar.shape == b.shape


@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_rules_give_the_same_cotangents_when_traced(data, seed):
    # the rules run on tracers to build backward graphs (and higher orders): same values
    kind = data.draw(st.sampled_from(["matmul", "einsum"]))
    if kind == "matmul":
        prim, params = products.matmul_p, {}
        args = tuple(S.array(data, s) for s in matmul_shapes(data))
    else:
        subscripts, shapes = einsum_case(data)
        prim = es.einsum_p
        params = {"subscripts": es.normalize_subscripts(subscripts, len(shapes))}
        args = tuple(S.array(data, s) for s in shapes)
    out = prim.impl(*args, **params)
    g = np.random.default_rng(seed).standard_normal(np.shape(out))
    eager = call_vjp(prim, g, *args, out=out, **params)
    graph = tg.make_graph(lambda c, *a: call_vjp(prim, c, *a, out=None, **params))(g, *args)
    for e, t in zip(eager, graph(g, *args)):
        np.testing.assert_allclose(t, e, rtol=1e-12, atol=1e-12)
    avals = [aval_of(a) for a in args]
    assert prim.shape(*avals, **params).shape == np.shape(out)
