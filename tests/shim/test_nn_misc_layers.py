"""rms_norm / RMSNorm, affine_grid (2-d and 3-d, align_corners, through grid_sample) and the
losses multilabel_margin_loss / MultiLabelMarginLoss and triplet_margin_with_distance_loss /
TripletMarginWithDistanceLoss against torch: float64 and float32, outputs, `grad_fn` names and
the gradients of inputs and parameters from identical inputs and weights, reprs and
attributes, warnings; PyTorch's messages for bad input."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim import torch_oracle
from tests.shim.torch_oracle import torch_one_thread  # noqa: F401 - the `torch` fixture
from tracegrad.torch.nn import affine_grid, losses_extra, resampling, rms_norm

assert_same_error = partial(torch_oracle.assert_same_error, scalar_names=True)

TOLERANCES = {np.float64: (1e-12, 1e-13), np.float32: (2e-5, 2e-6)}
DTYPES = [np.float64, np.float32]


def _input(seed, shape, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def check(torch, ours, theirs, arrays, dtype, *, params=(), tolerances=None):
    """Outputs, `grad_fn` names and the gradients of every input (and of the modules'
    parameters, pairs of (ours, theirs) in `params`) agree with torch's."""
    rtol, atol = tolerances or TOLERANCES[dtype]
    xs = [tt.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, t_out = ours(*xs), theirs(*ts)
    assert out.shape == tuple(t_out.shape) and out.dtype == np.dtype(dtype)
    assert out.grad_fn.name() == t_out.grad_fn.name()
    np.testing.assert_allclose(out.detach().numpy(), t_out.detach().numpy(), rtol, atol)
    seed = np.random.default_rng(5).standard_normal(out.shape).astype(dtype)
    (out * tt.tensor(seed)).sum().backward()
    (t_out * torch.tensor(seed)).sum().backward()
    for x, t in [*zip(xs, ts), *params]:
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol, atol)


# -- rms_norm ---------------------------------------------------------------------------------

RMS_CASES = [
    ((2, 3, 4), (4,), True, None),
    ((2, 3, 4), [3, 4], True, 1e-3),
    ((5, 7), (7,), False, None),
    ((2, 1, 3, 5), (1, 3, 5), True, 0.5),
    ((6,), (6,), False, 1e-8),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", RMS_CASES, ids=str)
def test_rms_norm_matches_torch(torch, case, dtype):
    shape, normalized, with_weight, eps = case
    arrays = [_input(0, shape, dtype) * 3]
    if with_weight:
        arrays.append(_input(1, tuple(normalized), dtype))
    check(
        torch,
        lambda x, *w: rms_norm.rms_norm(x, normalized, *w, eps=eps),
        lambda x, *w: torch.nn.functional.rms_norm(x, normalized, *w, eps=eps),
        arrays,
        dtype,
    )


def test_rms_norm_default_eps_is_the_dtypes_epsilon(torch):
    """eps=None is finfo(dtype).eps: it decides the result for a tiny input."""
    for dtype, t_dtype in ((np.float32, torch.float32), (np.float64, torch.float64)):
        x = np.full((2, 3), 1e-5, dtype)
        ours = rms_norm.rms_norm(tt.tensor(x), (3,)).numpy()
        theirs = torch.nn.functional.rms_norm(torch.tensor(x, dtype=t_dtype), (3,)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
        expected = 1e-5 / np.sqrt(1e-10 + np.finfo(dtype).eps)
        np.testing.assert_allclose(ours, expected, rtol=1e-6)


def test_rms_norm_with_a_weight_of_another_dtype_warns_as_torch(torch):
    x, w = _input(2, (2, 4), np.float32), _input(3, (4,))

    def scenario(lib):
        t, weight = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        out = (
            lib.nn.functional.rms_norm(t, (4,), weight)
            if lib is not tt
            else rms_norm.rms_norm(t, (4,), weight)
        )
        return out.detach(), *lib.autograd.grad(out.sum(), (t, weight))

    outcome = torch_oracle.run_both(scenario, rtol=1e-5, atol=1e-6)
    assert outcome.warnings == [
        (
            "UserWarning",
            "Mismatch dtype between input and weight: input dtype = float, weight dtype = "
            "double, Cannot dispatch to fused implementation.",
        )
    ]


RMS_LAYERS = [
    "RMSNorm(4)",
    "RMSNorm([3, 4], eps=1e-5, elementwise_affine=False)",
    "RMSNorm((3, 4), 0.1)",
    "RMSNorm(4, dtype=torch.float64)",
]


@pytest.mark.parametrize("spec", RMS_LAYERS)
def test_rms_norm_layer_matches_torch(torch, spec):
    theirs = eval("torch.nn." + spec, {"torch": torch})  # noqa: S307 - the specs above
    ours = eval("rms_norm." + spec, {"torch": tt, "rms_norm": rms_norm})  # noqa: S307
    assert repr(ours) == repr(theirs)
    assert ours.normalized_shape == theirs.normalized_shape and ours.eps == theirs.eps
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    dtype = np.float64 if "float64" in spec else np.float32
    params = []
    if ours.weight is not None:
        assert ours.weight.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
        w = _input(4, ours.normalized_shape, dtype)
        with tt.no_grad():
            ours.weight.copy_(tt.tensor(w))
        with torch.no_grad():
            theirs.weight.copy_(torch.tensor(w))
        params = [(ours.weight, theirs.weight)]
    check(torch, ours, theirs, [_input(5, (2, 3, 4), dtype)], dtype, params=params)


@pytest.mark.parametrize(
    "case",
    [
        ((2, 3, 4), (3,), None),
        ((2, 3, 4), (4,), (3,)),
        ((2, 3, 4), (), None),
        ((2, 3, 4), (2, 3, 4, 5), None),
        ((2, 3, 4), (2, 3, 4, 5), (3,)),
        ((2, 3, 4), 4, None),
    ],
    ids=str,
)
def test_rms_norm_bad_input_raises_torchs_message(torch, case):
    shape, normalized, weight_shape = case
    x = np.zeros(shape, np.float32)
    w = None if weight_shape is None else np.ones(weight_shape, np.float32)
    assert_same_error(
        lambda: rms_norm.rms_norm(tt.tensor(x), normalized, None if w is None else tt.tensor(w)),
        lambda: torch.nn.functional.rms_norm(
            torch.tensor(x), normalized, None if w is None else torch.tensor(w)
        ),
    )
    ints = np.zeros((2, 4), np.int32)
    assert_same_error(
        lambda: rms_norm.rms_norm(tt.tensor(ints), (4,)),
        lambda: torch.nn.functional.rms_norm(torch.tensor(ints), (4,)),
    )


# -- affine_grid ------------------------------------------------------------------------------

AFFINE_SIZES = [[2, 3, 4, 5], [2, 1, 1, 7], [2, 3, 6, 1], [2, 1, 3, 4, 5], [2, 2, 1, 3, 2]]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", AFFINE_SIZES, ids=str)
@pytest.mark.filterwarnings("ignore:Since version 1.3.0, affine_grid")
def test_affine_grid_matches_torch(torch, size, align_corners, dtype):
    n = len(size) - 2
    check(
        torch,
        lambda t: affine_grid.affine_grid(t, size, align_corners),
        lambda t: torch.nn.functional.affine_grid(t, size, align_corners),
        [_input(6, (2, n, n + 1), dtype)],
        dtype,
    )


def test_affine_grid_of_the_identity_is_torchs_base_grid_exactly(torch):
    """The base grid reproduces ATen's linspace (fused multiply-adds) to the last bit."""
    for dtype in DTYPES:
        for size in ([1, 1, 7, 13], [1, 1, 5, 9, 11]):
            n = len(size) - 2
            theta = np.concatenate([np.eye(n), np.zeros((n, 1))], 1)[None].astype(dtype)
            for align_corners in (False, True):
                ours = affine_grid.affine_grid(tt.tensor(theta), size, align_corners)
                theirs = torch.nn.functional.affine_grid(torch.tensor(theta), size, align_corners)
                np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_of_affine_grid_matches_torch(torch, align_corners, dtype):
    """A rotation, scaling and shift of an image: the gradient reaches theta through the grid."""
    angle = 0.3
    theta = np.array(
        [[[np.cos(angle), -np.sin(angle), 0.1], [np.sin(angle), np.cos(angle), -0.2]]] * 2
    )
    theta = (theta * np.array([1.1, 0.9])[:, None]).astype(dtype)
    image = _input(7, (2, 3, 5, 6), dtype)

    def ours(x, t):
        return resampling.grid_sample(
            x, affine_grid.affine_grid(t, [2, 3, 4, 7], align_corners), align_corners=align_corners
        )

    def theirs(x, t):
        grid = torch.nn.functional.affine_grid(t, [2, 3, 4, 7], align_corners)
        return torch.nn.functional.grid_sample(x, grid, align_corners=align_corners)

    # float32: theta's gradient sums terms of both signs, ~10 times larger than some entries
    tolerances = (1e-4, 1e-5) if dtype == np.float32 else None
    check(torch, ours, theirs, [image, theta], dtype, tolerances=tolerances)


def test_affine_grid_warns_as_torch():
    theta = _input(8, (1, 2, 3))

    def scenario(lib):
        fn = affine_grid.affine_grid if lib is tt else lib.nn.functional.affine_grid
        t = lib.tensor(theta)
        return fn(t, [1, 1, 3, 4]), fn(t, [1, 1, 1, 4], align_corners=True)

    outcome = torch_oracle.run_both(scenario, rtol=1e-12, atol=1e-13)
    assert [category for category, _ in outcome.warnings] == ["UserWarning", "UserWarning"]
    assert outcome.warnings[0][1].startswith("Default grid_sample and affine_grid behavior")
    assert outcome.warnings[1][1].startswith("Since version 1.3.0, affine_grid behavior")


@pytest.mark.parametrize(
    "case",
    [
        ((2, 2, 3), [2, 3, 4, 5, 6]),
        ((2, 3, 4), [2, 3, 4, 5]),
        ((2, 2, 3), [2, 3, 4]),
        ((2, 2, 3), [2, 3, 0, 5]),
        ((2, 3), [2, 3, 4, 5]),
        ((2, 2, 3), [3, 3, 4, 5]),
        ((2, 3, 4), [1, 3, 4, 5, 6]),
        ("int", [2, 3, 4, 5]),
    ],
    ids=str,
)
def test_affine_grid_bad_input_raises_torchs_message(torch, case):
    shape, size = case
    theta = np.zeros((2, 2, 3), np.int64) if shape == "int" else np.zeros(shape, np.float32)
    assert_same_error(
        lambda: affine_grid.affine_grid(tt.tensor(theta), size, False),
        lambda: torch.nn.functional.affine_grid(torch.tensor(theta), size, False),
    )


# -- multilabel_margin_loss -------------------------------------------------------------------

TARGETS = np.array(
    [[3, 0, -1, 1, 2], [0, 1, 2, 3, 4], [-1, 0, 0, 0, 0], [4, 4, -1, 2, 2], [1, -1, 3, -1, 0]]
)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_multilabel_margin_loss_matches_torch(torch, reduction, dtype):
    """Targets stop at the first -1; repeated targets count twice; a margin of exactly 1
    (a zero hinge) sends no gradient, as in ATen."""
    x = _input(9, (5, 5), dtype)
    x[0, 1], x[0, 3] = -0.5, 0.5  # z = 1 - x[3] + x[1] == 0 for target 3, non-target 1
    y = TARGETS
    check(
        torch,
        lambda x: losses_extra.multilabel_margin_loss(x, tt.tensor(y), reduction=reduction),
        lambda x: torch.nn.functional.multilabel_margin_loss(
            x, torch.tensor(y), reduction=reduction
        ),
        [x],
        dtype,
    )
    for row in range(3):  # one sample, as a vector
        check(
            torch,
            lambda x, r=row: losses_extra.multilabel_margin_loss(
                x, tt.tensor(y[r]), reduction=reduction
            ),
            lambda x, r=row: torch.nn.functional.multilabel_margin_loss(
                x, torch.tensor(y[r]), reduction=reduction
            ),
            [x[row]],
            dtype,
        )


def test_multilabel_margin_loss_layer_and_legacy_arguments_match_torch(torch):
    x = _input(10, (5, 5), np.float32)
    for spec in ("MultiLabelMarginLoss()", "MultiLabelMarginLoss(reduction='sum')"):
        ours = eval("losses_extra." + spec, {"losses_extra": losses_extra})  # noqa: S307
        theirs = eval("torch.nn." + spec, {"torch": torch})  # noqa: S307
        assert repr(ours) == repr(theirs) and ours.reduction == theirs.reduction
        check(
            torch,
            lambda x, m=ours: m(x, tt.tensor(TARGETS)),
            lambda x, m=theirs: m(x, torch.tensor(TARGETS)),
            [x],
            np.float32,
        )

    def scenario(lib):
        t = lib.tensor(x, requires_grad=True)
        fn = losses_extra if lib is tt else lib.nn.functional
        module = (losses_extra if lib is tt else lib.nn).MultiLabelMarginLoss(reduce=False)
        legacy = fn.multilabel_margin_loss(t, lib.tensor(TARGETS), size_average=False)
        return legacy, module(t, lib.tensor(TARGETS)), module.reduction

    torch_oracle.run_both(scenario, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    "case",
    [
        ((3, 4), (2, 4), "long"),
        ((3, 4), (3, 3), "long"),
        ((3, 4), (4,), "long"),
        ((4,), (3, 4), "long"),
        ((3, 0), (3, 0), "long"),
        ((2, 3, 4), (2, 3, 4), "long"),
        ((3, 4), (3, 4), "int32"),
        ((3, 4), (3, 4), "float"),
        ((3, 4), (3, 4), "high"),
        ((3, 4), (3, 4), "low"),
        ((), (), "long"),
    ],
    ids=str,
)
def test_multilabel_margin_loss_bad_input_raises_torchs_message(torch, case):
    x_shape, y_shape, kind = case
    x = np.zeros(x_shape, np.float32)
    y = np.zeros(y_shape, np.int64)
    if kind == "high":
        y[0, 0] = 4
    elif kind == "low":
        y[1, 2] = -2
    elif x_shape == ():
        y = np.array(3)
    y = y.astype({"int32": np.int32, "float": np.float32}.get(kind, np.int64))
    assert_same_error(
        lambda: losses_extra.multilabel_margin_loss(tt.tensor(x), tt.tensor(y)),
        lambda: torch.nn.functional.multilabel_margin_loss(torch.tensor(x), torch.tensor(y)),
    )
    assert_same_error(
        lambda: losses_extra.multilabel_margin_loss(tt.tensor(x), tt.tensor(y), reduction="x"),
        lambda: torch.nn.functional.multilabel_margin_loss(
            torch.tensor(x), torch.tensor(y), reduction="x"
        ),
    )


# -- triplet_margin_with_distance_loss --------------------------------------------------------


def _cosine_distance(lib):
    return lambda a, b: 1 - lib.nn.functional.cosine_similarity(a, b)


TRIPLET_CASES = [
    dict(),
    dict(margin=0.5, swap=True),
    dict(reduction="sum"),
    dict(reduction="none", swap=True, margin=2.0),
    dict(distance="pairwise"),
    dict(distance="cosine", reduction="none"),
    dict(distance="cosine", swap=True, margin=0.1),
    dict(distance="l1"),
]


def _distance(lib, name):
    if name == "pairwise":
        return lib.nn.PairwiseDistance(p=3)
    if name == "cosine":
        return _cosine_distance(lib)
    if name == "l1":
        return lambda a, b: (a - b).abs().sum(-1)
    return None


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kwargs", TRIPLET_CASES, ids=str)
def test_triplet_margin_with_distance_loss_matches_torch(torch, kwargs, dtype):
    kwargs = dict(kwargs)
    name = kwargs.pop("distance", None)
    arrays = [_input(seed, (6, 4), dtype) for seed in (11, 12, 13)]
    arrays[1][0] = arrays[0][0]  # a zero distance
    check(
        torch,
        lambda a, p, n: losses_extra.triplet_margin_with_distance_loss(
            a, p, n, distance_function=_distance(tt, name), **kwargs
        ),
        lambda a, p, n: torch.nn.functional.triplet_margin_with_distance_loss(
            a, p, n, distance_function=_distance(torch, name), **kwargs
        ),
        arrays,
        dtype,
    )
    # the Module with the same options
    ours = losses_extra.TripletMarginWithDistanceLoss(
        distance_function=_distance(tt, name), **kwargs
    )
    theirs = torch.nn.TripletMarginWithDistanceLoss(
        distance_function=_distance(torch, name), **kwargs
    )
    assert repr(ours) == repr(theirs)
    check(torch, ours, theirs, arrays, dtype)


def test_triplet_margin_with_distance_loss_layer_has_torchs_structure(torch):
    ours, theirs = (
        losses_extra.TripletMarginWithDistanceLoss(),
        torch.nn.TripletMarginWithDistanceLoss(),
    )
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert repr(ours) == repr(theirs)
    assert (ours.margin, ours.swap, ours.reduction) == (theirs.margin, theirs.swap, "mean")
    assert list(ours.state_dict()) == list(theirs.state_dict()) == []


@pytest.mark.parametrize(
    "case",
    [
        ("functional", dict(margin=0)),
        ("functional", dict(margin=-1.5)),
        ("functional", dict(reduction="x")),
        ("functional", dict(shapes=((5, 3), (3,), (5, 3)))),
        ("module", dict(margin=-1)),
        ("module", dict(reduction="x")),
    ],
    ids=str,
)
def test_triplet_margin_with_distance_loss_raises_torchs_message(torch, case):
    kind, kwargs = case
    kwargs = dict(kwargs)
    shapes = kwargs.pop("shapes", ((5, 3),) * 3)
    arrays = [np.zeros(s, np.float32) for s in shapes]

    def run(lib, module):
        tensors = [lib.tensor(a) for a in arrays]
        if kind == "module":
            return module.TripletMarginWithDistanceLoss(**kwargs)(*tensors)
        fn = module.triplet_margin_with_distance_loss
        return fn(*tensors, **kwargs)

    assert_same_error(
        lambda: run(tt, losses_extra),
        lambda: run(torch, torch.nn if kind == "module" else torch.nn.functional),
    )
