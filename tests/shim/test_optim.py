"""tracegrad.torch.optim against torch.optim: 20 training steps of the same small model on the same
data in float64 end at the same parameters (1e-12 relative) for every option of SGD, RMSprop,
Adam, AdamW, Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD and Rprop, and LBFGS (both line
searches) takes torch's steps; groups, state dicts (resumed mid-run), hooks, zero_grad,
closures, versions and messages."""

from __future__ import annotations

import importlib
import warnings
from copy import deepcopy
from functools import partial

import numpy as np
import pytest

import tracegrad.torch as tt
import tracegrad.torch.nn as nn
import tracegrad.torch.optim as optim
from tests.shim.torch_oracle import (
    assert_same_error,
    caught,
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


# -- the other optimizers: Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD, Rprop ----------------

OTHER_OPTIONS = {
    "ASGD": [
        {},
        {"lr": 0.05, "lambd": 0.01, "alpha": 0.5, "t0": 5, "weight_decay": 0.1},
        {"maximize": True, "t0": 3},
    ],
    "Rprop": [
        {},
        {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.1)},
        {"maximize": True},
    ],
    "Adagrad": [
        {},
        {"lr": 0.05, "lr_decay": 0.01, "weight_decay": 0.1, "initial_accumulator_value": 0.1},
        {"lr": 0.02, "eps": 1e-3, "maximize": True},
    ],
    "Adadelta": [{}, {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1}, {"eps": 1e-4, "maximize": True}],
    "Adamax": [
        {},
        {"lr": 0.01, "betas": (0.5, 0.9), "weight_decay": 0.1},
        {"eps": 1e-3, "maximize": True},
    ],
    "NAdam": [
        {},
        {"lr": 0.01, "weight_decay": 0.1},
        {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True, "momentum_decay": 0.01},
        {"betas": (0.6, 0.9), "maximize": True},
    ],
    "RAdam": [
        {},
        {"lr": 0.01, "weight_decay": 0.1},
        {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True},
        {"betas": (0.9, 0.5)},  # rho_t > 5 from the first steps: the rectified branch
        {"lr": 0.01, "maximize": True},
    ],
}


def assert_states_equal(state, t_state, rtol=1e-12) -> None:
    """The same entries with the same values and dtypes (0-d `step`s and moments alike), an
    entry near zero held to `rtol` of its tensor's largest magnitude, as parameters are."""
    assert state.keys() == t_state.keys()
    for i in t_state:
        assert state[i].keys() == t_state[i].keys(), i
        for k, v in state[i].items():
            theirs = t_state[i][k].numpy()
            atol = rtol * np.abs(theirs).max(initial=0.0)
            np.testing.assert_allclose(v.numpy(), theirs, rtol=rtol, atol=atol, err_msg=k)
            assert v.dtype.name == str(theirs.dtype).removeprefix("torch."), k


@pytest.mark.parametrize(
    ("name", "options"),
    [(name, o) for name, options in OTHER_OPTIONS.items() for o in options],
    ids=str,
)
def test_other_optimizers_match_torch_over_20_steps(torch, name, options):
    ours, theirs = build(tt), build(torch)
    data = batches()
    opt = getattr(optim, name)(ours.parameters(), **options)
    t_opt = getattr(torch.optim, name)(theirs.parameters(), **options)
    losses = train(tt, ours, opt, data)
    t_losses = train(torch, theirs, t_opt, data)
    assert_params_equal(ours, theirs)
    np.testing.assert_allclose(losses, t_losses, rtol=1e-12)
    assert_states_equal(opt.state_dict()["state"], t_opt.state_dict()["state"])
    assert opt.state_dict()["param_groups"] == t_opt.state_dict()["param_groups"]
    if not options.get("maximize"):
        assert losses[-1] < losses[0]


# every optimizer with its stateful options on, for the round trips and the structure checks
STATEFUL = {
    "SGD": {"lr": 0.05, "momentum": 0.9, "nesterov": True},
    "Adam": {"lr": 0.01, "amsgrad": True},
    "AdamW": {"lr": 0.01},
    "RMSprop": {"lr": 0.005, "centered": True, "momentum": 0.5},
    "Adagrad": {"lr": 0.05, "lr_decay": 0.01},
    "Adadelta": {"lr": 0.5},
    "Adamax": {"lr": 0.01},
    "NAdam": {"lr": 0.01},
    "RAdam": {"lr": 0.01},
    "ASGD": {"lr": 0.05, "t0": 4},
    "Rprop": {"lr": 0.05},
}


def numpy_state_dict(t_sd) -> dict:
    """torch's optimizer state dict with its tensors as NumPy arrays (what a checkpoint holds
    once converted), groups copied."""
    state = {i: {k: v.numpy().copy() for k, v in s.items()} for i, s in t_sd["state"].items()}
    return {"state": state, "param_groups": [dict(g) for g in t_sd["param_groups"]]}


@pytest.mark.parametrize("name", sorted(STATEFUL))
def test_state_dict_round_trip_mid_run_for_every_optimizer(torch, name):
    """10 steps, save, load into a fresh optimizer (other defaults) over a copy of the model,
    10 more: torch's trajectory, resumed the same way, and (but for NAdam) bit for bit the run
    without the break. Loading casts NAdam's float32 `mu_product` to the parameters' float64,
    in torch too (ASGD's float32 scalars too, but its update rounds them to float32 again).
    torch's own state dict, as NumPy arrays, resumes the same way."""
    options = STATEFUL[name]
    ours, resumed, from_torch = build(tt), build(tt), build(tt)
    theirs, t_resumed = build(torch), build(torch)
    opt = getattr(optim, name)(ours.parameters(), **options)
    t_opt = getattr(torch.optim, name)(theirs.parameters(), **options)
    data = batches()
    train(tt, ours, opt, data[:10])
    train(torch, theirs, t_opt, data[:10])
    sd, t_sd = opt.state_dict(), t_opt.state_dict()
    assert sd["param_groups"] == t_sd["param_groups"]
    assert_states_equal(sd["state"], t_sd["state"])
    resumed.load_state_dict(ours.state_dict())
    from_torch.load_state_dict({k: tt.tensor(v) for k, v in values(theirs).items()})
    t_resumed.load_state_dict(theirs.state_dict())
    opt2 = getattr(optim, name)(resumed.parameters(), lr=0.5)
    opt2.load_state_dict(sd)
    opt3 = getattr(optim, name)(from_torch.parameters(), lr=0.5)
    opt3.load_state_dict(numpy_state_dict(t_sd))
    t_opt2 = getattr(torch.optim, name)(t_resumed.parameters(), lr=0.5)
    t_opt2.load_state_dict(deepcopy(t_sd))  # as from a file: torch's load aliases the tensors
    assert opt2.param_groups[0]["lr"] == options["lr"]
    for model, optimizer in ((ours, opt), (resumed, opt2), (from_torch, opt3)):
        train(tt, model, optimizer, data[10:])
    for model, optimizer in ((theirs, t_opt), (t_resumed, t_opt2)):
        train(torch, model, optimizer, data[10:])
    assert_params_equal(ours, theirs)
    assert_params_equal(resumed, t_resumed)
    assert_params_equal(from_torch, t_resumed)
    assert_params_equal(resumed, ours, rtol=1e-12 if name == "NAdam" else 0)
    assert_states_equal(opt2.state_dict()["state"], t_opt2.state_dict()["state"])


@pytest.mark.parametrize("name", sorted(STATEFUL))
def test_defaults_repr_and_group_keys_match_torch(torch, name):
    p, tp = nn.Parameter(tt.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    ours, theirs = getattr(optim, name)([p]), getattr(torch.optim, name)([tp])
    assert ours.defaults == theirs.defaults
    assert repr(ours) == repr(theirs)


OTHER_BAD_ARGUMENTS = [
    ("Adagrad", {"lr": -1}),
    ("Adagrad", {"lr_decay": -1}),
    ("Adagrad", {"weight_decay": -1}),
    ("Adagrad", {"initial_accumulator_value": -1}),
    ("Adagrad", {"eps": -1}),
    ("Adadelta", {"lr": -1}),
    ("Adadelta", {"rho": 1.5}),
    ("Adadelta", {"eps": -1}),
    ("Adadelta", {"weight_decay": -1}),
    ("Adamax", {"lr": -1}),
    ("Adamax", {"eps": -1}),
    ("Adamax", {"betas": (1.0, 0.9)}),
    ("Adamax", {"betas": (0.9, -0.1)}),
    ("Adamax", {"weight_decay": -1}),
    ("NAdam", {"lr": -1}),
    ("NAdam", {"eps": -1}),
    ("NAdam", {"betas": (-0.1, 0.9)}),
    ("NAdam", {"weight_decay": -1}),
    ("NAdam", {"momentum_decay": -1}),
    ("RAdam", {"lr": -1}),
    ("RAdam", {"eps": -1}),
    ("RAdam", {"betas": (0.9, 1.0)}),
    ("RAdam", {"weight_decay": -1}),
    ("Adam", {"lr": tt.tensor([0.1, 0.2])}),
    ("Adam", {"betas": (tt.tensor(0.9), 0.99)}),
    ("LBFGS", {"lr": -1}),
    ("ASGD", {"lr": -1}),
    ("ASGD", {"weight_decay": -1}),
    ("Rprop", {"lr": -1}),
    ("Rprop", {"etas": (1.5, 1.2)}),
    ("Rprop", {"etas": (0.5, 0.9)}),
]


@pytest.mark.parametrize(("name", "kwargs"), OTHER_BAD_ARGUMENTS, ids=str)
def test_argument_errors_of_the_other_optimizers_match_torch(torch, name, kwargs):
    t_kwargs = {
        k: torch.tensor(v.numpy()) if isinstance(v, tt.Tensor) else v for k, v in kwargs.items()
    }
    if isinstance(kwargs.get("betas", (0.0,))[0], tt.Tensor):
        t_kwargs["betas"] = (torch.tensor(0.9), 0.99)
    assert_same_error(
        lambda: getattr(optim, name)([nn.Parameter(tt.zeros(2))], **kwargs),
        lambda: getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))], **t_kwargs),
    )


@pytest.mark.parametrize("name", ["SGD", "Adam", "Adagrad", "NAdam", "RAdam", "Adamax"])
def test_a_tensor_learning_rate_steps_as_torch(torch, name):
    """A 0-d tensor `lr` (float32, torch's default dtype) enters the update as a tensor, as in
    torch: `lr / bias_correction` is computed in float32 there too."""
    ours, theirs = build(tt), build(torch)
    opt = getattr(optim, name)(ours.parameters(), lr=tt.tensor(0.01))
    t_opt = getattr(torch.optim, name)(theirs.parameters(), lr=torch.tensor(0.01))
    data = batches(10)
    train(tt, ours, opt, data)
    train(torch, theirs, t_opt, data)
    assert_params_equal(ours, theirs)


def test_foreach_runs_the_single_tensor_algorithm(torch):
    """`foreach=True` is accepted; it runs the same single-tensor update (torch's foreach
    implementation orders its sums differently, so it is compared to torch's for-loop one)."""
    ours, theirs = build(tt), build(torch)
    opt = optim.Adam(ours.parameters(), lr=0.01, foreach=True)
    t_opt = torch.optim.Adam(theirs.parameters(), lr=0.01, foreach=False)
    data = batches(10)
    train(tt, ours, opt, data)
    train(torch, theirs, t_opt, data)
    assert_params_equal(ours, theirs)
    assert opt.defaults["foreach"] is True


def test_sparse_adam_complex_parameters_and_capturable_are_refused():
    p = nn.Parameter(tt.zeros(2))
    with pytest.raises(NotImplementedError, match="SparseAdam is out of scope for tracegrad"):
        optim.SparseAdam([p])
    for name in ("Adadelta", "Adamax", "NAdam", "RAdam", "RMSprop", "ASGD", "Rprop"):
        with pytest.raises(NotImplementedError, match="do not support capturable=True"):
            getattr(optim, name)([p], capturable=True)
    for name in ("Adagrad", "NAdam"):
        with pytest.raises(NotImplementedError, match="do not support differentiable=True"):
            getattr(optim, name)([p], differentiable=True)
    z = nn.Parameter(tt.tensor(np.array([1 + 2j, 3j])))
    z.grad = tt.tensor(np.array([1j, 1 + 0j]))
    opt = optim.Adam([z])
    with pytest.raises(NotImplementedError, match="Adam: complex parameters are not supported"):
        opt.step()


# -- LBFGS ---------------------------------------------------------------------------------------

LBFGS_OPTIONS = [
    {},
    {"history_size": 3, "max_iter": 7},
    {"lr": 0.5, "max_iter": 4, "tolerance_change": 1e-5},
    {"line_search_fn": "strong_wolfe"},
    {"line_search_fn": "strong_wolfe", "history_size": 3, "max_iter": 7},
    {"line_search_fn": "strong_wolfe", "lr": 0.5, "max_iter": 4, "max_eval": 6},
]


def lbfgs_run(lib, options, steps=5, state=None):
    """`steps` LBFGS steps on the first batch; returns the model, the optimizer and the loss
    each step returned. `state`, an optimizer state dict, is loaded first."""
    model = build(lib)
    x, y = (lib.tensor(a) for a in batches(1)[0])
    opt = lib.optim.LBFGS(model.parameters(), **options)
    if state is not None:
        model.load_state_dict(state[0])
        opt.load_state_dict(state[1])

    def closure():
        opt.zero_grad()
        loss = lib.nn.functional.mse_loss(model(x), y)
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(steps)]
    return model, opt, losses


@pytest.mark.parametrize("options", LBFGS_OPTIONS, ids=str)
def test_lbfgs_matches_torch(torch, options):
    """Five steps (up to `max_iter` iterations and line-search evaluations each): the same
    parameters, losses and counts of iterations and closure evaluations as torch's."""
    ours, opt, losses = lbfgs_run(tt, options)
    theirs, t_opt, t_losses = lbfgs_run(torch, options)
    assert_params_equal(ours, theirs, rtol=1e-9)
    np.testing.assert_allclose(losses, t_losses, rtol=1e-9)
    state, t_state = opt.state_dict()["state"][0], t_opt.state_dict()["state"][0]
    assert (state["n_iter"], state["func_evals"]) == (t_state["n_iter"], t_state["func_evals"])
    assert state.keys() == t_state.keys()
    assert len(state["old_dirs"]) == len(t_state["old_dirs"])
    assert losses[-1] < losses[0]


def test_lbfgs_state_dict_round_trip_mid_run(torch):
    options = {"line_search_fn": "strong_wolfe", "history_size": 4, "max_iter": 3}
    ours, opt, _ = lbfgs_run(tt, options, steps=2)
    saved = ({k: v.clone() for k, v in ours.state_dict().items()}, opt.state_dict())
    resumed, _, resumed_losses = lbfgs_run(tt, options, steps=3, state=saved)
    straight, _, losses = lbfgs_run(tt, options, steps=5)
    theirs, _, t_losses = lbfgs_run(torch, options, steps=5)
    assert resumed_losses == losses[2:]
    assert_params_equal(resumed, straight, rtol=0)
    assert_params_equal(resumed, theirs, rtol=1e-9)
    np.testing.assert_allclose(losses, t_losses, rtol=1e-9)


def test_lbfgs_errors_match_torch(torch):
    def groups(lib):
        model = build(lib)
        return [{"params": model[0].parameters()}, {"params": model[2].parameters()}]

    assert_same_error(lambda: optim.LBFGS(groups(tt)), lambda: torch.optim.LBFGS(groups(torch)))
    for lib in (tt, torch):
        model = build(lib)
        opt = lib.optim.LBFGS(model.parameters(), line_search_fn="armijo")
        x = lib.tensor(batches(1)[0][0])

        def closure(model=model, x=x, opt=opt):
            opt.zero_grad()
            loss = model(x).sum()
            loss.backward()
            return loss

        with pytest.raises(RuntimeError, match="^only 'strong_wolfe' is supported$"):
            opt.step(closure)


# -- hooks and subclasses ------------------------------------------------------------------------


def test_step_hooks_run_in_torch_order_and_can_be_removed(torch):
    def run(lib):
        seen = []
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.1)
        h_pre = opt.register_step_pre_hook(lambda o, args, kwargs: seen.append("pre"))
        opt.register_step_post_hook(lambda o, args, kwargs: seen.append("post"))
        module = importlib.import_module(lib.optim.__name__ + ".optimizer")
        g_pre = module.register_optimizer_step_pre_hook(
            lambda o, args, kwargs: seen.append("global pre")
        )
        g_post = module.register_optimizer_step_post_hook(
            lambda o, args, kwargs: seen.append("global post")
        )
        p.grad = lib.ones(2)
        opt.step()
        h_pre.remove()
        g_pre.remove()
        g_post.remove()
        opt.step()
        opt.register_step_pre_hook(lambda o, args, kwargs: 3)
        return seen, caught(opt.step)

    ours, theirs = run(tt), run(torch)
    assert ours[0] == theirs[0] == ["global pre", "pre", "post", "global post", "post"]
    assert ours[1][0] == theirs[1][0] == "RuntimeError"
    assert ours[1][1].endswith("must return None or a tuple of (new_args, new_kwargs), but got 3.")


def test_state_dict_hooks(torch):
    def run(lib):
        seen = []
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.1)
        opt.register_state_dict_pre_hook(lambda o: seen.append("pre"))
        opt.register_state_dict_post_hook(lambda o, sd: {**sd, "extra": 1})
        opt.register_load_state_dict_pre_hook(lambda o, sd: seen.append(sorted(sd)))
        opt.register_load_state_dict_post_hook(lambda o: seen.append("loaded"), prepend=True)
        sd = opt.state_dict()
        opt.load_state_dict(sd)
        return seen, sorted(sd)

    assert run(tt) == run(torch)


def test_a_user_optimizer_subclass_steps_once_through_the_hooks():
    """A tutorial-style optimizer defining its own `step` (calling the base class's too) runs
    the step hooks once per call."""

    class Halving(optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, {"lr": 0.5})

        @tt.no_grad()
        def step(self, closure=None):
            loss = super().step(closure)
            for group in self.param_groups:
                for p in group["params"]:
                    p.sub_(p.grad * group["lr"])
            return loss

        def _update_group(self, group):
            pass

    p = nn.Parameter(tt.tensor([2.0, 4.0]))
    opt = Halving([p])
    seen = []
    opt.register_step_pre_hook(lambda *a: seen.append("pre"))
    p.grad = p.detach().clone()
    opt.step()
    np.testing.assert_array_equal(p.detach().numpy(), [1.0, 2.0])
    assert seen == ["pre"]
    with pytest.raises(NotImplementedError):
        optim.Optimizer([nn.Parameter(tt.zeros(1))], {}).step()


@pytest.mark.parametrize("name", sorted(STATEFUL))
def test_an_old_state_dict_gets_tensor_steps_and_the_new_options(torch, name):
    """A state dict saved by an older torch (a number for `step`, groups without the newer
    options) loads as in torch: the step becomes a 0-d tensor, the options their defaults."""
    options = STATEFUL[name]
    loaded = []
    for lib in (tt, torch):
        model = build(lib)
        opt = getattr(lib.optim, name)(model.parameters(), **options)
        train(lib, model, opt, batches(2))
        sd = opt.state_dict()
        old = {
            "state": {
                i: {k: (v.item() if k == "step" else v) for k, v in s.items()}
                for i, s in sd["state"].items()
            },
            "param_groups": [
                {k: v for k, v in g.items() if k not in ("maximize", "foreach", "differentiable")}
                for g in sd["param_groups"]
            ],
        }
        fresh = getattr(lib.optim, name)(build(lib).parameters(), **options)
        fresh.load_state_dict(deepcopy(old))
        state = fresh.state_dict()
        steps = [
            (type(s["step"]).__name__, str(s["step"].dtype).removeprefix("torch."))
            for s in state["state"].values()
            if "step" in s
        ]
        loaded.append((state["param_groups"], steps))
    assert loaded[0] == loaded[1]
