"""Pooling against torch: max_pool1d/2d/3d (ties, NaN, -inf, padding, dilation, ceil_mode,
return_indices), avg_pool1d/2d/3d (count_include_pad, divisor_override, ceil_mode), adaptive
average and max pooling, and the pooling Modules; float64 and float32, outputs and input
gradients from identical inputs; PyTorch's messages for bad input."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim import torch_oracle
from tests.shim.torch_oracle import torch_one_thread  # noqa: F401 - the `torch` fixture
from tracegrad.torch.nn import conv_layers, convolution, pooling

assert_same_error = partial(torch_oracle.assert_same_error, scalar_names=True)

TOLERANCES = {np.float64: (1e-12, 1e-13), np.float32: (1e-5, 1e-6)}
DTYPES = [np.float64, np.float32]


def _input(seed, shape, dtype, kind="normal"):
    x = np.random.default_rng(seed).standard_normal(shape)
    if kind == "relu":  # many ties at 0, as after a ReLU
        x = np.maximum(x, 0)
    elif kind == "special":  # -inf windows and NaNs
        x[0, 0, :3, :3] = -np.inf
        x[-1, -1, 2, 2] = x[-1, -1, 3, 3] = np.nan
    return x.astype(dtype)


def check(torch, ours, theirs, x, dtype):
    """Outputs (and indices, when a pair) and the input gradient agree with torch's."""
    rtol, atol = TOLERANCES[dtype]
    xs, ts = tt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, t_out = ours(xs), theirs(ts)
    if isinstance(out, tuple):
        (out, index), (t_out, t_index) = out, t_out
        np.testing.assert_array_equal(index.numpy(), t_index.numpy())
        assert index.dtype == np.int64
    assert out.shape == tuple(t_out.shape) and out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol, atol)
    seed = np.random.default_rng(5).standard_normal(out.shape).astype(dtype)
    (out * tt.tensor(seed)).sum().backward()
    (t_out * torch.tensor(seed)).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), ts.grad.numpy(), rtol, atol, equal_nan=True)
    return out


MAX_POOL_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(2, 3)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=2, stride=3, ceil_mode=True, padding=1),  # stride > kernel
    dict(kernel_size=4, stride=1, padding=2),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", ["normal", "relu"])
@pytest.mark.parametrize("kwargs", MAX_POOL_CASES, ids=str)
def test_max_pool2d_matches_torch(torch, kwargs, kind, dtype):
    x = _input(0, (2, 3, 9, 8), dtype, kind)
    check(
        torch,
        lambda x: pooling.max_pool2d(x, return_indices=True, **kwargs),
        lambda x: torch.nn.functional.max_pool2d(x, return_indices=True, **kwargs),
        x,
        dtype,
    )


@pytest.mark.parametrize("kwargs", MAX_POOL_CASES, ids=str)
def test_max_pool2d_picks_torchs_winner_with_nan_and_inf(torch, kwargs):
    x = _input(1, (2, 3, 9, 8), np.float64, "special")
    out, index = pooling.max_pool2d(tt.tensor(x), return_indices=True, **kwargs)
    t_out, t_index = torch.nn.functional.max_pool2d(torch.tensor(x), return_indices=True, **kwargs)
    np.testing.assert_array_equal(index.numpy(), t_index.numpy())
    np.testing.assert_array_equal(out.numpy(), t_out.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool1d_and_3d_match_torch(torch, dtype):
    check(
        torch,
        lambda x: pooling.max_pool1d(x, 3, 2, 1, 2, True, True),
        lambda x: torch.nn.functional.max_pool1d(x, 3, 2, 1, 2, True, True),
        _input(2, (3, 10), dtype),  # unbatched
        dtype,
    )
    check(
        torch,
        lambda x: pooling.max_pool3d(x, 2, padding=1),
        lambda x: torch.nn.functional.max_pool3d(x, 2, padding=1),
        _input(3, (2, 2, 4, 5, 3), dtype),
        dtype,
    )


def test_max_pool_of_a_convolution_output_matches_torch(torch):
    """A convolution's output is channels-first in memory; the pool reads it in place."""
    x, w = _input(4, (4, 3, 8, 9), np.float64), _input(5, (5, 3, 3, 3), np.float64)
    check(
        torch,
        lambda x: pooling.max_pool2d(tt.relu(convolution.conv2d(x, tt.tensor(w))), 2),
        lambda x: torch.nn.functional.max_pool2d(
            torch.relu(torch.nn.functional.conv2d(x, torch.tensor(w))), 2
        ),
        x,
        np.float64,
    )


AVG_POOL_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, ceil_mode=True, padding=1),
    dict(kernel_size=(3, 2), stride=(2, 3), ceil_mode=True, count_include_pad=False, padding=1),
    dict(kernel_size=3, divisor_override=5, padding=1),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", AVG_POOL_CASES, ids=str)
def test_avg_pool2d_matches_torch(torch, kwargs, dtype):
    check(
        torch,
        lambda x: pooling.avg_pool2d(x, **kwargs),
        lambda x: torch.nn.functional.avg_pool2d(x, **kwargs),
        _input(6, (2, 3, 9, 8), dtype),
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_avg_pool1d_and_3d_match_torch(torch, dtype):
    check(
        torch,
        lambda x: pooling.avg_pool1d(x, 3, 2, 1, True, False),
        lambda x: torch.nn.functional.avg_pool1d(x, 3, 2, 1, True, False),
        _input(7, (2, 3, 10), dtype),
        dtype,
    )
    check(
        torch,
        lambda x: pooling.avg_pool3d(x, 2, padding=1),
        lambda x: torch.nn.functional.avg_pool3d(x, 2, padding=1),
        _input(8, (2, 2, 4, 5, 3), dtype),
        dtype,
    )


ADAPTIVE_SIZES = [3, (4, 5), (None, 3), 1, (9, 8), (7, 3)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", ADAPTIVE_SIZES, ids=str)
def test_adaptive_pools_match_torch(torch, size, dtype):
    x = _input(9, (2, 3, 9, 8), dtype)
    check(
        torch,
        lambda x: pooling.adaptive_avg_pool2d(x, size),
        lambda x: torch.nn.functional.adaptive_avg_pool2d(x, size),
        x,
        dtype,
    )
    check(
        torch,
        lambda x: pooling.adaptive_max_pool2d(x, size, return_indices=True),
        lambda x: torch.nn.functional.adaptive_max_pool2d(x, size, return_indices=True),
        x,
        dtype,
    )


def test_adaptive_max_pool_picks_torchs_winner_with_nan_and_inf(torch):
    x = _input(10, (2, 3, 9, 8), np.float64, "special")
    for size in ADAPTIVE_SIZES:
        out, index = pooling.adaptive_max_pool2d(tt.tensor(x), size, True)
        t_out, t_index = torch.nn.functional.adaptive_max_pool2d(torch.tensor(x), size, True)
        np.testing.assert_array_equal(index.numpy(), t_index.numpy())
        np.testing.assert_array_equal(out.numpy(), t_out.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
def test_adaptive_1d_and_3d_pools_match_torch(torch, dtype):
    check(
        torch,
        lambda x: pooling.adaptive_avg_pool1d(x, 4),
        lambda x: torch.nn.functional.adaptive_avg_pool1d(x, 4),
        _input(11, (2, 3, 10), dtype),
        dtype,
    )
    check(
        torch,
        lambda x: pooling.adaptive_avg_pool3d(x, (2, None, 3)),
        lambda x: torch.nn.functional.adaptive_avg_pool3d(x, (2, None, 3)),
        _input(14, (2, 2, 5, 4, 7), dtype),
        dtype,
    )
    check(
        torch,
        lambda x: pooling.adaptive_max_pool1d(x, 4),
        lambda x: torch.nn.functional.adaptive_max_pool1d(x, 4),
        _input(12, (3, 10), dtype),
        dtype,
    )


def test_grad_fn_names_match_torch(torch):
    x = _input(15, (1, 2, 4, 4), np.float64)
    for name in ("max_pool2d", "avg_pool2d", "adaptive_max_pool2d", "adaptive_avg_pool2d"):
        ours = getattr(pooling, name)(tt.tensor(x, requires_grad=True), 2)
        theirs = getattr(torch.nn.functional, name)(torch.tensor(x, requires_grad=True), 2)
        assert ours.grad_fn.name() == theirs.grad_fn.name()


# -- Modules ----------------------------------------------------------------------------------

POOL_LAYERS = [
    "MaxPool2d(2)",
    "MaxPool2d(3, 2, 1, return_indices=True, ceil_mode=True)",
    "MaxPool1d(3, 2, 1, 2, True, True)",
    "AvgPool2d(2)",
    "AvgPool2d(3, 1, 1, True, False, 2)",
    "AvgPool1d(3)",
    "AdaptiveAvgPool2d((2, None))",
    "AdaptiveAvgPool1d(4)",
    "AdaptiveMaxPool2d(3, True)",
    "AdaptiveMaxPool1d(4)",
    "MaxPool3d(2, 1, 1, ceil_mode=True)",
    "AvgPool3d(2, 2, 1, False, True, 3)",
    "AdaptiveAvgPool3d((2, 3, None))",
]


@pytest.mark.parametrize("spec", POOL_LAYERS)
def test_pool_layers_match_torch(torch, spec):
    names = {"torch": torch, "conv_layers": conv_layers}
    ours = eval("conv_layers." + spec, names)  # noqa: S307 - the specs above, in both libraries
    theirs = eval("torch.nn." + spec, names)  # noqa: S307
    assert repr(ours) == repr(theirs)
    shape = {"1d": (2, 3, 10), "2d": (2, 3, 9, 8), "3d": (2, 3, 5, 6, 4)}[spec.split("(")[0][-2:]]
    check(torch, ours, theirs, _input(13, shape, np.float32), np.float32)


# -- messages ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case",
    [
        ("max_pool2d", (1, 3, 8, 8), dict(kernel_size=2, padding=2)),
        ("max_pool2d", (1, 3, 8, 8), dict(kernel_size=3, padding=2, dilation=2)),
        ("max_pool2d", (1, 3, 8, 8), dict(kernel_size=3, padding=3, dilation=2)),
        ("max_pool2d", (1, 3, 1, 1), dict(kernel_size=2)),
        ("max_pool2d", (3, 8), dict(kernel_size=2)),
        ("max_pool1d", (8,), dict(kernel_size=2)),
        ("max_pool2d", (1, 3, 8, 8), dict(kernel_size=(2, 2, 2))),
        ("max_pool2d", (1, 3, 8, 8), dict(kernel_size=3, stride=0)),
        ("avg_pool2d", (1, 3, 8, 8), dict(kernel_size=2, padding=2)),
        ("avg_pool2d", (1, 3, 1, 1), dict(kernel_size=2)),
        ("avg_pool1d", (8,), dict(kernel_size=2)),
        ("adaptive_avg_pool2d", (8,), dict(output_size=2)),
        ("adaptive_max_pool2d", (8,), dict(output_size=2)),
        ("adaptive_avg_pool1d", (8,), dict(output_size=2)),
        ("adaptive_avg_pool2d", (1, 2, 4, 4), dict(output_size=(2, 2, 2))),
        ("adaptive_max_pool2d", (1, 2, 4, 4), dict(output_size=(2,))),
        ("adaptive_avg_pool1d", (2, 4, 4), dict(output_size=(2, 2))),
        ("adaptive_max_pool1d", (2, 4, 4), dict(output_size=(2, 2))),
        ("adaptive_avg_pool2d", (1, 2, 4, 4), dict(output_size=(2, -1))),
        ("adaptive_max_pool2d", (1, 2, 4, 4), dict(output_size=(None, -1))),
        ("adaptive_avg_pool1d", (2, 4, 4), dict(output_size=-1)),
        ("adaptive_max_pool1d", (2, 4, 4), dict(output_size=-2)),
    ],
    ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}",
)
def test_bad_input_raises_torchs_message(torch, case):
    name, shape, kwargs = case
    x = np.zeros(shape, np.float32)
    assert_same_error(
        lambda: getattr(pooling, name)(tt.tensor(x), **kwargs),
        lambda: getattr(torch.nn.functional, name)(torch.tensor(x), **kwargs),
    )
