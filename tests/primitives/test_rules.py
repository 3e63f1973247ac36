"""Every registered primitive, checked from its SAMPLES row.

For each primitive: the shape rule agrees with what `impl` returns; a traced graph gives the
eager result bit for bit; the vjp agrees with central finite differences (first and second
order, through nested `grad`); the jvp agrees with finite differences and is the adjoint of
the vjp (<u, J v> == <J^T u, v>, no Jacobian needed), in float32 and float64, also with
Python ints, NumPy integer scalars and integer arrays as operands. Non-differentiable
primitives must give no cotangent. A primitive without a row fails
`test_every_primitive_has_a_sample`. Rows that take complex inputs (`Sample.complex`) are
checked again in complex64 and complex128, with a real operand mixed in where NumPy promotes
one: shape rule and bits, the jvp against finite differences along real and imaginary
directions, and the vjp as its transpose under JAX's pairing Re(sum(a * b)).
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tracegrad as tg
from tests.primitives.samples import SAMPLES
from tracegrad.core import bind
from tracegrad.ir.types import aval_of, is_float
from tracegrad.primitives import ALL
from tracegrad.transforms.vjp import call_vjp

DIFFERENTIABLE = [p for p in ALL if p in SAMPLES and SAMPLES[p].fd]
NOT_DIFFERENTIABLE = [p for p in ALL if p in SAMPLES and not SAMPLES[p].fd]
DTYPES = st.sampled_from([np.float32, np.float64])


def test_every_primitive_has_a_sample():
    missing = sorted(p.name for p in ALL if p not in SAMPLES)
    assert not missing, f"primitives without a SAMPLES row: {missing}"


def test_differentiability_flags_match_samples():
    wrong = sorted(p.name for p in ALL if p in SAMPLES and SAMPLES[p].fd and not p.differentiable)
    assert not wrong, f"SAMPLES says differentiable, primitive says not: {wrong}"


def _outs(prim, out):
    return tuple(out) if prim.multiple_results else (out,)


def _apply(prim, params):
    return lambda *args: bind(prim, *args, **params)


@pytest.mark.parametrize("prim", ALL, ids=str)
@given(data=st.data(), dtype=DTYPES)
def test_shape_rule_and_tracing_match_impl(prim, data, dtype):
    args, params = SAMPLES[prim].draw(data, dtype)
    out = bind(prim, *args, **params)
    expected = prim.shape(*[aval_of(a) for a in args], **params)
    expected = tuple(expected) if prim.multiple_results else (expected,)
    for o, a in zip(_outs(prim, out), expected):
        assert np.shape(o) == a.shape, (prim, np.shape(o), a)
        assert np.asarray(o).dtype == a.dtype, (prim, np.asarray(o).dtype, a)
    graph = tg.make_graph(_apply(prim, params))(*args)
    traced = graph(*args)
    for o, t in zip(_outs(prim, out), _outs(prim, traced)):
        assert np.asarray(t).dtype == np.asarray(o).dtype
        np.testing.assert_array_equal(t, o, strict=True)


# -- derivatives ------------------------------------------------------------------------------


def _float_positions(args):
    return [i for i, a in enumerate(args) if is_float(np.asarray(a).dtype)]


def _partial(prim, params, args, pos):
    """The primitive as a function of its float arguments only (the others held fixed),
    its outputs in the row's gauge (`Sample.fd_gauge`)."""
    gauge = SAMPLES[prim].fd_gauge

    def f(*float_args):
        full = list(args)
        for i, v in zip(pos, float_args):
            full[i] = v
        out = bind(prim, *full, **params)
        return out if gauge is None else gauge(out)

    return f


def _inner(prim, outs, us):
    """<u, f(x)>, real: Re(sum(o * u)) for a complex output of real inputs (`complex`)."""
    total = 0.0
    for o, u in zip(_outs(prim, outs), us):
        term = tg.numpy.sum(o * u)
        total = total + (tg.numpy.real(term) if np.dtype(term.dtype).kind == "c" else term)
    return total


def _random_like(rng, x):
    """A random direction like `x` (with both parts for a complex `x`)."""
    v = rng.standard_normal(np.shape(x))
    if np.iscomplexobj(x):
        v = v + 1j * rng.standard_normal(np.shape(x))
    return v.astype(np.asarray(x).dtype)


def _directions(prim, rng, xs, pos):
    """A random direction per float argument; Hermitian for the arguments whose row says the
    primitive reads one triangle (`Sample.hermitian`: cholesky, eigh), whose derivative is
    that of the Hermitian part, so only a Hermitian direction has a finite-difference twin."""
    out = [_random_like(rng, x) for x in xs]
    for k, i in enumerate(pos):
        if i in SAMPLES[prim].hermitian:
            v = out[k]
            out[k] = ((v + np.conj(np.swapaxes(v, -1, -2))) / 2).astype(v.dtype)
    return out


def _checked(prim, us):
    """Output directions, zero on the outputs that finite differences cannot check (an
    eigenvector's sign is LAPACK's choice, which may jump between two nearby inputs)."""
    keep = SAMPLES[prim].fd_outputs
    return us if keep is None else [u if i in keep else u * 0 for i, u in enumerate(us)]


def _scale(*arrays):
    return max([1.0] + [float(np.max(np.abs(a))) for a in arrays if np.size(a)])


def _problem(prim, data, seed):
    """f (the primitive of its float arguments), those arguments, and random directions:
    u like the outputs, v and w like the inputs."""
    args, params = SAMPLES[prim].draw(data, np.float64)
    pos = _float_positions(args)
    f = _partial(prim, params, args, pos)
    xs = [args[i] for i in pos]
    rng = np.random.default_rng(seed)
    us = _checked(prim, [_random_like(rng, o) for o in _outs(prim, f(*xs))])
    vs = _directions(prim, rng, xs, pos)
    ws = _directions(prim, rng, xs, pos)
    return f, xs, us, vs, ws


@pytest.mark.parametrize("prim", DIFFERENTIABLE, ids=str)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_vjp_matches_finite_differences(prim, data, seed):
    f, xs, us, vs, _ = _problem(prim, data, seed)
    _, vjp_fn = tg.vjp(f, *xs)
    bars = vjp_fn(tuple(us) if prim.multiple_results else us[0])
    lhs = sum(float(np.sum(b * v)) for b, v in zip(bars, vs))
    eps = 1e-6

    def h(t):
        return float(_inner(prim, f(*[x + t * v for x, v in zip(xs, vs)]), us))

    rhs = (h(eps) - h(-eps)) / (2 * eps)
    tol = SAMPLES[prim].tol * _scale(lhs, rhs, *bars, *us)
    assert abs(lhs - rhs) <= tol, f"{prim}: <J^T u, v> = {lhs}, finite differences {rhs}"


@pytest.mark.parametrize("prim", DIFFERENTIABLE, ids=str)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_second_order_matches_finite_differences(prim, data, seed):
    """d/dt <grad_x <u, f(x + t w)>, v> against the nested grad of the same expression."""
    f, xs, us, vs, ws = _problem(prim, data, seed)
    argnums = tuple(range(len(xs)))

    def first(*xs_):  # <J(x)^T u, v>, a scalar function of x
        g = tg.grad(lambda *a: _inner(prim, f(*a), us), argnums=argnums)(*xs_)
        total = 0.0
        for gi, vi in zip(g, vs):
            total = total + tg.numpy.sum(gi * vi)
        return total

    second = tg.grad(first, argnums=argnums)(*xs)
    lhs = sum(float(np.sum(s * w)) for s, w in zip(second, ws))
    eps = 1e-5

    def h(t):
        return float(first(*[x + t * w for x, w in zip(xs, ws)]))

    rhs = (h(eps) - h(-eps)) / (2 * eps)
    tol = 10 * SAMPLES[prim].tol * _scale(lhs, rhs, *second)
    assert abs(lhs - rhs) <= tol, f"{prim}: second order {lhs}, finite differences {rhs}"


def _fd_jvp(prim, params, args, tangents, eps=1e-6):
    """Central differences of the primitive along `tangents`, in float64 (the float arguments
    cast up, the integer ones kept)."""

    def at(t):
        moved = [
            np.asarray(a, np.float64) + t * np.asarray(v) if v is not None else a
            for a, v in zip(args, tangents)
        ]
        out = bind(prim, *moved, **params)
        gauge = SAMPLES[prim].fd_gauge
        return [np.asarray(o) for o in _outs(prim, out if gauge is None else gauge(out))]

    plus, minus = at(eps), at(-eps)
    unordered = SAMPLES[prim].fd_unordered
    if unordered:  # each entry matched to the nearest of the unmoved input's (see Sample)
        center = at(0.0)
        for i in unordered:
            plus[i], minus[i] = _aligned(plus[i], center[i]), _aligned(minus[i], center[i])
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


def _aligned(moved, center):
    """`moved`'s entries along the last axis in `center`'s order, each the nearest."""
    nearest = np.argmin(np.abs(moved[..., None, :] - center[..., :, None]), axis=-1)
    return np.take_along_axis(moved, nearest, -1)


def _check_jvp(prim, args, params, seed, dtype):
    """Forward mode (`tg.jvp`) against finite differences and against reverse mode (`tg.vjp`:
    the adjoint identity <u, J v> == <J^T u, v>), with tangents on every float argument."""
    rng = np.random.default_rng(seed)
    pos = _float_positions(args)
    f = _partial(prim, params, args, pos)
    xs = [args[i] for i in pos]
    vs = _directions(prim, rng, xs, pos)
    out, t_out = tg.jvp(f, tuple(xs), tuple(vs))
    # float32: a larger step, since an output cast to float32 rounds each evaluation
    single = np.dtype(dtype) == np.float32
    tangents = [None] * len(args)
    for i, v in zip(pos, vs):
        tangents[i] = v
    fd = _fd_jvp(prim, params, args, tangents, eps=1e-3 if single else 1e-6)
    tol = 1e-3 if single else SAMPLES[prim].tol
    keep = SAMPLES[prim].fd_outputs
    for i, (o, t, want) in enumerate(zip(_outs(prim, out), _outs(prim, t_out), fd)):
        assert np.shape(t) == np.shape(o), (prim, np.shape(t), np.shape(o))
        assert np.asarray(t).dtype == np.asarray(o).dtype, (prim, np.asarray(t).dtype)
        if keep is not None and i not in keep:
            continue
        scale = _scale(want, t)
        np.testing.assert_allclose(t, want, rtol=0, atol=tol * scale, err_msg=str(prim))
    us = [_random_like(rng, o) for o in _outs(prim, out)]
    _, vjp_fn = tg.vjp(f, *xs)
    bars = vjp_fn(tuple(us) if prim.multiple_results else us[0])
    lhs = sum(_pair(u, t) for u, t in zip(us, _outs(prim, t_out)))
    rhs = sum(_pair(b, v) for b, v in zip(bars, vs))
    assert abs(lhs - rhs) <= tol * _scale(lhs, rhs), f"{prim}: <u, J v> = {lhs}, <J^T u, v> = {rhs}"


@pytest.mark.parametrize("prim", DIFFERENTIABLE, ids=str)
@given(data=st.data(), dtype=DTYPES, seed=st.integers(0, 2**32 - 1))
def test_jvp_matches_finite_differences_and_the_vjp(prim, data, dtype, seed):
    args, params = SAMPLES[prim].draw(data, dtype)
    _check_jvp(prim, args, params, seed, dtype)


INT_OPERANDS = [p for p in DIFFERENTIABLE if SAMPLES[p].ints]


def _integer_operand(data, a, lo, hi, scalars):
    """An integer in place of the float operand `a`: a Python int, a NumPy integer scalar or
    (always possible) an integer array of `a`'s shape."""
    kinds = ["int", "int64", "int32", "array"] if scalars else ["array"]
    kind = data.draw(st.sampled_from(kinds), label="integer operand kind")
    k = data.draw(st.integers(lo, hi), label="integer value")
    if kind == "int":
        return k
    if kind in ("int64", "int32"):
        return np.dtype(kind).type(k)
    shape = np.shape(a)
    values = data.draw(
        st.lists(st.integers(lo, hi), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))),
        label="integer array",
    )
    return np.asarray(values, np.int64).reshape(shape)


@pytest.mark.parametrize("prim", INT_OPERANDS, ids=str)
@given(data=st.data(), dtype=DTYPES, seed=st.integers(0, 2**32 - 1))
def test_jvp_with_integer_operands(prim, data, dtype, seed):
    """Python ints, NumPy integer scalars and integer arrays as operands: no tangent of theirs,
    and the float operands' tangents right (forward mode once divided by an integer with
    `np.reciprocal`, integer division, and gave zeros)."""
    args, params = SAMPLES[prim].draw(data, dtype)
    floats = set(_float_positions(args))
    choices = [c for c in SAMPLES[prim].ints if c[0] in floats and floats - {c[0]}]
    assume(choices)  # (a one-operand einsum has no operand to spare)
    pos, lo, hi, scalars = data.draw(st.sampled_from(choices), label="integer operand")
    args = list(args)
    args[pos] = _integer_operand(data, args[pos], lo, hi, scalars)
    assert any(is_float(np.asarray(a).dtype) for a in args)
    _check_jvp(prim, args, params, seed, dtype)


def test_every_binary_primitive_is_checked_with_integer_operands():
    from tracegrad.primitives import elementwise as ew

    # ldexp's second operand is an integer in every sample: its rules always meet one
    always = {ew.ldexp_p}
    missing = [
        p.name for p in ew.BINARY if p.differentiable and p not in INT_OPERANDS and p not in always
    ]
    assert not missing, f"binary primitives without integer operand checks: {missing}"


@pytest.mark.parametrize("prim", NOT_DIFFERENTIABLE, ids=str)
@given(data=st.data())
def test_non_differentiable_primitives_give_no_cotangent(prim, data):
    args, params = SAMPLES[prim].draw(data, np.float64)
    out = bind(prim, *args, **params)
    ct = tuple(np.ones(np.shape(o)) for o in _outs(prim, out))
    bars = call_vjp(prim, ct if prim.multiple_results else ct[0], *args, out=out, **params)
    assert all(b is None for b in bars)
    assert (
        prim.jvp(tuple(args), tuple(np.ones(np.shape(a)) for a in args), out=out, **params) is None
    )


# -- batching ---------------------------------------------------------------------------------


def _examples(rng, args, size, batched):
    """`size` examples of `args`: float arguments that are batched get distinct values
    (scaled by up to 10%, so domains are kept); others repeat."""
    out = []
    for b in range(size):
        ex = []
        for i, a in enumerate(args):
            a = np.asarray(a)
            if i in batched and is_float(a.dtype) and b > 0:
                a = (a * (1.0 + 0.1 * rng.random(a.shape))).astype(a.dtype)
            ex.append(a)
        out.append(ex)
    return out


def test_every_primitive_has_a_batching_rule():
    missing = sorted(p.name for p in ALL if p.batch is None)
    assert not missing, f"primitives without a batching rule: {missing}"


def test_every_primitive_has_a_jvp_and_vjp_rule():
    missing = sorted(p.name for p in ALL if p.jvp is None or p.vjp is None)
    assert not missing, f"primitives without jvp or vjp rules: {missing}"


@pytest.mark.parametrize("prim", ALL, ids=str)
@given(data=st.data(), dtype=DTYPES, seed=st.integers(0, 2**32 - 1))
def test_batching_rule_matches_a_loop(prim, data, dtype, seed):
    """The rule applied to stacked examples equals the primitive applied to each, for a random
    subset of batched arguments, each batched along a random axis position."""
    args, params = SAMPLES[prim].draw(data, dtype)
    _check_batching(prim, data, args, params, seed)


def _check_batching(prim, data, args, params, seed, exact=True):
    n = len(args)
    batched = data.draw(st.sets(st.integers(0, n - 1), min_size=1), label="batched args")
    size = data.draw(st.integers(1, 3), label="batch size")
    rng = np.random.default_rng(seed)
    examples = _examples(rng, args, size, batched)
    stacked, dims = [], []
    for i in range(n):
        if i in batched:
            d = data.draw(st.integers(0, np.ndim(args[i])), label=f"batch axis of arg {i}")
            stacked.append(np.stack([ex[i] for ex in examples], axis=d))
            dims.append(d)
        else:
            stacked.append(np.asarray(args[i]))
            dims.append(None)
    expected = [_outs(prim, bind(prim, *ex, **params)) for ex in examples]
    out, out_dim = prim.batch(stacked, dims, **params)
    outs = _outs(prim, out)
    out_dims = tuple(out_dim) if prim.multiple_results else (out_dim,)
    exact = exact and prim.name not in INEXACT_BATCHING
    for k, (o, d) in enumerate(zip(outs, out_dims)):
        want = np.stack([e[k] for e in expected])
        got = np.moveaxis(np.asarray(o), d, 0) if d is not None else np.broadcast_to(o, want.shape)
        assert got.shape == want.shape, (prim, got.shape, want.shape)
        assert got.dtype == want.dtype, (prim, got.dtype, want.dtype)
        if exact:
            np.testing.assert_array_equal(got, want, strict=True)
        else:
            # batched BLAS and reductions may sum in another order
            scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
            tol = 1e-12 if want.dtype in (np.float64, np.complex128) else 1e-5
            np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale * 10)


# Primitives whose batched form may sum in another order than a loop (reductions, products).
INEXACT_BATCHING = {
    "sum",
    "mean",
    "prod",
    "cumsum",
    "cumprod",
    "matmul",
    "dot",
    "tensordot",
    "einsum",
}


# -- complex inputs ---------------------------------------------------------------------------
# For complex64 and complex128, every row that draws complex inputs (`Sample.complex`): the
# shape rule and traced bits as above; the jvp against central finite differences along a real
# and along an imaginary direction (together they pin the whole real-linear map, holomorphic or
# not); and the vjp as the jvp's transpose under JAX's pairing <a, b> = Re(sum(a * b)), no
# conjugation: with the jvp fixed by finite differences, this is exactly JAX's convention. No
# ComplexWarning may be raised on the way (a real operand takes the real part of its cotangent).

COMPLEX = [p for p in ALL if p in SAMPLES and SAMPLES[p].takes_complex]
# differentiable on complex values: `imag`, whose real row is a constant zero, is among them
COMPLEX_DIFFERENTIABLE = [p for p in COMPLEX if p.differentiable]
COMPLEX_DTYPES = st.sampled_from([np.complex64, np.complex128])
_COMPLEX_EXAMPLES = settings(max_examples=8)


def _pair(a, b) -> float:
    """JAX's real pairing of a cotangent and a tangent: Re(sum(a * b)), no conjugation."""
    return float(np.real(np.sum(np.asarray(a, np.complex128) * np.asarray(b, np.complex128))))


def _direction(rng, x, imaginary: bool):
    """A random direction like `x`: real, or `1j` times a real one for a complex `x`."""
    v = rng.standard_normal(np.shape(x))
    if imaginary and np.iscomplexobj(x):
        v = 1j * v
    return v.astype(np.asarray(x).dtype)


def _fd_complex(prim, params, args, pos, vs, eps):
    """Central differences along `vs` (on the float/complex arguments at `pos`), with those
    arguments widened to float64/complex128 so the step is not lost to rounding."""

    def at(t):
        moved = list(args)
        for i, v in zip(pos, vs):
            a = np.asarray(args[i])
            wide = np.complex128 if a.dtype.kind == "c" else np.float64
            moved[i] = a.astype(wide) + t * np.asarray(v, wide)
        with warnings.catch_warnings():  # NumPy's own (astype from complex to real)
            warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
            return _outs(prim, bind(prim, *moved, **params))

    return [(np.asarray(p) - np.asarray(m)) / (2 * eps) for p, m in zip(at(eps), at(-eps))]


def _complex_warnings(call):
    """`call()`'s result and the number of ComplexWarnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, sum(issubclass(w.category, np.exceptions.ComplexWarning) for w in caught)


def _check_complex(prim, args, params, seed, dtype):
    rng = np.random.default_rng(seed)
    pos = _float_positions(args)
    f = _partial(prim, params, args, pos)
    xs = [args[i] for i in pos]
    # NumPy's own forward may warn (astype from complex to real); the derivatives may not
    _, forward_warnings = _complex_warnings(lambda: f(*xs))

    def quiet(call):
        result, n = _complex_warnings(call)
        assert n <= forward_warnings, f"{prim}: a derivative raised a ComplexWarning"
        return result

    single = np.dtype(dtype) == np.complex64
    tol = 2e-3 if single else SAMPLES[prim].tol
    eps = 1e-3 if single else 1e-6
    for imaginary in (False, True):
        vs = [_direction(rng, x, imaginary) for x in xs]
        out, t_out = quiet(functools.partial(tg.jvp, f, tuple(xs), tuple(vs)))
        fd = _fd_complex(prim, params, args, pos, vs, eps)
        for o, t, want in zip(_outs(prim, out), _outs(prim, t_out), fd):
            assert np.shape(t) == np.shape(o), (prim, np.shape(t), np.shape(o))
            assert np.asarray(t).dtype == np.asarray(o).dtype, (prim, np.asarray(t).dtype)
            scale = _scale(want, t)
            np.testing.assert_allclose(
                t, want, rtol=0, atol=tol * scale, err_msg=f"{prim}, imaginary={imaginary}"
            )
    # the adjoint identity along a direction with both parts
    vs = [_direction(rng, x, False) + _direction(rng, x, True) for x in xs]
    out, t_out = quiet(lambda: tg.jvp(f, tuple(xs), tuple(vs)))
    us = [_direction(rng, o, False) + _direction(rng, o, True) for o in _outs(prim, out)]
    _, vjp_fn = quiet(lambda: tg.vjp(f, *xs))
    bars = quiet(lambda: vjp_fn(tuple(us) if prim.multiple_results else us[0]))
    for b, x in zip(bars, xs):
        assert np.asarray(b).dtype == np.asarray(x).dtype, (prim, np.asarray(b).dtype)
    lhs = sum(_pair(u, t) for u, t in zip(us, _outs(prim, t_out)))
    rhs = sum(_pair(b, v) for b, v in zip(bars, vs))
    assert abs(lhs - rhs) <= tol * _scale(lhs, rhs), f"{prim}: <u, J v> = {lhs}, <J^T u, v> = {rhs}"


@pytest.mark.parametrize("prim", COMPLEX, ids=str)
@_COMPLEX_EXAMPLES
@given(data=st.data(), dtype=COMPLEX_DTYPES)
def test_complex_shape_rule_and_tracing_match_impl(prim, data, dtype):
    args, params = SAMPLES[prim].draw_complex(data, dtype)
    with warnings.catch_warnings():  # NumPy's own (astype from complex to real)
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        out = bind(prim, *args, **params)
    values = list(args) + list(_outs(prim, out))
    assert any(np.iscomplexobj(v) for v in values), f"{prim}: the complex draw drew no complex"
    expected = prim.shape(*[aval_of(a) for a in args], **params)
    expected = tuple(expected) if prim.multiple_results else (expected,)
    for o, a in zip(_outs(prim, out), expected):
        assert np.shape(o) == a.shape, (prim, np.shape(o), a)
        assert np.asarray(o).dtype == a.dtype, (prim, np.asarray(o).dtype, a)
    graph = tg.make_graph(_apply(prim, params))(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        traced = graph(*args)
    for o, t in zip(_outs(prim, out), _outs(prim, traced)):
        np.testing.assert_array_equal(t, o, strict=True)


@pytest.mark.parametrize("prim", COMPLEX_DIFFERENTIABLE, ids=str)
@_COMPLEX_EXAMPLES
@given(data=st.data(), dtype=COMPLEX_DTYPES, seed=st.integers(0, 2**32 - 1))
def test_complex_jvp_matches_finite_differences_and_the_vjp(prim, data, dtype, seed):
    args, params = SAMPLES[prim].draw_complex(data, dtype)
    _check_complex(prim, args, params, seed, dtype)


@pytest.mark.parametrize("prim", [p for p in COMPLEX_DIFFERENTIABLE if SAMPLES[p].mixed], ids=str)
@_COMPLEX_EXAMPLES
@given(data=st.data(), dtype=COMPLEX_DTYPES, seed=st.integers(0, 2**32 - 1))
def test_complex_with_a_real_operand(prim, data, dtype, seed):
    """One operand real, promoted by NumPy: its cotangent is the real part of the complex one
    (JAX's convention), of its own dtype, with no ComplexWarning."""
    args, params = SAMPLES[prim].draw_complex(data, dtype, mixed=True)
    _check_complex(prim, args, params, seed, dtype)


@pytest.mark.parametrize("prim", [p for p in COMPLEX if not p.differentiable], ids=str)
@_COMPLEX_EXAMPLES
@given(data=st.data(), dtype=COMPLEX_DTYPES)
def test_complex_non_differentiable_primitives_give_no_cotangent(prim, data, dtype):
    args, params = SAMPLES[prim].draw_complex(data, dtype)
    out = bind(prim, *args, **params)
    ct = tuple(np.ones(np.shape(o), np.asarray(o).dtype) for o in _outs(prim, out))
    bars = call_vjp(prim, ct if prim.multiple_results else ct[0], *args, out=out, **params)
    assert all(b is None for b in bars)


@pytest.mark.parametrize("prim", COMPLEX, ids=str)
@_COMPLEX_EXAMPLES
@given(data=st.data(), dtype=COMPLEX_DTYPES, seed=st.integers(0, 2**32 - 1))
def test_complex_batching_rule_matches_a_loop(prim, data, dtype, seed):
    """The batching rule on complex inputs keeps their dtype and both parts. To the last bits
    only: the loop's 0-d results are NumPy scalars, whose complex arithmetic rounds unlike the
    ufuncs' loops (tests/complex/test_programs.py::test_known_issue_scalar_complex_products)."""
    args, params = SAMPLES[prim].draw_complex(data, dtype)
    with warnings.catch_warnings():  # NumPy's own (astype from complex to real)
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        _check_batching(prim, data, args, params, seed, exact=False)
