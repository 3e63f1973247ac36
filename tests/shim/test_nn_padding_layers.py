"""Padding and resampling layers against torch: the fifteen padding Modules (constant, zero,
reflection, replication, circular; 1-3d; batched and unbatched; negative widths), `pad` with
ATen's negative-width semantics, `Fold` / `Unfold`, `channel_shuffle` (and the native form,
which has no derivative), `ChannelShuffle`, `UpsamplingNearest2d` / `UpsamplingBilinear2d` and
the deprecated `upsample*` functions with their warnings; float64 and float32, outputs,
gradients, `grad_fn` names and reprs from identical inputs; PyTorch's messages for bad input."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim import torch_oracle
from tests.shim.torch_oracle import torch_one_thread  # noqa: F401 - the `torch` fixture
from tracegrad.torch.nn import padding_layers, resampling_extra

assert_same_error = partial(torch_oracle.assert_same_error, scalar_names=True)

TOLERANCES = {np.float64: (1e-12, 1e-13), np.float32: (1e-5, 1e-6)}
DTYPES = [np.float64, np.float32]


def _input(seed, shape, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def check(torch, ours, theirs, arrays, dtype):
    """Outputs, `grad_fn` names and the gradients of every input agree with torch's."""
    rtol, atol = TOLERANCES[dtype]
    xs = [tt.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, t_out = ours(*xs), theirs(*ts)
    assert out.shape == tuple(t_out.shape) and out.dtype == np.dtype(dtype)
    assert out.grad_fn.name() == t_out.grad_fn.name()
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol, atol)
    seed = np.random.default_rng(5).standard_normal(out.shape).astype(dtype)
    (out * tt.tensor(seed)).sum().backward()
    (t_out * torch.tensor(seed)).sum().backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol, atol)


def build(torch, spec):
    """The Module `spec` in tracegrad (from `module`) and in torch; their reprs agree."""
    names = {"torch": torch, "padding_layers": padding_layers, "extra": resampling_extra}
    module = "padding_layers" if "Pad" in spec else "extra"
    ours = eval(f"{module}.{spec}", names)  # noqa: S307 - the specs of this file
    theirs = eval(f"torch.nn.{spec}", names)  # noqa: S307
    assert repr(ours) == repr(theirs)
    return ours, theirs


# -- padding Modules --------------------------------------------------------------------------

PAD_LAYERS = [
    ("ConstantPad1d(2, 3.5)", (2, 3, 5)),
    ("ConstantPad1d((3, -1), -1)", (3, 5)),
    ("ConstantPad2d((1, 0, 2, -1), 1.5)", (2, 3, 4, 5)),
    ("ConstantPad2d(1, 2)", (3, 4, 5)),
    ("ConstantPad3d((1, 2, 0, 1, 2, 0), 0.5)", (2, 2, 3, 4, 5)),
    ("ZeroPad1d((0, 3))", (2, 3, 5)),
    ("ZeroPad2d(2)", (3, 4, 5)),
    ("ZeroPad2d([1, 2, -1, 3])", (2, 3, 4, 5)),
    ("ZeroPad3d(1)", (2, 3, 4, 5)),
    ("ReflectionPad1d(2)", (2, 3, 5)),
    ("ReflectionPad1d((4, 1))", (3, 5)),
    ("ReflectionPad1d((-2, 3))", (2, 3, 5)),
    ("ReflectionPad2d((1, 2, 3, 0))", (2, 3, 4, 5)),
    ("ReflectionPad2d((3, -1, -2, 2))", (3, 4, 5)),
    ("ReflectionPad3d((1, 2, 0, 1, 2, 1))", (2, 2, 3, 4, 5)),
    ("ReflectionPad3d(1)", (2, 3, 4, 5)),
    ("ReplicationPad1d((3, 1))", (2, 3, 5)),
    ("ReplicationPad1d((-1, 4))", (3, 5)),
    ("ReplicationPad2d(2)", (2, 3, 4, 5)),
    ("ReplicationPad2d((4, -2, 1, 5))", (3, 4, 5)),
    ("ReplicationPad3d((1, 0, 2, 3, 0, 1))", (2, 2, 3, 4, 5)),
    ("CircularPad1d(2)", (2, 3, 5)),
    ("CircularPad1d((3, -2))", (3, 5)),
    ("CircularPad2d((1, 2, 3, 0))", (2, 3, 4, 5)),
    ("CircularPad2d((-1, 3, 2, -2))", (3, 4, 5)),
    ("CircularPad3d((1, 2, 0, 1, 2, 1))", (2, 2, 3, 4, 5)),
    ("CircularPad3d(1)", (2, 3, 4, 5)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", PAD_LAYERS, ids=lambda c: f"{c[0]}-{c[1]}")
def test_padding_layers_match_torch(torch, case, dtype):
    spec, shape = case
    ours, theirs = build(torch, spec)
    check(torch, ours, theirs, [_input(0, shape, dtype)], dtype)


def test_padding_layers_store_torchs_attributes(torch):
    for spec in ("ConstantPad2d([1, 2, 3, 4], 2)", "ZeroPad1d(3)", "ReflectionPad3d(2)"):
        ours, theirs = build(torch, spec)
        assert ours.padding == theirs.padding and type(ours.padding) is tuple
    assert isinstance(padding_layers.ZeroPad2d(1), padding_layers.ConstantPad2d)
    assert padding_layers.ZeroPad2d(1).value == 0.0


PAD_NEGATIVE = [
    ((1, 2, 5), (-2, 3)),
    ((1, 2, 5), (3, -2)),
    ((1, 2, 5), (-1, -1)),
    ((2, 4, 5), (-1, 2, 2, -2)),
    ((1, 2, 3, 4, 5), (0, -2, 1, -1, 2, -1)),
    ((2, 3, 4), (-1, -1, -1, -1)),  # unbatched 2-d
]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "constant"])
@pytest.mark.parametrize("case", PAD_NEGATIVE, ids=str)
def test_pad_with_negative_widths_matches_torch(torch, case, mode):
    """ATen crops: reflect and replicate pad and then crop, circular crops and then wraps."""
    shape, widths = case
    check(
        torch,
        lambda x: padding_layers.pad(x, widths, mode),
        lambda x: torch.nn.functional.pad(x, widths, mode),
        [_input(1, shape)],
        np.float64,
    )


PAD_ERRORS = [
    ((1, 1, 5), (1,), "foo"),
    ((1, 1, 5), (1,), "reflect"),
    ((1, 1, 5), (1,) * 8, "constant"),
    ((5,), (1, 1), "replicate"),
    ((1, 1, 2, 5), (1, 2), "reflect"),
    ((1, 2, 0), (1, 1), "reflect"),
    ((1, 0, 3), (1, 1), "replicate"),
    ((2, 0, 3), (1, 1, 1, 1), "reflect"),
    ((1, 2, 0, 3, 3), (1,) * 6, "replicate"),
    ((1, 2, 0), (1, 1), "circular"),
    ((1, 1, 5), (5, 5), "reflect"),
    ((1, 1, 3, 4), (1, 1, 3, 3), "reflect"),
    ((1, 1, 3, 4, 5), (0, 0, 0, 0, 3, 0), "reflect"),
    ((1, 1, 5), (6, 1), "circular"),
    ((1, 1, 5), (5, -2), "circular"),  # more than is left after the crop
    ((1, 1, 3, 4), (-5, 0, 0, 0), "circular"),
    ((1, 1, 5), (-5, 0), "reflect"),
    ((1, 1, 5), (-3, -2), "replicate"),
    ((1, 1, 3, 4), (-2, -2, -2, -1), "reflect"),
    ((1, 1, 3, 4), (-2, -2, -2, -1), "replicate"),
    ((1, 1, 3, 4), (-2, 0, -4, 0), "replicate"),
    ((1, 1, 3, 4), (-5, 0, 0, 0), "reflect"),
    ((1, 1, 3, 4, 5), (-5, 0, -4, 0, -3, 0), "reflect"),
    ((1, 1, 3, 4, 5), (-6, 0, 0, 0, 0, 0), "replicate"),
    ((1, 1, 5), (-6, 2), "constant"),
    ((1, 1, 3, 4), (0, 0, -2, -2), "constant"),
]


@pytest.mark.parametrize("case", PAD_ERRORS, ids=str)
def test_pad_bad_input_raises_torchs_message(torch, case):
    shape, widths, mode = case
    x = np.zeros(shape, np.float32)
    assert_same_error(
        lambda: padding_layers.pad(tt.tensor(x), widths, mode),
        lambda: torch.nn.functional.pad(torch.tensor(x), widths, mode),
    )
    value = dict(value=1.0)  # a value is refused by the non-constant modes
    assert_same_error(
        lambda: padding_layers.pad(tt.tensor(x), (1, 1), "reflect", **value),
        lambda: torch.nn.functional.pad(torch.tensor(x), (1, 1), "reflect", **value),
    )


@pytest.mark.parametrize(
    "case",
    [
        ("CircularPad2d(1)", (3, 3)),
        ("CircularPad1d(1)", (1, 2, 3, 3)),
        ("CircularPad3d(1)", (2, 3, 3)),
        ("ReflectionPad2d(1)", (3, 3)),
        ("ReflectionPad1d(1)", (1, 2, 3, 3)),
        ("ReplicationPad3d((1, 2, 3))", (1, 2, 3, 3, 3)),
        ("ConstantPad2d(1, 2)", (3,)),
        ("ZeroPad2d((1, 2, 3))", (1, 2, 3, 3)),
    ],
    ids=str,
)
def test_padding_layers_bad_input_raise_torchs_message(torch, case):
    spec, shape = case
    ours, theirs = build(torch, spec)
    x = np.zeros(shape, np.float32)
    assert_same_error(lambda: ours(tt.tensor(x)), lambda: theirs(torch.tensor(x)))


# -- Fold, Unfold -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "case",
    [
        ("Unfold(2)", (2, 3, 4, 5)),
        ("Unfold((2, 3), dilation=2, padding=1, stride=(1, 2))", (2, 3, 5, 7)),
        ("Unfold(3, 1, 1, 2)", (3, 5, 6)),
        ("Fold((4, 5), 2)", (2, 12, 12)),
        ("Fold(5, (2, 3), 2, 1, (1, 2))", (2, 6, 10)),
        ("Fold((3, 4), 2, stride=2, padding=1)", (8, 6)),
    ],
    ids=lambda c: f"{c[0]}-{c[1]}",
)
def test_fold_and_unfold_layers_match_torch(torch, case, dtype):
    spec, shape = case
    ours, theirs = build(torch, spec)
    check(torch, ours, theirs, [_input(2, shape, dtype)], dtype)


def test_fold_inverts_unfold_up_to_the_overlap_count(torch):
    x = tt.tensor(_input(3, (1, 2, 5, 6)))
    unfold, fold = (
        resampling_extra.Unfold(3, padding=1),
        resampling_extra.Fold((5, 6), 3, padding=1),
    )
    counts = fold(unfold(tt.ones((1, 2, 5, 6), dtype=tt.float64)))
    np.testing.assert_allclose(fold(unfold(x)).numpy(), (x * counts).numpy(), rtol=1e-13)


@pytest.mark.parametrize(
    "case",
    [
        ("Unfold(2)", (2, 3, 4, 5, 6)),
        ("Unfold(6)", (2, 3, 4, 5)),
        ("Fold(3, 2)", (2, 3, 4, 5)),
        ("Fold(3, 2)", (8,)),
        ("Fold(3, 2)", (2, 7, 4)),
        ("Fold((4, 5), 2)", (2, 8, 11)),
    ],
    ids=str,
)
def test_fold_and_unfold_layers_raise_torchs_message(torch, case):
    spec, shape = case
    ours, theirs = build(torch, spec)
    x = np.zeros(shape, np.float32)
    assert_same_error(lambda: ours(tt.tensor(x)), lambda: theirs(torch.tensor(x)))


# -- channel shuffle --------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "case", [((2, 6, 3, 4), 3), ((2, 6, 5), 2), ((6, 4, 2), 2), ((1, 12, 2, 1, 3), 4)], ids=str
)
def test_channel_shuffle_matches_torch(torch, case, dtype):
    shape, groups = case
    check(
        torch,
        lambda x: resampling_extra.channel_shuffle(x, groups),
        lambda x: torch.nn.functional.channel_shuffle(x, groups),
        [_input(4, shape, dtype)],
        dtype,
    )
    ours, theirs = build(torch, f"ChannelShuffle({groups})")
    check(torch, ours, theirs, [_input(4, shape, dtype)], dtype)


def test_native_channel_shuffle_has_torchs_values_and_no_derivative(torch):
    x = _input(5, (2, 6, 3))
    ours = resampling_extra.native_channel_shuffle(tt.tensor(x, requires_grad=True), 3)
    theirs = torch.nn.functional.native_channel_shuffle(torch.tensor(x, requires_grad=True), 3)
    np.testing.assert_array_equal(ours.detach().numpy(), theirs.detach().numpy())
    assert ours.grad_fn.name() == theirs.grad_fn.name()
    assert_same_error(lambda: ours.sum().backward(), lambda: theirs.sum().backward())
    plain = resampling_extra.native_channel_shuffle(tt.tensor(x), 2)
    assert plain.grad_fn is None and not plain.requires_grad
    empty = (0, 6, 5), (2, 0, 5)  # an empty batch, no channels: nothing to shuffle
    for shape in empty:
        out = resampling_extra.channel_shuffle(tt.zeros(shape), 2)
        assert out.shape == tuple(torch.nn.functional.channel_shuffle(torch.zeros(shape), 2).shape)


@pytest.mark.parametrize("name", ["channel_shuffle", "native_channel_shuffle"])
@pytest.mark.parametrize(
    "case", [((2, 6, 3), 4), ((2, 6, 3), 0), ((2, 6, 3), -2), ((2, 6), 2), ((2, 6, 3), 7)], ids=str
)
def test_channel_shuffle_raises_torchs_message(torch, name, case):
    shape, groups = case
    x = np.zeros(shape, np.float32)
    assert_same_error(
        lambda: getattr(resampling_extra, name)(tt.tensor(x), groups),
        lambda: getattr(torch.nn.functional, name)(torch.tensor(x), groups),
    )


# -- upsampling -------------------------------------------------------------------------------

UPSAMPLING_LAYERS = [
    "UpsamplingNearest2d(scale_factor=2)",
    "UpsamplingNearest2d(size=(5, 7))",
    "UpsamplingNearest2d(size=3)",
    "UpsamplingBilinear2d(scale_factor=2)",
    "UpsamplingBilinear2d(size=(3, 4))",
    "UpsamplingBilinear2d(scale_factor=(1.5, 2.5))",
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("spec", UPSAMPLING_LAYERS)
def test_upsampling_layers_match_torch(torch, spec, dtype):
    ours, theirs = build(torch, spec)
    check(torch, ours, theirs, [_input(6, (2, 3, 4, 5), dtype)], dtype)


UPSAMPLE_CALLS = [
    ("upsample", dict(scale_factor=2)),
    ("upsample", dict(size=(5, 7), mode="bilinear")),
    ("upsample", dict(size=(5, 7), mode="bilinear", align_corners=True)),
    ("upsample", dict(size=3, mode="nearest-exact")),
    ("upsample_nearest", dict(scale_factor=2)),
    ("upsample_nearest", dict(size=(3, 7))),
    ("upsample_bilinear", dict(scale_factor=2)),
    ("upsample_bilinear", dict(size=(3, 5))),
]


@pytest.mark.parametrize("call", UPSAMPLE_CALLS, ids=str)
def test_deprecated_upsample_functions_match_torch_and_warn_as_it_does(call):
    name, kwargs = call
    x = _input(7, (2, 3, 4, 5))

    def scenario(lib):
        fn = getattr(resampling_extra if lib is tt else lib.nn.functional, name)
        t = lib.tensor(x, requires_grad=True)
        out = fn(t, **kwargs)
        (grad,) = lib.autograd.grad((out * out).sum(), t)
        return out.detach(), grad

    outcome = torch_oracle.run_both(scenario, rtol=1e-12, atol=1e-13)
    assert outcome.warnings == [
        (
            "UserWarning",
            f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.",
        )
    ]


@pytest.mark.parametrize(
    "case",
    [
        ("upsample_bilinear", (1, 2, 3), dict(size=5)),
        ("upsample_nearest", (1, 2, 3), dict()),
        ("upsample", (1, 2, 3, 3), dict(size=4, mode="linear")),
    ],
    ids=str,
)
@pytest.mark.filterwarnings("ignore:`nn.functional.upsample")
def test_upsample_bad_input_raises_torchs_message(torch, case):
    name, shape, kwargs = case
    x = np.zeros(shape, np.float32)
    assert_same_error(
        lambda: getattr(resampling_extra, name)(tt.tensor(x), **kwargs),
        lambda: getattr(torch.nn.functional, name)(torch.tensor(x), **kwargs),
    )
    ours, theirs = build(torch, "UpsamplingNearest2d()")
    assert_same_error(lambda: ours(tt.tensor(x)), lambda: theirs(torch.tensor(x)))
