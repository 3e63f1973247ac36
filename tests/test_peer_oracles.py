"""Peers as oracles of the functional API: JAX, HIPS autograd and SciPy.

A random smooth program (`tracegrad.testing.programs`) is NumPy text: exec'd with `np` bound to
`jax.numpy` or `autograd.numpy` it is the same program in that peer, so tracegrad's `grad` and
`hessian` of the program (its `fn`, calling NumPy) must agree with the peer's, in float64, up to
rounding. A program a peer cannot run (a NumPy function it lacks or spells differently: it
raises AttributeError, NotImplementedError or TypeError, or an assertion or ValueError in its
own code), or that meets a peer bug named in `AUTOGRAD_LIMITS` / `JAX_HESSIAN_LIMITS`, is
discarded and counted by reason; each such test fails when the peer could not run more
programs than it ran, so it always compares something.

Hand-written functions (matmul, a tanh MLP, einsum, integer-array and slice indexing, cumsum,
prod with zeros, max with ties) check `jvp`, `vjp`, `jacfwd` and `jacrev` against JAX's; SciPy
gives closed forms (`rosen_der`, `rosen_hess`, `expit`) and high-order finite differences
(`scipy.differentiate`). Forward values against plain NumPy, bit for bit, are
tests/test_random_programs.py's.

Without JAX, autograd or SciPy the file skips; CI sets TRACEGRAD_REQUIRE_ORACLES=1, so there a
missing one fails the run instead (tests/conftest.py).
"""

from __future__ import annotations

import os
import traceback
from collections import Counter
from functools import partial

import numpy as np
import pytest
from hypothesis import given, reject
from hypothesis import strategies as st

import tracegrad as tg
from tracegrad.testing import programs

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
autograd = pytest.importorskip("autograd")
anp = pytest.importorskip("autograd.numpy")
scipy_differentiate = pytest.importorskip("scipy.differentiate")
scipy_optimize = pytest.importorskip("scipy.optimize")
scipy_special = pytest.importorskip("scipy.special")

jax.config.update("jax_enable_x64", True)  # float64, as NumPy (for the whole process)

# float64 derivatives of programs whose values and slopes are bounded: rounding only
RTOL, ATOL = 1e-8, 1e-10
# a program with a float32 value (`astype`): the peers' float32 sin, exp, ... round
# differently from NumPy's by an ulp or so (6e-8), which the rest of the program amplifies
RTOL32, ATOL32 = 2e-5, 1e-6
PEER_ERRORS = (AttributeError, NotImplementedError, TypeError)  # what a missing function raises


def tolerances(program) -> dict:
    if program.least_precise_dtype == np.float32:
        return {"rtol": RTOL32, "atol": ATOL32}
    return {"rtol": RTOL, "atol": ATOL}


def in_peer(program, numpy_module):
    """The program's `source` run with `np` bound to a peer's NumPy (jax.numpy, autograd.numpy)."""
    namespace = {"np": numpy_module}
    exec(program.source, namespace)
    return namespace["program"]


def draw_program(data, **options):
    return data.draw(
        programs(smooth=True, scalar_output=True, dtype=np.float64, **options), label="program"
    )


class Discards:
    """The programs a peer could not run, counted by reason, and how many it ran."""

    def __init__(self, peer):
        self.peer = peer
        self.reasons = Counter()
        self.ran = 0

    def discard(self, reason: str):
        self.reasons[reason] += 1
        reject()

    def run(self, fn, *args):
        """`fn(*args)` in the peer; a program it cannot run is discarded with the reason."""
        try:
            return fn(*args)
        except PEER_ERRORS as e:
            reason = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
        except (AssertionError, ValueError) as e:  # the peer's code failed on its own checks
            if not _raised_in(e, self.peer):
                raise
            reason = f"{type(e).__name__} in {self.peer.__name__}'s code: {e}"
        self.discard(reason)

    def limits(self, program, limits: dict) -> None:
        """Discard a program that meets a named limitation of the peer."""
        for reason, meets in limits.items():
            if meets(program):
                self.discard(reason)

    def assert_ran_most(self) -> None:
        discarded = sum(self.reasons.values())
        assert self.ran > 0 and discarded <= self.ran, (
            f"{self.peer.__name__} could not run {discarded} programs and ran {self.ran}: "
            + "; ".join(f"{n} x {reason}" for reason, n in self.reasons.most_common())
        )


def _raised_in(error, module) -> bool:
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and frames[-1].filename.startswith(os.path.dirname(module.__file__))


def _where_broadcasts(program) -> bool:
    """Whether a `where` of the program broadcasts one of its value operands."""
    for step in program.steps:
        if step.op.name == "where_mask":
            shape = np.broadcast_shapes((step.params["n"],), *step.arg_shapes)
            if any(s != shape for s in step.arg_shapes):
                return True
    return False


# Programs a peer gets wrong without raising, each seen in a failure and checked by hand:
# {reason: predicate on a Program}. They are discarded and counted like the ones it cannot run.
AUTOGRAD_LIMITS = {
    # prod([0.39, -0.59, -5e-324]) underflows to 0, so autograd's d/dx2 = prod / x2 is 0, not
    # 0.39 * -0.59 = -0.23; at an exact 0 it is NaN
    "autograd's prod vjp divides the product by x (wrong at 0 and subnormals)": (
        lambda program: "prod" in program.ops
    ),
    # its vjp is `where(c, g, 0)` of the output's shape, so the gradient of a broadcast operand
    # has the wrong shape: wrong values or a ValueError
    "autograd's where vjp does not sum a broadcast operand's gradient": _where_broadcasts,
}
JAX_HESSIAN_LIMITS = {
    # jnp.hypot differentiates max(|x|, |y|) * sqrt(1 + (min / max)**2): where |x| == |y| its
    # second derivative is 0 (d2/dx2 hypot(x, 3) at x = 3 is 1 / (6 sqrt 2) = 0.118)
    "jax.hessian of jnp.hypot is 0 where |x| == |y|": (
        lambda program: any("hypot" in op for op in program.ops)
    ),
}


def assert_same_grads(ours, theirs, args, peer: str, tol: dict) -> None:
    assert isinstance(ours, tuple) and len(ours) == len(theirs) == len(args)
    for i, (g, t, a) in enumerate(zip(ours, theirs, args)):
        t = np.asarray(t)
        assert np.shape(g) == a.shape == t.shape, f"argument {i}: {np.shape(g)}, {peer} {t.shape}"
        assert np.asarray(g).dtype == a.dtype == t.dtype, f"argument {i}: {g.dtype}, {t.dtype}"
        np.testing.assert_allclose(g, t, **tol, err_msg=f"{peer}, argument {i}")


# -- random programs: grad and hessian against JAX and HIPS autograd --------------------------


def test_grad_of_random_programs_matches_jax():
    discards = Discards(jax)

    @given(data=st.data())
    def check(data):
        program = draw_program(data)
        args = program.draw_inputs(data)
        argnums = tuple(range(len(args)))
        ours = tg.grad(program.fn, argnums=argnums)(*args)
        # jit: one XLA compilation per program is faster than op-by-op dispatch
        theirs = discards.run(jax.jit(jax.grad(in_peer(program, jnp), argnums=argnums)), *args)
        assert_same_grads(ours, theirs, args, "jax", tolerances(program))
        discards.ran += 1

    check()
    discards.assert_ran_most()


def test_grad_of_random_programs_matches_hips_autograd():
    discards = Discards(autograd)

    @given(data=st.data())
    def check(data):
        program = draw_program(data)
        discards.limits(program, AUTOGRAD_LIMITS)
        args = program.draw_inputs(data)
        argnums = tuple(range(len(args)))
        ours = tg.grad(program.fn, argnums=argnums)(*args)
        theirs = discards.run(autograd.grad(in_peer(program, anp), argnum=argnums), *args)
        assert_same_grads(ours, theirs, args, "autograd", tolerances(program))
        discards.ran += 1

    check()
    discards.assert_ran_most()


def test_hessian_of_small_random_programs_matches_jax():
    discards = Discards(jax)

    @given(data=st.data())
    def check(data):
        program = draw_program(data, max_ops=6, max_side=3)
        discards.limits(program, JAX_HESSIAN_LIMITS)
        args = program.draw_inputs(data)
        argnums = tuple(range(len(args)))
        ours = tg.hessian(program.fn, argnums=argnums)(*args)
        theirs = discards.run(jax.jit(jax.hessian(in_peer(program, jnp), argnums=argnums)), *args)
        assert len(ours) == len(theirs) == len(args)
        for i, (row, t_row) in enumerate(zip(ours, theirs)):
            assert len(row) == len(t_row) == len(args)
            for j, (h, t) in enumerate(zip(row, t_row)):
                t = np.asarray(t)
                assert np.shape(h) == t.shape == args[i].shape + args[j].shape, (i, j)
                np.testing.assert_allclose(h, t, **tolerances(program), err_msg=f"block ({i}, {j})")
        discards.ran += 1

    check()
    discards.assert_ran_most()


# -- hand-written functions: jvp, vjp, jacfwd and jacrev against JAX's ------------------------
# Each is written once over a NumPy namespace `xp`: NumPy for tracegrad, jax.numpy for JAX.


def matmul(xp, a, b):
    return a @ b


def tanh_mlp(xp, w1, b1, w2, x):
    return xp.tanh(xp.tanh(x @ w1 + b1) @ w2)


def einsum_chain(xp, a, b, c):
    return xp.einsum("bij,jk,k->bi", a, b, c) * xp.einsum("bij,bij->bi", a, a)


def indexing(xp, x):
    rows = xp.array([2, 0, 2])  # a repeated index: its cotangents add up
    picked = x[rows, 1:3] * x[-1:0:-1, ::2][:, 1:]
    return xp.sin(picked) + x[xp.array([1, 3, 3]), xp.array([0, 4, 4])][:, None]


def cumsum(xp, x):
    return xp.cumsum(x * x, axis=1) + xp.cumsum(xp.sin(x), axis=0)


def prod(xp, x):
    return xp.prod(x, axis=0) + xp.prod(x[1:] + 1.0, axis=1).sum()


def max_with_ties(xp, x, y):
    # balanced at ties, as JAX: tied elements of a max share its derivative evenly, and
    # maximum(a, b) at a == b gives each half
    return xp.max(x, axis=1) + xp.maximum(x, y).sum(axis=1) + xp.max(x * y)


_rng = np.random.default_rng(7)


def _normal(*shape):
    return _rng.standard_normal(shape)


CASES = {
    "matmul": (matmul, (_normal(3, 4), _normal(4, 2))),
    "tanh_mlp": (tanh_mlp, (_normal(4, 5), _normal(5), _normal(5, 2), _normal(3, 4))),
    "einsum": (einsum_chain, (_normal(2, 3, 4), _normal(4, 5), _normal(5))),
    "indexing": (indexing, (_normal(4, 5),)),
    "cumsum": (cumsum, (_normal(3, 4),)),
    # a zero in each column of the first product: its gradient is the product of the others
    "prod_with_zeros": (prod, (np.array([[0.0, 1.5, -2.0], [0.5, 0.0, 3.0], [2.0, -1.0, 0.0]]),)),
    "max_with_ties": (
        max_with_ties,
        (
            np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]),
            np.array([[1.0, 0.5, 3.0], [2.0, 4.5, 2.0]]),
        ),
    ),
}


def assert_trees_close(ours, theirs, what: str) -> None:
    ours_leaves, ours_tree = tg.tree.flatten(ours)
    theirs_leaves, theirs_tree = tg.tree.flatten(jax.tree_util.tree_map(np.asarray, theirs))
    assert ours_tree == theirs_tree, f"{what}: tracegrad {ours_tree}, jax {theirs_tree}"
    for k, (a, b) in enumerate(zip(ours_leaves, theirs_leaves)):
        assert np.shape(a) == b.shape and np.asarray(a).dtype == b.dtype, (what, k)
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"{what}, leaf {k}")


@pytest.mark.parametrize("name", list(CASES))
def test_jvp_vjp_and_jacobians_match_jax(name):
    fn, primals = CASES[name]
    ours_fn, jax_fn = partial(fn, np), partial(fn, jnp)
    rng = np.random.default_rng(0)
    tangents = tuple(rng.standard_normal(p.shape) for p in primals)
    cotangent = rng.standard_normal(np.shape(ours_fn(*primals)))
    argnums = tuple(range(len(primals)))
    # JAX jitted, each transform compiled once: faster than dispatching it op by op
    jax_jvp = jax.jit(lambda primals, tangents: jax.jvp(jax_fn, primals, tangents))
    jax_vjp = jax.jit(lambda primals, ct: jax.vjp(jax_fn, *primals)[1](ct))

    assert_trees_close(tg.jvp(ours_fn, primals, tangents), jax_jvp(primals, tangents), "jvp")
    out, ours_vjp = tg.vjp(ours_fn, *primals)
    assert_trees_close(out, jax.jit(jax_fn)(*primals), "vjp's output")
    assert_trees_close(ours_vjp(cotangent), jax_vjp(primals, cotangent), "vjp")
    for ours_jac, jax_jac in [(tg.jacfwd, jax.jacfwd), (tg.jacrev, jax.jacrev)]:
        assert_trees_close(
            ours_jac(ours_fn, argnums=argnums)(*primals),
            jax.jit(jax_jac(jax_fn, argnums=argnums))(*primals),
            ours_jac.__name__,
        )


def test_max_at_ties_shares_the_derivative_evenly():
    x, y = CASES["max_with_ties"][1]
    gx, gy = tg.grad(lambda x, y: np.sum(max_with_ties(np, x, y)), argnums=(0, 1))(x, y)
    third = 1.0 / 3.0
    # max(x, axis=1): [0, 1/2, 1/2] and [1/3] * 3; maximum(x, y): 1 to the larger, 1/2 to
    # each at a tie; max(x * y) = 9 at [0, 2] and [1, 1], added to both rows: 2 * 1/2 * y to x
    # there (and x to y)
    expected_x = [[0.5, 0.5 + 1.0, 0.5 + 0.5 + 3.0], [third + 0.5, third + 4.5, third + 0.5]]
    expected_y = [[0.5, 0.0, 0.5 + 3.0], [0.5, 1.0 + 2.0, 0.5]]
    np.testing.assert_allclose(gx, expected_x, rtol=1e-15, atol=0)
    np.testing.assert_allclose(gy, expected_y, rtol=1e-15, atol=0)


# -- SciPy: closed forms and high-order finite differences ------------------------------------


def rosen(x):
    """SciPy's Rosenbrock function, written in NumPy (scipy.optimize.rosen converts to arrays)."""
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2, axis=0)


def test_rosenbrock_gradient_and_hessian_match_scipys_closed_forms():
    x = np.array([1.3, 0.7, 0.8, 1.9, 1.2, -0.4])
    np.testing.assert_allclose(rosen(x), scipy_optimize.rosen(x), rtol=1e-15)
    np.testing.assert_allclose(tg.grad(rosen)(x), scipy_optimize.rosen_der(x), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(
        tg.hessian(rosen)(x), scipy_optimize.rosen_hess(x), rtol=RTOL, atol=ATOL
    )


def test_gradient_and_hessian_match_scipy_differentiate():
    a = np.random.default_rng(3).standard_normal((3, 5))

    def f(x):  # vectorized over trailing axes, as scipy.differentiate calls it
        return np.sum(np.tanh(np.einsum("ij,j...->i...", a, x)) ** 2, axis=0) + np.sin(x).prod(0)

    x = np.array([0.3, -0.7, 0.8, 1.1, -0.2])
    # SciPy refines 8th-order central differences until its error estimate (the change
    # between the last two iterates, ~1e-9 here) converges; ten times it bounds the result's
    for ours, res, what in [
        (tg.grad(f)(x), scipy_differentiate.jacobian(f, x), "df"),
        (tg.hessian(f)(x), scipy_differentiate.hessian(f, x), "ddf"),
    ]:
        assert np.all(res.success), res.status
        expected = getattr(res, what)
        assert np.shape(ours) == expected.shape
        error = np.abs(ours - expected)
        assert np.all(error <= 10 * res.error + 1e-12), f"{what}: {error} vs {res.error}"


def test_traced_sigmoid_matches_scipy_expit():
    x = np.linspace(-30.0, 30.0, 61)

    def sigmoid(x):
        return 1.0 / (1.0 + np.exp(-x))

    traced = tg.make_graph(sigmoid)(x)
    np.testing.assert_allclose(traced(x), scipy_special.expit(x), rtol=4e-16, atol=0)
    # d sigmoid = expit(x) * expit(-x): accurate in both tails, where 1 - expit(x) is not
    grad = tg.grad(lambda x: np.sum(sigmoid(x)))(x)
    np.testing.assert_allclose(grad, scipy_special.expit(x) * scipy_special.expit(-x), rtol=1e-13)
