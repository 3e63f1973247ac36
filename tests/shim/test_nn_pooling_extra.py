"""The rest of pooling against torch: lp_pool1d/2d/3d and LPPool1d/2d/3d (p = 1, 1.5, 2, 3,
inf, -inf; stride, ceil_mode; all-zero windows), max_unpool1d/2d/3d and MaxUnpool1d/2d/3d (the
indices of max pooling, overlapping windows with repeated indices, output_size, padding),
adaptive_max_pool3d and AdaptiveMaxPool3d, and the `*_with_indices` functions; float64 and
float32, outputs, indices, `grad_fn` names and input gradients from identical inputs; reprs;
PyTorch's messages for bad input."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim import torch_oracle
from tests.shim.torch_oracle import torch_one_thread  # noqa: F401 - the `torch` fixture
from tracegrad.torch.nn import pooling, pooling_extra

assert_same_error = partial(torch_oracle.assert_same_error, scalar_names=True)

TOLERANCES = {np.float64: (1e-12, 1e-13), np.float32: (2e-5, 2e-6)}
DTYPES = [np.float64, np.float32]
SPATIAL = {1: (2, 3, 9), 2: (2, 3, 7, 6), 3: (2, 2, 5, 4, 6)}


def _input(seed, shape, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def check(torch, ours, theirs, x, dtype, *, grad_fn=True):
    """Outputs (and indices, for pairs), `grad_fn` names and the input gradient agree."""
    rtol, atol = TOLERANCES[dtype]
    xs, ts = tt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, t_out = ours(xs), theirs(ts)
    if isinstance(t_out, tuple):
        (out, index), (t_out, t_index) = out, t_out
        assert index.dtype == np.int64
        np.testing.assert_array_equal(index.numpy(), t_index.numpy())
    assert out.shape == tuple(t_out.shape) and out.dtype == np.dtype(dtype)
    if grad_fn:
        assert out.grad_fn.name() == t_out.grad_fn.name()
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol, atol)
    seed = np.random.default_rng(5).standard_normal(out.shape).astype(dtype)
    (out * tt.tensor(seed)).sum().backward()
    (t_out * torch.tensor(seed)).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), ts.grad.numpy(), rtol, atol, equal_nan=True)


def build(torch, spec):
    names = {"torch": torch, "pooling_extra": pooling_extra}
    ours = eval("pooling_extra." + spec, names)  # noqa: S307 - the specs of this file
    theirs = eval("torch.nn." + spec, names)  # noqa: S307
    assert repr(ours) == repr(theirs)
    return ours, theirs


# -- lp_pool ----------------------------------------------------------------------------------

LP_CASES = [
    (2, dict(kernel_size=2)),
    (2.0, dict(kernel_size=3, stride=2, ceil_mode=True)),
    (1, dict(kernel_size=2, stride=1)),
    (3, dict(kernel_size=3, stride=2)),
    (1.5, dict(kernel_size=2, ceil_mode=True)),
    (float("inf"), dict(kernel_size=2)),
    (-float("inf"), dict(kernel_size=3, stride=1, ceil_mode=True)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("case", LP_CASES, ids=str)
def test_lp_pool_matches_torch(torch, case, n, dtype):
    p, kwargs = case
    # positive inputs, so that fractional powers are defined; some all-zero windows
    x = np.abs(_input(n, SPATIAL[n], dtype))
    x[0, 0, :3] = 0
    name = f"lp_pool{n}d"
    check(
        torch,
        lambda x: getattr(pooling_extra, name)(x, p, **kwargs),
        lambda x: getattr(torch.nn.functional, name)(x, p, **kwargs),
        x,
        dtype,
    )


def test_lp_pool_of_signed_inputs_matches_torch(torch):
    """Negative values: p = 1 sums them (windows may sum below zero), p = 2 squares them."""
    x = _input(4, (2, 3, 6, 6))
    for p in (1, 2):
        check(
            torch,
            lambda x, p=p: pooling_extra.lp_pool2d(x, p, 2),
            lambda x, p=p: torch.nn.functional.lp_pool2d(x, p, 2),
            x,
            np.float64,
        )


def test_lp_pool_of_an_all_zero_window_has_a_zero_gradient(torch):
    """The root's derivative is infinite at 0; PyTorch's relu turns it into 0, not a nan."""
    for lib, pool in ((tt, pooling_extra.lp_pool2d), (torch, torch.nn.functional.lp_pool2d)):
        x = lib.zeros((1, 1, 4, 4), dtype=lib.float64, requires_grad=True)
        pool(x, 2, 2).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.zeros((1, 1, 4, 4)))


LP_LAYERS = [
    ("LPPool1d(2, 3)", 1),
    ("LPPool1d(1.5, 3, 2, True)", 1),
    ("LPPool2d(2, 3)", 2),
    ("LPPool2d(3, (2, 3), stride=(1, 2))", 2),
    ("LPPool2d(float('inf'), 2)", 2),
    ("LPPool3d(2, (1, 2, 3), stride=(1, 1, 1))", 3),
    ("LPPool3d(1, 2, ceil_mode=True)", 3),
]


@pytest.mark.parametrize("case", LP_LAYERS, ids=str)
def test_lp_pool_layers_match_torch(torch, case):
    spec, n = case
    ours, theirs = build(torch, spec)
    check(torch, ours, theirs, np.abs(_input(6, SPATIAL[n], np.float32)), np.float32)


@pytest.mark.parametrize(
    "case",
    [
        ("lp_pool1d", (9,), (2, 2)),
        ("lp_pool2d", (1, 3, 2, 2), (2, 3)),
        ("lp_pool2d", (1, 3, 4, 4), (float("inf"), 5)),
    ],
    ids=str,
)
def test_lp_pool_bad_input_raises_torchs_message(torch, case):
    name, shape, args = case
    x = np.ones(shape, np.float32)
    assert_same_error(
        lambda: getattr(pooling_extra, name)(tt.tensor(x), *args),
        lambda: getattr(torch.nn.functional, name)(torch.tensor(x), *args),
    )


# -- max_unpool -------------------------------------------------------------------------------

UNPOOL_CASES = [
    (2, dict(kernel_size=2), {}),
    (2, dict(kernel_size=3, stride=2, padding=1), dict(output_size=(7, 6))),
    (2, dict(kernel_size=2), dict(output_size=(7, 6))),
    (2, dict(kernel_size=2), dict(output_size=[2, 3, 7, 7])),
    (2, dict(kernel_size=3, stride=1), {}),  # overlapping windows: repeated indices
    (1, dict(kernel_size=2), dict(output_size=[9])),
    (1, dict(kernel_size=3, stride=1, padding=1), {}),
    (3, dict(kernel_size=2), dict(output_size=(5, 4, 6))),
    (3, dict(kernel_size=(1, 2, 3), stride=(1, 2, 2)), dict(output_size=(5, 4, 6))),
    (3, dict(kernel_size=2, stride=1), {}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", UNPOOL_CASES, ids=str)
def test_max_unpool_matches_torch(torch, case, dtype):
    """Unpooling max pooling's own output: the values return to their indices; with repeated
    indices every repeat gets the gradient at its index, as in PyTorch."""
    n, pool_kwargs, extra = case
    x = _input(7, SPATIAL[n], dtype)
    pool = getattr(torch.nn.functional, f"max_pool{n}d")
    values, indices = pool(torch.tensor(x), return_indices=True, **pool_kwargs)
    name = f"max_unpool{n}d"
    check(
        torch,
        lambda v: getattr(pooling_extra, name)(
            v, tt.tensor(indices.numpy()), **pool_kwargs, **extra
        ),
        lambda v: getattr(torch.nn.functional, name)(v, indices, **pool_kwargs, **extra),
        values.numpy(),
        dtype,
    )


def test_max_unpool_with_repeated_indices_matches_torch(torch):
    """Overlapping windows pick the same element more than once: the value is written once,
    and (as in PyTorch) each repeat receives the gradient at its index."""
    x = _input(17, (1, 2, 6, 6))
    values, indices = torch.nn.functional.max_pool2d(torch.tensor(x), 3, 1, return_indices=True)
    assert len(np.unique(indices.numpy()[0, 0])) < indices[0, 0].numel()
    v = tt.tensor(values.numpy(), requires_grad=True)
    out = pooling_extra.max_unpool2d(v, tt.tensor(indices.numpy()), 3, 1)
    (out * out).sum().backward()
    t_v = values.clone().requires_grad_(True)
    t_out = torch.nn.functional.max_unpool2d(t_v, indices, 3, 1)
    (t_out * t_out).sum().backward()
    np.testing.assert_array_equal(out.detach().numpy(), t_out.detach().numpy())
    np.testing.assert_allclose(v.grad.numpy(), t_v.grad.numpy(), rtol=1e-15)


def test_max_unpool_of_unbatched_input_matches_torch(torch):
    for n in (1, 2, 3):
        x = _input(8, SPATIAL[n][1:])
        values, indices = getattr(torch.nn.functional, f"max_pool{n}d")(
            torch.tensor(x), 2, return_indices=True
        )
        name = f"max_unpool{n}d"
        check(
            torch,
            lambda v, name=name, i=indices: getattr(pooling_extra, name)(
                v, tt.tensor(i.numpy()), 2
            ),
            lambda v, name=name, i=indices: getattr(torch.nn.functional, name)(v, i, 2),
            values.numpy(),
            np.float64,
        )


def test_max_unpool_inverts_tracegrads_max_pool(torch):
    x = tt.tensor(_input(9, (2, 3, 6, 8)), requires_grad=True)
    values, indices = pooling.max_pool2d(x, 2, return_indices=True)
    back = pooling_extra.max_unpool2d(values, indices, 2)
    kept = back.detach().numpy() != 0
    np.testing.assert_array_equal(back.detach().numpy()[kept], x.detach().numpy()[kept])
    assert kept.sum() == values.numel()
    back.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), kept.astype(np.float64))


UNPOOL_LAYERS = [
    ("MaxUnpool1d(2)", 1, 2, {}),
    ("MaxUnpool1d(3, 2, 1)", 1, dict(kernel_size=3, stride=2, padding=1), {}),
    ("MaxUnpool2d(2)", 2, 2, dict(output_size=[7, 6])),
    (
        "MaxUnpool2d((2, 3), stride=(1, 2))",
        2,
        dict(kernel_size=(2, 3), stride=(1, 2)),
        dict(output_size=[7, 6]),
    ),
    ("MaxUnpool3d(2)", 3, 2, {}),
    ("MaxUnpool3d((1, 2, 3))", 3, dict(kernel_size=(1, 2, 3)), {}),
]


@pytest.mark.parametrize("case", UNPOOL_LAYERS, ids=str)
def test_max_unpool_layers_match_torch(torch, case):
    spec, n, pool_args, forward_kwargs = case
    ours, theirs = build(torch, spec)
    x = _input(10, SPATIAL[n], np.float32)
    kwargs = pool_args if isinstance(pool_args, dict) else dict(kernel_size=pool_args)
    values, indices = getattr(torch.nn.functional, f"max_pool{n}d")(
        torch.tensor(x), return_indices=True, **kwargs
    )
    check(
        torch,
        lambda v: ours(v, tt.tensor(indices.numpy()), **forward_kwargs),
        lambda v: theirs(v, indices, **forward_kwargs),
        values.numpy(),
        np.float32,
    )


def _pooled(torch, n, shape, kernel=2):
    x = torch.tensor(_input(11, shape, np.float32))
    return getattr(torch.nn.functional, f"max_pool{n}d")(x, kernel, return_indices=True)


UNPOOL_ERRORS = [
    # (n, pooled input shape, how the indices are changed, unpool kwargs)
    (2, (2, 3, 6, 5), None, {}),  # the default size is too small for index 28
    (2, (2, 3, 6, 6), "plus", {}),
    (2, (2, 3, 6, 6), "minus", {}),
    (2, (2, 3, 6, 6), None, dict(output_size=(8, 6))),
    (2, (2, 3, 6, 6), None, dict(output_size=(7,))),
    (2, (2, 3, 6, 6), None, dict(output_size=[4, 4])),
    (2, (2, 3, 6, 6), "int32", {}),
    (2, (2, 3, 6, 6), "drop", {}),
    (2, (2, 3, 6, 6), "plane", {}),
    (2, (2, 3, 6, 6), "empty", {}),
    (2, (2, 3, 6, 6), None, dict(kernel_size=1, padding=2)),
    (1, (2, 3, 8), "plus", {}),
    (1, (2, 3, 8), None, dict(output_size=[7])),
    (3, (2, 2, 4, 4, 6), "plus", {}),
    (3, (2, 2, 4, 4, 6), None, dict(stride=0)),
    (3, (2, 2, 4, 4, 6), "int32", {}),
    (3, (2, 2, 4, 4, 6), "drop", {}),
    (3, (2, 2, 4, 4, 6), "plane", {}),
    (3, (2, 2, 4, 4, 6), "empty", {}),
]


def _spoil(torch, values, indices, how):
    if how == "plus":
        return values, indices + 100
    if how == "minus":
        return values, indices - 100
    if how == "int32":
        return values, indices.int()
    if how == "drop":
        return values, indices[0]
    if how == "plane":
        return values[0, 0], indices[0, 0]
    if how == "empty":
        return values[:, :0], indices[:, :0]
    return values, indices


@pytest.mark.parametrize("case", UNPOOL_ERRORS, ids=str)
def test_max_unpool_bad_input_raises_torchs_message(torch, case):
    n, shape, how, kwargs = case
    values, indices = _spoil(torch, *_pooled(torch, n, shape), how)
    kwargs = dict(dict(kernel_size=2), **kwargs)
    name = f"max_unpool{n}d"
    assert_same_error(
        lambda: getattr(pooling_extra, name)(
            tt.tensor(values.numpy()), tt.tensor(indices.numpy()), **kwargs
        ),
        lambda: getattr(torch.nn.functional, name)(values, indices, **kwargs),
    )


# -- adaptive_max_pool3d ----------------------------------------------------------------------

ADAPTIVE_3D_SIZES = [2, (2, None, 3), (5, 4, 6), (3, 1, 4), 1]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", ADAPTIVE_3D_SIZES, ids=str)
def test_adaptive_max_pool3d_matches_torch(torch, size, dtype):
    x = _input(12, SPATIAL[3], dtype)
    x[0, 0, 0, 0, :2] = x[0, 0, 0, 0, 2]  # a tie
    for ours, theirs in (
        (pooling_extra.adaptive_max_pool3d, torch.nn.functional.adaptive_max_pool3d),
        (
            pooling_extra.adaptive_max_pool3d_with_indices,
            torch.nn.functional.adaptive_max_pool3d_with_indices,
        ),
    ):
        check(
            torch,
            lambda x, f=ours: f(x, size, True),
            lambda x, f=theirs: f(x, size, True),
            x,
            dtype,
        )
    check(
        torch,
        lambda x: pooling_extra.adaptive_max_pool3d(x, size),
        lambda x: torch.nn.functional.adaptive_max_pool3d(x, size),
        x[0],  # unbatched
        dtype,
    )


def test_adaptive_max_pool3d_picks_torchs_winner_with_nan_and_inf(torch):
    x = _input(13, (1, 2, 4, 5, 6))
    x[0, 0, :2, :2, :2] = -np.inf
    x[0, 1, 1, 1, 1] = x[0, 1, 2, 3, 4] = np.nan
    out, index = pooling_extra.adaptive_max_pool3d(tt.tensor(x), (2, 3, 2), True)
    t_out, t_index = torch.nn.functional.adaptive_max_pool3d(torch.tensor(x), (2, 3, 2), True)
    np.testing.assert_array_equal(index.numpy(), t_index.numpy())
    np.testing.assert_array_equal(out.numpy(), t_out.numpy())


@pytest.mark.parametrize("spec", ["AdaptiveMaxPool3d(2)", "AdaptiveMaxPool3d((2, None, 3), True)"])
def test_adaptive_max_pool3d_layer_matches_torch(torch, spec):
    ours, theirs = build(torch, spec)
    check(torch, ours, theirs, _input(14, SPATIAL[3], np.float32), np.float32)


@pytest.mark.parametrize(
    "case",
    [
        ((8,), 2),
        ((2, 8, 8), 2),
        ((1, 1, 2, 2, 8, 8), 2),
        ((2, 2, 4, 5, 6), (2, 3)),
        ((2, 0, 4, 5, 6), 2),
        ((2, 2, 4, 5, 6), -1),
        ((4, 5, 6), (2, None, 3)),
    ],
    ids=str,
)
def test_adaptive_max_pool3d_bad_input_raises_torchs_message(torch, case):
    shape, size = case
    x = np.zeros(shape, np.float32)
    assert_same_error(
        lambda: pooling_extra.adaptive_max_pool3d(tt.tensor(x), size),
        lambda: torch.nn.functional.adaptive_max_pool3d(torch.tensor(x), size),
    )


def test_adaptive_max_pool3d_to_an_empty_size_matches_torch(torch):
    x = _input(15, SPATIAL[3])
    out, index = pooling_extra.adaptive_max_pool3d(tt.tensor(x, requires_grad=True), 0, True)
    t_out, t_index = torch.nn.functional.adaptive_max_pool3d(torch.tensor(x), 0, True)
    assert out.shape == tuple(t_out.shape) and index.shape == tuple(t_index.shape)
    assert out.grad_fn.name() == "AdaptiveMaxPool3DBackward0"


# -- *_with_indices ---------------------------------------------------------------------------

WITH_INDICES = [
    ("max_pool1d_with_indices", 1, (2,), {}),
    ("max_pool1d_with_indices", 1, (3, 2, 1, 2, True), {}),
    ("max_pool1d_with_indices", 1, ([3],), dict(stride=[1], padding=(1,), return_indices=False)),
    ("max_pool2d_with_indices", 2, (3, 2, 1), {}),
    ("max_pool2d_with_indices", 2, (2,), dict(ceil_mode=True)),
    ("max_pool3d_with_indices", 3, (2,), dict(padding=1)),
    ("adaptive_max_pool1d_with_indices", 1, (4,), {}),
    ("adaptive_max_pool2d_with_indices", 2, ((3, None),), {}),
    ("adaptive_max_pool3d_with_indices", 3, ((2, 3, 4),), {}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", WITH_INDICES, ids=str)
def test_with_indices_functions_match_torch(torch, case, dtype):
    """Always a (values, indices) pair, whatever `return_indices` says."""
    name, n, args, kwargs = case
    for shape in (SPATIAL[n], SPATIAL[n][1:]):
        check(
            torch,
            lambda x: getattr(pooling_extra, name)(x, *args, **kwargs),
            lambda x: getattr(torch.nn.functional, name)(x, *args, **kwargs),
            _input(16, shape, dtype),
            dtype,
        )


@pytest.mark.parametrize(
    "case",
    [
        ((8,), (2,), {}),
        ((1, 2, 3, 8), (2,), {}),
        ((1, 0, 8), (2,), {}),
        ((1, 2, 8), (9,), {}),
        ((1, 2, 8), (2,), dict(padding=2)),
        ((1, 2, 8), (3,), dict(padding=2, dilation=2)),
        ((1, 2, 8), (2,), dict(stride=0)),
        ((1, 2, 8), (2,), dict(stride=-1)),
        ((1, 2, 8), (0,), {}),
        ((1, 2, 8), (2,), dict(dilation=0)),
        ((1, 2, 8), (2,), dict(padding=-1)),
        ((1, 2, 8), ((2, 2),), {}),
        ((1, 2, 8), (2,), dict(stride=(1, 1))),
        ((1, 2, 8), (2,), dict(padding=(1, 1))),
        ((1, 2, 8), (2,), dict(dilation=[1, 1])),
    ],
    ids=str,
)
def test_max_pool1d_with_indices_raises_torchs_message(torch, case):
    """PyTorch's with-indices path has its own messages (those of max_pool2d over (.., 1, L))."""
    shape, args, kwargs = case
    x = np.zeros(shape, np.float32)
    assert_same_error(
        lambda: pooling_extra.max_pool1d_with_indices(tt.tensor(x), *args, **kwargs),
        lambda: torch.nn.functional.max_pool1d_with_indices(torch.tensor(x), *args, **kwargs),
    )
