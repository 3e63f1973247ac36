"""`tracegrad.torch.ops.selection` against PyTorch: sorting, selection, scans, unique, nonzero.

Each scenario runs in both libraries (`run_both`): values, index tensors, dtypes, `grad_fn`
names, and the gradient of a weighted sum through `backward()`, in float32 and float64. Ties
are tested where PyTorch documents the rule (stable sort) or its CPU kernel fixes it (topk,
cummax, mode, the all-reduce median's even split); kthvalue and median(dim) without ties.
The functions are called from the module until the lead wires them into `tracegrad.torch`.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import assert_same_error, attempt, run_both
from tracegrad.torch.ops import selection

RNG = np.random.default_rng(23)
DISTINCT = RNG.permutation(24).reshape(4, 6) * 0.37 - 3.0  # no ties
TIES = np.array([[3.0, 1.0, 2.0, 1.0, 2.0], [0.0, 5.0, 5.0, -1.0, 5.0], [4.0, 4.0, 4.0, 4.0, 4.0]])
WITH_NAN = np.array([[1.0, np.nan, 0.0, 3.0], [2.0, 1.0, np.nan, np.nan], [0.5, 2.0, -1.0, 7.0]])


def fn(lib, name):
    """`lib.name`, taken from the selection module for tracegrad until it is wired."""
    return getattr(lib, name) if lib is not tt else getattr(selection, name)


def through(name, array, *args, dtype="float64", **kwargs):
    """A scenario: the call's outputs, their grad_fn names, and the input's gradient of
    sum(w * values) with fixed weights w."""

    def scenario(lib):
        x = lib.tensor(array, dtype=getattr(lib, dtype), requires_grad=True)
        result = fn(lib, name)(x, *args, **kwargs)
        parts = tuple(result) if isinstance(result, tuple) else (result,)
        values = parts[0]
        names = tuple(p.grad_fn.name() if p.grad_fn is not None else None for p in parts)
        w = np.linspace(-1.0, 2.0, values.numel()).reshape(tuple(values.shape))
        (values * lib.tensor(w, dtype=getattr(lib, dtype))).sum().backward()
        if isinstance(result, tuple):  # torch.return_types: named fields, and the type's name
            assert (result.values, result.indices) == (parts[0], parts[1])
        return parts, names, x.grad, type(result).__name__

    return scenario


CASES = [
    ("sort", DISTINCT, (), {}),
    ("sort", TIES, (), {}),
    ("sort", TIES, (), {"descending": True}),
    ("sort", TIES, (), {"dim": 0, "descending": True, "stable": True}),
    ("sort", TIES, (), {"stable": False}),
    ("sort", WITH_NAN, (1,), {}),
    ("sort", WITH_NAN, (1, True), {}),
    ("msort", TIES, (), {}),
    ("topk", DISTINCT, (2,), {}),
    ("topk", DISTINCT, (3,), {"largest": False}),
    ("topk", DISTINCT, (2, 0), {}),
    ("topk", DISTINCT, (0,), {}),
    ("topk", WITH_NAN, (2,), {}),
    ("kthvalue", DISTINCT, (3,), {}),
    ("kthvalue", DISTINCT, (2, 0, True), {}),
    ("median", DISTINCT, (), {}),
    ("median", TIES, (), {}),
    ("median", DISTINCT, (1,), {}),
    ("median", DISTINCT, (0, True), {}),
    ("median", WITH_NAN, (), {}),
    ("median", WITH_NAN, (1,), {}),
    ("nanmedian", WITH_NAN, (), {}),
    ("nanmedian", WITH_NAN, (1,), {}),
    ("nanmedian", TIES, (), {}),
    ("mode", TIES, (), {}),
    ("mode", TIES, (0, True), {}),
    ("mode", DISTINCT, (), {}),
    ("cummax", TIES, (1,), {}),
    ("cummin", TIES, (1,), {}),
    ("cummax", DISTINCT, (0,), {}),
    ("cummin", DISTINCT, (-1,), {}),
    ("cummax", WITH_NAN, (1,), {}),
    ("cummin", WITH_NAN, (1,), {}),
    ("logcumsumexp", DISTINCT, (1,), {}),
    ("logcumsumexp", DISTINCT, (0,), {}),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("name", "array", "args", "kwargs"), CASES, ids=lambda v: None)
def test_values_indices_and_gradients(name, array, args, kwargs, dtype):
    rtol = 1e-5 if dtype == "float32" else 1e-12
    run_both(through(name, array, *args, dtype=dtype, **kwargs), rtol=rtol, atol=rtol)


def test_logcumsumexp_keeps_tiny_and_huge_terms():
    """Each prefix is shifted by its own maximum: exp(-1000) is not lost beside 1000 (float64:
    torch's float32 gradient here is off by 6e-5)."""
    run_both(through("logcumsumexp", np.array([-1000.0, 0.0, 1000.0, 3.0]), 0), rtol=1e-12)


def test_logcumsumexp_of_complex_numbers():
    def scenario(lib):
        x = lib.tensor([1 + 1j, 2 - 0.5j, -3 + 2j], dtype=lib.complex128, requires_grad=True)
        y = fn(lib, "logcumsumexp")(x, 0)
        (y.real.sum() + 2 * y.imag.sum()).backward()
        return y, x.grad

    run_both(scenario, rtol=1e-12)


@pytest.mark.parametrize("name", ["sort", "topk", "kthvalue", "median", "mode", "cummax"])
def test_zero_dim_input(name):
    args = {"sort": (), "topk": (1,), "kthvalue": (1,), "median": (0,), "mode": (), "cummax": (0,)}
    run_both(through(name, np.array(2.5), *args[name]))


def test_argsort_is_the_stable_order():
    def scenario(lib):
        x = lib.tensor(TIES)
        argsort = fn(lib, "argsort")
        return (
            argsort(x),
            argsort(x, descending=True),
            argsort(x, dim=0, stable=True),
            argsort(lib.tensor([True, False, True])),
            argsort(lib.tensor(3.0)),
        )

    run_both(scenario)


def test_integer_and_bool_inputs_keep_their_dtype():
    def scenario(lib):
        a = lib.tensor([[3, 1, 2, 1], [7, 7, 0, 2]])
        distinct = lib.tensor([[3, 1, 2, 5], [7, 6, 0, 2]])
        b = lib.tensor([True, False, True])
        return (
            tuple(fn(lib, "sort")(a, descending=True, stable=True)),
            tuple(fn(lib, "sort")(b, stable=True)),
            tuple(fn(lib, "topk")(distinct, 2)),
            tuple(fn(lib, "kthvalue")(distinct, 1)),
            fn(lib, "median")(a),
            tuple(fn(lib, "median")(distinct, 1)),
            tuple(fn(lib, "mode")(a)),
            tuple(fn(lib, "cummax")(a, 1)),
            tuple(fn(lib, "cummin")(a, 0)),
        )

    run_both(scenario)


def test_median_of_empty_is_nan():
    run_both(lambda lib: (fn(lib, "median")(lib.zeros(0)), fn(lib, "nanmedian")(lib.zeros(0))))


def test_all_reduce_median_splits_the_gradient_evenly():
    out = run_both(through("median", np.array([1.0, 1.0, 2.0, 0.5, 1.0])))  # weight -1
    np.testing.assert_allclose(out.value[2].numpy(), [-1 / 3, -1 / 3, 0.0, 0.0, -1 / 3])


def test_masked_select():
    def scenario(lib):
        x = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        row = lib.tensor([True, False, True])
        col = lib.tensor([[True], [False]])
        a = fn(lib, "masked_select")(x, x > 2.5)
        b = fn(lib, "masked_select")(x, row)  # the mask broadcasts
        c = fn(lib, "masked_select")(x[0], col)  # and the input too: its gradient sums
        (a.sum() + (b * 2).sum() + (c * 3).sum()).backward()
        return a, b, c, a.grad_fn.name(), x.grad

    out = run_both(scenario)
    np.testing.assert_array_equal(out.value[4].numpy(), [[5.0, 3.0, 6.0], [3.0, 1.0, 3.0]])


def test_unique():
    def scenario(lib):
        unique = fn(lib, "unique")
        x = lib.tensor([[3.0, 1.0, 2.0, 1.0], [0.0, 5.0, 5.0, -1.0]])
        ints = lib.tensor([[1, 2], [1, 2], [0, 5]])
        return (
            unique(x),
            unique(x, return_inverse=True),
            unique(x, return_counts=True),
            unique(x, sorted=False, return_inverse=True, return_counts=True),
            unique(ints, dim=0, return_inverse=True, return_counts=True),
            unique(x, dim=1),
            unique(lib.tensor(5)),
            unique(lib.tensor([True, False, True]), return_counts=True),
        )

    run_both(scenario)


def test_unique_of_a_tensor_that_requires_grad_has_no_derivative():
    def scenario(lib):
        x = lib.tensor([[3.0, 1.0], [1.0, 0.0]], requires_grad=True)
        u = fn(lib, "unique")(x)
        v = fn(lib, "unique")(x, dim=0)
        with lib.no_grad():
            w = fn(lib, "unique")(x)
        counts = fn(lib, "unique")(x, return_counts=True)[1]
        return (
            u,
            u.grad_fn.name(),
            v.grad_fn.name(),
            w,
            counts,
            attempt(lambda: u.sum().backward()),
            attempt(lambda: v.sum().backward()),
        )

    run_both(scenario)


def test_nonzero_and_argwhere():
    def scenario(lib):
        nonzero, argwhere = fn(lib, "nonzero"), fn(lib, "argwhere")
        x = lib.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]])
        return (
            nonzero(x),
            nonzero(x, as_tuple=True),
            argwhere(x),
            nonzero(lib.tensor(3.0)),
            nonzero(lib.tensor(3.0), as_tuple=True),
            nonzero(lib.tensor(0.0), as_tuple=True),
            argwhere(lib.tensor(0.0)),
            nonzero(lib.zeros(2, 0)),
            nonzero(lib.tensor([True, False, True])),
        )

    run_both(scenario)


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, t: fn(lib, "topk")(t, 4),
        lambda lib, t: fn(lib, "topk")(t, -1),
        lambda lib, t: fn(lib, "kthvalue")(t, 4),
        lambda lib, t: fn(lib, "kthvalue")(t, 0, 0),
        lambda lib, t: fn(lib, "sort")(t, 2),
        lambda lib, t: fn(lib, "cummax")(t, -3),
        lambda lib, t: fn(lib, "masked_select")(t, t),
        lambda lib, t: fn(lib, "masked_select")(t, lib.ones(3, 3, dtype=lib.bool)),
        lambda lib, t: fn(lib, "median")(lib.zeros(2, 0), 1),
        lambda lib, t: fn(lib, "kthvalue")(lib.zeros(2, 0), 1, 1),
        lambda lib, t: fn(lib, "mode")(lib.zeros(0)),
        lambda lib, t: fn(lib, "unique")(t, dim=3),
        lambda lib, t: fn(lib, "topk")(t.to(lib.complex64), 1),
        lambda lib, t: fn(lib, "sort")(t.to(lib.complex64)),
    ],
)
def test_errors(call):
    torch = pytest.importorskip("torch")
    t = [[3.0, 1.0, 2.0], [4.0, 0.0, 6.0]]
    assert_same_error(lambda: call(tt, tt.tensor(t)), lambda: call(torch, torch.tensor(t)))


@pytest.mark.parametrize(
    "call",
    [
        lambda lib, t: fn(lib, "logcumsumexp")(t.long(), 0),
        lambda lib, t: fn(lib, "cummax")(t.to(lib.complex64), 0),
        lambda lib, t: fn(lib, "median")(t.to(lib.complex64)),
        lambda lib, t: fn(lib, "nanmedian")(t.to(lib.complex64)),
        lambda lib, t: fn(lib, "median")(t.to(lib.complex64), 0),
        lambda lib, t: fn(lib, "nanmedian")(t.to(lib.complex64), 1),
        lambda lib, t: fn(lib, "kthvalue")(t.to(lib.complex64), 1),
        lambda lib, t: fn(lib, "mode")(t.to(lib.complex64)),
        lambda lib, t: fn(lib, "cummin")(t.to(lib.complex64), 1),
        lambda lib, t: fn(lib, "unique")(t.to(lib.complex64)),
        lambda lib, t: fn(lib, "argsort")(t.to(lib.complex64)),
        lambda lib, t: fn(lib, "msort")(t.to(lib.complex64)),
    ],
)
def test_errors_naming_dtypes(call):
    torch = pytest.importorskip("torch")
    t = [[3.0, 1.0, 2.0], [4.0, 0.0, 6.0]]
    assert_same_error(
        lambda: call(tt, tt.tensor(t)), lambda: call(torch, torch.tensor(t)), scalar_names=True
    )


def test_results_are_new_tensors_that_allow_in_place():
    def scenario(lib):
        x = lib.tensor([3.0, 1.0, 2.0], requires_grad=True)
        values = fn(lib, "sort")(x).values
        values.mul_(2)
        values.sum().backward()
        return values, x.grad

    run_both(scenario)


@pytest.mark.parametrize("name", selection.__all__)
def test_wired_functions_and_methods_are_the_module_functions(name):
    """`torch.name` is the module's function, and `t.name(...)` calls it (the same object)."""
    function = getattr(tt, name)  # (an `out=` wrapper, where the lead adds one, wraps it)
    assert getattr(function, "__wrapped__", function) is getattr(selection, name)
    x = tt.tensor([[3.0, 1.0], [2.0, 0.0]])
    args = {"topk": (1,), "kthvalue": (1,), "cummax": (0,), "cummin": (0,)}
    args |= {"logcumsumexp": (0,), "masked_select": (x > 1,)}
    got = getattr(x, name)(*args.get(name, ()))
    expected = getattr(selection, name)(x, *args.get(name, ()))
    got, expected = ((tuple(r) if isinstance(r, tuple) else (r,)) for r in (got, expected))
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g.numpy(), e.numpy())
    assert getattr(tt.Tensor, name) is getattr(selection, name)


@pytest.mark.parametrize(
    ("name", "args"),
    [("sort", ()), ("topk", (2,)), ("median", (1,)), ("cummax", (0,)), ("logcumsumexp", (1,))],
)
def test_second_derivatives(name, args):
    """The gathers (and logcumsumexp's prefix logsumexp) differentiate again, as torch's."""

    def scenario(lib):
        x = lib.tensor(DISTINCT[:3, :4], dtype=lib.float64, requires_grad=True)
        result = fn(lib, name)(x, *args)
        y = result[0] if isinstance(result, tuple) else result
        (g,) = lib.autograd.grad((y * y * y).sum(), x, create_graph=True)
        (g * lib.tensor(DISTINCT[:3, :4], dtype=lib.float64)).sum().backward()
        return g, x.grad

    run_both(scenario, rtol=1e-12, atol=1e-12)
