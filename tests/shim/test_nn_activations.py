"""tracegrad.torch.nn.activations and activation_layers against torch.

Every function and module from identical inputs, in float64 (1e-12) and float32: values,
input gradients against a random cotangent (and PReLU's and Bilinear's parameter gradients),
second derivatives, points exactly at the kinks (in long tensors and one at a time, since
ATen's vectorised and scalar kernels both run), `dim` arguments, `inplace=True` and the `_`
forms (the input changes, `grad_fn` names), reprs, and PyTorch's messages for bad input.
RReLU in training mode draws its slopes as ATen does, on the global generator: after the same
`manual_seed` they are PyTorch's (and the stream is left where PyTorch leaves it); its
properties are tested too."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import (
    assert_same_error,
    caught,
    normalize_torch_message,
    torch_one_thread,  # noqa: F401 - the `torch` fixture
)
from tracegrad.torch.nn import activation_layers as L
from tracegrad.torch.nn import activations as A

# -- helpers -------------------------------------------------------------------------------------

TOL = {np.float64: (1e-12, 1e-14), np.float32: (1e-5, 1e-6)}

#: ATen's hardsigmoid gradient is `grad * (1.0f / 6.0f)`, a float32 constant even in float64
#: (0.1666666716...); tracegrad's is 1/6 to double precision: 3e-8 apart
HARDSIGMOID_GRAD_RTOL = 1e-7


def numpy_of(t) -> np.ndarray:
    return t.detach().numpy()


def assert_close(ours, theirs, dtype=np.float64, rtol=None) -> None:
    rtol, atol = (TOL[dtype][0] if rtol is None else max(rtol, TOL[dtype][0])), TOL[dtype][1]
    a, b = numpy_of(ours), numpy_of(theirs)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, a.dtype, b.shape, b.dtype)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def compare(torch, f_ours, f_theirs, *arrays, second=False, dtype=np.float64, grad_rtol=None):
    """Values, gradients of every input (against a random cotangent) and, with `second`, the
    derivative of those gradients (against another random vector) agree with torch's;
    `grad_rtol` loosens the comparison of gradients."""
    rng = np.random.default_rng(1)
    arrays = [np.asarray(a, dtype) for a in arrays]
    xs = [tt.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, t_out = f_ours(*xs), f_theirs(*ts)
    assert_close(out, t_out, dtype)
    u = rng.standard_normal(out.shape).astype(dtype)
    gs = tt.autograd.grad((out * tt.tensor(u)).sum(), xs, create_graph=second)
    t_gs = torch.autograd.grad((t_out * torch.tensor(u)).sum(), ts, create_graph=second)
    for g, t_g in zip(gs, t_gs):
        assert_close(g, t_g, dtype, grad_rtol)
    if not second:
        return
    vs = [rng.standard_normal(a.shape) for a in arrays]
    inner = sum((g * tt.tensor(v)).sum() for g, v in zip(gs, vs))
    t_inner = sum((g * torch.tensor(v)).sum() for g, v in zip(t_gs, vs))
    # a gradient that is constant has no derivative: None in one library, zeros in the other
    none = [None] * len(xs)
    hs = tt.autograd.grad(inner, xs, allow_unused=True) if inner.requires_grad else none
    t_hs = torch.autograd.grad(t_inner, ts, allow_unused=True) if t_inner.requires_grad else none
    for h, t_h in zip(hs, t_hs):
        if h is None or t_h is None:
            for one in (h, t_h):
                assert one is None or not numpy_of(one).any()
        else:
            assert_close(h, t_h)


def sample(shape=(4, 6), seed=0) -> np.ndarray:
    """float64 values away from every kink below (at least 0.01 from each)."""
    x = np.random.default_rng(seed).standard_normal(shape) * 3.0
    for kink in KINKS:
        x = np.where(np.abs(x - kink) < 1e-2, kink + 0.1, x)
    return x


#: every kink of the cases below, each exactly representable
KINKS = [-6.0, -3.0, -2.0, -1.0, -0.5, -0.25, -0.0, 0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 6.0]

# (id, call with the namespace `F`: activations, or torch.nn.functional)
CASES = [
    ("celu", lambda F, t: F.celu(t)),
    ("celu-alpha2", lambda F, t: F.celu(t, 2.0)),
    ("celu-alpha-neg", lambda F, t: F.celu(t, alpha=-0.5)),
    ("selu", lambda F, t: F.selu(t)),
    ("hardshrink", lambda F, t: F.hardshrink(t)),
    ("hardshrink-0.25", lambda F, t: F.hardshrink(t, 0.25)),
    ("hardshrink-negative", lambda F, t: F.hardshrink(t, -1.0)),
    ("softshrink", lambda F, t: F.softshrink(t)),
    ("softshrink-2", lambda F, t: F.softshrink(t, lambd=2.0)),
    ("softshrink-0", lambda F, t: F.softshrink(t, 0.0)),
    ("hardsigmoid", lambda F, t: F.hardsigmoid(t)),
    ("hardswish", lambda F, t: F.hardswish(t)),
    ("hardtanh", lambda F, t: F.hardtanh(t)),
    ("hardtanh-range", lambda F, t: F.hardtanh(t, -0.25, 3.0)),
    ("hardtanh-point", lambda F, t: F.hardtanh(t, 0.5, 0.5)),
    ("relu6", lambda F, t: F.relu6(t)),
    ("threshold", lambda F, t: F.threshold(t, 0.5, -2.0)),
    ("threshold-above", lambda F, t: F.threshold(t, -1.0, 6.0)),
    ("rrelu-eval", lambda F, t: F.rrelu(t)),
    ("rrelu-eval-bounds", lambda F, t: F.rrelu(t, 0.1, 0.7, training=False)),
    ("logsigmoid", lambda F, t: F.logsigmoid(t)),
    ("mish", lambda F, t: F.mish(t)),
    ("softsign", lambda F, t: F.softsign(t)),
    ("tanhshrink", lambda F, t: F.tanhshrink(t)),
    ("softmin-0", lambda F, t: F.softmin(t, 0)),
    ("softmin-1", lambda F, t: F.softmin(t, dim=1)),
    ("softmin--1", lambda F, t: F.softmin(t, -1)),
    ("glu", lambda F, t: F.glu(t)),
    ("glu-0", lambda F, t: F.glu(t, 0)),
    ("glu--2", lambda F, t: F.glu(t, dim=-2)),
]
IDS = [c[0] for c in CASES]

#: the functions PyTorch computes elementwise (the kink tests feed them 1-D inputs)
ELEMENTWISE = [c for c in CASES if not c[0].startswith(("softmin", "glu"))]


def _torch_f(torch):
    return torch.nn.functional


def _grad_rtol(name: str):
    return HARDSIGMOID_GRAD_RTOL if name.lower().startswith("hardsigmoid") else None


# -- values and gradients ------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "call"), CASES, ids=IDS)
def test_values_and_gradients_match_torch_float64(torch, name, call):
    x = sample()
    f_ours, f_theirs = (lambda t: call(A, t)), (lambda t: call(_torch_f(torch), t))
    second = name != "hardsigmoid"  # torch: derivative for hardsigmoid_backward not implemented
    compare(torch, f_ours, f_theirs, x, second=second, grad_rtol=_grad_rtol(name))


@pytest.mark.parametrize(("name", "call"), CASES, ids=IDS)
def test_values_and_gradients_match_torch_float32(torch, name, call):
    x = sample(seed=3)
    out = call(A, tt.tensor(x.astype(np.float32)))
    assert out.dtype == np.float32
    f_ours, f_theirs = (lambda t: call(A, t)), (lambda t: call(_torch_f(torch), t))
    compare(torch, f_ours, f_theirs, x, dtype=np.float32)


@pytest.mark.parametrize(("name", "call"), ELEMENTWISE, ids=[c[0] for c in ELEMENTWISE])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_kinks_take_torchs_gradient(torch, name, call, dtype):
    """At every kink, in a long tensor (ATen's vectorised kernel) and one point at a time
    (its scalar kernel), the value and the gradient are PyTorch's."""
    points = np.array(KINKS * 2 + [-7.0, 7.0])
    f_ours, f_theirs = (lambda t: call(A, t)), (lambda t: call(_torch_f(torch), t))
    rtol = _grad_rtol(name)
    compare(torch, f_ours, f_theirs, points, dtype=dtype, grad_rtol=rtol)
    for p in KINKS:
        compare(torch, f_ours, f_theirs, np.array([p]), dtype=dtype, grad_rtol=rtol)


@pytest.mark.parametrize(("name", "call"), ELEMENTWISE, ids=[c[0] for c in ELEMENTWISE])
def test_nan_propagates_with_torchs_gradient(torch, name, call):
    # one element: ATen's scalar kernel (its vectorised one may treat NaN otherwise)
    compare(torch, lambda t: call(A, t), lambda t: call(_torch_f(torch), t), np.array([np.nan]))


@pytest.mark.parametrize("name", ["logsigmoid", "mish", "softsign", "tanhshrink", "celu", "selu"])
def test_smooth_functions_are_stable_at_large_magnitude(torch, name):
    x = np.array([-1e3, -100.0, -40.0, 40.0, 100.0, 1e3])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        xt = tt.tensor(x, requires_grad=True)
        out = getattr(A, name)(xt)
        (g,) = tt.autograd.grad(out.sum(), xt, create_graph=True)
        (h,) = tt.autograd.grad(g.sum(), xt)
    for t in (out, g, h):
        assert np.isfinite(numpy_of(t)).all()
    # torch's second derivative of mish is nan at 1e3 (its closed form overflows); ours is not
    second = name != "mish"
    compare(torch, getattr(A, name), getattr(_torch_f(torch), name), x, second=second)


def test_hardswish_and_hardsigmoid_gradients_at_the_ends():
    """PyTorch 2.13's kernels: hardswish 0 at -3 and 1 at 3; hardsigmoid 0 at both."""
    x = tt.tensor([-3.0, 3.0, 0.0], dtype=tt.float64, requires_grad=True)
    (g,) = tt.autograd.grad(A.hardswish(x).sum(), x)
    np.testing.assert_array_equal(numpy_of(g), [0.0, 1.0, 0.5])
    (g,) = tt.autograd.grad(A.hardsigmoid(x).sum(), x)
    np.testing.assert_array_equal(numpy_of(g), [0.0, 0.0, 1 / 6])


INTEGER_OK = [
    ("hardtanh", lambda F, t: F.hardtanh(t, -1.5, 2.5)),
    ("relu6", lambda F, t: F.relu6(t * 3)),
    ("threshold", lambda F, t: F.threshold(t, -0.5, 5.5)),
    ("softsign", lambda F, t: F.softsign(t)),
    ("tanhshrink", lambda F, t: F.tanhshrink(t)),
]


@pytest.mark.parametrize(("name", "call"), INTEGER_OK, ids=[c[0] for c in INTEGER_OK])
def test_integer_inputs_as_torch(torch, name, call):
    """Bounds written into an integer tensor are truncated, as ATen converts them."""
    x = np.arange(-3, 4)
    out, t_out = call(A, tt.tensor(x)), call(_torch_f(torch), torch.tensor(x))
    assert out.dtype.name == str(t_out.dtype).removeprefix("torch.")
    np.testing.assert_allclose(numpy_of(out), t_out.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["softsign", "tanhshrink"])
def test_compositions_take_complex_inputs_as_torch(torch, name):
    z = np.array([1 + 1j, -1 - 2j, 0.5j, 2.0])
    x, t = tt.tensor(z, requires_grad=True), torch.tensor(z, requires_grad=True)
    out, t_out = getattr(A, name)(x), getattr(_torch_f(torch), name)(t)
    assert_close(out, t_out)
    (g,) = tt.autograd.grad(out.abs().sum(), x)
    (t_g,) = torch.autograd.grad(t_out.abs().sum(), t)
    assert_close(g, t_g)


# -- dims and dtypes -----------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2, -3])
def test_glu_and_softmin_along_every_dim(torch, dim):
    x = np.random.default_rng(4).standard_normal((4, 2, 6))
    TF = _torch_f(torch)
    compare(torch, lambda t: A.glu(t, dim), lambda t: TF.glu(t, dim), x, second=True)
    compare(torch, lambda t: A.softmin(t, dim), lambda t: TF.softmin(t, dim), x, second=True)


def test_softmin_dtype_casts_after_negating(torch):
    x = np.random.default_rng(5).standard_normal((3, 4)).astype(np.float32)
    out = A.softmin(tt.tensor(x), 1, dtype=tt.float64)
    t_out = _torch_f(torch).softmin(torch.tensor(x), 1, dtype=torch.float64)
    assert_close(out, t_out)


@pytest.mark.parametrize("shape", [(), (5,), (2, 3), (2, 3, 4)])
def test_softmin_implicit_dim_warns_and_chooses_as_torch(torch, shape):
    x = np.random.default_rng(6).standard_normal(shape)
    runs = []
    for f, make in ((A.softmin, tt.tensor), (_torch_f(torch).softmin, torch.tensor)):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            out = f(make(x))
        runs.append((numpy_of(out), [(w.category, str(w.message)) for w in seen]))
    (ours, our_warnings), (theirs, their_warnings) = runs
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    assert our_warnings == their_warnings and len(our_warnings) == 1


# -- in place ------------------------------------------------------------------------------------

INPLACE = [
    ("celu", lambda F, t: F.celu(t, 2.0, True)),
    ("celu_", lambda F, t: F.celu_(t, 2.0)),
    ("selu", lambda F, t: F.selu(t, inplace=True)),
    ("selu_", lambda F, t: F.selu_(t)),
    ("elu_", lambda F, t: F.elu_(t, 0.5)),
    ("leaky_relu_", lambda F, t: F.leaky_relu_(t, 0.2)),
    ("relu_", lambda F, t: F.relu_(t)),
    ("hardtanh", lambda F, t: F.hardtanh(t, -0.5, 1.0, inplace=True)),
    ("hardtanh_", lambda F, t: F.hardtanh_(t, -0.5, 1.0)),
    ("hardtanh_-reversed", lambda F, t: F.hardtanh_(t, 1.0, -0.5)),
    ("relu6", lambda F, t: F.relu6(t, True)),
    ("hardsigmoid", lambda F, t: F.hardsigmoid(t, True)),
    ("hardswish", lambda F, t: F.hardswish(t, inplace=True)),
    ("mish", lambda F, t: F.mish(t, True)),
    ("rrelu-eval", lambda F, t: F.rrelu(t, 0.1, 0.3, False, True)),
    ("rrelu_-eval", lambda F, t: F.rrelu_(t, 0.1, 0.3)),
    ("threshold", lambda F, t: F.threshold(t, 0.5, -1.0, True)),
    ("threshold_", lambda F, t: F.threshold_(t, 0.5, -1.0)),
]


@pytest.mark.parametrize(("name", "call"), INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_forms_change_the_input_as_torch(torch, name, call):
    def run(lib, F, x):
        leaf = lib.tensor(x, requires_grad=True)
        y = leaf * 1.0
        out = call(F, y)
        assert out is y
        fn_name = y.grad_fn.name()
        (y * y).sum().backward()
        plain = lib.tensor(x)  # not requiring grad: changed all the same
        assert call(F, plain) is plain and plain._version == 1
        return y, leaf.grad, fn_name, plain

    x = np.concatenate([sample((10,)), [0.0, 0.5, -3.0, 3.0, 6.0]])
    ours = run(tt, A, x)
    theirs = run(torch, _torch_f(torch), x)
    assert_close(ours[0], theirs[0])
    assert_close(ours[1], theirs[1], rtol=_grad_rtol(name))
    assert ours[2] == theirs[2]
    assert_close(ours[3], theirs[3])
    assert not np.allclose(numpy_of(ours[3]), x)
    assert_same_error(
        lambda: call(A, tt.tensor(x, requires_grad=True)),
        lambda: call(_torch_f(torch), torch.tensor(x, requires_grad=True)),
    )


# -- grad_fn names -------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "call"), CASES, ids=IDS)
def test_grad_fn_names_match_torch(torch, name, call):
    x = sample()
    out = call(A, tt.tensor(x, requires_grad=True))
    t_out = call(_torch_f(torch), torch.tensor(x, requires_grad=True))
    assert out.grad_fn.name() == t_out.grad_fn.name()


# -- prelu ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x_shape", "w_shape"),
    [((2, 3, 4), (3,)), ((2, 3, 4), (1,)), ((2, 3), ()), ((5,), (1,)), ((), (1,)), ((), ())],
)
def test_prelu_matches_torch_with_weight_gradients(torch, x_shape, w_shape):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(x_shape)
    w = rng.uniform(-0.5, 0.5, w_shape)
    compare(torch, A.prelu, _torch_f(torch).prelu, x, w, second=True)
    if x.ndim:
        x.flat[0] = 0.0  # the kink: gradient `weight` for x, 0 for the weight
    compare(torch, A.prelu, _torch_f(torch).prelu, x, w)
    compare(torch, A.prelu, _torch_f(torch).prelu, x, w, dtype=np.float32)


def test_prelu_module_matches_torch(torch):
    m, t_m = L.PReLU(3, init=0.1, dtype=tt.float64), torch.nn.PReLU(3, 0.1, dtype=torch.float64)
    assert m.num_parameters == 3 and m.init == 0.1
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in t_m.named_parameters()]
    np.testing.assert_array_equal(numpy_of(m.weight), [0.1, 0.1, 0.1])
    x = sample((2, 3, 5))
    out, t_out = m(tt.tensor(x)), t_m(torch.tensor(x))
    assert_close(out, t_out)
    u = np.random.default_rng(8).standard_normal(out.shape)
    (out * tt.tensor(u)).sum().backward()
    (t_out * torch.tensor(u)).sum().backward()
    assert_close(m.weight.grad, t_m.weight.grad)
    assert L.PReLU().weight.dtype == np.float32 and L.PReLU().weight.shape == (1,)


# -- bilinear ------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch", [(), (3,), (2, 3)], ids=["unbatched", "batch", "batch2"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_bilinear_matches_torch_with_all_gradients(torch, batch, bias):
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal((*batch, 4)), rng.standard_normal((*batch, 5))]
    arrays.append(rng.standard_normal((6, 4, 5)))
    if bias:
        arrays.append(rng.standard_normal(6))
    compare(torch, A.bilinear, _torch_f(torch).bilinear, *arrays, second=True)
    compare(torch, A.bilinear, _torch_f(torch).bilinear, *arrays, dtype=np.float32)


@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_module_matches_torch(torch, bias):
    tt.manual_seed(0)
    m = L.Bilinear(4, 3, 5, bias=bias, dtype=tt.float64)
    t_m = torch.nn.Bilinear(4, 3, 5, bias=bias, dtype=torch.float64)
    assert sorted(m.state_dict()) == sorted(t_m.state_dict())
    bound = 1 / np.sqrt(4)  # PyTorch's: 1/sqrt(in1_features) for the weight and the bias
    for p in m.parameters():
        assert p.dtype == np.float64 and np.abs(numpy_of(p)).max() <= bound
    t_m.load_state_dict({k: torch.tensor(numpy_of(v)) for k, v in m.state_dict().items()})
    rng = np.random.default_rng(10)
    x1, x2 = rng.standard_normal((7, 4)), rng.standard_normal((7, 3))
    out, t_out = m(tt.tensor(x1), tt.tensor(x2)), t_m(torch.tensor(x1), torch.tensor(x2))
    assert_close(out, t_out)
    u = rng.standard_normal(out.shape)
    (out * tt.tensor(u)).sum().backward()
    (t_out * torch.tensor(u)).sum().backward()
    for (name, p), (t_name, t_p) in zip(m.named_parameters(), t_m.named_parameters()):
        assert name == t_name
        assert_close(p.grad, t_p.grad)


def test_bilinear_init_is_uniform_over_the_bound():
    tt.manual_seed(1)
    m = L.Bilinear(16, 8, 64)
    w = numpy_of(m.weight)
    assert w.shape == (64, 16, 8) and w.dtype == np.float32
    assert np.abs(w).max() <= 0.25 and np.abs(w).max() > 0.24  # U(-1/4, 1/4): reaches it
    assert abs(w.mean()) < 0.01 and abs(w.var() - 0.25**2 / 3) < 2e-3
    assert m.bias.shape == (64,) and np.abs(numpy_of(m.bias)).max() <= 0.25
    assert L.Bilinear(2, 3, 4, bias=False).bias is None


# -- modules -------------------------------------------------------------------------------------

MODULES = [
    ("CELU", (), {}),
    ("CELU", (2.0, True), {}),
    ("SELU", (), {}),
    ("SELU", (True,), {}),
    ("GLU", (), {}),
    ("GLU", (0,), {}),
    ("Hardshrink", (), {}),
    ("Hardshrink", (0.25,), {}),
    ("Softshrink", (), {"lambd": 1}),
    ("Hardsigmoid", (), {}),
    ("Hardsigmoid", (True,), {}),
    ("Hardswish", (True,), {}),
    ("Hardtanh", (), {}),
    ("Hardtanh", (-2, 3.5, True), {}),
    ("ReLU6", (), {}),
    ("ReLU6", (True,), {}),
    ("LogSigmoid", (), {}),
    ("Mish", (), {}),
    ("Mish", (True,), {}),
    ("PReLU", (), {}),
    ("PReLU", (4, 0.5), {}),
    ("RReLU", (), {}),
    ("RReLU", (0.1, 0.2, True), {}),
    ("Softmin", (), {}),
    ("Softmin", (1,), {}),
    ("Softsign", (), {}),
    ("Tanhshrink", (), {}),
    ("Threshold", (0.1, 20), {}),
    ("Threshold", (0.5, -1.0, True), {}),
    ("Softmax2d", (), {}),
    ("Bilinear", (3, 4, 5), {}),
    ("Bilinear", (3, 4, 5, False), {}),
]


@pytest.mark.parametrize(("cls", "args", "kwargs"), MODULES)
def test_module_repr_matches_torch(torch, cls, args, kwargs):
    assert repr(getattr(L, cls)(*args, **kwargs)) == repr(getattr(torch.nn, cls)(*args, **kwargs))


FORWARD = [
    ("CELU", (0.5,)),
    ("SELU", ()),
    ("GLU", (1,)),
    ("Hardshrink", (1.0,)),
    ("Softshrink", (0.25,)),
    ("Hardsigmoid", ()),
    ("Hardswish", ()),
    ("Hardtanh", (-2.0, 1.0)),
    ("ReLU6", ()),
    ("LogSigmoid", ()),
    ("Mish", ()),
    ("RReLU", (0.2, 0.4)),
    ("Softmin", (1,)),
    ("Softsign", ()),
    ("Tanhshrink", ()),
    ("Threshold", (0.5, -3.0)),
    ("Softmax2d", ()),
]


@pytest.mark.parametrize(("cls", "args"), FORWARD, ids=[c[0] for c in FORWARD])
def test_modules_match_torch(torch, cls, args):
    m, t_m = getattr(L, cls)(*args), getattr(torch.nn, cls)(*args)
    m.eval()
    t_m.eval()
    compare(torch, m, t_m, sample((2, 4, 3, 2)), grad_rtol=_grad_rtol(cls))


def test_module_inplace_changes_the_input(torch):
    for cls in ("CELU", "SELU", "Hardsigmoid", "Hardswish", "Hardtanh", "ReLU6", "Mish"):
        x = sample((6,))
        m = getattr(L, cls)(inplace=True)
        t = tt.tensor(x)
        assert m(t) is t
        t_t = torch.tensor(x)
        getattr(torch.nn, cls)(inplace=True)(t_t)
        assert_close(t, t_t)


def test_hardtanh_module_deprecated_names_warn_as_torch(torch):
    seen = []
    for lib in (L, torch.nn):
        with warnings.catch_warnings(record=True) as caught_warnings:
            warnings.simplefilter("always")
            m = lib.Hardtanh(min_value=-2.0, max_value=3.0)
        seen.append((repr(m), [(w.category, str(w.message)) for w in caught_warnings]))
    assert seen[0] == seen[1] and len(seen[0][1]) == 2


# -- rrelu training ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("inplace", [False, True])
def test_rrelu_training_draws_slopes_in_bounds_with_their_gradient(dtype, inplace):
    lower, upper = 0.1, 0.3
    tt.manual_seed(2)
    x_np = np.concatenate([-np.linspace(0.5, 4.0, 3000), [0.0] * 50, np.linspace(0.5, 4, 500)])
    x_np = x_np.astype(dtype)
    leaf = tt.tensor(x_np, requires_grad=True)
    y = leaf * 1.0
    out = A.rrelu(y, lower, upper, training=True, inplace=inplace)
    assert (out is y) == inplace and out.dtype == dtype
    out.sum().backward()
    grad, values = numpy_of(leaf.grad), numpy_of(out)
    negative, zero, positive = x_np < 0, x_np == 0, x_np > 0
    slopes = values[negative] / x_np[negative]
    lo, hi = dtype(lower), dtype(upper)
    assert lo <= grad[negative | zero].min() and grad[negative | zero].max() <= hi
    np.testing.assert_allclose(grad[negative], slopes, rtol=1e-6 if dtype == np.float32 else 1e-14)
    np.testing.assert_array_equal(values[zero], 0.0)
    np.testing.assert_array_equal(values[positive], x_np[positive])
    np.testing.assert_array_equal(grad[positive], 1.0)
    # U(lower, upper): mean and variance of 3050 draws (6 standard deviations)
    drawn = grad[negative | zero].astype(np.float64)
    sd = (upper - lower) / np.sqrt(12 * drawn.size)
    assert abs(drawn.mean() - (lower + upper) / 2) < 6 * sd
    assert abs(drawn.var() - (upper - lower) ** 2 / 12) < 0.1 * (upper - lower) ** 2 / 12
    assert len(np.unique(drawn)) > 3000  # one slope per element


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("inplace", [False, True])
def test_rrelu_training_draws_torchs_slopes_after_the_same_seed(torch, dtype, inplace):
    x = np.random.default_rng(1).standard_normal((5, 41)).astype(dtype)
    x[0, :3] = [0.0, np.nan, -0.0]
    results = []
    for lib in (tt, torch):
        lib.manual_seed(7)
        leaf = lib.tensor(x, requires_grad=True)
        out = lib.nn.functional.rrelu(leaf * 1.0, 0.1, 0.4, training=True, inplace=inplace)
        out.sum().backward()
        results.append([out.detach().numpy(), leaf.grad.numpy(), lib.rand(3).numpy()])
    for ours, theirs in zip(*results, strict=True):
        np.testing.assert_array_equal(ours, theirs)


def test_rrelu_training_follows_the_seed_and_the_module_mode(torch):
    x = tt.tensor(-np.linspace(1.0, 2.0, 100))
    tt.manual_seed(5)
    a = numpy_of(A.rrelu(x, training=True))
    b = numpy_of(A.rrelu(x, training=True))
    tt.manual_seed(5)
    np.testing.assert_array_equal(numpy_of(A.rrelu(x, training=True)), a)
    assert not np.array_equal(a, b)
    m = L.RReLU()
    assert m.training
    assert len(np.unique(numpy_of(m(x)) / numpy_of(x))) > 50
    m.eval()  # (lower + upper) / 2, exactly as torch
    t_out = torch.nn.RReLU().eval()(torch.tensor(numpy_of(x)))
    np.testing.assert_array_equal(numpy_of(m(x)), t_out.numpy())
    leaf = tt.tensor(numpy_of(x), requires_grad=True)
    m(leaf).sum().backward()
    np.testing.assert_array_equal(numpy_of(leaf.grad), (1 / 8 + 1 / 3) / 2)


# -- messages ------------------------------------------------------------------------------------


# (id, call with F and its library, scalar type names to normalise)
ERRORS = [
    ("glu-odd", lambda F, lib: F.glu(lib.ones(2, 3), 1), False),
    ("glu-odd-last", lambda F, lib: F.glu(lib.ones(2, 5)), False),
    ("glu-scalar", lambda F, lib: F.glu(lib.tensor(1.0)), False),
    ("glu-dim", lambda F, lib: F.glu(lib.ones(2, 4), 2), False),
    ("glu-dim-negative", lambda F, lib: F.glu(lib.ones(2, 4), -3), False),
    ("glu-int", lambda F, lib: F.glu(lib.tensor([1, 2])), True),
    ("prelu-channels", lambda F, lib: F.prelu(lib.ones(2, 3, 4), lib.ones(4)), False),
    ("prelu-1d", lambda F, lib: F.prelu(lib.ones(3), lib.ones(3)), False),
    ("prelu-0d", lambda F, lib: F.prelu(lib.tensor(1.0), lib.ones(3)), False),
    ("prelu-dtype", lambda F, lib: F.prelu(lib.ones(2, 3), lib.ones(3, dtype=lib.float64)), True),
    ("prelu-2d-weight", lambda F, lib: F.prelu(lib.ones(2, 3), lib.ones(3, 1)), False),
    ("prelu-2d-weight-1", lambda F, lib: F.prelu(lib.ones(2, 3), lib.ones(1, 1)), False),
    ("prelu-int", lambda F, lib: F.prelu(lib.tensor([1, -2]), lib.tensor([1])), True),
    ("hardtanh-min-max", lambda F, lib: F.hardtanh(lib.ones(3), 2.0, 1.0), False),
    ("hardtanh-min-max-inplace", lambda F, lib: F.hardtanh(lib.ones(3), 2.0, 1.0, True), False),
    ("hardtanh-bool", lambda F, lib: F.hardtanh(lib.tensor([True])), False),
    ("threshold-bool", lambda F, lib: F.threshold(lib.tensor([True]), 0, 1), True),
    (
        "softshrink-negative",
        lambda F, lib: F.softshrink(lib.ones(3, dtype=lib.float64), -1.0),
        True,
    ),
    ("softshrink-half", lambda F, lib: F.softshrink(lib.ones(3), -0.5), True),
    ("softshrink-inf", lambda F, lib: F.softshrink(lib.ones(3), float("inf")), True),
    ("softshrink-too-large", lambda F, lib: F.softshrink(lib.ones(3), 1e300), True),
    ("softshrink-nan", lambda F, lib: F.softshrink(lib.ones(3), float("nan")), True),
    ("celu-alpha-0", lambda F, lib: F.celu(lib.ones(3), 0.0), False),
    ("celu_-alpha-0", lambda F, lib: F.celu_(lib.ones(3), 0.0), False),
    ("rrelu-bounds", lambda F, lib: F.rrelu(lib.ones(3), 0.5, 0.1), False),
    ("rrelu-bounds-training", lambda F, lib: F.rrelu(lib.ones(3), 0.5, 0.1, True), False),
    ("rrelu-int-training", lambda F, lib: F.rrelu(lib.tensor([1, -1]), training=True), True),
    (
        "bilinear-ndim",
        lambda F, lib: F.bilinear(lib.ones(2, 3), lib.ones(4), lib.ones(5, 3, 4)),
        False,
    ),
    (
        "bilinear-batch",
        lambda F, lib: F.bilinear(lib.ones(2, 3), lib.ones(3, 4), lib.ones(5, 3, 4)),
        False,
    ),
    (
        "bilinear-batch-dim-1",
        lambda F, lib: F.bilinear(lib.ones(2, 2, 3), lib.ones(2, 3, 4), lib.ones(5, 3, 4)),
        False,
    ),
    (
        "bilinear-in1",
        lambda F, lib: F.bilinear(lib.ones(2, 2), lib.ones(2, 4), lib.ones(5, 3, 4)),
        False,
    ),
    (
        "bilinear-in2",
        lambda F, lib: F.bilinear(lib.ones(2, 3), lib.ones(2, 5), lib.ones(5, 3, 4)),
        False,
    ),
    (
        "bilinear-bias",
        lambda F, lib: F.bilinear(lib.ones(2, 3), lib.ones(2, 4), lib.ones(5, 3, 4), lib.ones(6)),
        False,
    ),
    (
        "bilinear-bias-2d",
        lambda F, lib: F.bilinear(
            lib.ones(2, 3), lib.ones(2, 4), lib.ones(5, 3, 4), lib.ones(1, 5)
        ),
        False,
    ),
    (
        "bilinear-0d",
        lambda F, lib: F.bilinear(lib.tensor(1.0), lib.tensor(1.0), lib.ones(5, 1, 1)),
        False,
    ),
    (
        "bilinear-2d-weight",
        lambda F, lib: F.bilinear(lib.ones(2, 3), lib.ones(2, 4), lib.ones(5, 3)),
        False,
    ),
]
for _name in [
    "selu",
    "celu",
    "hardsigmoid",
    "hardswish",
    "mish",
    "logsigmoid",
    "hardshrink",
    "softshrink",
    "rrelu",
]:
    ERRORS.append(
        (f"{_name}-int", lambda F, lib, n=_name: getattr(F, n)(lib.tensor([1, -2])), True)
    )
for _name in ["elu_", "leaky_relu_"]:
    ERRORS.append(
        (f"{_name}-int", lambda F, lib, n=_name: getattr(F, n)(lib.tensor([1, -2])), True)
    )
for _name in ["celu", "selu", "hardtanh", "relu6", "hardsigmoid", "hardswish", "mish"]:
    ERRORS.append(
        (f"{_name}-complex", lambda F, lib, n=_name: getattr(F, n)(lib.tensor([1j, -1])), True)
    )
for _name in ["logsigmoid", "hardshrink", "softshrink", "rrelu", "glu", "elu_", "leaky_relu_"]:
    ERRORS.append(
        (f"{_name}-complex", lambda F, lib, n=_name: getattr(F, n)(lib.tensor([1j, -1])), True)
    )
ERRORS += [
    ("threshold-complex", lambda F, lib: F.threshold(lib.tensor([1j, 2.0]), 0.0, 1.0), True),
    ("rrelu-complex-training", lambda F, lib: F.rrelu(lib.tensor([1j, 2]), training=True), True),
    ("softmin-complex", lambda F, lib: F.softmin(lib.tensor([1j, 2.0]), 0), True),
    ("prelu-complex", lambda F, lib: F.prelu(lib.tensor([1j, 2]), lib.tensor([0.25 + 0j])), True),
]


@pytest.mark.parametrize(("name", "call", "scalar_names"), ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(torch, name, call, scalar_names):
    assert_same_error(
        lambda: call(A, tt),
        lambda: call(_torch_f(torch), torch),
        scalar_names=bool(scalar_names),
    )


@pytest.mark.parametrize("with_bias", [False, True])
def test_bilinear_dtype_mismatch_names_every_dtype(torch, with_bias):
    """PyTorch prints C++ type names (`float`, `double`); the shim NumPy's."""

    def call(F, lib):
        if with_bias:
            weight, bias = lib.ones(5, 3, 4), [lib.ones(5, dtype=lib.float64)]
        else:
            weight, bias = lib.ones(5, 3, 4, dtype=lib.float64), []
        return F.bilinear(lib.ones(2, 3), lib.ones(2, 4), weight, *bias)

    kind, msg = caught(lambda: call(A, tt))
    t_kind, t_msg = caught(lambda: call(_torch_f(torch), torch))
    t_msg = normalize_torch_message(t_msg).replace(": float", ": float32")
    assert (kind, msg) == (t_kind, t_msg.replace(": double", ": float64"))


MODULE_ERRORS = [
    ("PReLU-channels", lambda nn, lib: nn.PReLU(3)(lib.ones(2, 4))),
    ("Hardtanh-equal", lambda nn, lib: nn.Hardtanh(1.0, 1.0)),
    ("Hardtanh-reversed", lambda nn, lib: nn.Hardtanh(2.0, -1.0)),
    ("Softmax2d-2d", lambda nn, lib: nn.Softmax2d()(lib.ones(2, 3))),
    ("Softmax2d-5d", lambda nn, lib: nn.Softmax2d()(lib.ones(1, 1, 1, 1, 1))),
    ("Bilinear-in1-0", lambda nn, lib: nn.Bilinear(0, 3, 4)),
    ("Bilinear-shapes", lambda nn, lib: nn.Bilinear(3, 4, 5)(lib.ones(2, 3), lib.ones(2, 5))),
    ("GLU-odd", lambda nn, lib: nn.GLU()(lib.ones(3))),
    ("Softshrink-negative", lambda nn, lib: nn.Softshrink(-1.0)(lib.ones(2))),
]


@pytest.mark.parametrize(("name", "call"), MODULE_ERRORS, ids=[e[0] for e in MODULE_ERRORS])
def test_module_errors_match_torch(torch, name, call):
    assert_same_error(lambda: call(L, tt), lambda: call(torch.nn, torch), scalar_names=True)


def test_signatures_match_torch(torch):
    """The Python-level functions and every Module take PyTorch's parameters and defaults."""
    import inspect

    names = ["celu", "glu", "hardsigmoid", "hardswish", "hardtanh", "mish", "relu6", "rrelu"]
    names += ["selu", "softmin", "softsign", "tanhshrink", "threshold"]
    for name in names:
        ours = inspect.signature(getattr(A, name))
        theirs = inspect.signature(getattr(_torch_f(torch), name))
        assert [(p.name, p.default) for p in ours.parameters.values()] == [
            (p.name, p.default) for p in theirs.parameters.values()
        ], name
    for cls in {c for c, _, _ in MODULES} - {"LogSigmoid", "Softsign", "Tanhshrink", "Softmax2d"}:
        ours = inspect.signature(getattr(L, cls).__init__)
        theirs = inspect.signature(getattr(torch.nn, cls).__init__)
        assert [(p.name, p.default) for p in ours.parameters.values()] == [
            (p.name, p.default) for p in theirs.parameters.values()
        ], cls


# -- gumbel_softmax --------------------------------------------------------------------------------


@pytest.mark.parametrize("hard", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gumbel_softmax_draws_torchs_noise_after_the_same_seed(torch, hard, dtype):
    x = np.random.default_rng(4).standard_normal((4, 6)).astype(dtype)
    weights = np.arange(24.0).reshape(4, 6).astype(dtype)
    results = []
    for lib in (tt, torch):
        lib.manual_seed(11)
        leaf = lib.tensor(x, requires_grad=True)
        y = lib.nn.functional.gumbel_softmax(leaf, tau=0.5, hard=hard, dim=0)
        (y * lib.tensor(weights)).sum().backward()
        results.append([y.detach().numpy(), leaf.grad.numpy(), lib.rand(2).numpy()])
    rtol = 1e-5 if dtype == "float32" else 1e-12
    for ours, theirs in zip(*results, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol)
    if hard:
        np.testing.assert_array_equal(results[0][0].sum(axis=0), 1.0)  # one-hot along dim


def test_gumbel_softmax_warns_on_eps_as_torch(torch):
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated and has no effect."):
        tt.nn.functional.gumbel_softmax(tt.zeros(3), eps=0.1)
