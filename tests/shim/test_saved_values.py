"""The tables that say what each recorded node saves, checked against the vjp rules.

The shim keeps no values for a node whose rule reads none (`SAVES_NOTHING`: it runs again
after a backward pass, as PyTorch's AddBackward0 does), and version-stamps only the inputs
and outputs a rule reads (`READS_INPUTS`, `READS_OUTPUT`), so an in-place change of a value
no rule reads is harmless, as in PyTorch. If a table claimed too little, gradients would be
wrong; the oracle is each rule run on the real values and on other values.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.primitives.samples import SAMPLES
from tracegrad.autograd.function import READS_INPUTS, READS_OUTPUT, SAVES_NOTHING
from tracegrad.primitives import ALL
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


@pytest.mark.parametrize("name", sorted(SAVES_NOTHING))
@given(data=st.data())
def test_operations_that_save_nothing_read_no_values(name, data):
    prim, args, params, out, ct = _draw(name, data)
    real = call_vjp(prim, ct, *args, out=out, **params)
    zeros = [_other(a, 0) if isinstance(a, np.ndarray) else a for a in args]
    zero_out = tuple(_other(o, 0) for o in out) if prim.multiple_results else _other(out, 0)
    _same(real, call_vjp(prim, ct, *zeros, out=zero_out, **params))


DIFFERENTIABLE = sorted(p.name for p in ALL if p.vjp is not None and p in SAMPLES)


@pytest.mark.parametrize("name", [n for n in DIFFERENTIABLE if n not in READS_OUTPUT])
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


@pytest.mark.parametrize("name", [n for n in DIFFERENTIABLE if n not in READS_INPUTS])
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
