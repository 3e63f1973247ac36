"""Complex tensors against PyTorch: dtypes, values, views, `grad_fn` names, errors, printing.

Every test runs the same lines in tracegrad and in torch (`run_both`, or `libraries` with a
closed form) and compares values, dtypes, `grad_fn` names and the first lines of messages. The
gradients (`.grad`, seeds, hooks, create_graph, random programs) are test_complex_autograd.py's;
the `complex` primitive under the functional transforms is checked here against `jax.lax`.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.torch as tt
from tests.shim.torch_oracle import (
    assert_same_error,
    attempt,
    libraries,
    run_both,
    values,
)
from tracegrad.primitives.complex_parts import complex_

Z = [1 + 1j, 0.5 - 2j, -1.5 + 0.25j]
W = [0.3 + 0.7j, -1.2 + 0.4j, 2.0 - 0.5j]
X = [0.5, -1.25, 2.0]


def _z(M, values=Z, dtype=None):
    """A complex leaf that requires grad (complex128 unless `dtype`)."""
    return M.tensor(values, dtype=dtype or M.complex128, requires_grad=True)


def _x(M, values=X, dtype=None):
    return M.tensor(values, dtype=dtype or M.float64, requires_grad=True)


# -- dtypes ----------------------------------------------------------------------------------------


def test_complex_random_tensors_have_both_parts():
    """randn's complex normal has E|z|^2 = 1 (each part N(0, 1/2)); rand fills both parts."""
    for M in libraries():
        M.manual_seed(0)
        z = values(M.randn(4000, dtype=M.complex128))
        assert abs(np.mean(np.abs(z) ** 2) - 1) < 0.1
        assert abs(np.var(z.real) - 0.5) < 0.05 and abs(np.var(z.imag) - 0.5) < 0.05
        u = values(M.rand(1000, dtype=M.complex64))
        assert u.dtype == np.complex64
        assert 0 <= u.real.min() and u.real.max() < 1 and 0 <= u.imag.min() and u.imag.max() < 1
        assert abs(u.imag.mean() - 0.5) < 0.05


def test_complex_dtypes_and_their_names():
    def scenario(M):
        return (
            M.complex64,
            M.complex128,
            M.cfloat,
            M.cdouble,
            M.tensor(1j).dtype,
            M.tensor([1 + 2j, 3]).dtype,
            M.tensor(1j, dtype=M.cdouble).dtype,
            (M.ones(2) * 1j).dtype,
            M.zeros(2, dtype=M.cfloat).dtype,
            M.tensor(1j).is_complex(),
            M.is_complex(M.ones(2)),
            M.tensor([1.5 - 2j]).item(),
            complex(M.tensor(2 - 1j)),
        )

    out = run_both(scenario)
    assert out.plain[:4] == ("complex64", "complex128", "complex64", "complex128")
    assert out.plain[-2:] == ((1.5 - 2j), (2 - 1j))


def test_the_default_complex_dtype_follows_the_default_dtype():
    def scenario(M):
        M.set_default_dtype(M.float64)
        try:
            return M.tensor(1j).dtype, (M.ones(2) * 1j).dtype, M.tensor([1j]) * 2.5
        finally:
            M.set_default_dtype(M.float32)

    out = run_both(scenario)
    assert out.plain[:2] == ("complex128", "complex128")


_DTYPES = ["bool", "int32", "int64", "float16", "float32", "float64", "complex64", "complex128"]


def test_result_type_matches_torch_with_complex_operands():
    """Every pair with a complex operand (tensor, 0-d tensor or Python number) among
    tensors of every dtype: c10's categories, where a complex 0-d tensor or number makes a
    float64 tensor complex128."""
    torch = pytest.importorskip("torch")
    operands = [
        (tt.zeros(shape, dtype=np.dtype(name)), torch.zeros(shape).to(getattr(torch, name)))
        for name in _DTYPES
        for shape in ((), (2,))
    ]
    operands += [(s, s) for s in (True, 2, 2.5, 1j)]
    checked = 0
    for ours_a, theirs_a in operands:
        for ours_b, theirs_b in operands:
            pair = (ours_a, ours_b)
            if not any(isinstance(v, tt.Tensor) for v in pair) or not any(
                np.iscomplexobj(v) if not isinstance(v, tt.Tensor) else v.is_complex() for v in pair
            ):
                continue
            expected = str(torch.result_type(theirs_a, theirs_b)).removeprefix("torch.")
            if expected == "complex32":  # NumPy has no complex32: the shim widens
                expected = "complex64"
            assert tt.result_type(ours_a, ours_b).name == expected, pair
            checked += 1
    assert checked > 100


# -- functions: values, views, names, errors -------------------------------------------------------


_FUNCTIONS = [
    lambda M: _z(M).real,
    lambda M: _z(M).imag,
    lambda M: M.real(_z(M)),
    lambda M: M.imag(_z(M)),
    lambda M: _z(M).conj().resolve_conj(),
    lambda M: M.conj(_z(M)).resolve_conj(),
    lambda M: _z(M).conj_physical(),
    lambda M: M.conj_physical(_z(M)),
    lambda M: M.resolve_conj(_z(M).conj()),
    lambda M: M.resolve_conj(_z(M)),
    lambda M: _z(M).angle(),
    lambda M: M.angle(M.tensor([0j, -0.0 + 0j, -1 + 0j, -1 - 0j, 1j], dtype=M.complex128)),
    lambda M: M.angle(_x(M)),
    lambda M: M.angle(M.tensor([0.0, -0.0, -2.0, float("nan")])),
    lambda M: M.angle(M.tensor([1, -2, 0])),
    lambda M: _z(M).abs(),
    lambda M: abs(_z(M, dtype=M.complex64)),
    lambda M: M.sgn(_z(M)),
    lambda M: M.sgn(M.tensor([0j, 3 - 4j, 1e-30 + 0j], dtype=M.complex128)),
    lambda M: M.sgn(_x(M, [0.5, -2.0, 0.0])),
    lambda M: M.view_as_real(_z(M)),
    lambda M: M.view_as_real(_z(M, dtype=M.complex64) * 2),
    lambda M: M.view_as_complex(_x(M, [[1.0, 2.0], [3.0, -4.0]])),
    lambda M: M.view_as_complex(M.ones(3, 2, 2, requires_grad=True)),
    lambda M: M.complex(_x(M), _x(M, [1.0, 0.0, -0.0])),
    lambda M: M.complex(M.ones(2, 1), M.zeros(3)),
    lambda M: M.complex(M.tensor([float("inf"), -0.0]), M.tensor([-0.0, float("inf")])),
    lambda M: M.polar(_x(M, [1.0, 2.0, 0.5]), _x(M)),
    lambda M: M.polar(M.ones(2, dtype=M.float32), M.tensor([0.5, 3.0])),
    lambda M: _z(M).real * _z(M).imag,
    lambda M: (_z(M) * 1j).real,
    lambda M: _z(M).to(M.complex64),
    lambda M: _z(M, dtype=M.complex64).to(M.complex128),
    lambda M: _x(M).to(M.complex128),
    lambda M: _x(M).cfloat(),
    lambda M: _z(M, dtype=M.complex64).cdouble(),
    lambda M: _z(M).cfloat(),
]


@pytest.mark.parametrize("make", _FUNCTIONS, ids=range(len(_FUNCTIONS)))
def test_function_values_and_grad_fns_match_torch(make):
    def scenario(M):
        out = make(M)
        return out, out.grad_fn.name() if out.grad_fn is not None else None

    run_both(scenario, rtol=1e-6)


# functions PyTorch defines on complex numbers with a real result, or a kernel of its own
# (values, dtypes and flags; their grad_fn names are the shim's for real inputs too)
_VALUES = [
    lambda M: _z(M).var(),
    lambda M: M.var(_z(M), correction=0),
    lambda M: M.std(_z(M, dtype=M.complex64)),
    lambda M: _z(M).norm(),
    lambda M: M.norm(_z(M), p=1),
    lambda M: M.norm(_z(M), p=float("inf")),
    lambda M: M.sigmoid(_z(M)),
    lambda M: M.logsumexp(_z(M), 0),
    lambda M: _z(M).mean(),
    lambda M: _z(M).prod(),
    lambda M: _z(M).cumprod(0),
    lambda M: M.where(M.tensor([True, False, True]), _z(M), 1j),
    lambda M: M.full((2,), 1j),
    lambda M: M.full((2,), 2 + 0j, dtype=M.float32),
    lambda M: M.linspace(0, 1j, 3),
    lambda M: 1 - _z(M),
    lambda M: 2 ** _z(M),
    lambda M: _z(M) ** -1,
]


@pytest.mark.parametrize("make", _VALUES, ids=range(len(_VALUES)))
def test_complex_values_match_torch(make):
    run_both(make, rtol=1e-6)


def test_signed_zeros_and_infinities_survive_complex():
    for M in libraries():
        out = M.complex(M.tensor([-0.0, float("inf")]), M.tensor([float("-inf"), -0.0]))
        value = values(out)
        assert np.signbit(value.real).tolist() == [True, False]
        assert np.signbit(value.imag).tolist() == [True, True]
        assert np.isinf(value.real[1]) and np.isinf(value.imag[0])


def test_identity_and_conjugate_bit_as_torch():
    def scenario(M):
        x, z = _x(M), _z(M)
        c = z.conj()
        return (
            x.real is x,
            x.conj() is x,
            x.conj_physical() is x,
            x.resolve_conj() is x,
            z.resolve_conj() is z,
            z.is_conj(),
            c.is_conj(),
            M.is_conj(c),
            c.conj().is_conj(),
            (c * 1).is_conj(),
            c.detach().is_conj(),
            c.resolve_conj().is_conj(),
            z.conj_physical().is_conj(),
            z.real.is_leaf,
            z.real.requires_grad,
        )

    out = run_both(scenario)
    assert out.plain[:7] == (True, True, True, True, True, False, True)


_ERRORS = [
    lambda M: _x(M).imag,
    lambda M: M.imag(M.ones(2)),
    lambda M: M.view_as_real(_x(M)),
    lambda M: M.view_as_real(_z(M).conj()),
    lambda M: M.view_as_complex(M.ones(3)),
    lambda M: M.view_as_complex(M.ones(2, 3)),
    lambda M: M.view_as_complex(M.ones(())),
    lambda M: M.complex(M.ones(2), M.ones(3)),
    lambda M: M.complex(1.0, M.ones(2)),
    lambda M: M.polar(M.ones(2), 0.5),
    lambda M: M.sign(_z(M)),
    lambda M: _z(M).conj().numpy(),
    lambda M: _z(M).detach().conj().numpy(),
    lambda M: M.maximum(_z(M), _z(M)),
    lambda M: M.minimum(_x(M), _z(M)),
    lambda M: _z(M).clamp(0, 1),
    lambda M: _z(M).clamp_min(0),
    lambda M: M.relu(_z(M)),
    lambda M: _z(M).floor(),
    lambda M: M.ceil(_z(M)),
    lambda M: _z(M).trunc(),
    lambda M: _z(M).max(0),
    lambda M: _z(M).min(dim=0),
    lambda M: _z(M).argmax(),
    lambda M: M.argmin(_z(M)),
    lambda M: _z(M).detach().abs_(),
    lambda M: float(M.tensor(1 + 1j)),
    lambda M: int(M.tensor(2 - 1j)),
    lambda M: M.zeros(2).__setitem__(0, 1j),
    lambda M: M.zeros(2, dtype=M.float64).__setitem__(0, 1j),
    lambda M: M.zeros(2, dtype=M.int64).__setitem__(0, 1j),
    lambda M: M.full((2,), 1j, dtype=M.float32),
]


@pytest.mark.parametrize("make", _ERRORS, ids=range(len(_ERRORS)))
def test_errors_match_torch(make):
    def scenario(M):
        return attempt(make, M)

    out = run_both(scenario)
    assert out.plain.type in ("RuntimeError", "TypeError", "NotImplementedError")


# messages naming scalar types (`Double`, `Long`): compared with those written as NumPy's names
_SCALAR_TYPE_ERRORS = [
    lambda M: _z(M) < _z(M),
    lambda M: _x(M) <= 1j,
    lambda M: _z(M) > 0,
    lambda M: M.ge(_z(M), _z(M)),
    lambda M: _z(M).max(),
    lambda M: M.min(_z(M)),
    lambda M: M.amax(_z(M)),
    lambda M: _z(M).amin(),
    lambda M: M.softmax(_z(M), 0),
    lambda M: M.log_softmax(M.ones(2, 3, dtype=M.complex64), 0),
    lambda M: M.round(_z(M)),
    lambda M: M.round(_z(M), decimals=2),
    lambda M: _z(M) // 2,
    lambda M: _z(M) % _z(M),
    lambda M: M.atan2(_z(M), _x(M)),
    lambda M: M.arange(3, dtype=M.complex64),
    lambda M: M.zeros(2).add_(1j),
    lambda M: M.view_as_complex(M.tensor([1, 2])),
    lambda M: M.complex(_x(M), _x(M).float()),
    lambda M: M.complex(M.tensor([1, 2]), M.tensor([1, 2])),
    lambda M: M.polar(_x(M), _x(M).float()),
]


@pytest.mark.parametrize("make", _SCALAR_TYPE_ERRORS, ids=range(len(_SCALAR_TYPE_ERRORS)))
def test_errors_naming_scalar_types_match_torch(make):
    torch = pytest.importorskip("torch")
    assert_same_error(lambda: make(tt), lambda: make(torch), scalar_names=True)


@pytest.mark.parametrize(
    "make",
    [
        lambda M: M.view_as_complex(M.ones(2, dtype=M.float16)),
        lambda M: M.complex(M.ones(2, dtype=M.float16), M.ones(2, dtype=M.float16)),
    ],
    ids=["view_as_complex", "complex"],
)
def test_float16_parts_are_refused_for_want_of_complex32(make):
    with pytest.raises(NotImplementedError, match="complex32, which NumPy .* does not have"):
        make(tt)


# -- printing --------------------------------------------------------------------------------------


_REPRS = [
    lambda M: M.tensor([1 + 1j, 2.5 - 1j]),
    lambda M: M.tensor(1 + 1j),
    lambda M: M.tensor([1.5j, -2j]),
    lambda M: M.tensor([0j, -0.0 + 0j]),
    lambda M: M.tensor([1e10 + 1j, 2 - 1j]),
    lambda M: M.tensor([1e-6 + 1j, 2 - 1j]),
    lambda M: M.tensor([float("nan") + 1j, complex(float("inf"), -2.5)]),
    lambda M: M.tensor([[1 + 1j, 2 - 1j], [3, 4j]]),
    lambda M: M.tensor([1 + 1j, 2 - 1j], dtype=M.complex128),
    lambda M: M.tensor([1 + 1j, 2 - 1j], requires_grad=True),
    lambda M: M.tensor([1 + 1j, 2 - 1j], requires_grad=True) * 2,
    lambda M: M.arange(30.0).reshape(3, 10) * (0.1 - 2.5j),
    lambda M: M.arange(40.0).to(M.complex128) * (1 + 1j) / 3,
    lambda M: M.arange(2000.0).reshape(2, 1000) * 1j,
    lambda M: M.arange(24.0).reshape(2, 3, 4) * (1 - 0.5j),
    lambda M: M.zeros(0, dtype=M.complex64),
    lambda M: M.zeros(2, 0, dtype=M.complex128),
    lambda M: (M.arange(7.0) * (1 + 1j)).to(M.complex128).requires_grad_() * 1.5,
]


@pytest.mark.parametrize("make", _REPRS, ids=range(len(_REPRS)))
def test_complex_tensors_print_as_torch(make):
    torch = pytest.importorskip("torch")
    assert repr(make(tt)) == repr(make(torch)).replace("torch.", "")


# -- z.real = v, and in place on the views ---------------------------------------------------------


def test_setting_parts_rebinds_the_tensor():
    def scenario(M):
        z = _z(M)
        y = z * 1
        y.real = M.tensor([5.0, 6.0, 7.0], dtype=M.float64)
        r = M.tensor(2.0, dtype=M.float64, requires_grad=True)
        y.imag = r * M.ones(3, dtype=M.float64)
        (y * M.tensor(W, dtype=M.complex128)).real.sum().backward()
        w = M.tensor([1.0, 2.0])
        w.real = M.tensor([3.0, 4.0])
        c = M.tensor([1 + 1j, 2j])
        c.imag = M.tensor([-1.0, 0.5])
        c.real = 3.0
        return y, y.grad_fn.name(), z.grad, r.grad, w, c

    run_both(scenario)


_PART_ERRORS = [
    lambda M: setattr(_z(M), "real", M.zeros(3, dtype=M.float64)),
    lambda M: setattr(_z(M), "imag", M.zeros(3, dtype=M.float64)),
    lambda M: setattr(M.ones(2), "imag", M.zeros(2)),
    lambda M: _z(M).real.add_(1),
    lambda M: _z(M).imag.mul_(2),
    lambda M: M.view_as_real(_z(M)).zero_(),
]


@pytest.mark.parametrize("make", _PART_ERRORS, ids=range(len(_PART_ERRORS)))
def test_part_errors_match_torch(make):
    run_both(lambda M: attempt(make, M))


def test_in_place_on_a_part_of_a_plain_tensor_is_refused_clearly():
    """torch writes through the view into `z`; the shim refuses in place on views."""
    z = tt.tensor([1 + 1j, 2 - 1j])
    for view in (z.real, z.imag, tt.view_as_real(z), z.conj()):
        with pytest.raises(NotImplementedError, match="in-place on a view is not supported"):
            view.add_(1)
    assert values(z).tolist() == [1 + 1j, 2 - 1j]


# -- the complex primitive under the functional transforms -----------------------------------------


def test_complex_primitive_matches_jax_lax_complex():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    re, im = np.array([1.0, -2.0, 0.5]), np.array([[0.25], [-1.5]])

    def ours(r, i):
        return complex_(r, i)

    def theirs(r, i):
        return jax.lax.complex(*jnp.broadcast_arrays(r, i))

    assert np.array_equal(ours(re, im), np.asarray(theirs(re, im)))
    ct = np.array([[1 + 2j, 3 - 1j, 0.5j], [2.0, -1j, 1 + 1j]])
    for a, b in zip(tg.vjp(ours, re, im)[1](ct), jax.vjp(theirs, re, im)[1](ct)):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-15)
    tangents = (np.ones(3), np.full((2, 1), 2.0))
    np.testing.assert_allclose(
        tg.jvp(ours, (re, im), tangents)[1], np.asarray(jax.jvp(theirs, (re, im), tangents)[1])
    )


def test_complex_primitive_is_the_same_bits_in_every_route():
    re = np.array([-0.0, np.inf, 1.5], np.float32)
    im = np.array([np.nan, -0.0, -np.inf], np.float32)
    eager = complex_(re, im)
    assert eager.dtype == np.complex64
    for route in (tg.jit(complex_), tg.make_graph(complex_)(re, im)):
        got = np.asarray(route(re, im))
        assert got.dtype == eager.dtype
        assert np.array_equal(got.view(np.uint64), eager.view(np.uint64))
    batched = tg.vmap(complex_)(np.stack([re, re]), np.stack([im, im]))
    assert np.array_equal(batched[1].view(np.uint64), eager.view(np.uint64))
    assert complex_(np.float32(1), 2.0).dtype == np.complex64  # a Python float is weak
    with pytest.raises(TypeError, match="complex: the parts must be float32 or float64"):
        complex_(np.ones(2, np.int64), np.ones(2))
    with pytest.raises(TypeError, match="no complex dtype with float16 parts"):
        complex_(np.ones(2, np.float16), np.ones(2, np.float16))
