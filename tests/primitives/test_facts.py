"""The facts each primitive declares, checked against its own rules and impl.

`vjp_reads`: a rule that claims to read nothing gives the same cotangents on zeros of the
right shape (the PyTorch-style tensors then save nothing and can run the node again), one
that does not claim the output ignores it, one that does not claim its inputs ignores their
float values. `bilinear`: an input's cotangent does not read that input. `commutative`:
swapping the operands gives the same result. `layout`: the memory the impl returns is what
the layout says (new, a view of `view_of`, C order). `operator`: the Python operator gives
the impl's bits on 0-d values. Each is an oracle-backed check, so a fact that claimed too
much fails here instead of corrupting a gradient, a simplification or a buffer.
"""

from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracegrad as tg
from tests.primitives.samples import SAMPLES
from tracegrad.ir.layout import Layout
from tracegrad.primitives import ALL
from tracegrad.testing import assert_bitwise_equal
from tracegrad.transforms.vjp import call_vjp

BY_NAME = {p.name: p for p in ALL}


def _draw(name, data):
    prim = BY_NAME[name]
    args, params = SAMPLES[prim].draw(data, np.float64)
    out = prim.impl(*args, **params)
    outs = out if prim.multiple_results else (out,)
    rng = np.random.default_rng(0)
    cts = tuple(rng.standard_normal(np.shape(o)).astype(np.asarray(o).dtype) for o in outs)
    return prim, args, params, out, cts if prim.multiple_results else cts[0]


def _same(real, other):
    for r, o in zip(real, other):
        if r is None:
            assert o is None
        else:
            np.testing.assert_array_equal(np.asarray(r), np.asarray(o))


def _other(a, fill):
    a = np.asarray(a)
    return np.full(a.shape, fill, a.dtype)


@pytest.mark.parametrize("name", sorted(p.name for p in ALL if not p.vjp_reads))
@given(data=st.data())
def test_rules_that_read_nothing_read_no_values(name, data):
    prim, args, params, out, ct = _draw(name, data)
    real = call_vjp(prim, ct, *args, out=out, **params)
    zeros = [_other(a, 0) if isinstance(a, np.ndarray) else a for a in args]
    zero_out = tuple(_other(o, 0) for o in out) if prim.multiple_results else _other(out, 0)
    _same(real, call_vjp(prim, ct, *zeros, out=zero_out, **params))


DIFFERENTIABLE = sorted(p.name for p in ALL if p.vjp is not None and p in SAMPLES)


@pytest.mark.parametrize(
    "name", [n for n in DIFFERENTIABLE if "output" not in BY_NAME[n].vjp_reads]
)
@given(data=st.data())
def test_rules_outside_reads_output_ignore_the_output(name, data):
    prim, args, params, out, ct = _draw(name, data)
    fill = data.draw(st.sampled_from([7.25, -1.5]), label="output stand-in")
    other = tuple(_other(o, fill) for o in out) if prim.multiple_results else _other(out, fill)
    with np.errstate(all="ignore"):
        _same(
            call_vjp(prim, ct, *args, out=out, **params),
            call_vjp(prim, ct, *args, out=other, **params),
        )


@pytest.mark.parametrize(
    "name", [n for n in DIFFERENTIABLE if "inputs" not in BY_NAME[n].vjp_reads]
)
@given(data=st.data())
def test_rules_outside_reads_inputs_ignore_float_input_values(name, data):
    prim, args, params, out, ct = _draw(name, data)
    fill = data.draw(st.sampled_from([0.8125, -1.4375, 2.5]), label="input stand-in")
    others = [
        _other(a, fill) if np.asarray(a).dtype.kind in "fc" and not np.isscalar(a) else a
        for a in args
    ]
    with np.errstate(all="ignore"):
        _same(
            call_vjp(prim, ct, *args, out=out, **params),
            call_vjp(prim, ct, *others, out=out, **params),
        )


# -- bilinear, commutative, operator --------------------------------------------------------


@pytest.mark.parametrize("name", sorted(p.name for p in ALL if p.bilinear))
@given(data=st.data())
def test_bilinear_rules_read_only_the_other_inputs(name, data):
    prim, args, params, out, ct = _draw(name, data)
    real = call_vjp(prim, ct, *args, out=out, **params)
    fill = data.draw(st.sampled_from([0.8125, -1.4375]), label="input stand-in")
    for i in range(len(args)):
        others = list(args)
        others[i] = _other(args[i], fill)
        changed = call_vjp(prim, ct, *others, out=out, **params)
        _same([real[i]], [changed[i]])


@pytest.mark.parametrize("name", sorted(p.name for p in ALL if p.commutative))
@given(data=st.data())
def test_commutative_primitives_give_the_same_bits_swapped(name, data):
    prim, (x, y), params, out, _ = _draw(name, data)
    np.testing.assert_array_equal(prim.impl(y, x, **params), out, strict=True)


_OPERATORS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


@pytest.mark.parametrize("name", sorted(p.name for p in ALL if p.operator))
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64]))
def test_operators_give_the_impls_bits_on_0d_values(name, data, dtype):
    prim = BY_NAME[name]
    args, params = SAMPLES[prim].draw(data, dtype)
    scalars = [
        np.asarray(a).reshape(-1)[0] if np.size(a) else np.asarray(a).dtype.type(1) for a in args
    ]
    want = prim.impl(*scalars, **params)
    if len(scalars) == 1:
        got = -scalars[0] if prim.operator == "-" else None
    else:
        got = _OPERATORS[prim.operator](*scalars)
    assert got is not None, f"{name}: no test for the unary operator {prim.operator!r}"
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(
        np.asarray(got).reshape(1).view(np.uint8), np.asarray(want).reshape(1).view(np.uint8)
    )


# -- layout ---------------------------------------------------------------------------------


def _c_contiguous(a) -> bool:
    a = np.asarray(a)
    return a.size <= 1 or a.flags.c_contiguous


@pytest.mark.parametrize("name", sorted(p.name for p in ALL))
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64]))
def test_layouts_describe_the_memory_the_impl_returns(name, data, dtype):
    """On sample inputs, and on transposed copies of them (inputs that are not C order)."""
    prim = BY_NAME[name]
    args, params = SAMPLES[prim].draw(data, dtype)
    if data.draw(st.booleans(), label="non-C inputs"):
        args = [
            np.asfortranarray(a) if isinstance(a, np.ndarray) and a.ndim >= 2 else a for a in args
        ]
    outs = prim.results(prim.impl(*args, **params))
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    layout = prim.layout
    for o in outs:
        if not isinstance(o, np.ndarray) or o.size == 0:
            continue
        if layout.fresh:
            assert not any(np.shares_memory(o, a) for a in arrays), f"{name}: not a new array"
        if layout.view:
            base = args[prim.view_of]
            if isinstance(base, np.ndarray) and base.size:
                shares = np.shares_memory(o, base)
                # a reshape copies (in C order) where the input's strides allow no view
                copied = layout is Layout.RESHAPED and _c_contiguous(o)
                assert shares or copied, f"{name}: not a view of input {prim.view_of}"
        inputs_c = all(_c_contiguous(a) for a in arrays)
        if layout in (Layout.C, Layout.CONTIGUOUS):
            assert _c_contiguous(o), f"{name}: not C order"
        if layout in (Layout.ELEMENTWISE, Layout.KEEPS_C) and inputs_c:
            assert _c_contiguous(o), f"{name}: not C order from C-order inputs"
        if layout is Layout.RESHAPED and _c_contiguous(args[prim.view_of]):
            assert _c_contiguous(o), f"{name}: not C order from a C-order input"
        if layout is Layout.SAME:
            assert o is args[prim.view_of]


# -- the same facts on complex values -------------------------------------------------------
# A rule may read more on complex values (absolute's reads x and |x|), a layout may differ (the
# real part of a complex array is a strided view), and a 0-d complex operator may round unlike
# its ufunc: each fact is checked again on the complex draws of the rows that have them, with
# fewer examples (one test per primitive checks all three reads facts).

_COMPLEX_EXAMPLES = settings(max_examples=4)
COMPLEX = sorted(p.name for p in ALL if p in SAMPLES and SAMPLES[p].takes_complex)


def _draw_complex(name, data):
    prim = BY_NAME[name]
    args, params = SAMPLES[prim].draw_complex(data, np.complex128)
    with warnings.catch_warnings():  # astype to a real dtype warns, as NumPy's
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        out = prim.impl(*args, **params)
    outs = out if prim.multiple_results else (out,)
    rng = np.random.default_rng(0)
    cts = []
    for o in outs:
        o = np.asarray(o)
        ct = rng.standard_normal(o.shape)
        if o.dtype.kind == "c":
            ct = ct + 1j * rng.standard_normal(o.shape)
        cts.append(np.asarray(ct).astype(o.dtype))
    return prim, args, params, out, tuple(cts) if prim.multiple_results else cts[0]


@pytest.mark.parametrize("name", [n for n in COMPLEX if n in DIFFERENTIABLE])
@_COMPLEX_EXAMPLES
@given(data=st.data())
def test_complex_rules_read_only_what_they_say(name, data):
    prim, args, params, out, ct = _draw_complex(name, data)
    real = call_vjp(prim, ct, *args, out=out, **params)

    def stand_in(a, v):
        # `v`, or its real part for a real array
        return _other(a, v if np.asarray(a).dtype.kind == "c" else np.real(v))

    def fill(a, v):
        return stand_in(a, v) if np.asarray(a).dtype.kind in "fc" and not np.isscalar(a) else a

    def outs_filled(v):
        return tuple(stand_in(o, v) for o in out) if prim.multiple_results else stand_in(out, v)

    with np.errstate(all="ignore"):
        if not prim.vjp_reads:
            zeros = [fill(a, 0) for a in args]
            _same(real, call_vjp(prim, ct, *zeros, out=outs_filled(0), **params))
        if "output" not in prim.vjp_reads:
            _same(real, call_vjp(prim, ct, *args, out=outs_filled(7.25 - 1j), **params))
        if "inputs" not in prim.vjp_reads:
            others = [fill(a, 0.8125 + 0.5j) for a in args]
            _same(real, call_vjp(prim, ct, *others, out=out, **params))


# NumPy's scalar complex product rounds differently from its ufunc's loop: the generated code
# keeps the ufunc for it (codegen.generate._UFUNC_ONLY; tested below)
_COMPLEX_UFUNC_ONLY = {"multiply"}


@pytest.mark.parametrize(
    "name",
    sorted(
        p.name
        for p in ALL
        if p.operator and p.name in COMPLEX and p.name not in _COMPLEX_UFUNC_ONLY
    ),
)
@_COMPLEX_EXAMPLES
@given(data=st.data(), dtype=st.sampled_from([np.complex64, np.complex128]))
def test_complex_operators_give_the_impls_bits_on_0d_values(name, data, dtype):
    prim = BY_NAME[name]
    args, params = SAMPLES[prim].draw_complex(data, dtype)
    scalars = [
        np.asarray(a).reshape(-1)[0] if np.size(a) else np.asarray(a).dtype.type(1) for a in args
    ]
    want = prim.impl(*scalars, **params)
    if len(scalars) == 1:
        got = -scalars[0]
    else:
        got = _OPERATORS[prim.operator](*scalars)
    assert np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_array_equal(
        np.asarray(got).reshape(1).view(np.uint8), np.asarray(want).reshape(1).view(np.uint8)
    )


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_jit_multiplies_0d_complex_values_with_the_ufuncs_bits(dtype):
    # products whose scalar and ufunc roundings differ (NumPy's scalar `*` against its loop)
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(64) + 1j * rng.standard_normal(64)).astype(dtype)
    b = (rng.standard_normal(64) + 1j * rng.standard_normal(64)).astype(dtype)
    f = tg.jit(lambda x, y: np.sin(x) * np.cos(y))  # 0-d values between ufuncs: NumPy scalars
    differ = 0
    for x, y in zip(a, b):
        want = np.multiply(np.sin(x), np.cos(y))
        differ += (np.sin(x) * np.cos(y)).tobytes() != want.tobytes()
        assert_bitwise_equal(f(np.asarray(x), np.asarray(y)), np.asarray(want))
    assert differ > 0  # the scalar operator would have given other bits for some of them


@pytest.mark.parametrize("name", COMPLEX)
@_COMPLEX_EXAMPLES
@given(data=st.data(), dtype=st.sampled_from([np.complex64, np.complex128]))
def test_complex_layouts_describe_the_memory_the_impl_returns(name, data, dtype):
    prim = BY_NAME[name]
    args, params = SAMPLES[prim].draw_complex(data, dtype)
    with warnings.catch_warnings():  # NumPy's own (astype from complex to real)
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        outs = prim.results(prim.impl(*args, **params))
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    inputs_c = all(_c_contiguous(a) for a in arrays)
    layout = prim.layout
    for o in outs:
        if not isinstance(o, np.ndarray) or o.size == 0:
            continue
        if layout.fresh:
            assert not any(np.shares_memory(o, a) for a in arrays), f"{name}: not a new array"
        if layout.view and isinstance(args[prim.view_of], np.ndarray) and args[prim.view_of].size:
            copied = layout is Layout.RESHAPED and _c_contiguous(o)
            assert np.shares_memory(o, args[prim.view_of]) or copied, f"{name}: not a view"
        if layout in (Layout.C, Layout.CONTIGUOUS):
            assert _c_contiguous(o), f"{name}: not C order"
        if layout in (Layout.ELEMENTWISE, Layout.KEEPS_C) and inputs_c:
            assert _c_contiguous(o), f"{name}: not C order from C-order inputs"
        if layout is Layout.SAME:
            assert o is args[prim.view_of]
