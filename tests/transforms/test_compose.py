"""The composition matrix on random programs: grad∘vmap, vmap∘grad, jvp∘grad, grad∘jvp,
jacfwd == jacrev, and hessian (symmetric, equal to finite differences of grad).

Oracles: a Python loop over the batch, the other composition order, finite differences.
"""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

import tracegrad as tg
from tracegrad.testing import available_ops, numerical_jvp, programs

OPS = available_ops(smooth=True)


def _program(data, scalar=True, max_ops=6):
    program = data.draw(
        programs(dtype=np.float64, scalar_output=scalar, smooth=True, max_ops=max_ops, ops=OPS),
        label="program",
    )
    args = program.draw_inputs(data)
    assume(all(a.size > 0 for a in args))
    return program, args


def _rtol(program, float64_rtol=1e-9):
    # a float32 `astype` inside the program limits every comparison to float32 precision
    return max(float64_rtol, program.grad_tolerances["rtol"] / 10)


def _close(a, b, rtol):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)


@given(data=st.data())
def test_vmap_of_grad_equals_a_loop_and_grad_of_vmap(data):
    program, args = _program(data)
    batch = [args, program.draw_inputs(data)]
    stacked = [np.stack(xs) for xs in zip(*batch)]
    argnums = tuple(range(len(args)))
    per_example = tg.vmap(tg.grad(program.fn, argnums=argnums))(*stacked)
    looped = [tg.grad(program.fn, argnums=argnums)(*ex) for ex in batch]
    for j in range(len(args)):
        _close(per_example[j], np.stack([g[j] for g in looped]), _rtol(program))

    def total(*xs):
        return np.sum(tg.vmap(program.fn)(*xs))

    summed = tg.grad(total, argnums=argnums)(*stacked)
    for j in range(len(args)):
        _close(summed[j], per_example[j], _rtol(program))


@given(data=st.data(), seed=st.integers(0, 2**31))
def test_jvp_of_grad_equals_grad_of_jvp(data, seed):
    program, args = _program(data)
    rng = np.random.default_rng(seed)
    vs = [rng.standard_normal(a.shape) for a in args]
    argnums = tuple(range(len(args)))
    hv1 = tg.jvp(tg.grad(program.fn, argnums=argnums), tuple(args), tuple(vs))[1]
    hv2 = tg.grad(lambda *xs: tg.jvp(program.fn, xs, tuple(vs))[1], argnums=argnums)(*args)
    for a, b in zip(hv1, hv2):
        _close(a, b, _rtol(program))


@given(data=st.data())
def test_jacfwd_equals_jacrev(data):
    program, args = _program(data, scalar=False)
    x, rest = args[0], args[1:]
    f = lambda x: program.fn(x, *rest)
    fwd, rev = tg.jacfwd(f)(x), tg.jacrev(f)(x)
    assert tg.tree.structure(fwd) == tg.tree.structure(rev)
    for a, b in zip(tg.tree.leaves(fwd), tg.tree.leaves(rev)):
        assert np.shape(a) == np.shape(b)
        _close(a, b, _rtol(program))


@given(data=st.data(), seed=st.integers(0, 2**31))
def test_hessian_is_symmetric_and_matches_finite_differences_of_grad(data, seed):
    program, args = _program(data)
    x, rest = args[0], args[1:]
    assume(x.size <= 16)
    f = lambda x: program.fn(x, *rest)
    h = np.asarray(tg.hessian(f)(x)).reshape(x.size, x.size)
    _close(h, h.T, _rtol(program))
    v = np.random.default_rng(seed).standard_normal(x.shape)
    fd = numerical_jvp(tg.grad(f), [x], [v])
    _close(h @ v.ravel(), np.asarray(fd).ravel(), _rtol(program, 1e-5))
