"""tracegrad.torch.nn against torch.nn: registration and names, state dicts, layers and losses
(values and gradients in float64 with the same weights), initialisation, messages; and the
example."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import warnings
from collections import OrderedDict
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad.torch as tt
import tracegrad.torch.nn as nn
import tracegrad.torch.nn.functional as F
import tracegrad.torch.optim as optim
from tests.shim import torch_oracle
from tests.shim.torch_oracle import torch_one_thread  # noqa: F401 - the `torch` fixture

ROOT = Path(__file__).resolve().parents[2]

# -- oracle helpers --------------------------------------------------------------------------

# nn's messages name scalar types too (`expected scalar type Float`): normalize those as well
normalize_torch_message = partial(torch_oracle.normalize_torch_message, scalar_names=True)
assert_same_error = partial(torch_oracle.assert_same_error, scalar_names=True)


def to_torch(torch, t, requires_grad=False):
    value = t.detach().numpy() if isinstance(t, tt.Tensor) else t
    return torch.tensor(np.array(value), requires_grad=requires_grad)


def copy_weights(torch, ours: nn.Module, theirs) -> None:
    """The torch module takes our module's values (same names, same order)."""
    sd = {k: to_torch(torch, v) for k, v in ours.state_dict().items()}
    theirs.load_state_dict(sd)


def assert_close(ours, theirs, rtol=1e-12, atol=1e-14) -> None:
    a = ours.detach().numpy() if isinstance(ours, tt.Tensor) else np.asarray(ours)
    b = theirs.detach().numpy()
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def both_grads(torch, f_ours, f_theirs, *arrays, rtol=1e-12):
    """Values and gradients (w.r.t. every float array) of a scalar-valued function in both
    libraries agree."""
    xs = [tt.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    ts = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out, t_out = f_ours(*xs), f_theirs(*ts)
    assert_close(out, t_out, rtol)
    seed = np.random.default_rng(0).standard_normal(out.shape)
    (out * tt.tensor(seed)).sum().backward()
    (t_out * torch.tensor(seed)).sum().backward()
    for x, t in zip(xs, ts):
        if t.requires_grad:
            assert_close(x.grad, t.grad, rtol)


# -- Parameter ---------------------------------------------------------------------------------


def test_parameter_is_a_leaf_tensor_that_requires_grad(torch):
    p = nn.Parameter(tt.zeros(2))
    assert isinstance(p, tt.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert repr(p) == repr(torch.nn.Parameter(torch.zeros(2)))
    q = nn.Parameter(tt.zeros(2), requires_grad=False)
    assert not q.requires_grad
    assert not isinstance(p * 2, nn.Parameter)  # results of operations are plain tensors


def test_parameter_shares_the_tensors_storage():
    t = tt.tensor([1.0, 2.0])
    p = nn.Parameter(t)
    with tt.no_grad():
        p.mul_(3)
    np.testing.assert_array_equal(t.numpy(), [3.0, 6.0])
    assert t._version == p._version == 1


# -- Module: registration, names, walking --------------------------------------------------------


def _nested(lib):
    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = lib.nn.Linear(3, 4, dtype=lib.float64)
            self.scale = lib.nn.Parameter(lib.ones(4, dtype=lib.float64))
            self.register_buffer("count", lib.zeros(1, dtype=lib.float64))
            self.register_buffer("scratch", lib.zeros(1, dtype=lib.float64), persistent=False)
            self.plain = lib.zeros(2)  # a plain tensor attribute: not registered

        def forward(self, x):
            return self.inner(x) * self.scale

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = lib.nn.Sequential(Block(), lib.nn.Tanh())
            self.heads = lib.nn.ModuleList(
                [
                    lib.nn.Linear(4, 2, dtype=lib.float64),
                    lib.nn.Linear(4, 1, bias=False, dtype=lib.float64),
                ]
            )

        def forward(self, x):
            h = self.body(x)
            return self.heads[0](h).sum() + self.heads[1](h).sum()

    return Net()


def test_names_children_and_modules_match_torch(torch):
    ours, theirs = _nested(tt), _nested(torch)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    assert [type(m).__name__ for m in ours.modules()] == [
        type(m).__name__ for m in theirs.modules()
    ]
    assert [n for n, _ in ours.named_children()] == ["body", "heads"]
    assert len(list(ours.parameters())) == 6
    assert [n for n, _ in ours.body[0].named_parameters(prefix="x", recurse=False)] == ["x.scale"]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert ours.get_submodule("body.0.inner") is ours.body[0].inner


def test_shared_parameters_are_listed_once(torch):
    def build(lib):
        lin = lib.nn.Linear(2, 2)
        return lib.nn.Sequential(lin, lib.nn.ReLU(), lin)

    ours, theirs = build(tt), build(torch)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_train_eval_and_apply_order(torch):
    ours, theirs = _nested(tt), _nested(torch)
    assert ours.training
    assert ours.eval() is ours
    assert not any(m.training for m in ours.modules())
    ours.train()
    assert all(m.training for m in ours.modules())
    seen, t_seen = [], []
    ours.apply(lambda m: seen.append(type(m).__name__))
    theirs.apply(lambda m: t_seen.append(type(m).__name__))
    assert seen == t_seen
    assert_same_error(lambda: ours.train("x"), lambda: theirs.train("x"))


def test_forward_backward_and_zero_grad(torch):
    ours, theirs = _nested(tt), _nested(torch)
    copy_weights(torch, ours, theirs)
    x = np.random.default_rng(1).standard_normal((5, 3))
    out, t_out = ours(tt.tensor(x)), theirs(torch.tensor(x))
    assert_close(out, t_out)
    out.backward()
    t_out.backward()
    for p, tp in zip(ours.parameters(), theirs.parameters()):
        assert_close(p.grad, tp.grad)
    grads = [p.grad for p in ours.parameters()]
    ours.zero_grad(set_to_none=False)
    assert all(p.grad is g and not g.numpy().any() for p, g in zip(ours.parameters(), grads))
    ours.zero_grad()
    assert all(p.grad is None for p in ours.parameters())


def test_setattr_rules_and_messages(torch):
    lin, t_lin = nn.Linear(2, 3), torch.nn.Linear(2, 3)

    def assign(module, value):
        module.weight = value

    assert_same_error(lambda: assign(lin, tt.zeros(3, 2)), lambda: assign(t_lin, torch.zeros(3, 2)))
    assert_same_error(
        lambda: lin.register_parameter("c", tt.zeros(2)),
        lambda: t_lin.register_parameter("c", torch.zeros(2)),
    )
    for name in ("a.b", ""):
        assert_same_error(
            lambda name=name: lin.register_parameter(name, None),
            lambda name=name: t_lin.register_parameter(name, None),
        )
    assert_same_error(
        lambda: lin.add_module("a.b", nn.ReLU()), lambda: t_lin.add_module("a.b", torch.nn.ReLU())
    )
    assert_same_error(lambda: lin.add_module("x", 3), lambda: t_lin.add_module("x", 3))
    assert_same_error(lambda: lin.foo, lambda: t_lin.foo)
    assert_same_error(lambda: nn.Module()(1), lambda: torch.nn.Module()(1))

    def early(lib, what):
        class M(lib.nn.Module):
            def __init__(self):
                if what == "param":
                    self.w = lib.nn.Parameter(lib.zeros(2))
                else:
                    self.l = lib.nn.Identity()

        return M()

    for what in ("param", "module"):
        assert_same_error(lambda w=what: early(tt, w), lambda w=what: early(torch, w))
    # a parameter set to None stays registered; deleting removes it
    lin.bias = None
    assert "bias" in lin._parameters and [n for n, _ in lin.named_parameters()] == ["weight"]
    del lin.weight
    assert list(lin.named_parameters()) == []


# -- state dicts -------------------------------------------------------------------------------


def test_state_dict_round_trip_with_torch(torch):
    ours, theirs = _nested(tt), _nested(torch)
    # torch's values (as NumPy arrays) load into tracegrad, and back
    result = ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    assert repr(result) == "<All keys matched successfully>"
    for (k, v), (tk, tv) in zip(ours.state_dict().items(), theirs.state_dict().items()):
        assert k == tk
        assert_close(v, tv, rtol=0, atol=0)
    copy_weights(torch, ours, theirs)  # tracegrad tensors -> torch
    sd = ours.state_dict()
    assert not any(v.requires_grad for v in sd.values())
    assert sd["body.0.scale"]._cell is ours.body[0].scale._cell  # shares storage, as torch's
    kept = ours.state_dict(keep_vars=True)
    assert kept["body.0.scale"] is ours.body[0].scale


def test_load_state_dict_messages(torch):
    lin, t_lin = nn.Linear(2, 3), torch.nn.Linear(2, 3)
    cases = [
        {"weight": np.zeros((3, 2)), "foo": np.zeros(1)},
        {"weight": np.zeros((2, 2)), "bias": np.zeros(3)},
        {"weight": 3, "bias": np.zeros(3)},
        {"weight": np.zeros((2, 2)), "foo": np.zeros(1)},
    ]
    for sd in cases:
        t_sd = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in sd.items()}
        ours, theirs = partial(lin.load_state_dict, sd), partial(t_lin.load_state_dict, t_sd)
        assert_same_error(ours, theirs)
        # the whole message (every listed problem), normalized line by line
        ours_lines = caught_full(ours).split("\n")
        theirs_lines = caught_full(theirs).split("\n")
        assert ours_lines == [normalize_torch_message(line) for line in theirs_lines]
    assert_same_error(lambda: lin.load_state_dict([1]), lambda: t_lin.load_state_dict([1]))
    sd = {"weight": np.ones((3, 2)), "foo": np.zeros(1)}
    t_sd = {k: torch.tensor(v) for k, v in sd.items()}
    assert repr(lin.load_state_dict(sd, strict=False)) == repr(
        t_lin.load_state_dict(t_sd, strict=False)
    )
    np.testing.assert_array_equal(lin.weight.detach().numpy(), np.ones((3, 2), np.float32))
    assert lin.weight.dtype == np.float32  # the checkpoint's float64 is cast to the parameter's


def caught_full(fn) -> str:
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return str(e)
    raise AssertionError("expected an exception")


def test_load_state_dict_keeps_parameter_objects_for_the_optimizer():
    lin = nn.Linear(2, 1)
    opt = optim.SGD(lin.parameters(), lr=1.0)
    w = lin.weight
    lin.load_state_dict({"weight": np.ones((1, 2)), "bias": np.zeros(1)})
    assert lin.weight is w and w._version == 2  # initialised once, loaded once
    lin(tt.ones(1, 2)).sum().backward()
    opt.step()
    np.testing.assert_allclose(lin.weight.detach().numpy(), [[0.0, 0.0]])
    lin.load_state_dict({"weight": np.full((1, 2), 5.0), "bias": np.zeros(1)}, assign=True)
    assert lin.weight is not w and isinstance(lin.weight, nn.Parameter)
    assert lin.weight.requires_grad


def test_to_double_float_keep_the_parameters():
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    params = list(model.parameters())
    opt = optim.SGD(model.parameters(), lr=0.1)
    model(tt.ones(1, 3)).sum().backward()
    assert model.double() is model
    assert [p.dtype for p in model.parameters()] == [np.float64, np.float64]
    assert all(p is q for p, q in zip(model.parameters(), params))
    assert all(p.grad.dtype == np.float64 for p in params)
    before = params[0].detach().numpy().copy()
    opt.step()
    np.testing.assert_allclose(params[0].detach().numpy(), before - 0.1 * params[0].grad.numpy())
    model.float()
    assert [p.dtype for p in model.parameters()] == [np.float32, np.float32]
    model.to(tt.float64)
    assert model[0].weight.dtype == np.float64
    model.to(dtype=tt.float32)
    assert model[0].bias.dtype == np.float32


def test_deepcopy_gives_independent_parameters():
    import copy

    model = nn.Sequential(nn.Linear(2, 3), nn.ReLU())
    twin = copy.deepcopy(model)
    assert isinstance(twin[0].weight, nn.Parameter) and twin[0].weight.requires_grad
    np.testing.assert_array_equal(twin[0].weight.detach().numpy(), model[0].weight.detach().numpy())
    with tt.no_grad():
        twin[0].weight.add_(1.0)
    assert not np.array_equal(twin[0].weight.detach().numpy(), model[0].weight.detach().numpy())


# -- containers and reprs ------------------------------------------------------------------------


def test_reprs_match_torch(torch):
    def build(lib):
        n = lib.nn
        return n.Sequential(
            n.Linear(2, 3),
            n.ReLU(),
            n.Sequential(n.Tanh(), n.Softmax(dim=1)),
            n.Flatten(),
            n.LogSoftmax(1),
            n.MSELoss(),
            n.CrossEntropyLoss(),
            n.Identity(),
            n.Sigmoid(),
            n.ModuleList([n.ReLU(), n.ReLU(), n.Linear(1, 1, bias=False)]),
            n.Softmax(),
            n.Flatten(0, 2),
        )

    assert repr(build(tt)) == repr(build(torch))
    assert repr(nn.ModuleList()) == repr(torch.nn.ModuleList())


def test_sequential_and_modulelist_indexing(torch):
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert isinstance(seq[-1], nn.Linear) and len(seq) == 3
    assert isinstance(seq[1:], nn.Sequential) and len(seq[1:]) == 2
    del seq[1]
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    seq.append(nn.Tanh())
    seq.insert(0, nn.Identity())
    assert [type(m).__name__ for m in seq] == ["Identity", "Linear", "Linear", "Tanh"]
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert [n for n, _ in named.named_parameters()] == ["fc.weight", "fc.bias"]
    assert_same_error(lambda: seq[7], lambda: torch.nn.Sequential(torch.nn.ReLU())[7])
    ml = nn.ModuleList([nn.ReLU()])
    ml += [nn.Tanh()]
    ml.append(nn.Sigmoid())
    ml.insert(1, nn.Identity())
    assert [type(m).__name__ for m in ml] == ["ReLU", "Identity", "Tanh", "Sigmoid"]
    assert_same_error(lambda: ml.extend(3), lambda: torch.nn.ModuleList().extend(3))


# -- layers: values and gradients against torch ------------------------------------------------


@given(data=st.data())
def test_linear_matches_torch(torch, data):
    n_in, n_out = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 5))
    lead = data.draw(st.sampled_from([(), (4,), (2, 3)]))
    bias = data.draw(st.booleans())
    lin = nn.Linear(n_in, n_out, bias=bias, dtype=tt.float64)
    t_lin = torch.nn.Linear(n_in, n_out, bias=bias, dtype=torch.float64)
    copy_weights(torch, lin, t_lin)
    x = np.random.default_rng(data.draw(st.integers(0, 99))).standard_normal(lead + (n_in,))
    xs, ts = tt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, t_out = lin(xs), t_lin(ts)
    assert_close(out, t_out)
    out.sum().backward()
    t_out.sum().backward()
    assert_close(xs.grad, ts.grad)
    for p, tp in zip(lin.parameters(), t_lin.parameters()):
        assert_close(p.grad, tp.grad)


def test_linear_initialisation_is_pytorchs_uniform():
    tt.manual_seed(3)
    a = nn.Linear(400, 300)
    tt.manual_seed(3)
    b = nn.Linear(400, 300)
    np.testing.assert_array_equal(a.weight.detach().numpy(), b.weight.detach().numpy())
    bound = 1 / math.sqrt(400)
    for p in (a.weight, a.bias):
        v = p.detach().numpy()
        assert v.dtype == np.float32 and np.abs(v).max() <= bound
    w = a.weight.detach().numpy().astype(np.float64)
    # U(-b, b): mean 0 and standard deviation b / sqrt(3), here over 120,000 draws
    assert abs(w.mean()) < 0.01 * bound and abs(w.std() / (bound / math.sqrt(3)) - 1) < 0.01
    assert a.weight.shape == (300, 400) and a.bias.shape == (300,)


def test_linear_messages(torch):
    lin, t_lin = nn.Linear(2, 3), torch.nn.Linear(2, 3)
    for shape in [(4, 5), (5,), (2, 4, 5)]:
        assert_same_error(partial(lin, tt.zeros(*shape)), partial(t_lin, torch.zeros(*shape)))
    assert_same_error(
        lambda: lin(tt.zeros(4, 2, dtype=tt.float64)),
        lambda: t_lin(torch.zeros(4, 2, dtype=torch.float64)),
    )


@pytest.mark.parametrize(
    "name", ["ReLU", "Tanh", "Sigmoid", "Identity", "Softmax", "LogSoftmax", "Flatten"]
)
def test_activation_layers_match_torch(torch, name):
    args = {"Softmax": (1,), "LogSoftmax": (-1,)}.get(name, ())
    x = np.random.default_rng(2).standard_normal((3, 4, 2)) * 3
    x[0, 0, 0] = 0.5  # away from relu's kink
    both_grads(torch, getattr(nn, name)(*args), getattr(torch.nn, name)(*args), x)


def test_functional_activations_match_torch(torch):
    x = np.random.default_rng(4).standard_normal((3, 5)) * 4
    tf = torch.nn.functional
    for ours, theirs in [
        (F.relu, tf.relu),
        (F.tanh, tf.tanh),
        (F.sigmoid, tf.sigmoid),
        (lambda a: F.softmax(a, dim=0), lambda a: tf.softmax(a, dim=0)),
        (lambda a: F.log_softmax(a, dim=1), lambda a: tf.log_softmax(a, dim=1)),
    ]:
        both_grads(torch, ours, theirs, x)


def test_softmax_without_dim_warns_as_torch(torch):
    x = np.zeros((3, 4))
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        out = F.softmax(tt.tensor(x))
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        t_out = torch.nn.functional.softmax(torch.tensor(x))
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]
    assert_close(out, t_out)


def test_softmax_and_log_softmax_are_stable(torch):
    x = np.array([[1000.0, 0.0, -1000.0], [1e4, 1e4, 1e4]])
    both_grads(torch, lambda a: F.log_softmax(a, 1), lambda a: torch.log_softmax(a, 1), x)
    both_grads(torch, lambda a: F.softmax(a, 1), lambda a: torch.softmax(a, 1), x)


# -- losses --------------------------------------------------------------------------------------

REDUCTIONS = ["mean", "sum", "none"]


@given(data=st.data())
def test_mse_loss_matches_torch(torch, data):
    shape = data.draw(st.sampled_from([(), (1,), (4,), (3, 2), (2, 0)]))
    reduction = data.draw(st.sampled_from(REDUCTIONS))
    if shape == (2, 0) and reduction == "mean":
        reduction = "sum"  # the mean of nothing: test_mean_of_empty_is_nan_without_warning
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    x, y = rng.standard_normal(shape), rng.standard_normal(shape)
    both_grads(
        torch,
        lambda a, b: F.mse_loss(a, b, reduction=reduction),
        lambda a, b: torch.nn.functional.mse_loss(a, b, reduction=reduction),
        x,
        y,
    )
    loss = nn.MSELoss(reduction=reduction)(tt.tensor(x), tt.tensor(y))
    assert_close(loss, torch.nn.MSELoss(reduction=reduction)(torch.tensor(x), torch.tensor(y)))


def test_mean_of_empty_is_nan_without_warning(torch):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = F.mse_loss(tt.zeros(2, 0), tt.zeros(2, 0))
    assert np.isnan(loss.item())
    assert torch.isnan(torch.nn.functional.mse_loss(torch.zeros(2, 0), torch.zeros(2, 0)))


def test_mse_loss_broadcast_warning_and_messages(torch):
    tf = torch.nn.functional
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        out = F.mse_loss(tt.zeros(3, 1, dtype=tt.float64), tt.ones(3, dtype=tt.float64))
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        t_out = tf.mse_loss(
            torch.zeros(3, 1, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
        )
    assert [str(w.message) for w in ours] == [normalize_torch_message(w.message) for w in theirs]
    assert_close(out, t_out)
    warnings.simplefilter("ignore")
    for a, b in [((3, 4), (3,)), ((2, 3, 4), (5, 4))]:
        assert_same_error(
            partial(F.mse_loss, tt.zeros(*a), tt.zeros(*b)),
            partial(tf.mse_loss, torch.zeros(*a), torch.zeros(*b)),
        )
    assert_same_error(
        lambda: F.mse_loss(tt.zeros(3), tt.zeros(3), reduction="foo"),
        lambda: tf.mse_loss(torch.zeros(3), torch.zeros(3), reduction="foo"),
    )


@given(data=st.data())
def test_cross_entropy_with_class_indices_matches_torch(torch, data):
    n, c = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 6))
    extra = data.draw(st.sampled_from([(), (3,)]))
    reduction = data.draw(st.sampled_from(REDUCTIONS))
    weighted = data.draw(st.booleans())
    smoothing = data.draw(st.sampled_from([0.0, 0.2]))
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    x = rng.standard_normal((n, c) + extra) * 3
    target = rng.integers(0, c, (n,) + extra)
    if data.draw(st.booleans()):  # some targets ignored
        target.flat[0] = -100
    weight = rng.uniform(0.5, 2.0, c) if weighted else None
    kw = {"reduction": reduction, "label_smoothing": smoothing}

    def ours(a, t):
        w = None if weight is None else tt.tensor(weight)
        return F.cross_entropy(a, t, weight=w, **kw)

    def theirs(a, t):
        w = None if weight is None else torch.tensor(weight)
        return torch.nn.functional.cross_entropy(a, t, weight=w, **kw)

    if reduction == "mean" and (target == -100).all():
        return  # 0 / 0: NaN in both, no gradient to compare
    both_grads(torch, ours, theirs, x, target)


@given(data=st.data())
def test_cross_entropy_with_probabilities_and_nll_match_torch(torch, data):
    n, c = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 5))
    reduction = data.draw(st.sampled_from(REDUCTIONS))
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    x = rng.standard_normal((n, c))
    probs = rng.dirichlet(np.ones(c), n)
    smoothing = data.draw(st.sampled_from([0.0, 0.1]))
    both_grads(
        torch,
        lambda a, p: F.cross_entropy(a, p, reduction=reduction, label_smoothing=smoothing),
        lambda a, p: torch.nn.functional.cross_entropy(
            a, p, reduction=reduction, label_smoothing=smoothing
        ),
        x,
        probs,
    )
    target = rng.integers(0, c, n)
    both_grads(
        torch,
        lambda a, t: F.nll_loss(F.log_softmax(a, 1), t, reduction=reduction),
        lambda a, t: torch.nn.functional.nll_loss(torch.log_softmax(a, 1), t, reduction=reduction),
        x,
        target,
    )
    loss = nn.NLLLoss(reduction=reduction)(tt.tensor(x), tt.tensor(target))
    assert_close(loss, torch.nn.NLLLoss(reduction=reduction)(torch.tensor(x), torch.tensor(target)))


def test_cross_entropy_one_sample_and_module(torch):
    x, t = np.array([0.5, -1.0, 2.0]), np.array(2)
    both_grads(torch, F.cross_entropy, torch.nn.functional.cross_entropy, x, t)
    # a (1,) target: torch's forward works but its backward fails ("size mismatch"), so values
    assert_close(
        F.cross_entropy(tt.tensor(x), tt.tensor([2])),
        torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor([2])),
    )
    loss = nn.CrossEntropyLoss(weight=tt.tensor([1.0, 2.0, 3.0], dtype=tt.float64))
    t_loss = torch.nn.CrossEntropyLoss(weight=torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    xs = np.random.default_rng(5).standard_normal((4, 3))
    ts = np.array([0, 2, 1, 2])
    assert_close(loss(tt.tensor(xs), tt.tensor(ts)), t_loss(torch.tensor(xs), torch.tensor(ts)))


def test_cross_entropy_large_logits_stay_finite(torch):
    x = np.array([[1000.0, 0.0, -1000.0], [0.0, 1000.0, 1000.0], [-1000.0, -1000.0, 1000.0]])
    t = np.array([0, 2, 1])
    xs = tt.tensor(x, requires_grad=True)
    loss = F.cross_entropy(xs, tt.tensor(t))
    loss.backward()
    assert np.isfinite(loss.item()) and np.isfinite(xs.grad.numpy()).all()
    both_grads(torch, F.cross_entropy, torch.nn.functional.cross_entropy, x, t)
    f32 = tt.tensor(x.astype(np.float32), requires_grad=True)
    F.cross_entropy(f32, tt.tensor(t)).backward()
    assert f32.grad.dtype == np.float32 and np.isfinite(f32.grad.numpy()).all()


def test_cross_entropy_messages(torch):
    tf = torch.nn.functional
    z, tz = tt.zeros(3, 4), torch.zeros(3, 4)
    cases = [
        (lambda lib: lib.tensor([0, 1, 2]), {"reduction": "foo"}),
        (lambda lib: lib.zeros(2, dtype=lib.int64), {}),
        (lambda lib: lib.tensor([0, 1, 5]), {}),
        (lambda lib: lib.tensor([0, 1, -3]), {}),
        (lambda lib: lib.zeros(3, 5), {}),
        (lambda lib: lib.zeros(3), {}),
        (lambda lib: lib.zeros(3, 4, dtype=lib.int64), {}),
        (lambda lib: lib.tensor([0, 1, 2], dtype=lib.int32), {}),
        (lambda lib: lib.tensor(1), {}),
        (lambda lib: lib.zeros(3, 4), {"ignore_index": 1}),
        (lambda lib: lib.tensor([0, 1, 2]), {"label_smoothing": 1.5}),
    ]
    for target, kw in cases:
        assert_same_error(
            partial(F.cross_entropy, z, target(tt), **kw),
            partial(tf.cross_entropy, tz, target(torch), **kw),
        )
    assert_same_error(
        lambda: F.cross_entropy(z, tt.tensor([0, 1, 2]), weight=tt.ones(3)),
        lambda: tf.cross_entropy(tz, torch.tensor([0, 1, 2]), weight=torch.ones(3)),
    )
    assert_same_error(
        lambda: F.cross_entropy(tt.zeros(4), tt.tensor([1, 2])),
        lambda: tf.cross_entropy(torch.zeros(4), torch.tensor([1, 2])),
    )
    assert_same_error(
        lambda: F.nll_loss(tt.zeros(3, 4, 5), tt.zeros(3, 6, dtype=tt.int64)),
        lambda: tf.nll_loss(torch.zeros(3, 4, 5), torch.zeros(3, 6, dtype=torch.long)),
    )


def test_nll_loss_all_ignored_is_nan_as_torch(torch):
    x, t = np.zeros((3, 4)), np.full(3, -100)
    for reduction in REDUCTIONS:
        ours = F.nll_loss(tt.tensor(x), tt.tensor(t), reduction=reduction)
        theirs = torch.nn.functional.nll_loss(torch.tensor(x), torch.tensor(t), reduction=reduction)
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


# -- init ----------------------------------------------------------------------------------------


def test_init_functions():
    tt.manual_seed(0)
    p = nn.Parameter(tt.empty(200, 300, dtype=tt.float64))
    assert nn.init.zeros_(p) is p and not p.detach().numpy().any() and p._version == 1
    nn.init.ones_(p)
    assert (p.detach().numpy() == 1).all()
    nn.init.constant_(p, 2.5)
    assert (p.detach().numpy() == 2.5).all()
    nn.init.normal_(p, 1.0, 2.0)
    v = p.detach().numpy()
    assert abs(v.mean() - 1.0) < 0.05 and abs(v.std() - 2.0) < 0.05
    nn.init.uniform_(p, -3.0, 1.0)
    v = p.detach().numpy()
    assert v.min() >= -3.0 and v.max() <= 1.0 and abs(v.mean() + 1.0) < 0.05
    nn.init.xavier_uniform_(p, gain=2.0)
    bound = 2.0 * math.sqrt(6.0 / 500)
    v = p.detach().numpy()
    assert np.abs(v).max() <= bound and abs(v.std() / (bound / math.sqrt(3)) - 1) < 0.02
    nn.init.kaiming_uniform_(p, nonlinearity="relu")
    bound = math.sqrt(2.0) * math.sqrt(3.0 / 300)
    v = p.detach().numpy()
    assert np.abs(v).max() <= bound and abs(v.std() / (bound / math.sqrt(3)) - 1) < 0.02
    nn.init.kaiming_uniform_(p, mode="fan_out")
    # a=0: the gain of leaky_relu with slope 0 is sqrt(2); fan_out is the first axis
    assert np.abs(p.detach().numpy()).max() <= math.sqrt(2.0) * math.sqrt(3.0 / 200)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None


def test_init_messages_and_gain(torch):
    ti = torch.nn.init
    assert_same_error(
        lambda: nn.init.xavier_uniform_(tt.zeros(3)), lambda: ti.xavier_uniform_(torch.zeros(3))
    )
    assert_same_error(
        lambda: nn.init.kaiming_uniform_(tt.zeros(3, 3), mode="foo"),
        lambda: ti.kaiming_uniform_(torch.zeros(3, 3), mode="foo"),
    )
    assert_same_error(lambda: nn.init.calculate_gain("foo"), lambda: ti.calculate_gain("foo"))
    for name, param in [
        ("linear", None),
        ("tanh", None),
        ("relu", None),
        ("leaky_relu", 0.2),
        ("selu", None),
        ("sigmoid", None),
    ]:
        assert nn.init.calculate_gain(name, param) == ti.calculate_gain(name, param)
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        nn.init.kaiming_uniform_(tt.zeros(3, 0))


# -- the example ---------------------------------------------------------------------------------


def test_train_mlp_example_loss_falls():
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "train_mlp.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr
    losses = [float(line.split()[1]) for line in run.stdout.strip().splitlines()]
    assert len(losses) >= 3 and all(np.isfinite(losses))
    assert losses[-1] < 0.01 * losses[0]


def test_train_mlp_example_prints_torchs_losses(tmp_path, torch):
    """The script seeds with `torch.manual_seed(0)` and builds its model and shuffled loader
    from the global stream: run as written and with its imports pointed back at torch, it
    prints the same losses (up to float32 summation order)."""
    source = (ROOT / "examples" / "train_mlp.py").read_text()
    theirs = source.replace("import tracegrad.torch as torch", "import torch")
    theirs = theirs.replace("from tracegrad.torch", "from torch")
    (tmp_path / "theirs.py").write_text(theirs)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    printed = []
    for script in (ROOT / "examples" / "train_mlp.py", tmp_path / "theirs.py"):
        run = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env
        )
        assert run.returncode == 0, run.stderr
        printed.append([float(line.split()[1]) for line in run.stdout.strip().splitlines()])
    np.testing.assert_allclose(printed[0], printed[1], rtol=1e-3)
