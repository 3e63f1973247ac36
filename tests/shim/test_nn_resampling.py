"""Resampling against torch: pad in every mode, interpolate (nearest, nearest-exact, linear,
bilinear, bicubic, trilinear, area; size, scale_factor, align_corners), grid_sample (every padding
mode), pixel_shuffle and pixel_unshuffle, and the Upsample / PixelShuffle / PixelUnshuffle
Modules; float64 and float32, outputs and gradients from identical inputs; PyTorch's messages
for bad input."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim import torch_oracle
from tests.shim.torch_oracle import torch_one_thread  # noqa: F401 - the `torch` fixture
from tracegrad.torch.nn import conv_layers, resampling

assert_same_error = partial(torch_oracle.assert_same_error, scalar_names=True)

TOLERANCES = {np.float64: (1e-12, 1e-13), np.float32: (1e-5, 1e-6)}
DTYPES = [np.float64, np.float32]


def _input(seed, shape, dtype):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def check(torch, ours, theirs, arrays, dtype):
    """Outputs and the gradients of every input agree with torch's."""
    rtol, atol = TOLERANCES[dtype]
    xs = [tt.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, t_out = ours(*xs), theirs(*ts)
    assert out.shape == tuple(t_out.shape) and out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol, atol)
    seed = np.random.default_rng(5).standard_normal(out.shape).astype(dtype)
    (out * tt.tensor(seed)).sum().backward()
    (t_out * torch.tensor(seed)).sum().backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol, atol)


PAD_CASES = [
    ((2, 3, 5, 6), (1, 2, 2, 1), "reflect", None),
    ((3, 5), (1, 2), "reflect", None),  # unbatched 1-D
    ((2, 3, 5, 6), (1, 2, 3, 0), "replicate", None),
    ((2, 3, 4, 5, 6), (1, 0, 2, 1, 0, 2), "replicate", None),
    ((2, 3, 5, 6), (2, 1, 0, 3), "circular", None),
    ((2, 3, 5, 6), (1, -2, 0, 3), "constant", None),  # a negative width crops
    ((2, 3, 5, 6), (1, 1, 1, 1, 1, 1), "constant", 2.5),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", PAD_CASES, ids=str)
def test_pad_matches_torch(torch, case, dtype):
    shape, widths, mode, value = case
    check(
        torch,
        lambda x: resampling.pad(x, widths, mode, value),
        lambda x: torch.nn.functional.pad(x, widths, mode, value),
        [_input(0, shape, dtype)],
        dtype,
    )


INTERPOLATE_CASES = [
    dict(scale_factor=2),
    dict(size=(3, 4)),
    dict(size=(7, 13)),
    dict(scale_factor=(1.7, 0.6)),
    dict(scale_factor=2.3),
    dict(size=(3, 9), mode="bilinear"),
    dict(size=(8, 4), mode="bilinear", align_corners=True),
    dict(scale_factor=1.5, mode="bilinear"),
    dict(scale_factor=0.5, mode="bilinear", recompute_scale_factor=True),
    dict(size=(3, 4), mode="nearest-exact"),
    dict(size=(3, 4), mode="area"),
    dict(size=(7, 9), mode="bicubic"),
    dict(size=(3, 2), mode="bicubic", align_corners=True),
    dict(scale_factor=(0.6, 2.0), mode="bicubic"),
    dict(scale_factor=1.7, mode="bicubic", align_corners=True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", INTERPOLATE_CASES, ids=str)
def test_interpolate_matches_torch(torch, kwargs, dtype):
    check(
        torch,
        lambda x: resampling.interpolate(x, **kwargs),
        lambda x: torch.nn.functional.interpolate(x, **kwargs),
        [_input(1, (2, 3, 5, 6), dtype)],
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_linear_and_trilinear_interpolation_match_torch(torch, dtype):
    for kwargs in (dict(size=11), dict(scale_factor=0.6, align_corners=True)):
        check(
            torch,
            lambda x, kw=kwargs: resampling.interpolate(x, mode="linear", **kw),
            lambda x, kw=kwargs: torch.nn.functional.interpolate(x, mode="linear", **kw),
            [_input(2, (2, 3, 7), dtype)],
            dtype,
        )
    check(
        torch,
        lambda x: resampling.interpolate(x, (3, 5, 2), mode="trilinear", align_corners=True),
        lambda x: torch.nn.functional.interpolate(
            x, (3, 5, 2), mode="trilinear", align_corners=True
        ),
        [_input(3, (2, 3, 4, 3, 4), dtype)],
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "kwargs",
    [
        dict(align_corners=False),
        dict(align_corners=True),
        dict(mode="nearest", align_corners=True),
        *(
            dict(mode=mode, padding_mode=padding, align_corners=corners)
            for mode in ("bilinear", "nearest")
            for padding in ("border", "reflection")
            for corners in (False, True)
        ),
    ],
    ids=str,
)
def test_grid_sample_matches_torch(torch, kwargs, dtype):
    # points well outside [-1, 1] too: zeros, clipped or reflected (several times) by the
    # padding mode; and the corners exactly, where clipping's gradient is zero
    grid = np.random.default_rng(4).uniform(-2.5, 2.5, (2, 4, 3, 2)).astype(dtype)
    grid[0, 0, :2] = [[-1.0, 1.0], [1.0, -1.0]]
    check(
        torch,
        lambda x, g: resampling.grid_sample(x, g, **kwargs),
        lambda x, g: torch.nn.functional.grid_sample(x, g, **kwargs),
        [_input(5, (2, 3, 5, 6), dtype), grid],
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_pixel_shuffle_and_unshuffle_match_torch(torch, dtype):
    check(
        torch,
        lambda x: resampling.pixel_shuffle(x, 2),
        lambda x: torch.nn.functional.pixel_shuffle(x, 2),
        [_input(6, (2, 8, 3, 4), dtype)],
        dtype,
    )
    check(
        torch,
        lambda x: resampling.pixel_unshuffle(x, 3),
        lambda x: torch.nn.functional.pixel_unshuffle(x, 3),
        [_input(7, (2, 1, 2, 6, 9), dtype)],  # extra leading axes
        dtype,
    )


def test_grad_fn_names_match_torch(torch):
    x = _input(8, (1, 4, 4, 4), np.float64)
    cases = [
        ("pad", ((1, 1, 1, 1), "reflect")),
        ("pad", ((1, 1, 2, 0), "replicate")),
        ("pad", ((1, 1),)),
        ("pad", ((1, 1, 1, 1), "circular")),
        ("interpolate", (None, 2, "bilinear")),
        ("interpolate", (None, 2)),
        ("pixel_shuffle", (2,)),
    ]
    for name, args in cases:
        ours = getattr(resampling, name)(tt.tensor(x, requires_grad=True), *args)
        theirs = getattr(torch.nn.functional, name)(torch.tensor(x, requires_grad=True), *args)
        assert ours.grad_fn.name() == theirs.grad_fn.name()


RESAMPLING_LAYERS = [
    "Upsample(scale_factor=2)",
    "Upsample(size=(3, 4), mode='bilinear', align_corners=True)",
    "Upsample(scale_factor=2.5, mode='bilinear')",
    "PixelShuffle(2)",
    "PixelUnshuffle(2)",
]


@pytest.mark.parametrize("spec", RESAMPLING_LAYERS)
def test_resampling_layers_match_torch(torch, spec):
    names = {"torch": torch, "conv_layers": conv_layers}
    ours = eval("conv_layers." + spec, names)  # noqa: S307 - the specs above, in both libraries
    theirs = eval("torch.nn." + spec, names)  # noqa: S307
    assert repr(ours) == repr(theirs)
    check(torch, ours, theirs, [_input(9, (2, 4, 4, 6), np.float32)], np.float32)


# -- messages ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case",
    [
        ("pad", (1, 1, 3), ((3, 3),), dict(mode="reflect")),
        ("pad", (1, 1, 3), ((4, 4),), dict(mode="circular")),
        ("pad", (1, 1, 3), ((1,),), {}),
        ("pad", (3,), ((1, 1),), dict(mode="reflect")),
        ("pad", (1, 2, 5, 6), ((1, 2),), dict(mode="reflect")),
        ("pad", (1, 1, 3), ((1, 1),), dict(mode="foo")),
        ("pad", (1, 1, 3), ((1,) * 8,), {}),
        ("pad", (1, 1, 3), ((1, 1),), dict(mode="reflect", value=1.0)),
        ("pixel_shuffle", (1, 3, 2, 2), (2,), {}),
        ("pixel_shuffle", (3, 2), (2,), {}),
        ("pixel_unshuffle", (1, 3, 3, 3), (2,), {}),
        ("interpolate", (1, 1, 4), (3, 2), {}),
        ("interpolate", (1, 1, 4), (), {}),
        ("interpolate", (1, 1, 4), (3,), dict(mode="bilinear")),
        ("interpolate", (1, 1, 4, 4), (3,), dict(mode="linear")),
        ("interpolate", (1, 1, 4, 4), (3,), dict(align_corners=True)),
        ("interpolate", (1, 1, 4, 4), ((3, 3, 3),), {}),
        ("interpolate", (1, 1, 4, 4), (None, (2, 3, 4)), {}),
        ("interpolate", (1, 1, 4, 4), (3,), dict(mode="foo")),
        ("grid_sample", (1, 1, 4, 4), (np.zeros((1, 3, 3, 3), np.float32),), {}),
        ("grid_sample", (1, 1, 4, 4), (np.zeros((1, 3, 3, 2), np.float32),), dict(mode="x")),
        (
            "grid_sample",
            (1, 1, 4, 4),
            (np.zeros((1, 3, 3, 2), np.float32),),
            dict(padding_mode="x", align_corners=False),
        ),
    ],
    ids=lambda c: f"{c[0]}-{c[1]}-{c[3]}",
)
@pytest.mark.filterwarnings("ignore:Default grid_sample and affine_grid behavior")
def test_bad_input_raises_torchs_message(torch, case):
    name, shape, args, kwargs = case
    x = np.zeros(shape, np.float32)

    def convert(lib, a):
        return lib.tensor(a) if isinstance(a, np.ndarray) else a

    assert_same_error(
        lambda: getattr(resampling, name)(tt.tensor(x), *[convert(tt, a) for a in args], **kwargs),
        lambda: getattr(torch.nn.functional, name)(
            torch.tensor(x), *[convert(torch, a) for a in args], **kwargs
        ),
    )
