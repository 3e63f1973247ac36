"""Every primitive's Taylor rule against nested forward mode, on its SAMPLES row.

Along a line x + t v through the row's point, the k-th derivative of f(x + t v) at t = 0 is k
nested jvps of t -> f(x + t v): the oracle is the primitives' jvp rules (themselves checked
against finite differences in test_rules.py), independent of every Taylor rule. `jet` with
the input series [v, 0, 0] must give the same three derivatives. A second check feeds a
curved input series (x_2, x_3 nonzero), which the straight line leaves out.

The primitives that have no Taylor rule are listed by name: a new primitive must either get a
rule or join the list with its reason, and the list's entries must raise jet's error.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracegrad as tg
from tests.primitives.samples import SAMPLES
from tracegrad.core import bind
from tracegrad.primitives import ALL

ORDER = 3

#: differentiable primitives without a Taylor rule, and why (jet names them in its error)
WITHOUT_RULE = {
    "odeint": "an adaptive solver: differentiate by nested jvp",
    "solve_ivp": "an adaptive solver: differentiate by nested jvp",
    "linalg.svd": "no recurrence for repeated or vanishing singular values yet",
    "linalg.pinv": "built on the SVD's rule",
    "linalg.lstsq": "built on the SVD's rule",
    "scipy.stats.multivariate_normal.logpdf": "its covariance goes through an eigendecomposition "
    "with a pseudo-inverse cut-off",
    "scipy.stats.psd_pinv": "the same cut-off",
}


def _float_positions(args):
    return [i for i, a in enumerate(args) if np.asarray(a).dtype.kind in "fc"]


def _line(prim, args, params, moving, directions):
    """g(t) = f(args with args[i] + t v_i for i in moving), one array output."""

    def g(t):
        full = list(args)
        for i, v in zip(moving, directions):
            full[i] = args[i] + t * v
        out = bind(prim, *full, **params)
        return out[0] if prim.multiple_results else out

    return g


def _nested_derivatives(g, order):
    """[g'(0), ..., g^(order)(0)] by nested jvps."""
    fns = [g]
    for _ in range(order):
        prev = fns[-1]
        fns.append(lambda t, _p=prev: tg.jvp(_p, (t,), (1.0,))[1])
    return [np.asarray(f(0.0)) for f in fns[1:]]


RULED = sorted(
    p.name
    for p in ALL
    if p.differentiable and p in SAMPLES and p.taylor is not None and SAMPLES[p].fd is not False
)
BY_NAME = {p.name: p for p in ALL}


@pytest.mark.parametrize("name", RULED)
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_a_straight_line_gives_the_nested_jvps(name, data):
    prim = BY_NAME[name]
    args, params = SAMPLES[prim].draw(data, np.float64)
    moving = _float_positions(args)
    if not moving:
        return
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    directions = [
        np.asarray(rng.standard_normal(np.shape(args[i]))).astype(np.asarray(args[i]).dtype)
        for i in moving
    ]
    g = _line(prim, args, params, moving, directions)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want = _nested_derivatives(g, ORDER)
        _, got = tg.jet(g, (0.0,), ([1.0] + [0.0] * (ORDER - 1),))
    for k, (w, h) in enumerate(zip(want, got), 1):
        np.testing.assert_allclose(
            np.asarray(h), w, rtol=1e-6, atol=1e-8, err_msg=f"{name}: derivative {k}"
        )


def test_the_primitives_without_a_rule_are_the_listed_ones():
    missing = {
        p.name for p in ALL if p.differentiable and p.taylor is None and p.jvp is not None
    } - {"arg", "const"}
    assert missing == set(WITHOUT_RULE)


def test_a_primitive_without_a_rule_is_named_in_the_error():
    def f(x):
        return tg.pure_callback(np.sin, x, x)

    with pytest.raises(NotImplementedError, match="jet: the primitive 'pure_callback' has no"):
        tg.jet(f, (0.5,), ([1.0],))
