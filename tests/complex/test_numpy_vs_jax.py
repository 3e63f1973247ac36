"""NumPy's functions on complex values, differentiated: tracegrad's vjp and jvp against JAX's
on the same function, in complex128, with real operands mixed in.

One row per function NumPy defines on complex numbers (a composition or a primitive): the
holomorphic ones, the boundaries between real and complex (`real`, `imag`, `conj`, `angle`,
`abs`, `astype`, `exp(1j * x)`), reductions (NumPy's complex `var` is real), products (`vdot`
and `vecdot` conjugate their first operand), shapes, indexing and `x.at`, sorting
(lexicographic, the derivative follows the permutation), `correlate`, `interp` of complex
values, masked reductions. The rows' values stay away from kinks, ties and branch cuts.

JAX's numbers for every row come from one jitted function (one XLA compilation, at XLA's
lowest optimization level, which compiles in half the time), computed once per module. XLA's
compilation is the cost here, so one dtype: complex64 staying complex64, and float32 with
complex64 giving float32 cotangents, are checked per primitive in
tests/primitives/test_rules.py and in test_functional.py.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)  # float64, as NumPy (for the whole process)

_RNG = np.random.default_rng(7)


def _c(*shape):
    """Complex values with both parts in [0.3, 1.5] in magnitude (off the axes, no branch cut
    of log or sqrt reached, no ties between real parts)."""
    re = _RNG.uniform(0.3, 1.5, shape) * _RNG.choice([-1, 1], shape)
    return re + 1j * _RNG.uniform(-1.0, 1.0, shape)


def _r(*shape):
    return _RNG.uniform(0.3, 1.5, shape) * _RNG.choice([-1, 1], shape)


def _pos(*shape):
    """Right half-plane: log, sqrt, power's base."""
    return _RNG.uniform(0.4, 1.5, shape) + 1j * _RNG.uniform(-1.0, 1.0, shape)


def _small(*shape):
    """|z| < 0.7: arcsin, arctanh, tan inside their smooth domains."""
    return _RNG.uniform(-0.5, 0.5, shape) + 1j * _RNG.uniform(-0.4, 0.4, shape)


def _at(xp, z):
    """`z.at` in JAX, `tracegrad.numpy.at(z)` here (NumPy arrays have no `.at`)."""
    return z.at if xp is jnp else tnp.at(z)


_MASK = np.array([[True, False, True], [False, True, True]])
_XP = np.array([0.0, 1.0, 2.5])
_W = np.array([0.3, 0.7])

# (name, make(xp) -> function, arguments): complex128 arguments; real ones stay real
ROWS = [
    # holomorphic elementwise
    *(
        (name, lambda xp, n=name: getattr(xp, n), (dom(2, 3),))
        for name, dom in [
            ("exp", _c),
            ("exp2", _c),
            ("expm1", _c),
            ("log", _pos),
            ("log2", _pos),
            ("log10", _pos),
            ("log1p", _pos),
            ("sqrt", _pos),
            ("sin", _c),
            ("cos", _c),
            ("tan", _small),
            ("arcsin", _small),
            ("arccos", _small),
            ("arctan", _small),
            ("sinh", _c),
            ("cosh", _c),
            ("tanh", _small),
            ("arcsinh", _small),
            ("arccosh", lambda *s: _pos(*s) + 1.0),
            ("arctanh", _small),
            ("square", _c),
            ("reciprocal", _c),
            ("negative", _c),
            ("positive", _c),
            ("sinc", _c),
        ]
    ),  # fmt: skip
    # the real/complex boundaries, and functions that are not holomorphic
    ("abs", lambda xp: xp.abs, (_c(2, 3),)),
    ("angle", lambda xp: xp.angle, (_c(2, 3),)),
    ("real", lambda xp: lambda z: xp.real(z) * (1.5 - 0.5j), (_c(2, 3),)),
    ("imag", lambda xp: lambda z: xp.imag(z) * (1.5 - 0.5j), (_c(2, 3),)),
    ("conj", lambda xp: xp.conj, (_c(2, 3),)),
    # (sign: not JAX's zero derivative, see test_functional.py's test_complex_sign)
    ("exp(1j x)", lambda xp: lambda x: xp.exp(1j * x), (_r(2, 3),)),
    ("astype complex", lambda xp: lambda x: x.astype(xp.complex128) * (1 - 2j), (_r(3),)),
    ("astype complex64", lambda xp: lambda z: z.astype(xp.complex64) * z, (_c(3),)),
    ("abs of x (1 + i)", lambda xp: lambda x: xp.abs(x * (1 + 1j)), (_r(3),)),
    # binary, complex and mixed
    *(
        (f"{name} {kinds}", lambda xp, n=name: getattr(xp, n), args)
        for name in ("add", "subtract", "multiply", "divide", "power")
        for kinds, args in [
            ("cc", (_pos(2, 3), _c(3))),
            ("rc", (_r(2, 3) + 2.0, _c(3))),
            ("cr", (_pos(3), _r(2, 3))),
        ]
    ),  # fmt: skip
    ("maximum", lambda xp: xp.maximum, (_c(3), _c(3))),
    ("minimum", lambda xp: xp.minimum, (_c(3), _c(3))),
    ("where", lambda xp: lambda x, y: xp.where(_MASK, x, y), (_c(2, 3), _r(3))),
    # reductions
    ("sum", lambda xp: lambda z: xp.sum(z, axis=0), (_c(2, 3),)),
    ("prod", lambda xp: lambda z: xp.prod(z, axis=1), (_c(2, 3),)),
    ("mean", lambda xp: xp.mean, (_c(2, 3),)),
    ("var", lambda xp: lambda z: xp.var(z, axis=1), (_c(2, 3),)),
    ("std", lambda xp: lambda z: xp.std(z, ddof=1), (_c(2, 3),)),
    ("cumsum", lambda xp: lambda z: xp.cumsum(z, axis=1), (_c(2, 3),)),
    ("cumprod", lambda xp: lambda z: xp.cumprod(z, axis=1), (_c(2, 3),)),
    ("max", lambda xp: lambda z: xp.max(z, axis=1), (_c(2, 3),)),
    ("min", lambda xp: xp.min, (_c(2, 3),)),
    ("sum where", lambda xp: lambda z: xp.sum(z, where=_MASK), (_c(2, 3),)),
    ("nansum", lambda xp: xp.nansum, (_c(2, 3),)),
    ("average", lambda xp: lambda z: xp.average(z, axis=0, weights=_W), (_c(2, 3),)),
    # products
    ("matmul", lambda xp: xp.matmul, (_c(2, 3), _c(3, 2))),
    ("matmul mixed", lambda xp: xp.matmul, (_r(2, 3), _c(3, 2))),
    ("dot", lambda xp: xp.dot, (_c(3), _c(3, 2))),
    ("vdot", lambda xp: xp.vdot, (_c(2, 3), _c(6))),
    ("vdot mixed", lambda xp: xp.vdot, (_r(3), _c(3))),
    ("inner", lambda xp: xp.inner, (_c(2, 3), _c(3))),
    ("outer", lambda xp: xp.outer, (_c(2), _r(3))),
    ("tensordot", lambda xp: lambda a, b: xp.tensordot(a, b, axes=1), (_c(2, 3), _c(3, 2))),
    ("einsum", lambda xp: lambda a, b: xp.einsum("ij,jk->ik", a, b), (_c(2, 3), _c(3, 2))),
    ("vecdot", lambda xp: xp.vecdot, (_c(2, 3), _c(3))),
    ("matvec", lambda xp: xp.matvec, (_c(2, 3), _c(3))),
    ("vecmat", lambda xp: xp.vecmat, (_c(3), _c(3, 2))),
    ("kron", lambda xp: xp.kron, (_c(2), _c(2, 2))),
    ("trace", lambda xp: xp.trace, (_c(3, 3),)),
    ("cross", lambda xp: xp.cross, (_c(3), _c(3))),
    # shapes and indexing
    ("concatenate", lambda xp: lambda a, b: xp.concatenate([a, b]), (_r(2), _c(3))),
    ("stack", lambda xp: lambda a, b: xp.stack([a, b]), (_c(3), _r(3))),
    ("transpose", lambda xp: lambda z: xp.transpose(z) * z.T, (_c(2, 3),)),
    ("reshape", lambda xp: lambda z: xp.reshape(z, (3, 2)), (_c(2, 3),)),
    ("tile", lambda xp: lambda z: xp.tile(z, (2, 1)), (_c(2, 3),)),
    ("repeat", lambda xp: lambda z: xp.repeat(z, 2, axis=1), (_c(2, 3),)),
    ("pad", lambda xp: lambda z: xp.pad(z, 1, mode="reflect"), (_c(3),)),
    ("roll", lambda xp: lambda z: xp.roll(z, 1), (_c(3),)),
    ("flip", lambda xp: lambda z: xp.flip(z, 0), (_c(2, 3),)),
    ("getitem", lambda xp: lambda z: z[np.array([1, 0, 1]), 1:], (_c(2, 3),)),
    ("at set", lambda xp: lambda z, v: _at(xp, z)[1].set(v), (_c(3), _c())),
    ("at add", lambda xp: lambda z, v: _at(xp, z)[np.array([0, 0, 2])].add(v), (_c(3), _c(3))),
    ("at multiply", lambda xp: lambda z, v: _at(xp, z)[1].multiply(v), (_c(3), _c())),
    # sorting: lexicographic, the derivative follows the permutation
    ("sort", lambda xp: xp.sort, (_c(5),)),
    ("argsort take", lambda xp: lambda z: z[xp.argsort(z)][::-1] * 1.5, (_c(5),)),
    # differences, integrals, sliding products, interpolation
    ("diff", lambda xp: xp.diff, (_c(4),)),
    ("trapezoid", lambda xp: xp.trapezoid, (_c(4),)),
    ("cumulative_sum", lambda xp: xp.cumulative_sum, (_c(4),)),
    ("correlate", lambda xp: lambda a, v: xp.correlate(a, v, "full"), (_c(4), _c(2))),
    ("correlate mixed", lambda xp: lambda a, v: xp.correlate(a, v, "same"), (_r(4), _c(2))),
    ("convolve", lambda xp: lambda a, v: xp.convolve(a, v, "full"), (_c(4), _c(2))),
    ("interp", lambda xp: lambda fp: xp.interp(np.array([0.3, 1.2, 2.2]), _XP, fp), (_c(3),)),
    ("linspace", lambda xp: lambda a, b: xp.linspace(a, b, 4), (_c(), _c())),
    ("polyval-like", lambda xp: lambda p, z: (p[0] * z + p[1]) * z + p[2], (_c(3), _c(2))),
    # more primitives, each through its NumPy name
    ("nanmax", lambda xp: lambda z: xp.nanmax(z, axis=0), (_c(2, 3),)),
    ("nanmin", lambda xp: xp.nanmin, (_c(2, 3),)),
    ("fmax", lambda xp: xp.fmax, (_c(3), _c(2, 3))),
    ("fmin", lambda xp: xp.fmin, (_c(3), _r(3))),
    ("float_power", lambda xp: xp.float_power, (_pos(3), _c(3))),
    ("max where", lambda xp: lambda z: xp.max(z, axis=1, where=_MASK, initial=-9.0), (_c(2, 3),)),
    ("prod where", lambda xp: lambda z: xp.prod(z, axis=0, where=_MASK), (_c(2, 3),)),
    ("split", lambda xp: lambda z: xp.split(z, [1], axis=1)[1] * 2.0, (_c(2, 3),)),
    ("squeeze", lambda xp: lambda z: xp.squeeze(xp.expand_dims(z, 0)), (_c(3),)),
    ("broadcast_to", lambda xp: lambda z: xp.broadcast_to(z, (2, 3)), (_c(3),)),
    ("at min", lambda xp: lambda z, v: _at(xp, z)[np.array([0, 2])].min(v), (_c(3), _c(2))),
    ("at max", lambda xp: lambda z, v: _at(xp, z)[np.array([0, 2])].max(v), (_c(3), _c(2))),
    ("sort tail", lambda xp: lambda z: xp.sort(z)[2:], (_c(5),)),
    ("sinc times z", lambda xp: lambda z: xp.sinc(z) * z, (_small(3),)),
]


def _like(rng, x):
    x = np.asarray(x)
    v = rng.standard_normal(x.shape)
    if x.dtype.kind == "c":
        v = v + 1j * rng.standard_normal(x.shape)
    return v.astype(x.dtype)


def _problem(k):
    """(f for NumPy, f for JAX, args, cotangent, tangents) of row k."""
    _, make, args = ROWS[k]
    args = tuple(np.asarray(a) for a in args)
    rng = np.random.default_rng(k)
    out = make(np)(*args)
    return make(np), make(jnp), args, _like(rng, out), tuple(_like(rng, a) for a in args)


@pytest.fixture(scope="module")
def jax_results():
    """JAX's (output, vjp, jvp) of every row, from one jitted function."""
    problems = [_problem(k) for k in range(len(ROWS))]

    def all_rows(inputs):
        results = []
        for (_, jf, _, _, _), (args, ct, tangents) in zip(problems, inputs):
            out, vjp_fn = jax.vjp(jf, *args)
            results.append((out, vjp_fn(ct), jax.jvp(jf, args, tangents)[1]))
        return results

    inputs = [(args, ct, ts) for _, _, args, ct, ts in problems]
    compiled = jax.jit(all_rows, compiler_options={"xla_backend_optimization_level": 0})
    return problems, compiled(inputs)


def _close(ours, theirs, what):
    theirs = np.asarray(theirs)
    assert np.asarray(ours).dtype == theirs.dtype, (what, np.asarray(ours).dtype, theirs.dtype)
    np.testing.assert_allclose(ours, theirs, rtol=1e-11, atol=1e-12, err_msg=what)


@pytest.mark.parametrize("k", range(len(ROWS)), ids=[r[0] for r in ROWS])
def test_vjp_and_jvp_match_jax(k, jax_results):
    problems, results = jax_results
    f, _, args, ct, tangents = problems[k]
    j_out, j_bars, j_t = results[k]
    out, vjp_fn = tg.vjp(f, *args)
    _close(out, j_out, "output")
    for i, (ours, theirs) in enumerate(zip(vjp_fn(ct), j_bars)):
        _close(ours, theirs, f"cotangent of argument {i}")
    _close(tg.jvp(f, args, tangents)[1], j_t, "tangent")
