"""Taylor mode (`tg.jet`, `tg.derivatives`, `tg.taylor`) against independent answers.

- JAX: `jax.experimental.jet.jet` (float64) on random programs (`tracegrad.testing.programs`,
  the NumPy text run with `np` bound to `jax.numpy`) of the elementwise, reduction, shape and
  matmul rows JAX's jet has rules for, orders 1..8, both scalings, to 1e-10 relative; pytree
  outputs; its error messages; float32; and jet composed with grad (both ways).
- SymPy: closed-form derivatives up to order 12 of several functions, at an array of points.
- The composition identities that need no peer: vmap of jet and jit of jet equal the plain jet.
Per-primitive rules against nested jvp are tests/primitives/test_taylor_rules.py's.
"""

from __future__ import annotations

import math
import pathlib
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, reject
from hypothesis import strategies as st

import tracegrad as tg
from tracegrad.testing import programs

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax_jet = pytest.importorskip("jax.experimental.jet").jet
sympy = pytest.importorskip("sympy")

jax.config.update("jax_enable_x64", True)  # float64, as NumPy (for the whole process)


def _with_exact_primal(prim):
    """JAX's jet rule for `prim` with its primal output computed by `prim` itself: JAX's rules
    for expm1 and log1p compute it as exp(x) - 1 and log(1 + x), which are 0 for a tiny x (a
    later maximum then sees a tie NumPy does not, and averages the series). The series stay
    JAX's own."""
    rule = jet_module.jet_rules[prim]

    def exact(primals_in, series_in, **params):
        _, series_out = rule(primals_in, series_in, **params)
        return prim.bind(*primals_in, **params), series_out

    return exact


jet_module = pytest.importorskip("jax.experimental.jet")  # (patched for the whole process too)
for _prim in (jax.lax.expm1_p, jax.lax.log1p_p):
    jet_module.jet_rules[_prim] = _with_exact_primal(_prim)

# the rows of `tracegrad.testing.ops` whose NumPy calls become primitives JAX's jet has rules
# for (it has none for reduce_prod, atan, logaddexp's and arctan2's parts, and a few more)
JET_OPS = [
    *("sin", "cos", "tanh", "exp", "log", "sqrt", "square", "power", "divide", "multiply"),
    *("add", "subtract", "negative", "scale", "shift", "expm1", "log1p", "sinh", "cosh"),
    *("sigmoid", "arcsinh", "maximum", "minimum", "relu", "where_mask"),
    *("sum", "sum_method", "mean", "max", "min", "cumsum"),
    *("matmul", "dot", "einsum_matmul", "matmul_gram"),
    *("reshape", "T", "transpose", "broadcast_to", "expand_dims", "squeeze", "swapaxes", "flip"),
    *("concatenate", "stack", "index"),
]
RTOL = 1e-10


def in_jax(program):
    """The program's NumPy text with `np` bound to jax.numpy."""
    namespace = {"np": jnp}
    exec(program.source, namespace)
    return namespace["program"]


def flush_subnormals(a):
    return np.where(np.abs(a) < np.finfo(a.dtype).tiny, 0.0, a).astype(a.dtype)


def jax_jet_jit(fun, primals, series, factorial_scaled=True):
    """JAX's jet under jax.jit: one compilation is quicker than its op-by-op dispatch."""
    run = jax.jit(lambda p, s: jax_jet(fun, p, s, factorial_scaled=factorial_scaled))
    return run(tuple(primals), tuple(series))


def assert_same_jet(ours, theirs, rtol=RTOL, what=""):
    """Equal trees; values to `rtol` relative to the largest entry of each output's term (a
    k-th term's entries differ by orders of magnitude, so an entry near a zero of it is
    compared at the term's scale)."""
    (out, terms), (jout, jterms) = ours, theirs
    leaves, tree = jax.tree.flatten(out)
    jleaves, jtree = jax.tree.flatten(jout)
    assert tree == jtree, (tree, jtree)
    for a, b in zip(leaves, jleaves):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=f"{what} primal")
    series, stree = jax.tree.flatten(terms)
    jseries, jstree = jax.tree.flatten(jterms)
    assert stree == jstree, (stree, jstree)
    for i, (a, b) in enumerate(zip(series, jseries)):
        b = np.asarray(b)
        assert np.shape(a) == b.shape and np.asarray(a).dtype == b.dtype, (i, np.shape(a), b.shape)
        scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale, err_msg=f"{what} term {i}")


# -- random programs against JAX ---------------------------------------------------------------


def test_jet_of_random_programs_matches_jax():
    discarded, ran = Counter(), [0]

    @given(data=st.data())
    def check(data):
        scalar = data.draw(st.booleans(), label="scalar output")
        program = data.draw(
            programs(dtype=np.float64, ops=JET_OPS, max_ops=6, max_inputs=2, scalar_output=scalar),
            label="program",
        )
        # XLA flushes subnormal numbers to zero and NumPy does not, so a subnormal input would
        # break a tie of maximum differently in the two: such inputs become zeros
        args = tuple(flush_subnormals(a) for a in program.draw_inputs(data))
        order = data.draw(st.integers(1, 8), label="order")
        scaled = data.draw(st.booleans(), label="factorial_scaled")
        rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
        series = tuple([rng.standard_normal(a.shape) for _ in range(order)] for a in args)
        try:
            theirs = jax_jet_jit(in_jax(program), args, series, factorial_scaled=scaled)
        except (KeyError, NotImplementedError) as e:  # a primitive JAX's jet has no rule for
            discarded[f"{type(e).__name__}: {e}"] += 1
            reject()
        except TypeError as e:  # JAX's min/max rule does not broadcast: select(x < y, x, y)
            if "select cases must have the same shapes" not in str(e):
                raise
            discarded["jax's jet of maximum/minimum of two shapes"] += 1
            reject()
        ours = tg.jet(program.fn, args, series, factorial_scaled=scaled)
        assert_same_jet(ours, theirs, what=f"order {order}, factorial_scaled={scaled}")
        ran[0] += 1

    check()
    assert ran[0] > sum(discarded.values()), discarded


@pytest.mark.parametrize(("order", "scaled"), [(3, False), (8, True)])
def test_a_curved_input_series_matches_jax(order, scaled):
    rng = np.random.default_rng(order)
    a = rng.standard_normal((3, 4))
    x, y = rng.uniform(0.5, 1.5, 4), rng.standard_normal(3)
    series = (
        [rng.standard_normal(4) for _ in range(order)],
        [rng.standard_normal(3) for _ in range(order)],
    )

    def body(np_):
        def f(x, y):
            h = np_.tanh(a @ np_.sqrt(x) + y) * np_.exp(-(y**2))
            return np_.sum(np_.log(1.0 + h**2) / np_.cos(h)) + np_.max(h) ** 3

        return f

    ours = tg.jet(body(np), (x, y), series, factorial_scaled=scaled)
    theirs = jax_jet_jit(body(jnp), (x, y), series, factorial_scaled=scaled)
    assert_same_jet(ours, theirs)


# -- JAX's conventions -------------------------------------------------------------------------


def test_the_derivatives_of_sin_along_t():
    value, terms = tg.jet(np.sin, (0.0,), ([1.0, 0.0, 0.0],))
    assert value == 0.0 and terms == [1.0, 0.0, -1.0]
    _, coeffs = tg.jet(np.sin, (0.0,), ([1.0, 0.0, 0.0],), factorial_scaled=False)
    np.testing.assert_allclose(coeffs, [1.0, 0.0, -1.0 / 6.0], rtol=1e-15)


def test_pytree_outputs_match_jax():
    def body(np_):
        def f(x, y):
            return {"a": np_.sin(x) * y, "b": (np_.exp(x) @ y, [np_.tanh(x - y), x**2])}

        return f

    rng = np.random.default_rng(1)
    x, y = rng.standard_normal(3), rng.standard_normal(3)
    series = (
        [rng.standard_normal(3) for _ in range(5)],
        [rng.standard_normal(3) for _ in range(5)],
    )
    ours = tg.jet(body(np), (x, y), series)
    assert_same_jet(ours, jax_jet_jit(body(jnp), (x, y), series))
    assert isinstance(ours[1]["b"][1][0], list) and len(ours[1]["b"][1][0]) == 5


@pytest.mark.parametrize(
    ("fun", "primals", "series", "message"),
    [
        (lambda x, y: x * y, (1.0, 2.0), ([1.0, 0.0], [1.0]), "jet terms have inconsistent"),
        (lambda x: x, ((1.0, 2.0),), ([1.0],), "primal value at position 0 is not an array"),
        (lambda x: x, ({"a": 1.0},), ([1.0],), "primal value at position 0 is not an array"),
        (lambda x: x, (1.0,), ([1.0, (1.0, 2.0)],), "term 1 for argument 0 is not an array"),
    ],
    ids=["inconsistent lengths", "tuple primal", "dict primal", "tuple term"],
)
def test_bad_input_raises_jax_errors(fun, primals, series, message):
    with pytest.raises(ValueError, match=message) as theirs:
        jax_jet(fun, primals, series)
    with pytest.raises(ValueError, match=message) as ours:
        tg.jet(fun, primals, series)
    assert str(ours.value) == str(theirs.value)


def test_float32_keeps_its_dtype_and_matches_jax():
    rng = np.random.default_rng(2)
    x = rng.uniform(-1, 1, 5).astype(np.float32)
    series = ([rng.standard_normal(5).astype(np.float32) for _ in range(4)],)

    def body(np_):
        return lambda x: np_.sin(x) * np_.exp(-(x**2)) / (1.0 + x**2)

    out, terms = tg.jet(body(np), (x,), series)
    jout, jterms = jax_jet_jit(body(jnp), (x,), series)
    assert out.dtype == np.float32 and all(t.dtype == np.float32 for t in terms)
    exact = tg.jet(body(np), (x.astype(np.float64),), ([t.astype(np.float64) for t in series[0]],))
    for ours, theirs, want in zip([out, *terms], [jout, *jterms], [exact[0], *exact[1]]):
        scale = float(np.max(np.abs(want)))
        np.testing.assert_allclose(ours, want, rtol=1e-5, atol=1e-5 * scale)
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5 * scale)
    derivs = tg.derivatives(body(np), 3)(x)
    assert all(np.asarray(d).dtype == np.float32 for d in derivs)


# -- composition with grad, vmap, jit ------------------------------------------------------------


def f_np(x):
    return np.sin(x) * np.exp(-(x**2)) + np.tanh(x) * x


def f_jnp(x):
    return jnp.sin(x) * jnp.exp(-(x**2)) + jnp.tanh(x) * x


SERIES = ([1.0, 0.3, -0.2, 0.5],)


def test_jet_of_grad_matches_jax():
    assert_same_jet(
        tg.jet(tg.grad(f_np), (0.7,), SERIES), jax_jet_jit(jax.grad(f_jnp), (0.7,), SERIES)
    )


def test_grad_of_jet_matches_jax():
    ours = [tg.grad(lambda x, k=k: tg.jet(f_np, (x,), SERIES)[1][k])(0.7) for k in range(4)]
    theirs = jax.jit(
        lambda x: [jax.grad(lambda x, k=k: jax_jet(f_jnp, (x,), SERIES)[1][k])(x) for k in range(4)]
    )(0.7)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)


def test_vmap_of_jet_equals_the_plain_jet():
    xs = np.linspace(-1.0, 1.0, 5)
    batched = tg.vmap(lambda x: tg.jet(f_np, (x,), SERIES))(xs)
    plain = tg.jet(f_np, (xs,), ([np.full(5, t) for t in SERIES[0]],))
    for a, b in zip([batched[0], *batched[1]], [plain[0], *plain[1]]):
        np.testing.assert_array_equal(a, b)
    vs = np.array([1.0, 2.0, -1.0])  # over the direction: derivatives scale as v^k
    along = tg.vmap(lambda v: tg.jet(f_np, (0.7,), ([v, 0.0, 0.0],))[1])(vs)
    unit = tg.jet(f_np, (0.7,), ([1.0, 0.0, 0.0],))[1]
    for k, (a, u) in enumerate(zip(along, unit), 1):
        np.testing.assert_allclose(a, u * vs**k, rtol=1e-14)


def test_jit_of_jet_equals_the_plain_jet():
    x = np.linspace(-1.0, 1.0, 4)
    fn = tg.jit(lambda x: tg.jet(f_np, (x,), ([np.ones(4), x, 0 * x, x**2],)))
    plain = tg.jet(f_np, (x,), ([np.ones(4), x, 0 * x, x**2],))
    for _ in range(2):  # the traced call, then the cached one
        out = fn(x)
        for a, b in zip([out[0], *out[1]], [plain[0], *plain[1]]):
            np.testing.assert_allclose(a, b, rtol=1e-15, atol=1e-15)


# -- derivatives and taylor against SymPy ---------------------------------------------------------

t, u = sympy.Symbol("t"), sympy.Symbol("u")


def sympy_derivatives(expr, order, x):
    """[f(x), f'(x), ..., f^(order)(x)] from SymPy's closed forms, lambdified with NumPy."""
    out, d = [], expr
    for _ in range(order + 1):
        out.append(np.broadcast_to(sympy.lambdify(t, d, "numpy", cse=True)(x), np.shape(x)))
        d = sympy.diff(d, t)
    return out


def tanh_derivatives(order, x):
    """tanh's derivatives as SymPy's polynomials in u = tanh(x) (tanh' = 1 - u^2): its own
    nested `diff` of tanh takes seconds at order 12."""
    out, p = [], u
    for _ in range(order + 1):
        out.append(np.broadcast_to(sympy.lambdify(u, p, "numpy")(np.tanh(x)), np.shape(x)))
        p = sympy.expand(sympy.diff(p, u) * (1 - u**2))
    return out


def closed_form(expr):
    return lambda order, x: sympy_derivatives(expr, order, x)


# name: (SymPy's derivatives (order, x) -> list, the NumPy function, the interval of points)
CLOSED_FORMS = {
    "sin(x)*exp(-x**2)": (
        closed_form(sympy.sin(t) * sympy.exp(-(t**2))),
        lambda x: np.sin(x) * np.exp(-(x**2)),
        (-2, 2),
    ),
    "1/(1+x**2)": (closed_form(1 / (1 + t**2)), lambda x: 1.0 / (1.0 + x**2), (-2, 2)),
    "log(1+x)*sqrt(x)": (
        closed_form(sympy.log(1 + t) * sympy.sqrt(t)),
        lambda x: np.log1p(x) * np.sqrt(x),
        (0.2, 3),
    ),
    "tanh(x)": (tanh_derivatives, np.tanh, (-2, 2)),
    "exp(sin(x))": (closed_form(sympy.exp(sympy.sin(t))), lambda x: np.exp(np.sin(x)), (-3, 3)),
    "x**3.5": (closed_form(t ** sympy.Rational(7, 2)), lambda x: x**3.5, (0.3, 2)),
    "sin(x)*exp(x)/(1+x**2)": (
        closed_form(sympy.sin(t) * sympy.exp(t) / (1 + t**2)),
        lambda x: np.sin(x) * np.exp(x) / (1 + x**2),
        (-2, 2),
    ),
}
ORDER = 12


@pytest.mark.parametrize("name", list(CLOSED_FORMS))
def test_derivatives_match_sympy_up_to_order_12(name):
    oracle, fn, (lo, hi) = CLOSED_FORMS[name]
    x = np.linspace(lo, hi, 9)
    got = tg.derivatives(fn, ORDER)(x)
    want = oracle(ORDER, x)
    assert len(got) == ORDER + 1
    for k, (g, w) in enumerate(zip(got, want)):
        assert np.shape(g) == x.shape
        scale = float(np.max(np.abs(w)))
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-11 * scale, err_msg=f"order {k}")


def test_taylor_gives_sympys_series_coefficients():
    oracle, fn, _ = CLOSED_FORMS["exp(sin(x))"]
    x0 = 0.4
    coeffs = tg.taylor(fn, x0, 12)
    want = [d / math.factorial(k) for k, d in enumerate(oracle(12, np.array(x0)))]
    np.testing.assert_allclose(np.asarray(coeffs, float), want, rtol=1e-11, atol=1e-14)
    derivs = tg.derivatives(fn, 12)(x0)
    np.testing.assert_allclose(
        [c * math.factorial(k) for k, c in enumerate(coeffs)], derivs, rtol=1e-13
    )


def test_a_scalar_point_gives_scalars_and_order_0_the_value():
    got = tg.derivatives(np.exp, 3)(1.0)
    assert all(np.shape(d) == () for d in got)
    np.testing.assert_allclose(got, [math.e] * 4, rtol=1e-15)
    assert tg.derivatives(np.exp, 0)(1.0) == [math.e]
    assert tg.taylor(np.exp, 0.0, 0) == [1.0]


def test_all_8_orders_fit_in_400_nodes():
    def f(x):
        return np.sin(x) * np.exp(x) / (1 + x**2)

    graph = tg.make_graph(tg.derivatives(f, 8))(0.3)
    assert len(graph.nodes) <= 400, len(graph.nodes)
    by_jet = tg.make_graph(lambda x: tg.jet(f, (x,), ([1.0] + [0.0] * 7,)))(0.3)
    assert len(by_jet.nodes) <= 400, len(by_jet.nodes)


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", [-1, 1.5, True])
def test_an_order_that_is_not_a_non_negative_integer_raises(order):
    with pytest.raises(ValueError, match=r"derivatives: order must be a non-negative integer"):
        tg.derivatives(np.sin, order)
    with pytest.raises(ValueError, match=r"taylor: order must be a non-negative integer"):
        tg.taylor(np.sin, 1.0, order)


def test_an_integer_point_raises():
    with pytest.raises(TypeError, match=r"derivatives\(sin\) requires a float argument"):
        tg.derivatives(np.sin, 3)(np.arange(3))
    with pytest.raises(TypeError, match=r"taylor\(sin\) requires a float argument"):
        tg.taylor(np.sin, 1, 3)


def test_a_primitive_without_a_rule_is_named():
    # pure_callback runs a Python function tracegrad cannot look into: it never gets a rule
    def f(x):
        return tg.pure_callback(np.sin, x, x)

    with pytest.raises(NotImplementedError, match="jet: the primitive 'pure_callback' has no"):
        tg.jet(f, (0.5,), ([1.0, 0.0],))
    with pytest.raises(NotImplementedError, match="jet: the primitive 'pure_callback' has no"):
        tg.derivatives(f, 2)(np.linspace(0.0, 1.0, 3))


# -- docs/taylor.md --------------------------------------------------------------------------------

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "taylor.md"


def test_the_code_blocks_of_the_docs_page_run():
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    assert len(blocks) == 5
    namespace: dict = {}
    for block in blocks:  # in order, in one namespace; each asserts what the page says
        exec(compile(block, str(DOCS), "exec"), namespace)
