"""tracegrad.torch.optim.lr_scheduler against torch's: every scheduler over 20 steps sets the
same learning rates (and cycled momenta or betas) as torch's, exactly, on an SGD and an Adam of
two parameter groups; the state dicts hold the same entries and resume mid-run; chaining,
torch's warnings and messages."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import (
    assert_same_error,
    caught,
    torch_one_thread,  # noqa: F401 - the `torch` fixture
)


def make_optimizer(lib, kind="SGD", lr=0.1):
    """Two parameter groups (the second with its own rate), float64 parameters."""
    p = lib.nn.Parameter(lib.ones(2, dtype=lib.float64))
    q = lib.nn.Parameter(lib.ones(3, dtype=lib.float64))
    groups = [{"params": [p]}, {"params": [q], "lr": 0.5}]
    if kind == "SGD":
        return lib.optim.SGD(groups, lr=lr, momentum=0.9)
    return lib.optim.Adam(groups, lr=lr)


def S(lib):
    return lib.optim.lr_scheduler


SCHEDULERS = {
    "StepLR": lambda lib, o: S(lib).StepLR(o, 3, 0.5),
    "MultiStepLR": lambda lib, o: S(lib).MultiStepLR(o, [2, 5, 5, 9], 0.5),
    "ExponentialLR": lambda lib, o: S(lib).ExponentialLR(o, 0.9),
    "CosineAnnealingLR": lambda lib, o: S(lib).CosineAnnealingLR(o, 7, 0.01),
    "CosineAnnealingWarmRestarts": lambda lib, o: S(lib).CosineAnnealingWarmRestarts(o, 3, 2, 0.01),
    "LambdaLR": lambda lib, o: S(lib).LambdaLR(o, lambda e: 0.95**e),
    "LambdaLR per group": lambda lib, o: S(lib).LambdaLR(
        o, [lambda e: 0.95**e, lambda e: 1 / (e + 1)]
    ),
    "MultiplicativeLR": lambda lib, o: S(lib).MultiplicativeLR(o, lambda e: 0.9),
    "OneCycleLR": lambda lib, o: S(lib).OneCycleLR(o, [1.0, 2.0], total_steps=25),
    "OneCycleLR three phases": lambda lib, o: S(lib).OneCycleLR(
        o, 1.0, epochs=5, steps_per_epoch=5, three_phase=True, anneal_strategy="linear"
    ),
    "CyclicLR": lambda lib, o: S(lib).CyclicLR(o, 0.01, [0.1, 0.2], step_size_up=4),
    "CyclicLR triangular2": lambda lib, o: S(lib).CyclicLR(
        o, 0.01, 0.1, step_size_up=3, step_size_down=5, mode="triangular2"
    ),
    "CyclicLR exp_range": lambda lib, o: S(lib).CyclicLR(
        o, 0.01, 0.1, step_size_up=3, mode="exp_range", gamma=0.9
    ),
    "CyclicLR scale_fn": lambda lib, o: S(lib).CyclicLR(
        o, 0.01, 0.1, step_size_up=2, scale_fn=lambda x: 0.5**x, scale_mode="iterations"
    ),
    "LinearLR": lambda lib, o: S(lib).LinearLR(o, 0.2, 0.9, 8),
    "ConstantLR": lambda lib, o: S(lib).ConstantLR(o, 0.3, 6),
    "PolynomialLR": lambda lib, o: S(lib).PolynomialLR(o, 12, 2.0),
    "SequentialLR": lambda lib, o: S(lib).SequentialLR(
        o,
        [
            S(lib).LinearLR(o, 0.1, 1.0, 4),
            S(lib).ExponentialLR(o, 0.9),
            S(lib).CosineAnnealingLR(o, 5),
        ],
        [5, 12],
    ),
    "ChainedScheduler": lambda lib, o: S(lib).ChainedScheduler(
        [S(lib).ConstantLR(o, 0.5, 4), S(lib).ExponentialLR(o, 0.9)]
    ),
}


def comparable(value):
    """A state-dict value both libraries can compare: tensors as lists, containers entry by
    entry, the rest as is."""
    if isinstance(value, dict) and not isinstance(value, Counter):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(comparable(v) for v in value)
    if hasattr(value, "tolist") and not isinstance(value, int | float):
        return value.tolist()
    return value


def step_both(lib, optimizer, scheduler, steps):
    """`steps` of optimizer then scheduler, recording the rates and the momenta (or betas)."""
    trajectory = []
    for _ in range(steps):
        for group in optimizer.param_groups:
            for p in group["params"]:
                p.grad = lib.ones(p.shape, dtype=lib.float64)
        optimizer.step()
        scheduler.step()
        trajectory.append(
            (
                scheduler.get_last_lr(),
                [g.get("momentum", g.get("betas")) for g in optimizer.param_groups],
            )
        )
    return trajectory


@pytest.mark.parametrize("kind", ["SGD", "Adam"])
@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_scheduler_matches_torch_over_20_steps(torch, name, kind):
    runs = []
    for lib in (tt, torch):
        optimizer = make_optimizer(lib, kind)
        scheduler = SCHEDULERS[name](lib, optimizer)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no warning in the right order
            trajectory = step_both(lib, optimizer, scheduler, 20)
        params = [p.detach().numpy().copy() for g in optimizer.param_groups for p in g["params"]]
        runs.append((trajectory, params, comparable(scheduler.state_dict())))
    (ours, params, sd), (theirs, t_params, t_sd) = runs
    assert ours == theirs  # the rates and momenta, exactly
    assert sd == t_sd
    for a, b in zip(params, t_params):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert len({round(lrs[0][0], 12) for lrs in ours}) > 1  # the rate did change


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_scheduler_state_dict_round_trip_mid_run(name):
    """10 steps, save the optimizer and the scheduler, build both afresh, load (scheduler
    first, as torch's docs say), 10 more: the rates of the run without the break."""
    optimizer = make_optimizer(tt, "Adam")
    scheduler = SCHEDULERS[name](tt, optimizer)
    first = step_both(tt, optimizer, scheduler, 10)
    saved = (optimizer.state_dict(), scheduler.state_dict())
    rest = step_both(tt, optimizer, scheduler, 10)
    optimizer2 = make_optimizer(tt, "Adam", lr=0.3)
    scheduler2 = SCHEDULERS[name](tt, optimizer2)
    scheduler2.load_state_dict(saved[1])
    optimizer2.load_state_dict(saved[0])
    assert scheduler2.get_last_lr() == first[-1][0]
    assert step_both(tt, optimizer2, scheduler2, 10) == rest


def test_schedulers_chain_on_one_optimizer(torch):
    """Two schedulers on one optimizer compose: each scales the rate the other left."""
    runs = []
    for lib in (tt, torch):
        optimizer = make_optimizer(lib)
        first = S(lib).StepLR(optimizer, 4, 0.5)
        second = S(lib).ExponentialLR(optimizer, 0.9)
        lrs = []
        for _ in range(12):
            optimizer.step()
            first.step()
            second.step()
            lrs.append([g["lr"] for g in optimizer.param_groups])
        runs.append(lrs)
    assert runs[0] == runs[1]
    assert runs[0][-1][0] == pytest.approx(0.1 * 0.5**3 * 0.9**12)


def test_reduce_lr_on_plateau_matches_torch(torch):
    metrics = [1.0, 0.9, 0.95, 0.96, 0.97, 0.89, 0.9, 0.91, 0.92, 0.93, 0.94] + [1.0] * 9
    settings = [
        {"patience": 2},
        {"patience": 1, "cooldown": 2, "factor": 0.5, "min_lr": [0.01, 0.2]},
        {"mode": "max", "patience": 1, "threshold": 0.05, "threshold_mode": "abs"},
        {"mode": "max", "patience": 0, "threshold_mode": "rel", "eps": 0.02},
        {"threshold": 0.02, "threshold_mode": "abs", "patience": 1, "factor": 0.3},
    ]
    for kwargs in settings:
        runs = []
        for lib in (tt, torch):
            optimizer = make_optimizer(lib)
            scheduler = S(lib).ReduceLROnPlateau(optimizer, **kwargs)
            lrs = []
            for i, m in enumerate(metrics):
                optimizer.step()
                scheduler.step(lib.tensor(m) if i % 2 else m)
                lrs.append(scheduler.get_last_lr())
            runs.append((lrs, comparable(scheduler.state_dict())))
        assert runs[0] == runs[1], kwargs
    # resuming mid-run
    optimizer = make_optimizer(tt)
    scheduler = S(tt).ReduceLROnPlateau(optimizer, patience=1)
    for m in metrics[:8]:
        scheduler.step(m)
    resumed = S(tt).ReduceLROnPlateau(make_optimizer(tt), patience=5)
    resumed.load_state_dict(scheduler.state_dict())
    resumed.optimizer.load_state_dict(optimizer.state_dict())
    for m in metrics[8:]:
        scheduler.step(m)
        resumed.step(m)
        assert resumed.get_last_lr() == scheduler.get_last_lr()


def test_a_tensor_learning_rate_is_filled_in_place(torch):
    runs = []
    for lib in (tt, torch):
        p = lib.nn.Parameter(lib.ones(2, dtype=lib.float64))
        optimizer = lib.optim.Adam([p], lr=lib.tensor(0.1))
        lr = optimizer.param_groups[0]["lr"]
        scheduler = S(lib).StepLR(optimizer, 2, 0.5)
        for _ in range(5):
            optimizer.step()
            scheduler.step()
        assert optimizer.param_groups[0]["lr"] is lr  # the same tensor, filled
        last = scheduler.get_last_lr()[0]
        assert last is not lr and isinstance(last, lib.Tensor)
        runs.append(last.item())
    assert runs[0] == runs[1] == pytest.approx(0.025)


def messages(record) -> list[str]:
    return [str(w.message).split(" (Triggered")[0] for w in record]


def test_stepping_the_scheduler_first_warns_as_torch(torch):
    def run(lib, order):
        optimizer = make_optimizer(lib)
        scheduler = S(lib).StepLR(optimizer, 2)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            for _ in range(3):
                if order == "scheduler first":
                    scheduler.step()
                    optimizer.step()
                else:
                    optimizer.step()
                    scheduler.step()
        return messages(record)

    for order in ("scheduler first", "optimizer first"):
        assert run(tt, order) == run(torch, order)
    text = run(tt, "scheduler first")
    assert len(text) == 1 and text[0].startswith("Detected call of `lr_scheduler.step()` before")


def test_other_warnings_match_torch(torch):
    def run(lib):
        optimizer = make_optimizer(lib)
        scheduler = S(lib).StepLR(optimizer, 2)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            scheduler.get_lr()  # outside step: use get_last_lr()
            optimizer.step()
            scheduler.step(3)  # the deprecated epoch argument: closed form
            lr_after_epoch = scheduler.get_last_lr()
            optimizer.step = lambda: None  # overridden: no longer recorded
            other = S(lib).ExponentialLR(make_optimizer(lib), 0.5)
            other.optimizer.step = lambda: None
            other.step()
        return messages(record), lr_after_epoch

    assert run(tt) == run(torch)
    assert len(run(tt)[0]) == 3


def step_times(scheduler, n: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # stepped without the optimizer
        for _ in range(n):
            scheduler.step()


SCHEDULER_ERRORS = [
    lambda lib, o: S(lib).StepLR(object(), 2),
    lambda lib, o: S(lib).StepLR(o, 2, last_epoch=3),
    lambda lib, o: S(lib).LambdaLR(o, [lambda e: 1.0]),
    lambda lib, o: S(lib).MultiplicativeLR(o, [1.0, 2.0]),
    lambda lib, o: S(lib).ConstantLR(o, 1.5),
    lambda lib, o: S(lib).LinearLR(o, 0.0),
    lambda lib, o: S(lib).LinearLR(o, 0.5, 1.5),
    lambda lib, o: S(lib).CosineAnnealingWarmRestarts(o, 0),
    lambda lib, o: S(lib).CosineAnnealingWarmRestarts(o, 2, 0),
    lambda lib, o: S(lib).CosineAnnealingWarmRestarts(o, 2, 1, "0"),
    lambda lib, o: S(lib).CosineAnnealingWarmRestarts(o, 2).step(-1),
    lambda lib, o: S(lib).OneCycleLR(o, 1.0),
    lambda lib, o: S(lib).OneCycleLR(o, 1.0, total_steps=0),
    lambda lib, o: S(lib).OneCycleLR(o, 1.0, epochs=0, steps_per_epoch=3),
    lambda lib, o: S(lib).OneCycleLR(o, 1.0, epochs=2, steps_per_epoch=0),
    lambda lib, o: S(lib).OneCycleLR(o, 1.0, total_steps=10, pct_start=1.5),
    lambda lib, o: S(lib).OneCycleLR(o, 1.0, total_steps=10, anneal_strategy="exp"),
    lambda lib, o: S(lib).OneCycleLR(o, [1.0], total_steps=10),
    lambda lib, o: step_times(S(lib).OneCycleLR(o, 1.0, total_steps=2), 3),
    lambda lib, o: S(lib).CyclicLR(o, 0.1, 1.0, mode="sawtooth"),
    lambda lib, o: S(lib).CyclicLR(lib.optim.Adagrad(o.param_groups[0]["params"]), 0.1, 1.0),
    lambda lib, o: S(lib).ReduceLROnPlateau(o, factor=1.0),
    lambda lib, o: S(lib).ReduceLROnPlateau(o, mode="middle"),
    lambda lib, o: S(lib).ReduceLROnPlateau(o, threshold_mode="log"),
    lambda lib, o: S(lib).ReduceLROnPlateau(o, min_lr=[0.1]),
    lambda lib, o: S(lib).SequentialLR(o, [], []),
    lambda lib, o: S(lib).SequentialLR(o, [S(lib).StepLR(o, 2)], [3]),
    lambda lib, o: S(lib).SequentialLR(o, [S(lib).ReduceLROnPlateau(o)], []),
    lambda lib, o: S(lib).SequentialLR(o, [S(lib).StepLR(make_optimizer(lib), 2)], []),
    lambda lib, o: S(lib).ChainedScheduler([]),
    lambda lib, o: S(lib).ChainedScheduler([S(lib).StepLR(o, 2), 3]),
]


@pytest.mark.parametrize("index", range(len(SCHEDULER_ERRORS)))
def test_scheduler_errors_match_torch(torch, index):
    make = SCHEDULER_ERRORS[index]
    ours, theirs = make_optimizer(tt), make_optimizer(torch)
    kind, message = caught(lambda: make(tt, ours))
    t_kind, t_message = caught(lambda: make(torch, theirs))
    # an optimizer's repr differs only where it prints a tensor rate: not in these
    assert (kind, message) == (t_kind, t_message)


def test_resuming_with_last_epoch(torch):
    """`last_epoch >= 0` needs `initial_lr` in the groups (a loaded optimizer has it), and
    continues the schedule from there."""
    assert_same_error(
        lambda: S(tt).ExponentialLR(make_optimizer(tt), 0.5, last_epoch=2),
        lambda: S(torch).ExponentialLR(make_optimizer(torch), 0.5, last_epoch=2),
    )
    runs = []
    for lib in (tt, torch):
        optimizer = make_optimizer(lib)
        for group in optimizer.param_groups:
            group["initial_lr"] = group["lr"]
        scheduler = S(lib).CosineAnnealingLR(optimizer, 10, last_epoch=4)
        runs.append(step_both(lib, optimizer, scheduler, 6))
    assert runs[0] == runs[1]
