"""`math_extra`, `math_extra_reductions` and `linalg_names` against PyTorch: values, dtypes,
gradients through `backward()` and messages for bad input.

Each case runs one function on the same inputs in tracegrad and in torch; float inputs require
grad, the outputs are contracted with a fixed cotangent and `backward()` runs in both; the
gradients and the outputs (value, dtype) must agree.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import (
    assert_same_error,
    torch_one_thread,  # noqa: F401 - the `torch` fixture
)
from tracegrad.torch.ops import linalg_names, math_extra, math_extra_reductions

ours = tt  # (the functions are exported at the top level: test_every_name_is_exported)


class _Method:
    """A library whose functions are called as methods of their first argument."""

    def __init__(self, lib):
        self.lib = lib

    def __getattr__(self, name):
        if name[0].islower() and name not in ("tensor", "float32", "float64"):
            return lambda first, *args, **kwargs: getattr(first, name)(*args, **kwargs)
        return getattr(self.lib, name)


rng = np.random.default_rng(0)


def _np(x):
    if hasattr(x, "detach"):
        x = x.detach()
        return x.numpy() if hasattr(x, "numpy") else np.asarray(x)
    return np.asarray(x)


def _dtype_name(x) -> str:
    return str(x.dtype).replace("torch.", "")


def _outputs(out):
    if isinstance(out, tuple | list):
        return list(out)
    return [out]


def _compare(a, b, rtol, atol):
    if isinstance(b, bool | int | float):
        assert a == b and type(a) is type(b)
        return
    assert _dtype_name(a) == _dtype_name(b), (a, b)
    assert tuple(a.shape) == tuple(b.shape)
    av, bv = _np(a), _np(b)
    if rtol == 0:
        np.testing.assert_array_equal(av, bv)
    else:
        np.testing.assert_allclose(av, bv, rtol=rtol, atol=atol, equal_nan=True)


def run(torch, name, *arrays, grad=True, frozen=(), rtol=1e-12, atol=1e-14, method=False, **kwargs):
    """`name(*arrays, **kwargs)` in both libraries (with `method`, `arrays[0].name(...)`);
    arrays are NumPy arrays (tensors) or other arguments; float ones require grad. Returns the
    torch output."""
    results = []
    for lib in (_Method(ours), _Method(torch)) if method else (ours, torch):
        args = []
        leaves = []
        for i, a in enumerate(arrays):
            if isinstance(a, np.ndarray):
                t = lib.tensor(a)
                if grad and a.dtype.kind in "fc" and i not in frozen:
                    t.requires_grad_(True)
                    leaves.append(t)
                args.append(t)
            else:
                args.append(a)
        kw = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        if isinstance(kw.get("dtype"), str):  # a dtype by name, each library's own
            kw["dtype"] = getattr(lib, kw["dtype"])
        out = getattr(lib, name)(*args, **kw)
        grads = []
        if leaves:
            total = None
            seed = np.random.default_rng(1)
            for o in _outputs(out):
                if o.dtype in (lib.float32, lib.float64) and o.requires_grad:
                    w = lib.tensor(seed.standard_normal(tuple(o.shape)).astype(_np(o).dtype))
                    term = (o * w).sum()
                    total = term if total is None else total + term
            if total is not None:
                total.backward()
                grads = [leaf.grad for leaf in leaves]
        results.append((out, grads))
    (mine, my_grads), (theirs, their_grads) = results
    mine_list, theirs_list = _outputs(mine), _outputs(theirs)
    assert len(mine_list) == len(theirs_list)
    assert type(mine) is tuple or not isinstance(theirs, tuple) or isinstance(mine, tuple)
    for a, b in zip(mine_list, theirs_list, strict=True):
        _compare(a, b, rtol, atol)
    assert len(my_grads) == len(their_grads)
    for a, b in zip(my_grads, their_grads, strict=True):
        if b is None or a is None:  # no gradient: zeros on the other side
            assert not np.any(_np(b if a is None else a))
        else:
            _compare(a, b, max(rtol, 1e-12), atol)
    return theirs


def f64(*shape):
    return rng.standard_normal(shape)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def ints(*shape, low=-5, high=6):
    return rng.integers(low, high, shape).astype(np.int64)


def error(torch, name, *args, scalar_names=False, **kwargs):
    def call(lib):
        conv = [lib.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
        kw = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        return lambda: getattr(lib, name)(*conv, **kw)

    assert_same_error(call(ours), call(torch), scalar_names=scalar_names)


# -- elementwise -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "name", ["fmod", "copysign", "logaddexp", "logaddexp2", "fmax", "fmin", "float_power"]
)
def test_binary_floats(torch, name, dtype):
    x = rng.standard_normal((3, 4)).astype(dtype) * 3
    y = rng.standard_normal((4,)).astype(dtype) + 0.5
    if name == "float_power":
        x = np.abs(x) + 0.1
    run(torch, name, x, y, rtol=1e-12 if dtype == np.float64 else 1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["fmod", "fmax", "fmin", "gcd", "lcm"])
def test_binary_integers(torch, name):
    a, b = ints(3, 4), ints(4, low=1)
    run(torch, name, a, b, rtol=0)
    if name == "fmod":
        run(torch, name, a, 3, rtol=0)
    else:  # no Python numbers
        error(torch, name, a, 3)
        error(torch, name, 2, b)


@pytest.mark.parametrize("name", ["fmod", "copysign", "fmax", "fmin", "float_power", "ldexp"])
def test_binary_promotion(torch, name):
    a = ints(3, 4, low=1)
    run(torch, name, a, f32(4), rtol=1e-6 if name == "ldexp" else 1e-12)
    if name in ("fmax", "fmin"):
        run(torch, name, f32(3, 4), f64(4))
    else:
        other = 2.5 if name != "ldexp" else ints(4)
        run(torch, name, f32(3, 4) + 4, other, rtol=1e-6 if name == "ldexp" else 1e-12)
    run(torch, name, a.astype(np.int32), ints(4, low=1))


def test_grad_fn_names(torch):
    x = np.array([1.5, -2.0])
    for name, args in [
        ("fmod", (x, x)),
        ("fmod", (x, 2.0)),
        ("logaddexp", (x, x)),
        ("fmax", (x, x)),
        ("frac", (x,)),
        ("logit", (x / 4,)),
        ("deg2rad", (x,)),
        ("rad2deg", (x,)),
        ("nan_to_num", (x,)),
    ]:
        names = []
        for lib in (ours, torch):
            conv = [
                lib.tensor(a, requires_grad=True) if isinstance(a, np.ndarray) else a for a in args
            ]
            names.append(getattr(lib, name)(*conv).grad_fn.name())
        assert names[0] == names[1], name


def test_fmax_nan_and_ldexp(torch):
    x = np.array([1.0, np.nan, np.nan, -2.0])
    y = np.array([np.nan, 3.0, np.nan, -1.0])
    run(torch, "fmax", x, y)
    run(torch, "fmin", x, y)
    run(torch, "ldexp", f64(5), ints(5))
    run(torch, "heaviside", x, np.array([0.5]), grad=False)
    run(torch, "heaviside", np.array([-1.0, 0.0, 2.0]), np.array([0.5, 0.5, 0.5]), grad=False)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_unary(torch, dtype):
    x = (rng.standard_normal((3, 4)) * 4).astype(dtype)
    tol = {"rtol": 1e-12} if dtype == np.float64 else {"rtol": 1e-6, "atol": 1e-6}
    for name in ("frac", "deg2rad", "rad2deg", "nan_to_num"):
        run(torch, name, x, **tol)
    p = rng.uniform(0.01, 0.99, (3, 4)).astype(dtype)
    run(torch, "logit", p, **tol)
    run(torch, "logit", p, eps=0.2, **tol)
    run(torch, "logit", p, 0.05, **tol)


def test_unary_integers(torch):
    a = ints(5)
    for name in ("deg2rad", "rad2deg", "nan_to_num", "signbit", "isneginf", "isposinf"):
        run(torch, name, a, rtol=1e-7)
    run(torch, "logit", np.array([0, 1, 2]), rtol=1e-7)


def test_nan_to_num(torch):
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0])
    run(torch, "nan_to_num", x, rtol=0)
    run(torch, "nan_to_num", x, nan=2.0, posinf=10.0, neginf=-10.0, rtol=0)
    run(torch, "nan_to_num", x.astype(np.float32), 1.0, rtol=0)


def test_predicates(torch):
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0, 0.0, -3.0])
    for name in ("signbit", "isneginf", "isposinf", "isreal"):
        run(torch, name, x, rtol=0, grad=False)
        run(torch, name, x.astype(np.float32), rtol=0, grad=False)
    run(torch, "isreal", np.array([1 + 0j, 1j, 2]), rtol=0)
    a, b = ints(4, 3), ints(5)
    run(torch, "isin", a, b, rtol=0)
    run(torch, "isin", a, b, invert=True, rtol=0)
    run(torch, "isin", a, 3, rtol=0)
    run(torch, "isin", 2, b, rtol=0)
    run(torch, "isin", f64(3), np.array([0.0, 1.0]), rtol=0, grad=False)
    for x in (f64(2), ints(2), np.array(2.0), np.array([True])):
        assert ours.is_floating_point(ours.tensor(x)) == torch.is_floating_point(torch.tensor(x))
    for x in (np.array([0.0]), np.array(3), np.array([[True]]), np.array(0j + 1)):
        assert ours.is_nonzero(ours.tensor(x)) == torch.is_nonzero(torch.tensor(x))
    error(torch, "is_nonzero", np.array([1.0, 2.0]))
    error(torch, "is_nonzero", np.zeros(0))


def test_integer_functions(torch):
    a, b = ints(3, 4, low=-20, high=20), ints(4, low=-20, high=20)
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "gcd", "lcm"):
        run(torch, name, a, b, rtol=0)
        run(torch, name, a.astype(np.int32), b.astype(np.int16), rtol=0)
        run(torch, name, a.astype(np.uint8), np.array(7, np.uint8), rtol=0)
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        run(torch, name, a > 0, b > 0, rtol=0)
        run(torch, name, a > 0, True, rtol=0)
    run(torch, "bitwise_not", a, rtol=0)
    run(torch, "bitwise_not", a > 0, rtol=0)
    run(torch, "bitwise_not", a.astype(np.uint8), rtol=0)
    run(torch, "logical_xor", a, b, rtol=0)
    run(torch, "logical_xor", f64(3), np.array([0.0, 1.0, 0.0]), rtol=0, grad=False)


def test_frexp_nextafter(torch):
    x = np.array([0.0, 1.0, -3.5, 1e-30, 1e30, 0.1, np.inf])
    run(torch, "frexp", x[:-1], rtol=0)
    run(torch, "frexp", x[:-1].astype(np.float32) * 0 + f32(6), rtol=0)
    y = np.array([1.0, 0.0, 2.0, -1.0, 0.0, 0.1, 0.0])
    run(torch, "nextafter", x, y, rtol=0, grad=False)
    run(torch, "nextafter", x.astype(np.float32), y.astype(np.float32), rtol=0, grad=False)


def test_special(torch):
    pytest.importorskip("scipy")
    x = rng.uniform(2.0, 5.0, (3, 4))
    for p in (1, 2, 3):
        run(torch, "mvlgamma", x, p=p, rtol=1e-10)
    run(torch, "mvlgamma", x.astype(np.float32), p=2, rtol=1e-5)
    a = rng.uniform(0.5, 3.0, (4,))
    run(torch, "igamma", a, x, frozen=(0,), rtol=1e-10)
    run(torch, "igammac", a, x, frozen=(0,), rtol=1e-10)
    run(torch, "igamma", a.astype(np.float32), x.astype(np.float32), frozen=(0,), rtol=1e-5)
    error(torch, "igamma", ints(3), ints(3), scalar_names=True)


def test_elementwise_errors(torch):
    fl, it = f64(3), ints(3, low=1)
    error = functools.partial(globals()["error"], scalar_names=True)
    error(torch, "gcd", fl, fl)
    error(torch, "lcm", fl, it)
    error(torch, "bitwise_and", fl, it)
    error(torch, "bitwise_not", fl)
    error(torch, "frac", it)
    error(torch, "fmod", it, np.array([0, 1, 2]))
    error(torch, "heaviside", fl, it)
    error(torch, "logaddexp", it, it)
    error(torch, "logaddexp", fl, 0.5)
    error(torch, "logaddexp2", 0.5, fl)
    error(torch, "frexp", it)
    error(torch, "nextafter", it, it)
    error(torch, "fmax", fl + 0j, fl)
    error(torch, "copysign", fl + 0j, fl)
    error(torch, "signbit", fl + 0j)
    error(torch, "deg2rad", fl + 0j)
    error(torch, "logit", fl + 0j)
    run(torch, "nan_to_num", np.array([np.nan + 1j, np.inf - 1j * np.inf]), rtol=0, grad=False)


# -- reductions and data functions ------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nansum_nanmean(torch, dtype):
    x = rng.standard_normal((3, 4)).astype(dtype)
    x[0, 1] = x[2, 3] = np.nan
    tol = 1e-12 if dtype == np.float64 else 1e-6
    for name in ("nansum", "nanmean"):
        run(torch, name, x, rtol=tol)
        run(torch, name, x, 1, rtol=tol)
        run(torch, name, x, dim=0, keepdim=True, rtol=tol)
        run(torch, name, x, dim=(0, 1), rtol=tol)
    run(torch, "nansum", ints(3, 4), rtol=0)
    run(torch, "nansum", x, 0, dtype="float64", rtol=tol)
    run(torch, "nanmean", np.full(3, np.nan, dtype), rtol=0, grad=False)
    error(torch, "nanmean", ints(3), scalar_names=True)


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
def test_quantile(torch, name, interpolation, request):
    x = rng.standard_normal((4, 7))
    q = np.array([0.0, 0.25, 0.5, 0.9, 1.0])
    # q is not differentiated here (PyTorch's gradient in q follows its in-place ops)
    run = functools.partial(globals()["run"], frozen=(1,))
    run(torch, name, x, q, interpolation=interpolation)
    run(torch, name, x, 0.3, interpolation=interpolation)
    run(torch, name, x, 0.3, 1, interpolation=interpolation)
    run(torch, name, x, q, 0, True, interpolation=interpolation)
    run(torch, name, x, q, None, True, interpolation=interpolation)
    run(torch, name, x.astype(np.float32), q.astype(np.float32), -1, rtol=1e-6)
    y = x.copy()
    y[1, 2] = y[3, 0] = np.nan
    y[2] = np.nan
    # the order PyTorch's sort gives equal nans is its own: no gradient compared
    run(torch, name, y, q, 1, interpolation=interpolation, grad=False)
    run(torch, name, y, 0.4, interpolation=interpolation, grad=False)


def test_quantile_errors(torch):
    x = f64(5)
    error(torch, "quantile", ints(5), 0.5)
    error(torch, "quantile", x, 1.5)
    error(torch, "quantile", x, np.array([0.5, 2.0]))
    error(torch, "quantile", x, np.array([0.5], np.float32))
    error(torch, "quantile", x, np.ones((2, 2)) / 2)
    error(torch, "quantile", np.zeros(0), 0.5)
    error(torch, "nanquantile", x, 0.5, interpolation="cubic")


def test_counting(torch):
    a = ints(3, 4)
    run(torch, "count_nonzero", a, rtol=0)
    run(torch, "count_nonzero", a, 1, rtol=0)
    run(torch, "count_nonzero", a, dim=(0, 1), rtol=0)
    b = rng.integers(0, 6, 10)
    run(torch, "bincount", b, rtol=0)
    run(torch, "bincount", b, minlength=9, rtol=0)
    run(torch, "bincount", b, weights=f32(10), rtol=1e-6, grad=False)
    run(torch, "bincount", b, f64(10), rtol=1e-12, grad=False)
    run(torch, "bincount", b, weights=ints(10), rtol=0)
    error(torch, "bincount", np.array([-1, 2]))
    error(torch, "bincount", np.ones((2, 2), np.int64))


def test_searching(torch):
    seq = np.sort(f64(6))
    values = f64(3, 4)
    values[0, 0] = seq[2]
    for right in (False, True):
        run(torch, "searchsorted", seq, values, right=right, rtol=0, grad=False)
        run(torch, "bucketize", values, seq, right=right, rtol=0, grad=False)
    run(torch, "searchsorted", seq, values, side="right", out_int32=True, rtol=0, grad=False)
    run(torch, "bucketize", values, seq, out_int32=True, rtol=0, grad=False)
    run(torch, "bucketize", 0.3, seq, rtol=0, grad=False)
    rows = np.sort(f64(3, 5), -1)
    run(torch, "searchsorted", rows, f64(3, 2), rtol=0, grad=False)
    order = np.argsort(seq[::-1].copy())
    run(torch, "searchsorted", seq[::-1].copy(), values, sorter=order, rtol=0, grad=False)
    error(torch, "bucketize", values, rows)


def test_histc(torch):
    x = f64(50)
    run(torch, "histc", x, rtol=0, grad=False)
    run(torch, "histc", x, bins=7, min=-1, max=1, rtol=0, grad=False)
    run(torch, "histc", x.astype(np.float32), 5, rtol=0, grad=False)
    run(torch, "histc", np.array([2.0, 2.0]), 4, rtol=0, grad=False)
    error(torch, "histc", ints(5), scalar_names=True)
    error(torch, "histc", x, -1)
    error(torch, "histc", x, min=3, max=1)


@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.bool_])
def test_diff(torch, dtype):
    x = (f64(3, 5) * 5).astype(dtype)
    run(torch, "diff", x, rtol=0)
    run(torch, "diff", x, 2, 0, rtol=0)
    run(torch, "diff", x, n=3, rtol=0)
    pre, post = (f64(3, 2) * 5).astype(dtype), (f64(3, 1) * 5).astype(dtype)
    run(torch, "diff", x, prepend=pre, append=post, rtol=0)
    run(torch, "diff", x, 1, 0, prepend=(f64(1, 5) * 5).astype(dtype), rtol=0)
    run(torch, "diff", x, n=0, rtol=0)
    error(torch, "diff", np.array(1.0))
    error(torch, "diff", x, -1)


def test_gradient(torch):
    x = f64(4, 5)
    run(torch, "gradient", x)
    run(torch, "gradient", x, spacing=2.0)
    run(torch, "gradient", x, dim=1)
    run(torch, "gradient", x, spacing=[0.5], dim=1, edge_order=2)
    run(torch, "gradient", x, spacing=[0.5, 3.0], dim=[0, 1])
    run(torch, "gradient", f32(6), rtol=1e-6)
    error(torch, "gradient", f64(2), edge_order=2)


def test_trapezoid(torch):
    y, x = f64(3, 5), np.sort(f64(5))
    for name in ("trapezoid", "cumulative_trapezoid"):
        run(torch, name, y)
        run(torch, name, y, x)
        run(torch, name, y, dx=0.5, dim=0)
        run(torch, name, y, np.sort(f64(3, 5), -1))
        run(torch, name, ints(3, 5), rtol=0)
        # float32: partial sums that cancel are compared to float32's absolute error
        run(torch, name, y.astype(np.float32), rtol=1e-6, atol=1e-6)
    run(torch, "trapz", y, x)
    run(torch, "trapz", y, dx=2.0)


def test_moments(torch):
    x = f64(3, 4)
    for name in ("std_mean", "var_mean"):
        run(torch, name, x)
        run(torch, name, x, 1)
        run(torch, name, x, dim=0, keepdim=True, correction=0)
        run(torch, name, x, 1, False, True)
        run(torch, name, x.astype(np.float32), rtol=1e-6, atol=1e-6)
    run(torch, "aminmax", x, rtol=0)
    run(torch, "aminmax", x, dim=1, rtol=0)
    run(torch, "aminmax", x, dim=0, keepdim=True, rtol=0)
    run(torch, "aminmax", ints(3, 4), dim=0, rtol=0)
    t = ours.aminmax(ours.tensor(x), dim=1)
    assert t.min is t[0] and type(t).__name__ == "aminmax"


def test_unique_consecutive_and_unravel(torch):
    a = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    run(torch, "unique_consecutive", a, rtol=0)
    run(torch, "unique_consecutive", a, True, True, rtol=0)
    run(torch, "unique_consecutive", a.reshape(2, 4), return_inverse=True, rtol=0)
    m = np.array([[1, 2], [1, 2], [3, 4], [1, 2]])
    run(torch, "unique_consecutive", m, return_counts=True, dim=0, rtol=0)
    run(torch, "unravel_index", np.array([0, 5, 11, -1]), (3, 4), rtol=0)
    run(torch, "unravel_index", np.array(7), (2, 2, 2), rtol=0)


def test_cov_corrcoef(torch):
    x = f64(3, 6)
    run(torch, "cov", x)
    run(torch, "cov", x, correction=0)
    run(torch, "cov", f64(6))
    run(torch, "cov", ints(3, 6), rtol=1e-6, atol=1e-5)
    run(torch, "cov", x, fweights=rng.integers(1, 4, 6))
    run(torch, "cov", x, aweights=rng.uniform(0.5, 2, 6))
    run(torch, "cov", x, fweights=rng.integers(1, 4, 6), aweights=rng.uniform(0.5, 2, 6))
    run(torch, "cov", x.astype(np.float32), rtol=1e-5, atol=1e-6)
    with pytest.warns(UserWarning, match="degrees of freedom"):
        ours.cov(ours.tensor(x), correction=6)
    run(torch, "corrcoef", x)
    run(torch, "corrcoef", f64(6))
    run(torch, "corrcoef", x.astype(np.float32), rtol=1e-5, atol=1e-6)


# -- linear algebra ----------------------------------------------------------------------------


def _spd(n, batch=()):
    a = rng.standard_normal((*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def test_linalg_names(torch):
    run(torch, "cholesky", _spd(3), rtol=1e-10)
    run(torch, "cholesky", _spd(3, (2,)), upper=True, rtol=1e-10)
    run(torch, "qr", f64(4, 3), rtol=1e-10)
    run(torch, "qr", f64(4, 3), some=False, rtol=1e-10, grad=False)
    run(torch, "slogdet", f64(3, 3), rtol=1e-10)
    run(torch, "logdet", _spd(3), rtol=1e-10)
    run(torch, "logdet", -_spd(3) if False else np.diag([-1.0, 2.0, 3.0]), rtol=1e-10)
    run(torch, "matrix_power", f64(3, 3), 3, rtol=1e-10)
    run(torch, "matrix_power", _spd(3), -2, rtol=1e-10)
    run(torch, "matrix_exp", f64(3, 3), rtol=1e-10)
    run(torch, "matrix_exp", f64(2, 3, 3), rtol=1e-10)
    run(torch, "pinverse", f64(4, 3), rtol=1e-10)
    run(torch, "pinverse", f64(4, 3), rcond=0.5, rtol=1e-10)
    a = np.triu(f64(3, 3)) + 3 * np.eye(3)
    for kwargs in ({}, {"transpose": True}, {"unitriangular": True}):
        run(torch, "triangular_solve", f64(3, 2), a, rtol=1e-10, **kwargs)
    run(torch, "triangular_solve", f64(2, 3, 2), a.T.copy(), upper=False, rtol=1e-10)


def test_svd(torch):
    x = f64(4, 3)
    for lib_out in (ours.svd(ours.tensor(x)), ours.svd(ours.tensor(x), some=False)):
        u, s, v = (_np(t) for t in lib_out)
        k = s.shape[-1]
        np.testing.assert_allclose(u[:, :k] * s @ v[:, :k].T, x, atol=1e-12)
    theirs = torch.svd(torch.tensor(x))
    np.testing.assert_allclose(_np(ours.svd(ours.tensor(x)).S), _np(theirs.S), rtol=1e-12)
    run(torch, "svd", x, compute_uv=False, rtol=1e-12)
    # a gradient that does not depend on the signs of the singular vectors
    for lib in (ours, torch):
        t = lib.tensor(x, requires_grad=True)
        u, s, v = lib.svd(t)
        ((u * s) @ v.T).pow(2).sum().backward()
        lib.grad_ = t.grad
    np.testing.assert_allclose(_np(ours.grad_), _np(torch.grad_), rtol=1e-10)
    del torch.grad_


def test_deprecation_warnings():
    """PyTorch's warnings, once per process (torch's own may have been given already in this
    process, so its text is written here, as torch 2.13 prints it)."""
    import warnings

    a = np.eye(2)
    expected = {
        "cholesky": "torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be "
        "removed in a future PyTorch release.",
        "qr": "torch.qr is deprecated in favor of torch.linalg.qr and will be removed in a "
        "future PyTorch release.",
        "triangular_solve": "torch.triangular_solve is deprecated in favor of "
        "torch.linalg.solve_triangularand will be removed in a future PyTorch release.",
    }
    for name, args in [("cholesky", (a,)), ("qr", (a,)), ("triangular_solve", (a, a))]:
        linalg_names._warned.discard(name)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            getattr(ours, name)(*(ours.tensor(x) for x in args))
            getattr(ours, name)(*(ours.tensor(x) for x in args))  # once only
        assert [str(w.message) for w in caught] == [expected[name]]


def test_linalg_errors(torch):
    error(torch, "matrix_exp", f64(2, 3))
    error(torch, "triangular_solve", f64(3, 2), f64(3, 3).astype(np.float32))


# -- the same functions as tensor methods ------------------------------------------------------

_A, _B, _P = f64(3, 4), f64(4) + 0.5, np.abs(f64(3, 4)) + 0.1
_I, _J = ints(3, 4), ints(4, low=1)
_METHOD_CASES = {
    "fmod": ((_A, _B), {}),
    "frac": ((_A * 3,), {}),
    "float_power": ((_P, 1.5), {}),
    "copysign": ((_A, _B), {}),
    "heaviside": ((np.round(_A), _B), {"grad": False}),
    "logaddexp": ((_A, _B), {}),
    "logaddexp2": ((_A, _B), {}),
    "logit": ((1 / (1 + np.exp(_A)),), {}),
    "nan_to_num": ((np.array([np.nan, np.inf, -np.inf, 1.0]),), {"posinf": 9.0}),
    "signbit": ((_A,), {}),
    "isneginf": ((np.array([-np.inf, 1.0, np.inf]),), {}),
    "isposinf": ((np.array([-np.inf, 1.0, np.inf]),), {}),
    "isreal": ((_A,), {}),
    "is_nonzero": ((np.array([2.5]),), {"grad": False}),
    "deg2rad": ((_A,), {}),
    "rad2deg": ((_A,), {}),
    "fmax": ((_A, _B), {}),
    "fmin": ((_A, _B), {}),
    "gcd": ((_I, _J), {}),
    "lcm": ((_I, _J), {}),
    "ldexp": ((_A, _J), {}),
    "frexp": ((_A,), {}),
    "nextafter": ((_A, _B), {"grad": False}),
    "logical_xor": ((_A, _B), {}),
    "bitwise_and": ((_I, _J), {}),
    "bitwise_or": ((_I, _J), {}),
    "bitwise_xor": ((_I, _J), {}),
    "bitwise_not": ((_I,), {}),
    "mvlgamma": ((_P + 2,), {"p": 2}),
    "igamma": ((_P, _P.T.copy().T + 0.5), {"grad": False}),
    "igammac": ((_P, _P + 0.5), {"grad": False}),
    "nansum": ((np.where(_A > 1, np.nan, _A),), {"dim": 1}),
    "nanmean": ((np.where(_A > 1, np.nan, _A),), {}),
    "quantile": ((_A, 0.3), {"dim": 1}),
    "nanquantile": ((_A, 0.7), {}),
    "count_nonzero": ((np.round(_A),), {"dim": 0}),
    "bincount": ((np.abs(_I[0]),), {}),
    "histc": ((_A,), {"bins": 5, "grad": False}),
    "diff": ((_A,), {"dim": 1}),
    "aminmax": ((_A,), {"dim": 0}),
    "unique_consecutive": ((np.array([1, 1, 2, 2, 3, 1]),), {"return_counts": True}),
    "cov": ((_A,), {}),
    "corrcoef": ((_A,), {}),
    "cholesky": ((_spd(3),), {"rtol": 1e-10}),
    "qr": ((f64(4, 3),), {"rtol": 1e-10}),
    "svd": ((f64(4, 3),), {"compute_uv": False}),
    "slogdet": ((f64(3, 3),), {"rtol": 1e-10}),
    "logdet": ((_spd(3),), {"rtol": 1e-10}),
    "matrix_power": ((f64(3, 3), 3), {"rtol": 1e-10}),
    "matrix_exp": ((f64(3, 3),), {"rtol": 1e-10}),
    "pinverse": ((f64(4, 3),), {"rtol": 1e-10}),
    "triangular_solve": ((f64(3, 2), np.triu(f64(3, 3)) + 3 * np.eye(3)), {"rtol": 1e-10}),
}


@pytest.mark.filterwarnings("ignore:torch.*is deprecated:UserWarning")
@pytest.mark.parametrize("name", sorted(_METHOD_CASES))
def test_tensor_methods(torch, name):
    args, kwargs = _METHOD_CASES[name]
    run(torch, name, *args, method=True, **kwargs)


def test_every_method_of_these_modules_has_a_case():
    from tracegrad.torch import methods

    assert set(methods._EXTRA_MATH) == set(_METHOD_CASES)


def test_every_name_is_exported():
    for module in (math_extra, math_extra_reductions, linalg_names):
        for name in module.__all__:
            assert getattr(tt, name) is getattr(module, name), name
            assert name in tt.__all__, name
