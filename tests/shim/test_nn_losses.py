"""tracegrad.torch.nn's losses against torch.nn's: every functional loss and its module, each
`reduction` and the legacy `size_average` / `reduce`, values and gradients (of inputs, targets,
weights and variances where torch has them) in float64 and float32 from identical arrays;
CrossEntropyLoss and NLLLoss (weights, ignore_index, label smoothing, probability targets);
torch's warnings and messages for bad input; CTC out of scope.

The losses are imported from their modules (`losses`, `losses_margin`, `loss_layers`), so the
tests run before `nn` and `nn.functional` re-export them.
"""

from __future__ import annotations

import warnings
from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest

import tracegrad.torch as tt
import tracegrad.torch.nn.functional as F_existing
from tests.shim import torch_oracle
from tests.shim.torch_oracle import torch_one_thread  # noqa: F401 - the `torch` fixture
from tracegrad.torch.nn import distance, loss_layers, losses, losses_margin

# our `nn.functional` and `nn` as they will be once wired: the existing ones plus the new modules
F = SimpleNamespace(
    **{
        **{n: getattr(F_existing, n) for n in F_existing.__all__},
        **{n: getattr(m, n) for m in (losses, losses_margin, distance) for n in m.__all__},
    }
)
NN = SimpleNamespace(
    **{n: getattr(m, n) for m in (loss_layers, distance) for n in m.__all__},
    CrossEntropyLoss=tt.nn.CrossEntropyLoss,
    NLLLoss=tt.nn.NLLLoss,
)

assert_same_error = partial(torch_oracle.assert_same_error, scalar_names=True)
REDUCTIONS = ("none", "mean", "sum")
DTYPES = {"float64": (np.float64, 1e-10, 1e-12), "float32": (np.float32, 3e-5, 1e-6)}
rng = np.random.default_rng(0)


def _cast(a: np.ndarray, dtype) -> np.ndarray:
    return a.astype(dtype) if a.dtype.kind == "f" else a


def compare(torch, call, *arrays, dtype="float64", frozen=()):
    """`call(lib, *tensors)` in tracegrad (`lib` our namespace) and torch (`lib` torch's):
    same value, dtype and shape, and the same gradient of every float input (against a random
    cotangent) wherever torch computes one. Inputs at the indices in `frozen` do not require
    grad."""
    np_dtype, rtol, atol = DTYPES[dtype]
    arrays = [_cast(np.asarray(a), np_dtype) for a in arrays]
    grad = [a.dtype.kind == "f" and i not in frozen for i, a in enumerate(arrays)]
    ours = [tt.tensor(a, requires_grad=g) for a, g in zip(arrays, grad)]
    theirs = [torch.tensor(a, requires_grad=g) for a, g in zip(arrays, grad)]
    lib_ours = SimpleNamespace(F=F, nn=NN, tensor=tt.tensor)
    lib_theirs = SimpleNamespace(F=torch.nn.functional, nn=torch.nn, tensor=torch.tensor)
    out, t_out = call(lib_ours, *ours), call(lib_theirs, *theirs)
    value, t_value = out.detach().numpy(), t_out.detach().numpy()
    assert value.shape == t_value.shape and value.dtype == t_value.dtype
    np.testing.assert_allclose(value, t_value, rtol=rtol, atol=atol)
    if not t_out.requires_grad:
        return
    seed = np.random.default_rng(1).standard_normal(value.shape).astype(np_dtype)
    (out * tt.tensor(seed)).sum().backward()
    (t_out * torch.tensor(seed)).sum().backward()
    for i, (x, t) in enumerate(zip(ours, theirs)):
        if t.requires_grad and t.grad is not None:
            assert x.grad is not None, f"input {i}: torch has a gradient, tracegrad none"
            np.testing.assert_allclose(
                x.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"input {i}"
            )


def probabilities(*shape):
    return rng.uniform(0.05, 0.95, shape)


def signs(*shape):
    return rng.choice([-1.0, 1.0], shape)


# -- binary cross entropy -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(torch, reduction, dtype):
    x, t, w = probabilities(3, 4), rng.uniform(0, 1, (3, 4)), rng.uniform(0.5, 2, 4)
    compare(
        torch,
        lambda L, x, t: L.F.binary_cross_entropy(x, t, reduction=reduction),
        x,
        t,
        dtype=dtype,
    )
    compare(
        torch,
        lambda L, x, t, w: L.F.binary_cross_entropy(x, t, w, reduction=reduction),
        x,
        t,
        w,
        dtype=dtype,
        frozen=(2,),
    )
    compare(
        torch,
        lambda L, x, t, w: L.nn.BCELoss(w, reduction=reduction)(x, t),
        x,
        t,
        w,
        dtype=dtype,
        frozen=(2,),
    )


def test_binary_cross_entropy_clamps_the_log_at_minus_100(torch):
    x = np.array([0.0, 1.0, 0.0, 1.0, 0.5])
    t = np.array([1.0, 0.0, 0.0, 1.0, 0.3])
    out = losses.binary_cross_entropy(tt.tensor(x), tt.tensor(t), reduction="none")
    t_out = torch.nn.functional.binary_cross_entropy(
        torch.tensor(x), torch.tensor(t), reduction="none"
    )
    np.testing.assert_allclose(out.numpy(), t_out.numpy(), rtol=1e-12)
    assert out.numpy()[0] == 100.0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(torch, reduction, dtype):
    x, t = rng.standard_normal((3, 4)) * 3, rng.uniform(0, 1, (3, 4))
    w, pw = rng.uniform(0.5, 2, (3, 1)), rng.uniform(0.5, 3, 4)

    def call(L, x, t, w, pw):
        return L.F.binary_cross_entropy_with_logits(x, t, w, reduction=reduction, pos_weight=pw)

    compare(torch, call, x, t, w, pw, dtype=dtype, frozen=(2, 3))
    compare(
        torch,
        lambda L, x, t: L.F.binary_cross_entropy_with_logits(x, t, reduction=reduction),
        x,
        t,
        dtype=dtype,
    )
    compare(
        torch,
        lambda L, x, t, pw: L.nn.BCEWithLogitsLoss(reduction=reduction, pos_weight=pw)(x, t),
        x,
        t,
        pw,
        dtype=dtype,
        frozen=(2,),
    )


def test_binary_cross_entropy_with_logits_is_stable_and_exact_at_zero(torch):
    x = np.array([-1000.0, -30.0, 0.0, 30.0, 1000.0])
    t = np.array([1.0, 0.2, 0.5, 0.0, 0.7])
    compare(
        torch, lambda L, x, t: L.F.binary_cross_entropy_with_logits(x, t, reduction="none"), x, t
    )


def test_bce_with_logits_module_keeps_weights_in_state_dict(torch):
    ours = loss_layers.BCEWithLogitsLoss(pos_weight=tt.ones(2))
    theirs = torch.nn.BCEWithLogitsLoss(pos_weight=torch.ones(2))
    assert list(ours.state_dict()) == list(theirs.state_dict()) == ["pos_weight"]
    assert repr(ours) == repr(theirs) == "BCEWithLogitsLoss()"


@pytest.mark.parametrize("name", [n for n in loss_layers.__all__ if n != "CTCLoss"])
def test_module_reprs_and_buffers(torch, name):
    ours, theirs = getattr(loss_layers, name)(), getattr(torch.nn, name)()
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.reduction == theirs.reduction


# -- regression -----------------------------------------------------------------------------------

REGRESSION = {
    "l1": lambda L, x, t, r: L.F.l1_loss(x, t, reduction=r),
    "smooth_l1": lambda L, x, t, r: L.F.smooth_l1_loss(x, t, reduction=r),
    "smooth_l1_beta": lambda L, x, t, r: L.F.smooth_l1_loss(x, t, reduction=r, beta=0.4),
    "smooth_l1_beta0": lambda L, x, t, r: L.F.smooth_l1_loss(x, t, reduction=r, beta=0.0),
    "huber": lambda L, x, t, r: L.F.huber_loss(x, t, reduction=r),
    "huber_delta": lambda L, x, t, r: L.F.huber_loss(x, t, reduction=r, delta=2.5),
    "L1Loss": lambda L, x, t, r: L.nn.L1Loss(reduction=r)(x, t),
    "SmoothL1Loss": lambda L, x, t, r: L.nn.SmoothL1Loss(reduction=r, beta=0.7)(x, t),
    "HuberLoss": lambda L, x, t, r: L.nn.HuberLoss(reduction=r, delta=0.6)(x, t),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name", REGRESSION)
def test_regression_losses(torch, name, reduction, dtype):
    x, t = rng.standard_normal((4, 5)) * 2, rng.standard_normal((4, 5))
    compare(torch, lambda L, x, t: REGRESSION[name](L, x, t, reduction), x, t, dtype=dtype)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_l1_and_huber_take_weights(torch, reduction):
    x, t, w = (
        rng.standard_normal((4, 5)) * 2,
        rng.standard_normal((4, 5)),
        rng.uniform(0, 2, (4, 5)),
    )
    compare(torch, lambda L, x, t, w: L.F.l1_loss(x, t, reduction=reduction, weight=w), x, t, w)
    compare(torch, lambda L, x, t, w: L.F.huber_loss(x, t, reduction, 0.8, w), x, t, w)


def test_regression_target_of_another_shape_warns_and_broadcasts(torch):
    x, t = rng.standard_normal((3, 4)), rng.standard_normal(4)
    for name in ("l1_loss", "smooth_l1_loss", "huber_loss"):
        for lib, make in ((F, tt.tensor), (torch.nn.functional, torch.tensor)):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                getattr(lib, name)(make(x), make(t))
            assert len(caught) == 1 and "Using a target size" in str(caught[0].message)
        with pytest.warns(UserWarning, match="Using a target size"):
            compare(torch, lambda L, x, t, name=name: getattr(L.F, name)(x, t), x, t)


# -- likelihoods ----------------------------------------------------------------------------------


def _log_softmax(a: np.ndarray) -> np.ndarray:
    a = a - a.max(-1, keepdims=True)
    return a - np.log(np.exp(a).sum(-1, keepdims=True))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ("none", "batchmean", "sum"))
def test_kl_div(torch, reduction, dtype):
    x = _log_softmax(rng.standard_normal((3, 5)))
    p = np.exp(_log_softmax(rng.standard_normal((3, 5))))
    compare(torch, lambda L, x, p: L.F.kl_div(x, p, reduction=reduction), x, p, dtype=dtype)
    p[0, 1] = 0.0  # xlogy: a zero probability contributes 0 (torch's target gradient is nan)
    compare(
        torch, lambda L, x, p: L.F.kl_div(x, p, reduction=reduction), x, p, dtype=dtype, frozen=(1,)
    )
    log_p = _log_softmax(rng.standard_normal((3, 5)))
    compare(
        torch,
        lambda L, x, t: L.nn.KLDivLoss(reduction=reduction, log_target=True)(x, t),
        x,
        log_p,
        dtype=dtype,
    )


def test_kl_div_mean_warns_as_torch(torch):
    x, p = (
        _log_softmax(rng.standard_normal((3, 5))),
        np.exp(_log_softmax(rng.standard_normal((3, 5)))),
    )

    def scenario(lib):
        fn = losses.kl_div if lib is tt else lib.nn.functional.kl_div
        return fn(lib.tensor(x), lib.tensor(p)), fn(
            lib.tensor(x)[0], lib.tensor(p)[0], reduction="batchmean"
        )

    torch_oracle.run_both(scenario, rtol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_poisson_nll_loss(torch, reduction, dtype):
    t = rng.poisson(2.0, (4, 3)).astype(float)
    t[0, 0], t[0, 1] = 0.0, 1.0
    log_rate = rng.standard_normal((4, 3))
    rate = rng.uniform(0.1, 3, (4, 3))
    for full in (False, True):
        compare(
            torch,
            lambda L, x, t, full=full: L.F.poisson_nll_loss(x, t, full=full, reduction=reduction),
            log_rate,
            t,
            dtype=dtype,
            frozen=(1,) if full else (),  # torch's target gradient is nan where t <= 1
        )
        compare(
            torch,
            lambda L, x, t, full=full: L.nn.PoissonNLLLoss(False, full, reduction=reduction)(x, t),
            rate,
            t,
            dtype=dtype,
            frozen=(1,),
        )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gaussian_nll_loss(torch, reduction, dtype):
    x, t = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    var = rng.uniform(0.2, 2, (4, 3))
    var[0, 0] = 1e-8  # below eps: clamped for the value, the gradient passes the clamp
    for v in (var, var[:, 0], var[:, :1]):
        compare(
            torch,
            lambda L, x, t, v: L.F.gaussian_nll_loss(x, t, v, reduction=reduction),
            x,
            t,
            v,
            dtype=dtype,
        )
    compare(
        torch,
        lambda L, x, t: L.nn.GaussianNLLLoss(full=True, eps=1e-3, reduction=reduction)(x, t, 0.7),
        x,
        t,
        dtype=dtype,
    )


# -- margin and embedding losses ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_losses(torch, reduction, dtype):
    r = reduction
    x1, x2, y = rng.standard_normal(7), rng.standard_normal(7), signs(7)
    compare(
        torch,
        lambda L, a, b, y: L.F.margin_ranking_loss(a, b, y, 0.3, reduction=r),
        x1,
        x2,
        y,
        dtype=dtype,
    )
    compare(
        torch,
        lambda L, a, b, y: L.nn.MarginRankingLoss(reduction=r)(a, b, y),
        x1,
        x2,
        y,
        dtype=dtype,
    )
    compare(
        torch, lambda L, x, y: L.F.hinge_embedding_loss(x, y, 0.5, reduction=r), x1, y, dtype=dtype
    )
    compare(torch, lambda L, x, y: L.nn.HingeEmbeddingLoss(reduction=r)(x, y), x1, y, dtype=dtype)
    x, ys = rng.standard_normal((3, 4)) * 2, signs(3, 4)
    soft = lambda L, x, y: L.F.soft_margin_loss(x, y, reduction=r)  # noqa: E731
    compare(torch, soft, x, ys, dtype=dtype, frozen=(1,))
    soft = lambda L, x, y: L.nn.SoftMarginLoss(reduction=r)(x, y)  # noqa: E731
    compare(torch, soft, x, ys, dtype=dtype, frozen=(1,))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_soft_margin_loss(torch, reduction, dtype):
    x, y, w = (
        rng.standard_normal((3, 4)) * 2,
        rng.integers(0, 2, (3, 4)).astype(float),
        rng.uniform(0.5, 2, 4),
    )
    compare(
        torch,
        lambda L, x, y: L.F.multilabel_soft_margin_loss(x, y, reduction=reduction),
        x,
        y,
        dtype=dtype,
    )
    compare(
        torch,
        lambda L, x, y, w: L.nn.MultiLabelSoftMarginLoss(w, reduction=reduction)(x, y),
        x,
        y,
        w,
        dtype=dtype,
        frozen=(2,),
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("p", (1, 2))
def test_multi_margin_loss(torch, p, reduction, dtype):
    x, y, w = rng.standard_normal((5, 4)), rng.integers(0, 4, 5), rng.uniform(0.5, 2, 4)
    compare(
        torch,
        lambda L, x, y: L.F.multi_margin_loss(x, y, p, 0.7, reduction=reduction),
        x,
        y,
        dtype=dtype,
    )
    compare(
        torch,
        lambda L, x, y, w: L.F.multi_margin_loss(x, y, p, weight=w, reduction=reduction),
        x,
        y,
        w,
        dtype=dtype,
        frozen=(2,),
    )
    compare(
        torch,
        lambda L, x, y: L.nn.MultiMarginLoss(p, reduction=reduction)(x, y),
        x[0],
        y[:1],
        dtype=dtype,
    )
    compare(
        torch,
        lambda L, x, y: L.F.multi_margin_loss(x, y, p, reduction=reduction),
        x[0],
        y[0],
        dtype=dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cosine_embedding_loss(torch, reduction, dtype):
    x1, x2, y = rng.standard_normal((6, 4)), rng.standard_normal((6, 4)), signs(6)
    compare(
        torch,
        lambda L, a, b, y: L.F.cosine_embedding_loss(a, b, y, reduction=reduction),
        x1,
        x2,
        y,
        dtype=dtype,
    )
    compare(
        torch,
        lambda L, a, b, y: L.nn.CosineEmbeddingLoss(0.2, reduction=reduction)(a, b, y),
        x1,
        x2,
        y,
        dtype=dtype,
    )
    compare(
        torch,
        lambda L, a, b, y: L.F.cosine_embedding_loss(a, b, y, -0.5, reduction=reduction),
        x1[0],
        x2[0],
        np.array(-1.0),
        dtype=dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(("p", "swap"), [(2, False), (2, True), (1, False), (3, True)])
def test_triplet_margin_loss(torch, p, swap, reduction, dtype):
    a, pos, neg = (rng.standard_normal((5, 4)) for _ in range(3))

    def functional(L, a, pos, neg):
        return L.F.triplet_margin_loss(a, pos, neg, 1.5, p, swap=swap, reduction=reduction)

    def module(L, a, pos, neg):
        return L.nn.TripletMarginLoss(0.8, p, 1e-3, swap, reduction=reduction)(a, pos, neg)

    compare(torch, functional, a, pos, neg, dtype=dtype)
    compare(torch, module, a, pos, neg, dtype=dtype)


# -- legacy size_average / reduce -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("size_average", "reduce"),
    [(None, False), (False, None), (True, True), (False, True), (True, None)],
)
def test_legacy_size_average_and_reduce(torch, size_average, reduce):
    x, t = probabilities(3, 4), rng.uniform(0, 1, (3, 4))
    kw = {"size_average": size_average, "reduce": reduce}

    def scenario(lib):
        f = F if lib is tt else lib.nn.functional
        n = NN if lib is tt else lib.nn
        a, b = lib.tensor(x), lib.tensor(t)
        return (
            f.binary_cross_entropy(a, b, **kw),
            f.l1_loss(a, b, **kw),
            f.kl_div(a, b, **kw),
            f.smooth_l1_loss(a, b, **kw),
            f.soft_margin_loss(a, b, **kw),
            n.L1Loss(**kw)(a, b),
            n.SmoothL1Loss(**kw)(a, b),
            n.BCELoss(**kw).reduction,
        )

    torch_oracle.run_both(scenario, rtol=1e-12)


# -- CrossEntropyLoss and NLLLoss (existing, in nn.functional) ------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", (0.0, 0.2))
def test_cross_entropy_weights_ignore_index_smoothing(torch, smoothing, reduction, dtype):
    x, y, w = rng.standard_normal((6, 4)), rng.integers(0, 4, 6), rng.uniform(0.5, 2, 4)
    y[2] = -100
    y_k = rng.integers(0, 4, (6, 3))
    y_k[0, 1] = 1

    def call(L, x, y, w):
        loss = L.nn.CrossEntropyLoss(w, reduction=reduction, label_smoothing=smoothing)
        return loss(x, y)

    compare(torch, call, x, y, w, dtype=dtype, frozen=(2,))
    compare(
        torch,
        lambda L, x, y: L.F.cross_entropy(
            x, y, ignore_index=1, reduction=reduction, label_smoothing=smoothing
        ),
        rng.standard_normal((6, 4, 3)),
        y_k,
        dtype=dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", (0.0, 0.3))
def test_cross_entropy_probability_targets(torch, smoothing, reduction, dtype):
    x, w = rng.standard_normal((5, 4)), rng.uniform(0.5, 2, 4)
    p = np.exp(_log_softmax(rng.standard_normal((5, 4))))
    compare(
        torch,
        lambda L, x, p, w: L.F.cross_entropy(
            x, p, w, reduction=reduction, label_smoothing=smoothing
        ),
        x,
        p,
        w,
        dtype=dtype,
        frozen=(2,),
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss_weights_and_ignore_index(torch, reduction, dtype):
    x, y, w = (
        _log_softmax(rng.standard_normal((6, 4))),
        rng.integers(0, 4, 6),
        rng.uniform(0.5, 2, 4),
    )
    y[3] = 2

    def call(L, x, y, w):
        return L.nn.NLLLoss(w, ignore_index=2, reduction=reduction)(x, y)

    compare(torch, call, x, y, w, dtype=dtype, frozen=(2,))


# -- messages -------------------------------------------------------------------------------------


def _pair(torch, shape_x, shape_t, dtype_t=np.float64):
    x, t = probabilities(*shape_x), rng.uniform(0, 1, shape_t).astype(dtype_t)
    return (tt.tensor(x), tt.tensor(t)), (torch.tensor(x), torch.tensor(t))


def test_bce_target_size_mismatch_message(torch):
    ours, theirs = _pair(torch, (3, 4), (3, 5))
    assert_same_error(
        lambda: F.binary_cross_entropy(*ours),
        lambda: torch.nn.functional.binary_cross_entropy(*theirs),
    )
    with pytest.raises(ValueError, match=r"Using a target size \(\(3, 5\)\) that is different"):
        F.binary_cross_entropy(*ours)
    assert_same_error(
        lambda: F.binary_cross_entropy_with_logits(*ours),
        lambda: torch.nn.functional.binary_cross_entropy_with_logits(*theirs),
    )


def test_bce_input_outside_zero_one_message(torch):
    ours, theirs = _pair(torch, (3,), (3,))
    with pytest.raises(RuntimeError, match="all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(ours[0] * 3, ours[1])
    assert_same_error(
        lambda: F.binary_cross_entropy(ours[0] * 3, ours[1]),
        lambda: torch.nn.functional.binary_cross_entropy(theirs[0] * 3, theirs[1]),
    )


@pytest.mark.parametrize("name", ["cross_entropy", "nll_loss"])
@pytest.mark.parametrize("target_dtype", [np.float32, np.float64, np.int32])
def test_class_index_target_of_the_wrong_dtype_message(torch, name, target_dtype):
    ours, theirs = _pair(torch, (3, 4), (3,), target_dtype)
    with pytest.raises(RuntimeError, match="expected target dtype to be int64 or uint8"):
        getattr(F, name)(*ours)
    assert_same_error(
        lambda: getattr(F, name)(*ours), lambda: getattr(torch.nn.functional, name)(*theirs)
    )


def test_probability_target_of_an_integer_dtype_message(torch):
    x = rng.standard_normal((3, 4))
    y = rng.integers(0, 2, (3, 4)).astype(np.int32)
    assert_same_error(
        lambda: F.cross_entropy(tt.tensor(x), tt.tensor(y)),
        lambda: torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(y)),
    )


def _errors(torch):
    """(our call, torch's call) pairs that must raise the same error."""
    tf = torch.nn.functional
    x, t = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    a, b = tt.tensor(x), tt.tensor(t)
    ta, tb = torch.tensor(x), torch.tensor(t)
    labels = np.array([0, 1, 5])
    return {
        "beta": (
            lambda: F.smooth_l1_loss(a, b, beta=-1.0),
            lambda: tf.smooth_l1_loss(ta, tb, beta=-1.0),
        ),
        "delta": (lambda: F.huber_loss(a, b, delta=0.0), lambda: tf.huber_loss(ta, tb, delta=0.0)),
        "reduction": (
            lambda: F.l1_loss(a, b, reduction="avg"),
            lambda: tf.l1_loss(ta, tb, reduction="avg"),
        ),
        "batchmean": (
            lambda: F.poisson_nll_loss(a, b, reduction="batchmean"),
            lambda: tf.poisson_nll_loss(ta, tb, reduction="batchmean"),
        ),
        "triplet_margin": (
            lambda: F.triplet_margin_loss(a, a, a, margin=0),
            lambda: tf.triplet_margin_loss(ta, ta, ta, margin=0),
        ),
        "triplet_dims": (
            lambda: F.triplet_margin_loss(a, a, a[0]),
            lambda: tf.triplet_margin_loss(ta, ta, ta[0]),
        ),
        "triplet_module": (
            lambda: NN.TripletMarginLoss(-1.0),
            lambda: torch.nn.TripletMarginLoss(-1.0),
        ),
        "multi_margin_p": (
            lambda: F.multi_margin_loss(a, tt.tensor(labels), p=3),
            lambda: tf.multi_margin_loss(ta, torch.tensor(labels), p=3),
        ),
        "multi_margin_range": (
            lambda: F.multi_margin_loss(a, tt.tensor(labels)),
            lambda: tf.multi_margin_loss(ta, torch.tensor(labels)),
        ),
        "multi_margin_dtype": (
            lambda: F.multi_margin_loss(a, tt.tensor(labels * 0.5)),
            lambda: tf.multi_margin_loss(ta, torch.tensor(labels * 0.5)),
        ),
        "multi_margin_target_size": (
            lambda: F.multi_margin_loss(a, tt.tensor(labels[:2])),
            lambda: tf.multi_margin_loss(ta, torch.tensor(labels[:2])),
        ),
        "margin_ranking_dims": (
            lambda: F.margin_ranking_loss(a, b, a[0]),
            lambda: tf.margin_ranking_loss(ta, tb, ta[0]),
        ),
        "cosine_embedding_dims": (
            lambda: F.cosine_embedding_loss(a, b, a),
            lambda: tf.cosine_embedding_loss(ta, tb, ta),
        ),
        "cosine_embedding_1d": (
            lambda: F.cosine_embedding_loss(a, b, a[0, 0]),
            lambda: tf.cosine_embedding_loss(ta, tb, ta[0, 0]),
        ),
        "gaussian_negative": (
            lambda: F.gaussian_nll_loss(a, b, -1.0),
            lambda: tf.gaussian_nll_loss(ta, tb, -1.0),
        ),
        "gaussian_size": (
            lambda: F.gaussian_nll_loss(a, b, tt.ones(2)),
            lambda: tf.gaussian_nll_loss(ta, tb, torch.ones(2)),
        ),
        "weight_size": (
            lambda: F.l1_loss(a, b, weight=tt.ones(4)),
            lambda: tf.l1_loss(ta, tb, weight=torch.ones(4)),
        ),
    }


@pytest.mark.parametrize(
    "case",
    [
        "beta",
        "delta",
        "reduction",
        "batchmean",
        "triplet_margin",
        "triplet_dims",
        "triplet_module",
        "multi_margin_p",
        "multi_margin_range",
        "multi_margin_dtype",
        "multi_margin_target_size",
        "margin_ranking_dims",
        "cosine_embedding_dims",
        "cosine_embedding_1d",
        "gaussian_negative",
        "gaussian_size",
        "weight_size",
    ],
)
def test_bad_input_messages(torch, case):
    ours, theirs = _errors(torch)[case]
    assert_same_error(ours, theirs)


def test_ctc_is_out_of_scope():
    with pytest.raises(NotImplementedError, match="ctc_loss .* out of scope"):
        F.ctc_loss(tt.zeros(5, 2, 3), tt.zeros(2, 2), tt.tensor([5, 5]), tt.tensor([2, 2]))
    with pytest.raises(NotImplementedError, match="out of scope"):
        NN.CTCLoss()


def test_cross_entropy_nll_mse_take_legacy_arguments_and_negative_smoothing(torch):
    x, y = rng.standard_normal((5, 4)), rng.integers(0, 4, 5)

    def scenario(lib):
        f = F if lib is tt else lib.nn.functional
        n = tt.nn if lib is tt else lib.nn
        a, b = lib.tensor(x), lib.tensor(y)
        return (
            f.cross_entropy(a, b, size_average=False),
            f.nll_loss(a, b, reduce=False),
            f.mse_loss(a, a * 2, size_average=False, reduce=True),
            n.CrossEntropyLoss(reduce=False)(a, b),
            f.cross_entropy(a, b, label_smoothing=-0.1),
        )

    torch_oracle.run_both(scenario, rtol=1e-12)
