"""`nn.init` against torch: with a `Generator` of the same seed the random initialisers give
torch's numbers (float64 and float32); on the global stream, their statistics and bounds; the
deterministic ones exactly; gains, warnings and messages."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import (
    normalize_torch_message,
    torch_one_thread,  # noqa: F401 - the `torch` fixture
)
from tracegrad.torch.nn import Parameter
from tracegrad.torch.nn import init as I

DTYPES = ["float64", "float32"]


def _same_error(ours, theirs) -> None:
    with pytest.raises(Exception) as theirs_info:
        theirs()
    with pytest.raises(type(theirs_info.value)) as ours_info:
        ours()
    assert str(ours_info.value).split("\n")[0] == normalize_torch_message(str(theirs_info.value))


SEEDED = [
    ("uniform_", (4, 5), (-1.0, 2.0), {}),
    ("normal_", (4, 5), (1.0, 2.0), {}),
    ("xavier_uniform_", (4, 6, 3), (), {"gain": 2.0}),
    ("xavier_normal_", (4, 6), (), {}),
    ("kaiming_uniform_", (4, 6, 3), (), {"a": math.sqrt(5)}),
    ("kaiming_uniform_", (5, 3), (), {"mode": "fan_out", "nonlinearity": "relu"}),
    ("kaiming_normal_", (4, 6, 2), (), {"mode": "fan_out", "nonlinearity": "tanh"}),
    ("kaiming_normal_", (4, 6), (), {"a": 0.2}),
    ("trunc_normal_", (40, 30), (), {"mean": 0.5, "std": 1.5}),  # redraws outside [a, b]
    ("trunc_normal_", (40, 30), (), {"a": 1.0, "b": 3.0}),  # accept-reject in a tail
    ("orthogonal_", (6, 4), (), {"gain": 2.0}),
    ("orthogonal_", (3, 4, 2), (), {}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("name", "shape", "args", "kwargs"), SEEDED, ids=str)
def test_seeded_initialisers_give_torchs_numbers(torch, name, shape, args, kwargs, dtype):
    ours = getattr(I, name)(
        tt.empty(shape, dtype=getattr(tt, dtype)), *args,
        generator=tt.Generator().manual_seed(7), **kwargs,
    )  # fmt: skip
    theirs = getattr(torch.nn.init, name)(
        torch.empty(shape, dtype=getattr(torch, dtype)), *args,
        generator=torch.Generator().manual_seed(7), **kwargs,
    )  # fmt: skip
    rtol = 1e-12 if dtype == "float64" else 2e-6
    assert ours.dtype == np.dtype(dtype)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol, atol=rtol)


def test_orthogonal_is_orthogonal():
    w = I.orthogonal_(tt.empty(5, 8, dtype=tt.float64), gain=3.0).numpy()
    np.testing.assert_allclose(w @ w.T, 9 * np.eye(5), atol=1e-12)
    w = I.orthogonal_(tt.empty(8, 5, dtype=tt.float64)).numpy()
    np.testing.assert_allclose(w.T @ w, np.eye(5), atol=1e-12)


@pytest.mark.parametrize(
    ("name", "shape", "kwargs", "bound", "std"),
    [
        ("uniform_", (300, 200), {"a": -2.0, "b": 1.0}, (-2.0, 1.0), math.sqrt(9 / 12)),
        ("normal_", (300, 200), {"mean": 1.0, "std": 0.5}, None, 0.5),
        ("xavier_uniform_", (300, 200), {}, (-math.sqrt(6 / 500), math.sqrt(6 / 500)),
         math.sqrt(2 / 500)),
        ("xavier_normal_", (300, 200), {"gain": 2.0}, None, 2 * math.sqrt(2 / 500)),
        ("kaiming_uniform_", (300, 200), {"nonlinearity": "relu"},
         (-math.sqrt(6 / 200), math.sqrt(6 / 200)), math.sqrt(2 / 200)),
        ("kaiming_normal_", (300, 200), {"mode": "fan_out"}, None,
         math.sqrt(2 / 1.0001) / math.sqrt(300)),
        ("trunc_normal_", (300, 200), {"std": 2.0, "a": -1.0, "b": 1.0}, (-1.0, 1.0), None),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)  # fmt: skip
def test_global_stream_statistics(name, shape, kwargs, bound, std):
    tt.manual_seed(0)
    t = getattr(I, name)(tt.empty(shape, dtype=tt.float64), **kwargs)
    values = t.numpy()
    if bound is not None:
        assert bound[0] <= values.min() and values.max() <= bound[1]
    if std is not None:
        assert values.std() == pytest.approx(std, rel=0.02)
    tt.manual_seed(0)  # the same seed gives the same values
    np.testing.assert_array_equal(
        getattr(I, name)(tt.empty(shape, dtype=tt.float64), **kwargs).numpy(), values
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_deterministic_initialisers_match_torch(torch, dtype):
    def both(name, shape, *args, **kwargs):
        ours = getattr(I, name)(tt.empty(shape, dtype=getattr(tt, dtype)), *args, **kwargs)
        theirs = getattr(torch.nn.init, name)(
            torch.empty(shape, dtype=getattr(torch, dtype)), *args, **kwargs
        )
        assert ours.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

    both("constant_", (2, 3), 0.25)
    both("ones_", (4,))
    both("zeros_", (2, 2, 2))
    both("eye_", (3, 5))
    both("eye_", (4, 2))
    both("dirac_", (4, 3, 5))
    both("dirac_", (6, 2, 3, 3), groups=3)
    both("dirac_", (2, 4, 3, 2, 3))


def test_init_on_a_parameter_records_nothing_and_bumps_its_version():
    p = Parameter(tt.zeros(3, 4))
    for fn in (I.ones_, I.xavier_uniform_, I.eye_, I.orthogonal_):
        before = p._version
        out = fn(p)
        assert out is p and p.is_leaf and p.grad_fn is None and p.requires_grad
        assert p._version > before


def test_sparse_zeroes_a_fraction_of_each_column():
    tt.manual_seed(3)
    w = I.sparse_(tt.empty(10, 6, dtype=tt.float64), sparsity=0.25, std=0.5).numpy()
    assert ((w == 0).sum(axis=0) == math.ceil(0.25 * 10)).all()
    nonzero = w[w != 0]
    assert nonzero.size == 6 * 7 and 0.2 < nonzero.std() < 1.0


def test_calculate_gain_matches_torch(torch):
    names = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
             "conv_transpose3d", "sigmoid", "tanh", "relu", "selu"]  # fmt: skip
    for name in names:
        assert I.calculate_gain(name) == torch.nn.init.calculate_gain(name)
    for param in (None, 0.2, 3, 0):
        gain = I.calculate_gain("leaky_relu", param)
        assert gain == torch.nn.init.calculate_gain("leaky_relu", param)


def test_init_errors_match_torch(torch):
    T = torch.nn.init
    cases = [
        ("calculate_gain", ("foo",), None),
        ("calculate_gain", ("leaky_relu", "a"), None),
        ("calculate_gain", ("leaky_relu", True), None),
        ("eye_", (), (2, 2, 2)),
        ("dirac_", (), (2, 2)),
        ("dirac_", (2,), (3, 2, 3)),
        ("orthogonal_", (), (2,)),
        ("sparse_", (0.1,), (2, 3, 3)),
        ("kaiming_uniform_", (0, "fan_avg"), (2, 3)),
        ("kaiming_normal_", (0, "fan_in", "swish"), (2, 3)),
        ("xavier_uniform_", (), (2,)),
        ("xavier_normal_", (), ()),
    ]
    for name, args, shape in cases:
        if shape is None:
            _same_error(
                lambda n=name, a=args: getattr(I, n)(*a), lambda n=name, a=args: getattr(T, n)(*a)
            )
        else:
            _same_error(
                lambda n=name, a=args, s=shape: getattr(I, n)(tt.empty(s), *a),
                lambda n=name, a=args, s=shape: getattr(T, n)(torch.empty(s), *a),
            )
    with pytest.raises(ValueError, match=r"^Mode fan_avg not supported, please use one of"):
        I.kaiming_uniform_(tt.empty(2, 3), mode="fan_avg")


def test_init_warnings_match_torch(torch):
    for name in ("kaiming_uniform_", "kaiming_normal_"):
        with pytest.warns(UserWarning, match="^Initializing zero-element tensors is a no-op$"):
            getattr(I, name)(tt.empty(0, 3))
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        I.trunc_normal_(tt.empty(3), mean=10.0)
    for old in (
        "uniform",
        "normal",
        "constant",
        "eye",
        "dirac",
        "xavier_uniform",
        "xavier_normal",
        "kaiming_uniform",
        "kaiming_normal",
        "orthogonal",
        "sparse",
    ):
        args = {"constant": (0.5,), "sparse": (0.1,)}.get(old, ())
        shape = (3, 2, 3) if old == "dirac" else (3, 4)
        with pytest.warns(FutureWarning) as ours:
            getattr(I, old)(tt.empty(shape), *args)
        with pytest.warns(FutureWarning) as theirs:
            getattr(torch.nn.init, old)(torch.empty(shape), *args)
        assert str(ours[0].message) == str(theirs[0].message)  # fmt: skip
