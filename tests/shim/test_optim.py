"""tracegrad.torch.optim against torch.optim: 20 training steps of the same small model on the same
data in float64 end at the same parameters (1e-12 relative) for every option of SGD, RMSprop,
Adam and AdamW; groups, state dicts, zero_grad, closures, versions and messages."""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pytest

import tracegrad.torch as tt
import tracegrad.torch.nn as nn
import tracegrad.torch.optim as optim
from tests.shim.torch_oracle import (
    assert_same_error,
    torch_one_thread,  # noqa: F401 - the `torch` fixture
)

# -- one small model trained in both libraries -------------------------------------------------


def build(lib, seed=0):
    """Linear(4, 8) -> Tanh -> Linear(8, 3), float64, the same weights in both libraries."""
    model = lib.nn.Sequential(
        lib.nn.Linear(4, 8, dtype=lib.float64),
        lib.nn.Tanh(),
        lib.nn.Linear(8, 3, dtype=lib.float64),
    )
    rng = np.random.default_rng(seed)
    model.load_state_dict(
        {k: lib.tensor(rng.uniform(-0.5, 0.5, v.shape)) for k, v in model.state_dict().items()}
    )
    return model


def batches(n=20, seed=1):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((6, 4)), rng.standard_normal((6, 3))) for _ in range(n)]


def train(lib, model, opt, data, loss_fn=None):
    loss_fn = loss_fn or lib.nn.MSELoss()
    losses = []
    for x, y in data:
        opt.zero_grad()
        loss = loss_fn(model(lib.tensor(x)), lib.tensor(y))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def values(model):
    return {k: np.array(v.detach().numpy()) for k, v in model.state_dict().items()}


def assert_params_equal(ours, theirs, rtol=1e-12) -> None:
    """Equal within `rtol` relative, element by element, where an element near zero is held to
    `rtol` times its tensor's largest magnitude (NumPy's and torch's matmul and sum round
    differently, and 20 steps of training can leave entries near zero)."""
    a, b = values(ours), values(theirs)
    assert a.keys() == b.keys()
    for k in a:
        scale = np.abs(b[k]).max(initial=0.0)
        np.testing.assert_allclose(a[k], b[k], rtol=rtol, atol=rtol * scale, err_msg=k)


SGD_OPTIONS = [
    {"lr": 0.1},
    {"lr": 0.1, "momentum": 0.9},
    {"lr": 0.1, "momentum": 0.9, "dampening": 0.5},
    {"lr": 0.1, "momentum": 0.9, "nesterov": True},
    {"lr": 0.1, "weight_decay": 0.05},
    {"lr": 0.05, "momentum": 0.8, "weight_decay": 0.05, "nesterov": True},
    {"lr": 0.01, "momentum": 0.5, "dampening": 0.1, "weight_decay": 0.1, "maximize": True},
    {"lr": 0.02, "maximize": True},
]

ADAM_OPTIONS = [
    {},
    {"lr": 0.01},
    {"lr": 0.01, "weight_decay": 0.1},
    {"lr": 0.01, "amsgrad": True},
    {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True},
    {"lr": 0.01, "betas": (0.3, 0.5), "eps": 1e-6},  # lerp's other branch (weight >= 0.5)
    {"lr": 0.01, "maximize": True, "weight_decay": 0.02},
]


RMSPROP_OPTIONS = [
    {},
    {"lr": 0.005, "alpha": 0.9},
    {"lr": 0.005, "momentum": 0.9},
    {"lr": 0.005, "centered": True},
    {"lr": 0.005, "centered": True, "momentum": 0.5, "weight_decay": 0.1},
    {"lr": 0.005, "eps": 1e-3, "maximize": True},
]


@pytest.mark.parametrize("options", SGD_OPTIONS, ids=str)
def test_sgd_matches_torch_over_20_steps(torch, options):
    ours, theirs = build(tt), build(torch)
    data = batches()
    losses = train(tt, ours, optim.SGD(ours.parameters(), **options), data)
    t_losses = train(torch, theirs, torch.optim.SGD(theirs.parameters(), **options), data)
    assert_params_equal(ours, theirs)
    np.testing.assert_allclose(losses, t_losses, rtol=1e-12)
    if not options.get("maximize"):
        assert losses[-1] < losses[0]


@pytest.mark.parametrize("options", ADAM_OPTIONS, ids=str)
@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_and_adamw_match_torch_over_20_steps(torch, name, options):
    ours, theirs = build(tt), build(torch)
    data = batches()
    opt = getattr(optim, name)(ours.parameters(), **options)
    t_opt = getattr(torch.optim, name)(theirs.parameters(), **options)
    losses = train(tt, ours, opt, data)
    t_losses = train(torch, theirs, t_opt, data)
    assert_params_equal(ours, theirs)
    np.testing.assert_allclose(losses, t_losses, rtol=1e-12)
    # the state too: the moments and the step count
    state, t_state = opt.state_dict()["state"], t_opt.state_dict()["state"]
    assert state.keys() == t_state.keys()
    for i in state:
        assert state[i].keys() == t_state[i].keys()
        for k, v in state[i].items():
            np.testing.assert_allclose(v.numpy(), t_state[i][k].numpy(), rtol=1e-12, atol=0)
            assert v.dtype.name == str(t_state[i][k].dtype).removeprefix("torch.")


@pytest.mark.parametrize("options", RMSPROP_OPTIONS, ids=str)
def test_rmsprop_matches_torch_over_20_steps(torch, options):
    ours, theirs = build(tt), build(torch)
    data = batches()
    opt = optim.RMSprop(ours.parameters(), **options)
    t_opt = torch.optim.RMSprop(theirs.parameters(), **options)
    losses = train(tt, ours, opt, data)
    t_losses = train(torch, theirs, t_opt, data)
    assert_params_equal(ours, theirs)
    np.testing.assert_allclose(losses, t_losses, rtol=1e-12)
    state, t_state = opt.state_dict()["state"], t_opt.state_dict()["state"]
    for i in t_state:
        assert state[i].keys() == t_state[i].keys()
        for k, v in state[i].items():
            np.testing.assert_allclose(v.numpy(), t_state[i][k].numpy(), rtol=1e-12, atol=0)
            assert v.dtype.name == str(t_state[i][k].dtype).removeprefix("torch.")
    assert repr(opt) == repr(t_opt)


@pytest.mark.parametrize(
    "kwargs",
    [{"lr": -1.0}, {"eps": -1.0}, {"momentum": -0.5}, {"weight_decay": -0.1}, {"alpha": -0.1}],
    ids=str,
)
def test_rmsprop_argument_errors_match_torch(torch, kwargs):
    assert_same_error(
        lambda: optim.RMSprop(build(tt).parameters(), **kwargs),
        lambda: torch.optim.RMSprop(build(torch).parameters(), **kwargs),
    )


def test_param_groups_with_their_own_options(torch):
    def groups(model, lr_scale=1.0):
        return [
            {"params": model[0].parameters(), "lr": 0.05 * lr_scale, "momentum": 0.9},
            {"params": list(model[2].parameters()), "weight_decay": 0.1},
        ]

    ours, theirs = build(tt), build(torch)
    opt = optim.SGD(groups(ours), lr=0.1)
    t_opt = torch.optim.SGD(groups(theirs), lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.05, 0.1]
    assert opt.param_groups[1]["momentum"] == 0  # defaults fill what a group leaves out
    data = batches()
    train(tt, ours, opt, data)
    train(torch, theirs, t_opt, data)
    assert_params_equal(ours, theirs)
    assert repr(opt) == repr(t_opt)
    sd, t_sd = opt.state_dict(), t_opt.state_dict()
    assert sd["param_groups"] == t_sd["param_groups"]
    assert list(sd["state"]) == list(t_sd["state"]) == [0, 1]  # momentum only in group 0


def test_add_param_group_and_adam_groups(torch):
    ours, theirs = build(tt), build(torch)
    opt = optim.Adam(ours[0].parameters(), lr=0.01)
    t_opt = torch.optim.Adam(theirs[0].parameters(), lr=0.01)
    data = batches()
    train(tt, ours, opt, data[:5])
    train(torch, theirs, t_opt, data[:5])
    opt.add_param_group({"params": ours[2].parameters(), "lr": 0.02, "amsgrad": True})
    t_opt.add_param_group({"params": theirs[2].parameters(), "lr": 0.02, "amsgrad": True})
    train(tt, ours, opt, data[5:])
    train(torch, theirs, t_opt, data[5:])
    assert_params_equal(ours, theirs)
    assert repr(opt) == repr(t_opt)


def test_parameters_without_grad_are_skipped(torch):
    def setup(lib):
        model = build(lib)
        unused = lib.nn.Parameter(lib.ones(3, dtype=lib.float64))
        return model, unused

    (ours, unused), (theirs, t_unused) = setup(tt), setup(torch)
    opt = optim.Adam([*ours.parameters(), unused], lr=0.1, weight_decay=0.5)
    t_opt = torch.optim.Adam([*theirs.parameters(), t_unused], lr=0.1, weight_decay=0.5)
    data = batches(3)
    train(tt, ours, opt, data)
    train(torch, theirs, t_opt, data)
    np.testing.assert_array_equal(unused.detach().numpy(), np.ones(3))
    assert unused._version == 0 and unused not in opt.state
    assert list(opt.state_dict()["state"]) == list(t_opt.state_dict()["state"])
    assert_params_equal(ours, theirs)


def test_zero_grad():
    model = build(tt)
    opt = optim.SGD(model.parameters(), lr=0.1)
    model(tt.ones(2, 4, dtype=tt.float64)).sum().backward()
    grads = [p.grad for p in model.parameters()]
    opt.zero_grad(set_to_none=False)
    for p, g in zip(model.parameters(), grads):
        assert p.grad is g and g._version == 1 and not g.numpy().any()
        assert not g.requires_grad
    # zeroed grads are accumulated into by the next backward
    model(tt.ones(2, 4, dtype=tt.float64)).sum().backward()
    assert all(p.grad is g for p, g in zip(model.parameters(), grads))
    opt.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    # a grad carrying a graph (create_graph=True) is detached before it is zeroed, as in torch
    x = tt.tensor([1.0, 2.0], dtype=tt.float64, requires_grad=True)
    opt2 = optim.SGD([x], lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the create_graph reference-cycle warning
        (x**3).sum().backward(create_graph=True)
    assert x.grad.grad_fn is not None
    opt2.zero_grad(set_to_none=False)
    assert x.grad.grad_fn is None and not x.grad.numpy().any()


def test_step_updates_in_place_under_no_grad(torch):
    w = nn.Parameter(tt.tensor([1.0, -2.0, 3.0], dtype=tt.float64))
    opt = optim.SGD([w], lr=0.5, momentum=0.9)
    (w * w).sum().backward()
    assert w._version == 0
    opt.step()
    assert w._version == 1 and w.is_leaf and w.grad_fn is None and w.requires_grad
    np.testing.assert_allclose(w.detach().numpy(), [0.0, 0.0, 0.0])  # w - 0.5 * 2w
    # a graph that saved the old value: backward after the step raises torch's version error
    w2 = nn.Parameter(tt.tensor([1.0, 2.0, 3.0], dtype=tt.float64))
    t_w2 = torch.nn.Parameter(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    y, t_y = (w2 * w2).sum(), (t_w2 * t_w2).sum()
    w2.grad, t_w2.grad = tt.ones(3, dtype=tt.float64), torch.ones(3, dtype=torch.float64)
    optim.SGD([w2], lr=0.1).step()
    torch.optim.SGD([t_w2], lr=0.1).step()
    assert_same_error(y.backward, t_y.backward)


def test_closure_runs_with_grad_enabled():
    model = build(tt)
    opt = optim.SGD(model.parameters(), lr=0.1)
    x, y = (tt.tensor(a) for a in batches(1)[0])
    seen = []

    def closure():
        seen.append(tt.is_grad_enabled())
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    with tt.no_grad():
        loss = opt.step(closure)
    assert seen == [True] and isinstance(loss, tt.Tensor)
    assert opt.step() is None


def test_state_dict_round_trip_continues_identically(torch):
    ours, resumed, theirs = build(tt), build(tt), build(torch)
    opt = optim.Adam(ours.parameters(), lr=0.01, amsgrad=True)
    t_opt = torch.optim.Adam(theirs.parameters(), lr=0.01, amsgrad=True)
    data = batches()
    train(tt, ours, opt, data[:10])
    train(torch, theirs, t_opt, data[:10])
    sd = opt.state_dict()
    assert sd["param_groups"] == t_opt.state_dict()["param_groups"]
    resumed.load_state_dict(ours.state_dict())
    opt2 = optim.Adam(resumed.parameters(), lr=0.5)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.01
    assert all(a is b for a, b in zip(opt2.param_groups[0]["params"], resumed.parameters()))
    train(tt, ours, opt, data[10:])
    train(tt, resumed, opt2, data[10:])
    train(torch, theirs, t_opt, data[10:])
    assert_params_equal(resumed, ours, rtol=0)
    assert_params_equal(resumed, theirs)
    # loading torch's own state (as NumPy arrays) works too
    t_sd = t_opt.state_dict()
    numpy_sd = {
        "state": {i: {k: v.numpy() for k, v in s.items()} for i, s in t_sd["state"].items()},
        "param_groups": t_sd["param_groups"],
    }
    opt3 = optim.Adam(build(tt).parameters())
    opt3.load_state_dict(numpy_sd)
    state3 = opt3.state_dict()["state"]
    np.testing.assert_array_equal(state3[1]["exp_avg"].numpy(), t_sd["state"][1]["exp_avg"].numpy())


def test_load_state_dict_casts_to_the_parameter_dtype():
    model = build(tt)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    train(tt, model, opt, batches(2))
    sd = opt.state_dict()
    model32 = build(tt).float()
    opt32 = optim.SGD(model32.parameters(), lr=0.1, momentum=0.9)
    opt32.load_state_dict(sd)
    buf = opt32.state[model32[0].weight]["momentum_buffer"]
    assert buf.dtype == np.float32
    assert buf is not sd["state"][0]["momentum_buffer"]  # no buffer shared between optimizers


def test_messages_match_torch(torch):
    p, tp = nn.Parameter(tt.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    cases = [
        ("SGD", lambda q: ([q],), {"lr": -1}),
        ("SGD", lambda q: ([q],), {"lr": 0.1, "momentum": -1}),
        ("SGD", lambda q: ([q],), {"lr": 0.1, "weight_decay": -1}),
        ("SGD", lambda q: ([q],), {"lr": 0.1, "nesterov": True}),
        ("SGD", lambda q: ([q],), {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "nesterov": True}),
        ("SGD", lambda q: ([],), {"lr": 0.1}),
        ("SGD", lambda q: (q,), {"lr": 0.1}),
        ("SGD", lambda q: ([q, 1],), {"lr": 0.1}),
        ("SGD", lambda q: ([q * 2],), {"lr": 0.1}),
        ("SGD", lambda q: ([{"params": q}, {"params": [q]}],), {"lr": 0.1}),
        ("SGD", lambda q: ([{"params": {q}}],), {"lr": 0.1}),
        ("SGD", lambda q: ([("a", q), q],), {"lr": 0.1}),
        ("Adam", lambda q: ([q],), {"lr": -1}),
        ("Adam", lambda q: ([q],), {"eps": -1}),
        ("Adam", lambda q: ([q],), {"betas": (1.0, 0.9)}),
        ("Adam", lambda q: ([q],), {"betas": (0.9, -0.9)}),
        ("Adam", lambda q: ([q],), {"betas": (0.9, 0)}),
        ("Adam", lambda q: ([q],), {"weight_decay": -1}),
        ("AdamW", lambda q: ([q],), {"lr": -0.5}),
    ]
    for name, args, kwargs in cases:
        assert_same_error(
            partial(getattr(optim, name), *args(p), **kwargs),
            partial(getattr(torch.optim, name), *args(tp), **kwargs),
        )
    opt, t_opt = optim.SGD([p], lr=0.1), torch.optim.SGD([tp], lr=0.1)
    for bad in ([p], {"params": [p]}):
        t_bad = [tp] if isinstance(bad, list) else {"params": [tp]}
        assert_same_error(partial(opt.add_param_group, bad), partial(t_opt.add_param_group, t_bad))
    for sd in (
        {"state": {}, "param_groups": []},
        {"state": {}, "param_groups": [{"params": [0, 1]}]},
    ):
        assert_same_error(partial(opt.load_state_dict, sd), partial(t_opt.load_state_dict, sd))


def test_duplicate_parameters_warn_as_torch(torch):
    p, tp = nn.Parameter(tt.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    with warnings.catch_warnings(record=True) as ours:
        warnings.simplefilter("always")
        optim.SGD([p, p], lr=0.1)
    with warnings.catch_warnings(record=True) as theirs:
        warnings.simplefilter("always")
        torch.optim.SGD([tp, tp], lr=0.1)
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]


def test_named_parameters_in_groups(torch):
    ours, theirs = build(tt), build(torch)
    opt = optim.SGD(ours.named_parameters(), lr=0.1)
    t_opt = torch.optim.SGD(theirs.named_parameters(), lr=0.1)
    assert opt.param_groups[0]["param_names"] == t_opt.param_groups[0]["param_names"]
    assert opt.state_dict()["param_groups"] == t_opt.state_dict()["param_groups"]


def test_defaults_and_repr_match_torch(torch):
    for name in ("SGD", "Adam", "AdamW"):
        ours = getattr(optim, name)([nn.Parameter(tt.zeros(1))])
        theirs = getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(1))])
        assert ours.defaults == theirs.defaults
        assert repr(ours) == repr(theirs)


def test_unsupported_options_say_so():
    p = nn.Parameter(tt.zeros(2))
    for kwargs in ({"differentiable": True}, {"fused": True}):
        with pytest.raises(NotImplementedError, match="tracegrad optimizers do not support"):
            optim.SGD([p], lr=0.1, **kwargs)
    with pytest.raises(NotImplementedError, match="capturable"):
        optim.Adam([p], capturable=True)


# -- the tensor methods behind PyTorch's optimizers (tracegrad.torch.ops), bit for bit ----------


def test_addcdiv_rounds_as_torch(torch):
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(10_000) for _ in range(3))
    ours = tt.addcdiv(tt.tensor(a), tt.tensor(b), tt.tensor(c), value=1e-3).numpy()
    theirs = torch.addcdiv(torch.tensor(a), torch.tensor(b), torch.tensor(c), value=1e-3)
    np.testing.assert_array_equal(ours, theirs.numpy())


def test_lerp_with_a_large_weight_rounds_as_torch(torch):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(10_000) for _ in range(2))
    ours = tt.lerp(tt.tensor(a), tt.tensor(b), 0.75).numpy()
    np.testing.assert_array_equal(ours, torch.lerp(torch.tensor(a), torch.tensor(b), 0.75).numpy())
