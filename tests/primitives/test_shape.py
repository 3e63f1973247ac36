"""The shape family: NumPy's shape functions traced through `make_graph` give NumPy's own
results bit for bit (values, dtype, shape); every error names the operation and the shapes;
each primitive's jvp and vjp rule agrees with central finite differences, its emitted code
with its impl, and its `view_of` flag with what NumPy returns.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
from tests import strategies as S
from tests.primitives.samples.shape import SAMPLES
from tracegrad.core import bind
from tracegrad.ir.types import Aval
from tracegrad.primitives import shape as sp
from tracegrad.primitives import slicing

DTYPES = st.sampled_from([np.float32, np.float64, np.int64])


def _leaves(x):
    return [v for item in x for v in _leaves(item)] if isinstance(x, list | tuple) else [x]


def assert_same_as_numpy(f, *args):
    """`f` traced by make_graph and run by the interpreter equals `f` run as NumPy, bit for bit."""
    want = f(*args)
    got = tg.make_graph(f)(*args)(*args)
    assert type(got) is type(want) or not isinstance(want, list | tuple), (type(got), type(want))
    got_leaves, want_leaves = _leaves(got), _leaves(want)
    assert len(got_leaves) == len(want_leaves)
    for g, w in zip(got_leaves, want_leaves):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert g.shape == w.shape, (g.shape, w.shape)
        assert g.tobytes() == w.tobytes(), (g, w)


def _arr(data, shape, dtype):
    return S.array(data, tuple(shape), dtype, -3, 3)


def _x(data, dtype, **kw):
    return _arr(data, S.shapes(data, **kw), dtype)


def _axis(data, ndim, *, extra=0):
    """An axis of an ndim(+extra)-d array, negative half the time."""
    n = ndim + extra
    return data.draw(st.integers(-n, n - 1), label="axis")


def _varying(data, dtype, base, axis, n=None):
    """1-3 arrays of shape `base` except along `axis`, where each has its own length."""
    n = data.draw(st.integers(1, 3), label="count") if n is None else n
    out = []
    for _ in range(n):
        s = list(base)
        s[axis] = data.draw(st.integers(0, 3), label="length")
        out.append(_arr(data, s, dtype))
    return out


# -- forward: every wrapper, as NumPy code run on tracers ----------------------------------------


@given(data=st.data(), dtype=DTYPES)
def test_reshape_transpose_broadcast_to(data, dtype):
    x = _x(data, dtype)
    dims = [d for d in x.shape if d != 1]
    target = [dims[i] for i in data.draw(st.permutations(range(len(dims))))] + [1]
    if x.size and data.draw(st.booleans()):
        target[data.draw(st.integers(0, len(target) - 1))] = -1
    assert_same_as_numpy(lambda a: np.reshape(a, target), x)
    assert_same_as_numpy(lambda a: a.reshape(*target), x)
    assert_same_as_numpy(lambda a: a.flatten(), x)
    perm = data.draw(st.permutations(range(x.ndim)))
    neg = [p - x.ndim for p in perm]
    assert_same_as_numpy(lambda a: np.transpose(a, neg), x)
    assert_same_as_numpy(lambda a: (a.T, a.transpose(), a.transpose(perm)), x)
    assert_same_as_numpy(lambda a: np.permute_dims(a, perm), x)
    s1, s2 = S.broadcast_shapes(data, 2)
    y = _arr(data, s1, dtype)
    assert_same_as_numpy(lambda a: np.broadcast_to(a, np.broadcast_shapes(s1, s2)), y)
    assert_same_as_numpy(lambda a: np.broadcast_arrays(a, np.ones(s2, np.float32)), y)


@given(data=st.data(), dtype=DTYPES)
def test_axis_movers(data, dtype):
    x = _x(data, dtype, min_dims=1)
    n = x.ndim
    a1, a2 = _axis(data, n), _axis(data, n)
    assert_same_as_numpy(lambda a: (np.swapaxes(a, a1, a2), a.swapaxes(a2, a1)), x)
    k = data.draw(st.integers(0, n))
    src = data.draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k, unique=True))
    dst = data.draw(st.lists(st.integers(-n, -1), min_size=k, max_size=k, unique=True))
    assert_same_as_numpy(lambda a: np.moveaxis(a, src, dst), x)
    assert_same_as_numpy(lambda a: np.moveaxis(a, a1, -1), x)
    start = data.draw(st.integers(-n, n))
    assert_same_as_numpy(lambda a: np.rollaxis(a, a1, start), x)
    if n >= 2:
        assert_same_as_numpy(lambda a: (np.matrix_transpose(a), a.mT), x)
    assert_same_as_numpy(lambda a: (np.ravel(a), a.ravel()), x)


@given(data=st.data(), dtype=DTYPES)
def test_expand_dims_squeeze_atleast(data, dtype):
    x = _x(data, dtype)
    k = data.draw(st.integers(1, 2))
    n = x.ndim + k
    distinct = st.lists(st.integers(-n, n - 1), min_size=k, max_size=k, unique_by=lambda a: a % n)
    axis = data.draw(distinct)
    assert_same_as_numpy(lambda a: np.expand_dims(a, axis), x)
    one = _axis(data, x.ndim, extra=1)
    assert_same_as_numpy(lambda a: np.expand_dims(a, one), x)
    y = np.expand_dims(x, axis)
    ones = [i for i, d in enumerate(y.shape) if d == 1]
    sub = data.draw(st.lists(st.sampled_from(ones), unique=True))
    assert_same_as_numpy(lambda a: (np.squeeze(a), a.squeeze(), np.squeeze(a, tuple(sub))), y)
    z = _x(data, dtype, max_dims=4)
    assert_same_as_numpy(
        lambda a, b: (
            np.atleast_1d(a),
            np.atleast_2d(a),
            np.atleast_3d(a),
            np.atleast_1d(a, b),
            np.atleast_3d(b, a),
        ),
        x,
        z,
    )


@given(data=st.data(), dtype=DTYPES)
def test_concatenate_and_stack(data, dtype):
    base = S.shapes(data, min_dims=1)
    axis = _axis(data, len(base))
    xs = _varying(data, dtype, base, axis)
    assert_same_as_numpy(lambda *a: np.concatenate(a, axis=axis), *xs)
    assert_same_as_numpy(lambda *a: np.concatenate(a, axis=None), *xs)
    assert_same_as_numpy(lambda *a: np.concat(list(a), axis=axis), *xs)
    # a traced array joined with a constant one of another dtype: NumPy's promotion
    const = np.ones(xs[0].shape, np.float32)
    assert_same_as_numpy(lambda a: np.concatenate([a, const], axis), xs[0])
    assert_same_as_numpy(lambda a: np.concatenate([a, a], axis, dtype=np.float64), xs[0])
    same = [_arr(data, base, dtype) for _ in range(data.draw(st.integers(1, 3)))]
    sa = _axis(data, len(base), extra=1)
    assert_same_as_numpy(lambda *a: np.stack(a, axis=sa), *same)
    assert_same_as_numpy(lambda *a: np.unstack(np.stack(a), axis=axis), *same)
    y = _x(data, dtype)
    assert_same_as_numpy(lambda a: np.stack([a, 2 * a, a]), y)


@given(data=st.data(), dtype=DTYPES)
def test_hstack_vstack_dstack_column_stack(data, dtype):
    nd = data.draw(st.integers(0, 3))
    base = S.shapes(data, min_dims=nd, max_dims=nd)
    if nd <= 1:  # 0-d and 1-d pieces: hstack joins them end to end
        xs = [
            _arr(data, data.draw(st.sampled_from([(), (data.draw(st.integers(0, 3)),)])), dtype)
            for _ in range(data.draw(st.integers(1, 3)))
        ]
    else:
        xs = _varying(data, dtype, base, 1)
    assert_same_as_numpy(lambda *a: np.hstack(a), *xs)
    xs = _varying(data, dtype, base, 0) if nd >= 2 else [_arr(data, base, dtype)] * 2
    assert_same_as_numpy(lambda *a: np.vstack(a), *xs)
    xs = _varying(data, dtype, base, 2) if nd >= 3 else [_arr(data, base, dtype)] * 2
    assert_same_as_numpy(lambda *a: np.dstack(a), *xs)
    n = data.draw(st.integers(0, 3))
    cols = [
        _arr(data, data.draw(st.sampled_from([(n,), (n, data.draw(st.integers(0, 2)))])), dtype)
        for _ in range(data.draw(st.integers(1, 3)))
    ]
    assert_same_as_numpy(lambda *a: np.column_stack(a), *cols)


@given(data=st.data(), dtype=DTYPES)
def test_split_family(data, dtype):
    x = _x(data, dtype, min_dims=1, max_side=6)
    axis = _axis(data, x.ndim)
    n = x.shape[axis]
    divisors = [k for k in range(1, 7) if n % k == 0]
    sections = data.draw(st.sampled_from(divisors))
    assert_same_as_numpy(lambda a: np.split(a, sections, axis=axis), x)
    # any indices, as NumPy takes them: negative, past the end, decreasing (overlaps)
    indices = data.draw(st.lists(st.integers(-n - 2, n + 2), max_size=4))
    assert_same_as_numpy(lambda a: np.split(a, indices, axis), x)
    assert_same_as_numpy(lambda a: np.array_split(a, indices, axis), x)
    k = data.draw(st.integers(1, 7))
    assert_same_as_numpy(lambda a: np.array_split(a, k, axis), x)
    m = x.shape[1] if x.ndim > 1 else x.shape[0]
    assert_same_as_numpy(lambda a: np.hsplit(a, [k for k in (1, 4) if k <= m] or 1), x)
    if x.ndim >= 2:
        assert_same_as_numpy(lambda a: np.vsplit(a, [1]), x)
    if x.ndim >= 3:
        assert_same_as_numpy(lambda a: np.dsplit(a, [0, 2]), x)


@given(data=st.data(), dtype=DTYPES)
def test_flip_roll_rot90(data, dtype):
    x = _x(data, dtype)
    axes = list(S.axis_subset(data, x.ndim))
    assert_same_as_numpy(lambda a: (np.flip(a), np.flip(a, axes)), x)
    if x.ndim >= 1:
        assert_same_as_numpy(lambda a: (np.flip(a, -1), np.flipud(a)), x)
    if x.ndim >= 2:
        assert_same_as_numpy(lambda a: np.fliplr(a), x)
    shift = data.draw(st.integers(-7, 7))
    assert_same_as_numpy(lambda a: np.roll(a, shift), x)
    if x.ndim >= 1:
        ax = data.draw(st.lists(st.integers(-x.ndim, x.ndim - 1), min_size=1, max_size=3))
        shifts = data.draw(st.lists(st.integers(-7, 7), min_size=len(ax), max_size=len(ax)))
        assert_same_as_numpy(lambda a: (np.roll(a, shifts, ax), np.roll(a, shift, ax[0])), x)
    if x.ndim >= 2:
        k = data.draw(st.integers(-5, 5))
        ax0 = data.draw(st.integers(0, x.ndim - 1))
        ax1 = data.draw(st.integers(0, x.ndim - 1).filter(lambda a: a != ax0))
        assert_same_as_numpy(lambda a: (np.rot90(a, k), np.rot90(a, k, (ax0, ax1 - x.ndim))), x)


@given(data=st.data(), dtype=DTYPES)
def test_repeat_tile(data, dtype):
    x = _x(data, dtype)
    r = data.draw(st.integers(0, 3))
    assert_same_as_numpy(lambda a: (np.repeat(a, r), a.repeat(r)), x)
    if x.ndim:
        axis = _axis(data, x.ndim)
        n = x.shape[axis]
        counts = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        assert_same_as_numpy(
            lambda a: (np.repeat(a, counts, axis), np.repeat(a, [r], axis), a.repeat(r, axis=axis)),
            x,
        )
    reps = data.draw(st.lists(st.integers(0, 3), max_size=4))
    assert_same_as_numpy(lambda a: (np.tile(a, reps), np.tile(a, r)), x)


@given(data=st.data(), dtype=DTYPES)
def test_pad(data, dtype):
    x = _x(data, dtype)
    width = st.integers(0, 2)
    # (NumPy reads an empty pad_width list as float, and rejects it: 0 pads a 0-d array)
    pairs = [(data.draw(width), data.draw(width)) for _ in range(x.ndim)] or 0
    value = data.draw(st.sampled_from([0, 1.5, -2.25, -0.0, 7]))
    assert_same_as_numpy(lambda a: np.pad(a, pairs), x)
    w = data.draw(width)
    assert_same_as_numpy(lambda a: np.pad(a, w, constant_values=value), x)
    assert_same_as_numpy(lambda a: np.pad(a, (1, 2), "constant", constant_values=value), x)
    values = [
        (data.draw(st.sampled_from([0.5, -1.0, 3])), data.draw(st.sampled_from([2.0, 0])))
        for _ in range(x.ndim)
    ] or 0.5
    assert_same_as_numpy(lambda a: np.pad(a, pairs, constant_values=values), x)
    assert_same_as_numpy(lambda a: np.pad(a, 1, constant_values=(-1.0, 4.0)), x)


def test_python_scalars_become_strong_arrays_as_in_numpy():
    # np.reshape(2.0, ()) is a float64 array (strong), so adding float32 gives float64
    x = np.arange(3, dtype=np.float32)

    def f(s, a):
        return np.reshape(s, (1,)) + a, np.stack([s, s, s]) + a, np.expand_dims(s, 0) * a

    want = f(2.0, x)
    got = tg.make_graph(f)(2.0, x)(2.0, x)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == np.float64
        np.testing.assert_array_equal(g, w)


def test_wrappers_on_plain_arrays_run_numpy():
    x = np.arange(6.0).reshape(2, 3)
    for ours, theirs in [
        (tg.numpy.stack([x, x], 1), np.stack([x, x], 1)),
        (tg.numpy.pad(x, 1, constant_values=3), np.pad(x, 1, constant_values=3)),
        (tg.numpy.roll(x, 2), np.roll(x, 2)),
        (tg.numpy.rot90(x), np.rot90(x)),
        (tg.numpy.repeat(x, [1, 2], axis=0), np.repeat(x, [1, 2], axis=0)),
    ]:
        assert ours.dtype == theirs.dtype
        np.testing.assert_array_equal(ours, theirs, strict=True)


# -- errors: the operation, the shapes, and what to do instead ------------------------------------


def _trace(f, *shapes):
    return tg.make_graph(f)(*[Aval(s, np.float64) for s in shapes])


def test_concatenate_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"concatenate: shapes \(2, 3\).*\(2, 4\).*axis 1"):
        _trace(lambda a, b: np.concatenate([a, b]), (2, 3), (2, 4))
    with pytest.raises(ValueError, match=r"concatenate: shapes \(2, 3\).*\(3,\).*dimensions"):
        _trace(lambda a, b: np.concatenate([a, b], 1), (2, 3), (3,))
    with pytest.raises(ValueError, match="concatenate: zero-dimensional"):
        _trace(lambda a: np.concatenate([a, a]), ())
    with pytest.raises(ValueError, match="concatenate: need at least one array"):
        tg.numpy.concatenate([])


def test_reshape_to_a_wrong_size():
    with pytest.raises(ValueError, match=r"reshape: .*shape \(2, 3\) \(6 elements\).*\(4,\)"):
        _trace(lambda a: np.reshape(a, (4,)), (2, 3))
    with pytest.raises(ValueError, match=r"reshape: .*\(2, 3\).*\(4, -1\)"):
        _trace(lambda a: a.reshape(4, -1), (2, 3))
    with pytest.raises(ValueError, match="reshape: can only specify one unknown dimension"):
        _trace(lambda a: a.reshape(-1, -1), (2, 3))


def test_squeeze_of_a_non_1_axis():
    with pytest.raises(ValueError, match=r"squeeze: cannot squeeze axis 1 .*\(1, 3\).*size is 3"):
        _trace(lambda a: np.squeeze(a, 1), (1, 3))
    with pytest.raises(np.exceptions.AxisError, match="squeeze: axis 2 is out of bounds"):
        _trace(lambda a: a.squeeze(2), (1, 3))


def test_split_into_unequal_sections():
    with pytest.raises(ValueError, match=r"split: .*\(2, 5\).*3 equal sections.*array_split"):
        _trace(lambda a: np.split(a, 3, axis=1), (2, 5))
    with pytest.raises(ValueError, match="array_split: the number of sections must be larger"):
        _trace(lambda a: np.array_split(a, 0), (4,))
    with pytest.raises(ValueError, match="vsplit only works on arrays of 2 or more"):
        _trace(lambda a: np.vsplit(a, 2), (4,))
    with pytest.raises(ValueError, match=r"split: indices \(3, 1\) must be non-decreasing"):
        _trace(lambda a: sp.split(a, (3, 1), 0), (4,))


def test_other_shape_errors():
    cases = [
        (
            ValueError,
            r"stack: all input arrays must have the same shape, got shapes \(2,\) and "
            r"\(3,\)",
            lambda a, b: np.stack([a, b]),
            [(2,), (3,)],
        ),
        (
            ValueError,
            r"transpose: axes \(0,\) do not match an array of shape \(2, 3\)",
            lambda a: np.transpose(a, (0,)),
            [(2, 3)],
        ),
        (ValueError, "transpose: repeated axis", lambda a: np.transpose(a, (1, 1)), [(2, 3)]),
        (
            ValueError,
            r"broadcast_to: cannot broadcast an array of shape \(2, 3\) to \(3, 3\)",
            lambda a: np.broadcast_to(a, (3, 3)),
            [(2, 3)],
        ),
        (
            ValueError,
            r"broadcast_arrays: shapes \(2,\) and \(3,\) do not broadcast",
            lambda a, b: np.broadcast_arrays(a, b),
            [(2,), (3,)],
        ),
        (
            ValueError,
            r"repeat: got 2 repeat counts for axis 0 of an array of shape \(3,\)",
            lambda a: np.repeat(a, [1, 2]),
            [(3,)],
        ),
        (
            ValueError,
            "repeat: repeat counts must be non-negative",
            lambda a: np.repeat(a, -1),
            [(3,)],
        ),
        (
            ValueError,
            r"tile: repetitions must be non-negative, got reps \(2, -1\)",
            lambda a: np.tile(a, (2, -1)),
            [(3,)],
        ),
        (
            ValueError,
            "pad: pad_width .* cannot contain negative values",
            lambda a: np.pad(a, -1),
            [(3,)],
        ),
        (
            ValueError,
            "moveaxis: `source` .* and `destination` .* same number",
            lambda a: np.moveaxis(a, (0, 1), 0),
            [(2, 3)],
        ),
        (
            np.exceptions.AxisError,
            "expand_dims: axis 3 is out of bounds",
            lambda a: np.expand_dims(a, 3),
            [(2,)],
        ),
        (
            np.exceptions.AxisError,
            "swapaxes: axis 2 is out of bounds",
            lambda a: np.swapaxes(a, 0, 2),
            [(2, 3)],
        ),
        (ValueError, "fliplr: input must be >= 2-d", lambda a: np.fliplr(a), [(3,)]),
        (ValueError, "rot90: axes must be different", lambda a: np.rot90(a, 1, (0, -2)), [(2, 3)]),
        (
            ValueError,
            r"pad_strided: an array of shape \(3,\) .* does not fit in shape \(4,\)",
            lambda a: slicing.pad_strided(a, (4,), (0,), (2,)),
            [(3,)],
        ),
        (
            NotImplementedError,
            "pad: a callable mode .* fills a NumPy array in place",
            lambda a: np.pad(a, 1, mode=lambda vector, width, axis, kwargs: None),
            [(3,)],
        ),
        (
            ValueError,
            "mode 'spiral' is not supported",
            lambda a: np.pad(a, 1, mode="spiral"),
            [(3,)],
        ),
        (
            NotImplementedError,
            "ravel: order='F' is not supported",
            lambda a: np.ravel(a, order="F"),
            [(2, 3)],
        ),
        (
            NotImplementedError,
            "concatenate: out= is not supported",
            lambda a: np.concatenate([a, a], out=np.zeros(6)),
            [(3,)],
        ),
        (
            TypeError,
            "concatenate: cannot cast an array of dtype float64 to int64",
            lambda a: np.concatenate([a, a], dtype=np.int64),
            [(3,)],
        ),
        (
            NotImplementedError,
            "repeat: a traced `repeats` is not supported",
            lambda a, r: np.repeat(a, r),
            [(3,), (3,)],
        ),
    ]
    for exc, pattern, f, shapes in cases:
        with pytest.raises(exc, match=pattern):
            _trace(f, *shapes)


# -- the rules: jvp and vjp against central finite differences ------------------------------------


def _outs(prim, out):
    return tuple(out) if prim.multiple_results else (out,)


def _floats(args):
    return [i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f"]


def _moved(prim, args, params, vs, t):
    moved = list(args)
    for i, v in vs.items():
        moved[i] = args[i] + t * v
    return _outs(prim, prim.impl(*moved, **params))


def _fd(prim, args, params, vs, us, eps=1e-3):
    # every shape primitive is linear (pad: affine), so central differences are exact up to
    # rounding, and a large step keeps that rounding small
    plus, minus = _moved(prim, args, params, vs, eps), _moved(prim, args, params, vs, -eps)
    return sum(float(np.sum(u * (p - m))) / (2 * eps) for u, p, m in zip(us, plus, minus))


@pytest.mark.parametrize("prim", list(SAMPLES), ids=str)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_jvp_and_vjp_rules_match_finite_differences(prim, data, seed):
    args, params = SAMPLES[prim].draw(data, np.float64)
    rng = np.random.default_rng(seed)
    out = prim.impl(*args, **params)
    outs = _outs(prim, out)
    # some inputs carry no tangent and some outputs no cotangent: symbolic zeros
    keep = [data.draw(st.booleans(), label="tangent") or len(args) == 1 for _ in args]
    vs = {i: rng.standard_normal(np.shape(args[i])) for i in _floats(args) if keep[i]}
    us = [rng.standard_normal(np.shape(o)) for o in outs]
    drop = [prim.multiple_results and data.draw(st.booleans(), label="no cotangent") for _ in us]
    us_used = [np.zeros_like(u) if d else u for u, d in zip(us, drop)]
    expected = _fd(prim, args, params, vs, us_used)
    tol = 1e-8 * max([1.0] + [float(np.abs(u).sum()) for u in us])

    tangents = tuple(vs.get(i) for i in range(len(args)))
    t_out = prim.jvp(tuple(args), tangents, out=out, **params)
    t_outs = (None,) * len(outs) if t_out is None else _outs(prim, t_out)
    jvp_side = 0.0
    for u, t, o in zip(us_used, t_outs, outs):
        if t is not None:
            assert np.shape(t) == np.shape(o) and np.asarray(t).dtype == np.asarray(o).dtype
            jvp_side += float(np.sum(u * t))
    assert abs(jvp_side - expected) <= tol, (jvp_side, expected)

    ct = tuple(None if d else u for u, d in zip(us, drop))
    bars = prim.vjp(ct if prim.multiple_results else ct[0], *args, out=out, **params)
    assert len(bars) == len(args)
    vjp_side = 0.0
    for i, b in enumerate(bars):
        if b is not None:
            assert np.shape(b) == np.shape(args[i]), (np.shape(b), np.shape(args[i]))
            if i in vs:
                vjp_side += float(np.sum(b * vs[i]))
    assert abs(vjp_side - expected) <= tol, (vjp_side, expected)


@pytest.mark.parametrize("prim", list(SAMPLES), ids=str)
@given(data=st.data())
def test_rules_keep_float32(prim, data):
    args, params = SAMPLES[prim].draw(data, np.float32)
    out = prim.impl(*args, **params)
    outs = _outs(prim, out)
    t_out = prim.jvp(tuple(args), tuple(np.ones_like(a) for a in args), out=out, **params)
    for t in _outs(prim, t_out):
        assert np.asarray(t).dtype == np.float32
    ct = tuple(np.ones_like(o) for o in outs)
    bars = prim.vjp(ct if prim.multiple_results else ct[0], *args, out=out, **params)
    for b, a in zip(bars, args):
        assert np.asarray(b).dtype == np.float32 and np.shape(b) == np.shape(a)


def test_integer_inputs_get_no_cotangent():
    x = np.arange(6).reshape(2, 3)
    y = np.ones((2, 1))
    out = np.concatenate([x, y], 1)
    assert sp.concatenate_p.vjp(np.ones_like(out), x, y, out=out, axis=1)[0] is None
    for prim, params in [
        (sp.repeat_p, {"repeats": 2, "axis": 0}),
        (sp.tile_p, {"reps": (2,)}),
        (sp.pad_p, {"pad_width": ((1, 0), (0, 1)), "constant_values": 0}),
    ]:
        out = prim.impl(x, **params)
        assert prim.vjp(np.ones(out.shape), x, out=out, **params) == (None,)


def test_concatenate_vjp_casts_back_to_each_input_dtype():
    x, y = np.ones(2, np.float32), np.ones(3, np.float64)
    out = np.concatenate([x, y])
    bx, by = sp.concatenate_p.vjp(np.arange(5.0), x, y, out=out, axis=0)
    assert bx.dtype == np.float32 and by.dtype == np.float64
    np.testing.assert_array_equal(bx, [0, 1])
    np.testing.assert_array_equal(by, [2, 3, 4])


def test_grad_through_numpy_shape_code():
    """tg.grad of a program mixing the wrappers, against central finite differences."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4))
    w = rng.standard_normal((10, 12))

    def f(x):
        a, b = np.split(np.roll(x, 1, axis=1), [1], axis=0)
        # b: (2, 4) -> rot90 (4, 2); a: (1, 4) -> repeat (1, 4) -> T (4, 1)
        y = np.concatenate([np.rot90(b), np.repeat(a, [1, 0, 2, 1], axis=1).T], axis=1)
        z = np.pad(np.stack([y, np.flip(y)]), ((0, 0), (1, 2), (2, 1)), constant_values=3.0)
        return np.sum(np.tile(z[0], (1, 2)) * w[:7, :12]) + np.sum(z[1] * w[3:, 2:8])

    g = tg.grad(f)(x)
    v = rng.standard_normal(x.shape)
    eps = 1e-4
    fd = (f(x + eps * v) - f(x - eps * v)) / (2 * eps)
    assert abs(float(np.sum(g * v)) - fd) <= 1e-7 * max(1.0, abs(fd))


# -- emitted code and views ---------------------------------------------------------------------


@pytest.mark.parametrize("prim", list(SAMPLES), ids=str)
@given(data=st.data(), dtype=DTYPES)
def test_emit_computes_impl(prim, data, dtype):
    args, params = SAMPLES[prim].draw(data, dtype)
    names = [f"x{i}" for i in range(len(args))]
    source = prim.emit(*names, **params)
    got = eval(source, {"np": np, **dict(zip(names, args))})  # noqa: S307 - our own emitted code
    want = bind(prim, *args, **params)
    for g, w in zip(_outs(prim, got), _outs(prim, want)):
        assert np.asarray(g).dtype == np.asarray(w).dtype
        np.testing.assert_array_equal(g, w, strict=True)


@pytest.mark.parametrize("prim", list(SAMPLES), ids=str)
@given(data=st.data())
def test_view_of_matches_numpy(prim, data):
    args, params = SAMPLES[prim].draw(data, np.float64)
    outs = _outs(prim, prim.impl(*args, **params))
    for o in outs:
        # (np.flip of a 0-d array returns a NumPy scalar, a copy: no buffer to share)
        if np.size(o) and np.size(args[0]) and isinstance(o, np.ndarray):
            assert np.shares_memory(o, args[0]) == (prim.view_of == 0), prim
