"""tracegrad.torch.nn.functional against torch: silu, softplus, leaky_relu, elu, gelu (exact
and tanh), dropout, layer_norm and normalize, functional and module forms. Values, first and second
derivatives in float64 at 1e-12, stability at |x| = 1e3, dropout statistics, reprs and
messages."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad.torch as tt
import tracegrad.torch.nn as nn
import tracegrad.torch.nn.functional as F
from tests.shim.torch_oracle import (
    assert_same_error,
    libraries,
    torch_one_thread,  # noqa: F401 - the `torch` fixture
    values,
)

# -- helpers -------------------------------------------------------------------------------------


def numpy_of(t) -> np.ndarray:
    return t.detach().numpy()


def assert_close(ours, theirs, rtol=1e-12, atol=1e-14) -> None:
    a, b = numpy_of(ours), numpy_of(theirs)
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def compare(torch, f_ours, f_theirs, *arrays, second=False, rtol=1e-12):
    """Value, gradient (against a random cotangent) and, with `second`, the derivative of
    that gradient (against another random vector, through `create_graph=True`) agree."""
    rng = np.random.default_rng(1)
    xs = [tt.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, t_out = f_ours(*xs), f_theirs(*ts)
    assert_close(out, t_out, rtol)
    u = rng.standard_normal(out.shape)
    gs = tt.autograd.grad((out * tt.tensor(u)).sum(), xs, create_graph=second)
    t_gs = torch.autograd.grad((t_out * torch.tensor(u)).sum(), ts, create_graph=second)
    for g, t_g in zip(gs, t_gs):
        assert np.isfinite(numpy_of(g)).all()
        assert_close(g, t_g, rtol)
    if not second:
        return
    vs = [rng.standard_normal(a.shape) for a in arrays]
    inner = sum((g * tt.tensor(v)).sum() for g, v in zip(gs, vs))
    t_inner = sum((g * torch.tensor(v)).sum() for g, v in zip(t_gs, vs))
    hs = tt.autograd.grad(inner, xs, allow_unused=True)
    t_hs = torch.autograd.grad(t_inner, ts, allow_unused=True)
    for h, t_h in zip(hs, t_hs):
        if t_h is None:
            assert h is None or not numpy_of(h).any()
        else:
            assert_close(h, t_h, rtol, atol=1e-13)


def sample(shape=(4, 5), scale=3.0, seed=0) -> np.ndarray:
    """float64 values, away from 0 (the kinks of leaky_relu and elu)."""
    x = np.random.default_rng(seed).standard_normal(shape) * scale
    return np.where(np.abs(x) < 1e-3, 0.5, x)


# (name, ours, torch's as a function of torch.nn.functional, smooth)
ACTIVATIONS = [
    ("silu", F.silu, lambda TF: TF.silu, True),
    ("softplus", F.softplus, lambda TF: TF.softplus, True),
    (
        "softplus-beta2-threshold5",
        lambda x: F.softplus(x, beta=2, threshold=5),
        lambda TF: lambda x: TF.softplus(x, beta=2, threshold=5),
        True,
    ),
    (
        "softplus-beta0.5",
        lambda x: F.softplus(x, 0.5),
        lambda TF: lambda x: TF.softplus(x, 0.5),
        True,
    ),
    ("leaky_relu", F.leaky_relu, lambda TF: TF.leaky_relu, False),
    (
        "leaky_relu-0.2",
        lambda x: F.leaky_relu(x, 0.2),
        lambda TF: lambda x: TF.leaky_relu(x, 0.2),
        False,
    ),
    ("elu", F.elu, lambda TF: TF.elu, True),
    ("elu-alpha0.5", lambda x: F.elu(x, alpha=0.5), lambda TF: lambda x: TF.elu(x, 0.5), True),
    ("gelu", F.gelu, lambda TF: TF.gelu, True),
    (
        "gelu-tanh",
        lambda x: F.gelu(x, approximate="tanh"),
        lambda TF: lambda x: TF.gelu(x, approximate="tanh"),
        True,
    ),
]
ACT_IDS = [a[0] for a in ACTIVATIONS]


# -- activations ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "ours", "theirs", "smooth"), ACTIVATIONS, ids=ACT_IDS)
def test_activation_values_and_gradients_match_torch(torch, name, ours, theirs, smooth):
    x = sample()
    x[0, :3] = [25.0, -25.0, 19.5]  # across softplus' threshold
    compare(torch, ours, theirs(torch.nn.functional), x, second=smooth)


@pytest.mark.parametrize(("name", "ours", "theirs", "smooth"), ACTIVATIONS, ids=ACT_IDS)
def test_activation_is_stable_at_large_magnitude(torch, name, ours, theirs, smooth):
    # not beta * x == threshold exactly: there PyTorch's second derivative (x < threshold)
    # disagrees with its own forward (x > threshold)
    x = np.array([-1e3, -100.0, -45.0, 45.0, 100.0, 1e3])
    with np.errstate(over="raise", invalid="raise", divide="raise"):  # not even silenced
        xt = tt.tensor(x, requires_grad=True)
        out = ours(xt)
        (g,) = tt.autograd.grad(out.sum(), xt, create_graph=smooth)
        if smooth:
            (h,) = tt.autograd.grad(g.sum(), xt)
            assert np.isfinite(numpy_of(h)).all()
    assert np.isfinite(numpy_of(out)).all() and np.isfinite(numpy_of(g)).all()
    compare(torch, ours, theirs(torch.nn.functional), x, second=smooth)


@pytest.mark.parametrize(("name", "ours", "theirs", "smooth"), ACTIVATIONS, ids=ACT_IDS)
def test_activation_keeps_float32(torch, name, ours, theirs, smooth):
    x = sample().astype(np.float32)
    out, t_out = ours(tt.tensor(x)), theirs(torch.nn.functional)(torch.tensor(x))
    assert out.dtype == np.float32
    assert_close(out, t_out, rtol=1e-5, atol=1e-6)


def test_kinks_take_torchs_gradient(torch):
    """At 0, leaky_relu's gradient is the slope and elu's is alpha, as PyTorch's."""
    x = np.array([0.0, -0.0, 1.0, -1.0])
    compare(
        torch, lambda t: F.leaky_relu(t, 0.3), lambda t: torch.nn.functional.leaky_relu(t, 0.3), x
    )
    compare(torch, lambda t: F.elu(t, 0.7), lambda t: torch.nn.functional.elu(t, 0.7), x)


def test_grad_fn_names_match_torch(torch):
    x = sample((3,))
    cases = [
        (F.silu, torch.nn.functional.silu),
        (F.softplus, torch.nn.functional.softplus),
        (F.leaky_relu, torch.nn.functional.leaky_relu),
        (F.elu, torch.nn.functional.elu),
        (lambda t: F.gelu(t, "tanh"), lambda t: torch.nn.functional.gelu(t, approximate="tanh")),
        (F.gelu, torch.nn.functional.gelu),
        (lambda t: F.layer_norm(t, (3,)), lambda t: torch.nn.functional.layer_norm(t, (3,))),
        (lambda t: F.normalize(t, dim=0), lambda t: torch.nn.functional.normalize(t, dim=0)),
    ]
    for ours, theirs in cases:
        out = ours(tt.tensor(x, requires_grad=True))
        t_out = theirs(torch.tensor(x, requires_grad=True))
        assert out.grad_fn.name() == t_out.grad_fn.name()


INPLACE = [
    ("silu", lambda t, i: F.silu(t, i), lambda TF, t, i: TF.silu(t, i)),
    ("leaky_relu", lambda t, i: F.leaky_relu(t, 0.1, i), lambda TF, t, i: TF.leaky_relu(t, 0.1, i)),
    ("elu", lambda t, i: F.elu(t, 0.5, i), lambda TF, t, i: TF.elu(t, 0.5, i)),
]


@pytest.mark.parametrize(("name", "ours", "theirs"), INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_variants_match_torch(torch, name, ours, theirs):
    def run(f, make, x):
        leaf = make(x)
        y = leaf * 1.0
        out = f(y, True)
        assert out is y
        (y * y).sum().backward()
        return y, leaf.grad

    x = sample((6,))
    y, grad = run(ours, lambda a: tt.tensor(a, requires_grad=True), x)
    t_y, t_grad = run(
        lambda t, i: theirs(torch.nn.functional, t, i),
        lambda a: torch.tensor(a, requires_grad=True),
        x,
    )
    assert_close(y, t_y)
    assert_close(grad, t_grad)
    assert_same_error(
        lambda: ours(tt.tensor(x, requires_grad=True), True),
        lambda: theirs(torch.nn.functional, torch.tensor(x, requires_grad=True), True),
    )


def test_gelu_takes_torchs_approximate_argument(torch):
    x = tt.tensor([1.0, 2.0])
    np.testing.assert_array_equal(nn.GELU()(x).numpy(), F.gelu(x, "none").numpy())
    assert_same_error(
        lambda: F.gelu(x, approximate="foo"),
        lambda: torch.nn.functional.gelu(torch.tensor([1.0]), approximate="foo"),
    )


# -- modules -------------------------------------------------------------------------------------

MODULES = [
    ("SiLU", (), {}),
    ("SiLU", (True,), {}),
    ("Softplus", (), {}),
    ("Softplus", (2.0, 5.0), {}),
    ("LeakyReLU", (), {}),
    ("LeakyReLU", (0.2, True), {}),
    ("ELU", (), {}),
    ("ELU", (2.0,), {"inplace": True}),
    ("GELU", (), {}),
    ("GELU", ("tanh",), {}),
    ("Dropout", (), {}),
    ("Dropout", (0.25, True), {}),
    ("LayerNorm", (4,), {}),
    ("LayerNorm", ((2, 3),), {"elementwise_affine": False}),
    ("LayerNorm", ([4],), {"bias": False, "eps": 1e-3}),
    ("Softmax", (1,), {}),
    ("LogSoftmax", (), {"dim": -1}),
]


@pytest.mark.parametrize(("cls", "args", "kwargs"), MODULES)
def test_module_repr_matches_torch(torch, cls, args, kwargs):
    assert repr(getattr(nn, cls)(*args, **kwargs)) == repr(getattr(torch.nn, cls)(*args, **kwargs))


@pytest.mark.parametrize(
    ("cls", "args"),
    [
        ("SiLU", ()),
        ("Softplus", (2.0, 5.0)),
        ("LeakyReLU", (0.2,)),
        ("ELU", (2.0,)),
        ("GELU", ("tanh",)),
        ("Softmax", (1,)),
        ("LogSoftmax", (1,)),
    ],
)
def test_activation_modules_match_torch(torch, cls, args):
    compare(torch, getattr(nn, cls)(*args), getattr(torch.nn, cls)(*args), sample())


# -- dropout -------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_keeps_the_expectation(p):
    tt.manual_seed(0)
    n = 200_000
    x = tt.full((n,), 2.0, dtype=tt.float64)
    out = numpy_of(F.dropout(x, p))
    kept = out != 0
    np.testing.assert_array_equal(out[kept], 2.0 / (1.0 - p))
    # the kept fraction is binomial: 6 standard deviations
    sd = np.sqrt(p * (1 - p) / n)
    assert abs(kept.mean() - (1 - p)) < 6 * sd
    assert abs(out.mean() - 2.0) < 6 * 2.0 * sd / (1 - p)


@pytest.mark.parametrize("p", [0.3, 0.5])
def test_dropout_gradient_is_the_same_mask_over_keep_probability(p):
    tt.manual_seed(1)
    x_np = sample((50, 40)) + 10.0  # no zeros in the input
    x = tt.tensor(x_np, requires_grad=True)
    out = F.dropout(x, p)
    out.backward(tt.ones_like(out))
    grad = numpy_of(x.grad)
    mask = grad != 0
    np.testing.assert_array_equal(grad[mask], 1.0 / (1.0 - p))  # == mask / (1 - p)
    np.testing.assert_array_equal(numpy_of(out) != 0, mask)  # the value's mask
    np.testing.assert_allclose(numpy_of(out), np.where(mask, x_np / (1 - p), 0.0), rtol=1e-15)
    assert 0 < mask.mean() < 1


def test_dropout_draws_from_tracegrads_generator_at_call_time():
    x = tt.ones(1000, dtype=tt.float64)
    tt.manual_seed(7)
    a = numpy_of(F.dropout(x, 0.5))
    b = numpy_of(F.dropout(x, 0.5))
    tt.manual_seed(7)
    c = numpy_of(F.dropout(x, 0.5))
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b)


def test_dropout_identity_and_extremes(torch):
    x = tt.tensor(sample((3, 4)), requires_grad=True)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    t = torch.tensor(sample((3, 4)))
    assert torch.nn.functional.dropout(t, 0.5, training=False) is t  # the oracle agrees
    zero = F.dropout(x, 1.0)
    np.testing.assert_array_equal(numpy_of(zero), np.zeros((3, 4)))
    zero.sum().backward()
    np.testing.assert_array_equal(numpy_of(x.grad), np.zeros((3, 4)))
    x32 = tt.tensor(sample((3, 4)).astype(np.float32))
    assert F.dropout(x32, 0.5).dtype == np.float32


def test_dropout_module_follows_training_mode():
    tt.manual_seed(3)
    m = nn.Dropout(0.5)
    x = tt.tensor(sample((20, 20)) + 10.0)
    assert m.training
    assert (numpy_of(m(x)) == 0).any()
    m.eval()
    assert m(x) is x
    m.train()
    assert (numpy_of(nn.Sequential(nn.Identity(), m)(x)) == 0).any()
    nn.Sequential(m).eval()
    assert m(x) is x


@pytest.mark.parametrize("p", [1.5, -0.1])
def test_dropout_probability_errors_match_torch(torch, p):
    assert_same_error(
        lambda: F.dropout(tt.ones(2), p), lambda: torch.nn.functional.dropout(torch.ones(2), p)
    )
    assert_same_error(lambda: nn.Dropout(p), lambda: torch.nn.Dropout(p))


# -- layer_norm ----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(4,), (3, 4)], ids=["last-axis", "last-two-axes"])
@pytest.mark.parametrize("affine", ["none", "weight", "weight-bias"])
def test_layer_norm_matches_torch(torch, shape, affine):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 4)) * 2.0 + 1.0
    params = [rng.standard_normal(shape) for _ in range(affine.count("-") + (affine != "none"))]

    def ours(x, *p):
        return F.layer_norm(x, shape, *p, eps=1e-5)

    def theirs(x, *p):
        return torch.nn.functional.layer_norm(x, shape, *p, eps=1e-5)

    compare(torch, ours, theirs, x, *params, second=True)


@pytest.mark.parametrize(
    ("shape", "kwargs"),
    [(4, {}), ((3, 4), {}), ((3, 4), {"elementwise_affine": False}), (4, {"bias": False})],
)
def test_layer_norm_module_matches_torch(torch, shape, kwargs):
    m, t_m = (
        nn.LayerNorm(shape, **kwargs, dtype=tt.float64),
        torch.nn.LayerNorm(shape, **kwargs, dtype=torch.float64),
    )
    sd = m.state_dict()
    assert sorted(sd) == sorted(t_m.state_dict())
    for k, v in sd.items():  # initialised as PyTorch: ones and zeros
        assert_close(v, t_m.state_dict()[k])
    rng = np.random.default_rng(2)
    with tt.no_grad():
        for p in m.parameters():
            p.copy_(tt.tensor(rng.standard_normal(p.shape)))
    t_m.load_state_dict({k: torch.tensor(numpy_of(v)) for k, v in m.state_dict().items()})
    x = rng.standard_normal((2, 3, 4))
    out, t_out = m(tt.tensor(x)), t_m(torch.tensor(x))
    assert_close(out, t_out)
    if not kwargs.get("elementwise_affine", True):
        assert list(m.parameters()) == []
        return
    u = rng.standard_normal(out.shape)
    (out * tt.tensor(u)).sum().backward()
    (t_out * torch.tensor(u)).sum().backward()
    for (name, p), (t_name, t_p) in zip(m.named_parameters(), t_m.named_parameters()):
        assert name == t_name
        assert_close(p.grad, t_p.grad)


def test_layer_norm_of_a_constant_row_is_finite(torch):
    x = np.ones((2, 5))
    compare(
        torch, lambda t: F.layer_norm(t, (5,)), lambda t: torch.nn.functional.layer_norm(t, (5,)), x
    )


def test_layer_norm_errors_match_torch(torch):
    x, t = tt.zeros((2, 3), dtype=tt.float64), torch.zeros((2, 3), dtype=torch.float64)
    TF = torch.nn.functional
    assert_same_error(lambda: F.layer_norm(x, (4,)), lambda: TF.layer_norm(t, (4,)))
    assert_same_error(lambda: F.layer_norm(x, (2, 3, 4)), lambda: TF.layer_norm(t, (2, 3, 4)))
    assert_same_error(
        lambda: F.layer_norm(x, (3,), tt.ones(4, dtype=tt.float64)),
        lambda: TF.layer_norm(t, (3,), torch.ones(4, dtype=torch.float64)),
    )
    assert_same_error(
        lambda: F.layer_norm(x, (3,), None, tt.ones(2, dtype=tt.float64)),
        lambda: TF.layer_norm(t, (3,), None, torch.ones(2, dtype=torch.float64)),
    )


# -- normalize -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "dim"), [(2.0, 1), (2, 0), (2.0, -1), (1, 1), (3.0, 1), (float("inf"), 1)]
)
def test_normalize_matches_torch(torch, p, dim):
    x = sample((4, 5))
    compare(
        torch,
        lambda t: F.normalize(t, p, dim),
        lambda t: torch.nn.functional.normalize(t, p, dim),
        x,
        second=p in (2, 3.0),
    )


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
def test_normalize_at_a_zero_row_has_torchs_finite_gradient(torch, p):
    x = sample((3, 4))
    x[1] = 0.0
    x[2] = [1e-14, 0.0, -2e-14, 0.0]  # below eps: the clamp holds the norm
    compare(
        torch,
        lambda t: F.normalize(t, p),
        lambda t: torch.nn.functional.normalize(t, p),
        x,
        rtol=1e-12,
    )
    out = F.normalize(tt.tensor(x), p)
    np.testing.assert_array_equal(numpy_of(out)[1], 0.0)


def test_normalize_keeps_float32(torch):
    x = sample((3, 4)).astype(np.float32)
    out = F.normalize(tt.tensor(x))
    assert out.dtype == np.float32
    assert_close(out, torch.nn.functional.normalize(torch.tensor(x)), rtol=1e-6, atol=1e-7)


# -- gradients at points where a naive formula overflows or divides by zero --------------------


def test_sigmoid_gradient_is_finite_at_large_negative_input(torch):
    x = np.array([-1e3, -800.0, 0.0, 800.0])
    compare(torch, tt.sigmoid, torch.sigmoid, x)


def test_norm_gradient_at_a_zero_vector_matches_torch(torch):
    x = np.zeros((2, 3))
    x[1] = [1.0, -2.0, 0.5]
    compare(torch, lambda t: tt.norm(t, 3.0, dim=1), lambda t: t.norm(3.0, dim=1), x)


def test_norm_at_zero_has_a_finite_gradient():
    for M in libraries():
        x = M.zeros(2, requires_grad=True)
        x.norm().backward()
        np.testing.assert_array_equal(values(x.grad), [0.0, 0.0])
    x = tt.tensor([3.0, 4.0], dtype=np.float64, requires_grad=True)
    x.norm().backward()
    np.testing.assert_allclose(values(x.grad), [0.6, 0.8])


@pytest.mark.parametrize("name", ["elu", "leaky_relu", "silu", "gelu", "softplus", "normalize"])
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_integer_and_bool_inputs_are_refused_as_torch_refuses_them(torch, name, dtype):
    assert_same_error(
        lambda: getattr(F, name)(tt.tensor([[1, 0]], dtype=getattr(tt, dtype))),
        lambda: getattr(torch.nn.functional, name)(
            torch.tensor([[1, 0]], dtype=getattr(torch, dtype))
        ),
        scalar_names=name != "normalize",  # linalg's messages keep c10's names, as elsewhere
    )
