"""Devices, random sampling with `generator=`, and `torch.testing.assert_close`, against PyTorch.

Devices: `torch.device` values and parse errors, the CPU build's refusals (`cuda`, `xpu`,
`mps`), the `cuda` and `accelerator` namespaces, the default device. Random numbers: with a
`Generator` the ATen kernels give PyTorch's numbers (compared exactly; without one, the global
stream after `manual_seed`: tests/shim/test_global_rng.py), the same seed gives the same
numbers; result dtypes, errors, and the zero gradients of sampling nodes.
`assert_close`: the pass/fail outcome and the whole message of each case equal PyTorch's.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import assert_same_error, normalize_torch_message
from tracegrad.torch.device import (
    accelerator,
    check_device,
    cuda,
    device,
    get_default_device,
    set_default_device,
)
from tracegrad.torch.ops import random
from tracegrad.torch.testing import assert_close

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _torch_one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# -- devices ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args", [("cpu",), ("cpu:0",), ("cpu", 0), ("cuda",), ("cuda:1",), ("cuda", 2), ("xpu",)]
)
def test_device_values_match_torch(args):
    ours, theirs = device(*args), torch.device(*args)
    assert (repr(ours), str(ours)) == (repr(theirs), str(theirs))
    assert (ours.type, ours.index) == (theirs.type, theirs.index)
    assert device(ours) == ours and hash(device(ours)) == hash(ours)


@pytest.mark.parametrize(
    "args", [("foo",), ("cpu:x",), ("cuda:-1",), ("cpu", -1), (0,), ("cpu:0", 1), ("cpu", "0")]
)
def test_device_errors_match_torch(args):
    assert_same_error(lambda: device(*args), lambda: torch.device(*args))


def test_device_equality_follows_torch():
    for a, b in [("cpu", "cpu"), ("cpu", "cpu:0"), ("cuda:0", "cuda:1"), ("cpu", "cuda")]:
        assert (device(a) == device(b)) == (torch.device(a) == torch.device(b))
    assert (device("cpu") == "cpu") == (torch.device("cpu") == "cpu")  # False in both


@pytest.mark.parametrize("where", ["cuda", "cuda:0", device("cuda", 1), "xpu", "mps", "hip"])
def test_other_devices_are_refused_as_by_torchs_cpu_build(where):
    theirs = torch.device(where.type, where.index) if isinstance(where, device) else where
    assert_same_error(lambda: check_device(where), lambda: torch.zeros(1).to(theirs))


def test_cpu_devices_are_accepted():
    for where in (None, "cpu", "cpu:0", device("cpu")):
        assert check_device(where).type == "cpu"


def test_cuda_and_accelerator_answer_as_torchs_cpu_build():
    for name in ("is_available", "device_count", "is_initialized"):
        assert getattr(cuda, name)() == getattr(torch.cuda, name)()
    for name in ("manual_seed", "manual_seed_all"):
        assert getattr(cuda, name)(0) is getattr(torch.cuda, name)(0) is None
    for name in ("current_device", "synchronize", "get_device_name"):
        assert_same_error(getattr(cuda, name), getattr(torch.cuda, name))
    for name in ("is_available", "device_count", "current_accelerator"):
        assert getattr(accelerator, name)() == getattr(torch.accelerator, name)()
    assert accelerator.current_accelerator(check_available=True) is None
    for name in ("current_device_index", "synchronize"):
        assert_same_error(getattr(accelerator, name), getattr(torch.accelerator, name))


def test_default_device():
    assert get_default_device() == device("cpu") and str(get_default_device()) == "cpu"
    try:
        set_default_device("cuda")  # accepted, refused by the first factory (as torch)
        assert get_default_device() == device("cuda")
        with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled$"):
            check_device(None)
        with device("cpu"):
            assert check_device(None) == device("cpu")
        assert get_default_device() == device("cuda")
    finally:
        set_default_device(None)
    assert get_default_device() == device("cpu")


# -- random numbers: PyTorch's with a Generator -------------------------------------------------
def _pair(seed=7):
    return tt.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(3,), (2, 8), (37,)])
def test_rand_and_randn_draw_torchs_numbers(dtype, shape):
    g, t = _pair()
    ours = random.rand(*shape, dtype=np.dtype(dtype), generator=g).numpy()
    theirs = torch.rand(*shape, dtype=getattr(torch, dtype), generator=t).numpy()
    np.testing.assert_array_equal(ours, theirs)
    ours = random.randn(shape, dtype=np.dtype(dtype), generator=g).numpy()
    theirs = torch.randn(shape, dtype=getattr(torch, dtype), generator=t).numpy()
    assert ours.dtype == theirs.dtype
    # float32 from 16 elements: the AVX2 kernel's Cephes log and sincos, reproduced exactly
    np.testing.assert_array_equal(ours, theirs)


def test_randn_keeps_the_second_of_a_pair_for_the_next_call_as_torch():
    g, t = _pair(3)
    ours = [random.randn(3, dtype=np.float64, generator=g).numpy() for _ in range(3)]
    theirs = [torch.randn(3, dtype=torch.float64, generator=t).numpy() for _ in range(3)]
    np.testing.assert_array_equal(np.concatenate(ours), np.concatenate(theirs))
    g.manual_seed(3)  # a reseed drops the kept sample, as torch's
    t.manual_seed(3)
    np.testing.assert_array_equal(
        random.randn(1, dtype=np.float64, generator=g).numpy(),
        torch.randn(1, dtype=torch.float64, generator=t).numpy(),
    )


def test_integer_factories_draw_torchs_numbers():
    g, t = _pair()
    for ours, theirs in [
        (
            lambda: random.randint(3, 17, (4, 5), generator=g),
            lambda: torch.randint(3, 17, (4, 5), generator=t),
        ),  # noqa: E501
        (
            lambda: random.randint(10, (6,), generator=g),
            lambda: torch.randint(10, (6,), generator=t),
        ),  # noqa: E501
        (
            lambda: random.randint(0, 2**40, (3,), generator=g),
            lambda: torch.randint(0, 2**40, (3,), generator=t),
        ),  # noqa: E501
        (lambda: random.randperm(9, generator=g), lambda: torch.randperm(9, generator=t)),
        (
            lambda: random.randint_like(tt.zeros(2, 3), 5, generator=g),
            lambda: torch.randint_like(torch.zeros(2, 3), 5, generator=t),
        ),  # noqa: E501
        (
            lambda: random.rand_like(tt.zeros(4, dtype=tt.float64), generator=g),
            lambda: torch.rand_like(torch.zeros(4, dtype=torch.float64), generator=t),
        ),  # noqa: E501
        (
            lambda: random.randn_like(tt.zeros(5, dtype=tt.float64), generator=g),
            lambda: torch.randn_like(torch.zeros(5, dtype=torch.float64), generator=t),
        ),  # noqa: E501
    ]:
        a, b = ours().numpy(), theirs().numpy()
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bernoulli_and_multinomial_draw_torchs_numbers(dtype):
    probs = np.random.default_rng(0).random((3, 20)).astype(dtype)
    g, t = _pair()
    ours = random.bernoulli(tt.tensor(probs), generator=g).numpy()
    theirs = torch.bernoulli(torch.tensor(probs), generator=t).numpy()
    assert ours.dtype == theirs.dtype
    np.testing.assert_array_equal(ours, theirs)
    for n, replacement in [(1, False), (5, False), (1, True), (30, True)]:
        for weights in (probs, probs[0]):
            a = random.multinomial(tt.tensor(weights), n, replacement, generator=g).numpy()
            b = torch.multinomial(torch.tensor(weights), n, replacement, generator=t).numpy()
            np.testing.assert_array_equal(a, b)


def test_normal_overloads_draw_torchs_numbers():
    mean = np.linspace(-1, 1, 6).reshape(2, 3)
    std = np.array([0.5, 1.0, 2.0])
    g, t = _pair()
    for ours, theirs in [
        (
            lambda: random.normal(2.0, 3.0, (4, 5), dtype=tt.float64, generator=g),
            lambda: torch.normal(2.0, 3.0, (4, 5), dtype=torch.float64, generator=t),
        ),  # noqa: E501
        (
            lambda: random.normal(tt.tensor(mean), tt.tensor(std), generator=g),
            lambda: torch.normal(torch.tensor(mean), torch.tensor(std), generator=t),
        ),  # noqa: E501
        (
            lambda: random.normal(tt.tensor(mean), 2.0, generator=g),
            lambda: torch.normal(torch.tensor(mean), 2.0, generator=t),
        ),  # noqa: E501
        (
            lambda: random.normal(1.0, tt.tensor(std), generator=g),
            lambda: torch.normal(1.0, torch.tensor(std), generator=t),
        ),  # noqa: E501
        (
            lambda: random.normal(tt.tensor(mean), generator=g),
            lambda: torch.normal(torch.tensor(mean), generator=t),
        ),  # noqa: E501
    ]:
        a, b = ours().numpy(), theirs().numpy()
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


# -- any stream: same seed, same numbers (poisson is NumPy's sampler on the twister) ------------
def _draws(generator):
    p = tt.full((50,), 0.3, dtype=tt.float64)
    return [
        random.rand(5, generator=generator),
        random.randn(20, generator=generator),
        random.randint(0, 9, (7,), generator=generator),
        random.randperm(8, generator=generator),
        random.bernoulli(p, generator=generator),
        random.multinomial(p, 4, generator=generator),
        random.multinomial(p, 40, True, generator=generator),
        random.normal(tt.zeros(3), tt.ones(3), generator=generator),
        random.normal(0.0, 1.0, (2, 2), generator=generator),
        random.poisson(tt.tensor([0.5, 3.0, 40.0]), generator=generator),
        random.randn_like(p, generator=generator),
    ]


@pytest.mark.parametrize("seeded", ["manual_seed", "Generator", "default_generator"])
def test_the_same_seed_gives_the_same_numbers(seeded):
    def run():
        if seeded == "manual_seed":
            tt.ops.creation.manual_seed(11)
            return [x.numpy() for x in _draws(None)]
        if seeded == "default_generator":
            return [x.numpy() for x in _draws(tt.default_generator.manual_seed(11))]
        return [x.numpy() for x in _draws(tt.Generator().manual_seed(11))]

    first, second = run(), run()
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[1], _draws(tt.Generator().manual_seed(12))[1].numpy())


def test_sampled_values_have_the_right_distribution():
    g = tt.Generator().manual_seed(0)
    rates = tt.full((20000,), 3.0, dtype=tt.float64)
    counts = random.poisson(rates, generator=g).numpy()
    assert abs(counts.mean() - 3.0) < 0.1 and abs(counts.var() - 3.0) < 0.2
    z = random.normal(tt.full((20000,), 2.0), 0.5, generator=g).numpy()
    assert abs(z.mean() - 2.0) < 0.02 and abs(z.std() - 0.5) < 0.02
    hits = random.bernoulli(tt.full((20000,), 0.25), generator=g).numpy()
    assert abs(hits.mean() - 0.25) < 0.02
    u = random.rand(20000, generator=g).numpy()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.01


# -- dtypes, gradients, errors ------------------------------------------------------------------
def _on(M, fn_name):
    return random.__dict__[fn_name] if M is tt else getattr(torch, fn_name)


@pytest.mark.parametrize(
    "case",
    [
        lambda M, f: f("normal")(M.zeros(3, dtype=M.float64), M.ones(3)),
        lambda M, f: f("normal")(M.zeros(3), M.ones(3, dtype=M.float64)),
        lambda M, f: f("normal")(0.0, M.ones(2, dtype=M.float64)),
        lambda M, f: f("normal")(M.zeros(2, dtype=M.float16), 1.0),
        lambda M, f: f("normal")(0.0, 1.0, (2, 3)),
        lambda M, f: f("bernoulli")(M.full((2,), 0.5, dtype=M.float64)),
        lambda M, f: f("bernoulli")(M.zeros(2, dtype=M.float64), 0.5),
        lambda M, f: f("poisson")(M.ones(2, dtype=M.float64)),
        lambda M, f: f("multinomial")(M.ones(4), 2),
        lambda M, f: f("randint_like")(M.zeros(2), 3, 5),
        lambda M, f: f("randint")(3, 5, (2,), dtype=M.float32),
        lambda M, f: f("randperm")(4, dtype=M.float32),
        lambda M, f: f("rand_like")(M.zeros(2, dtype=M.float64)),
        lambda M, f: f("randn")(2, dtype=M.complex64),
    ],
)
def test_result_dtypes_and_shapes_match_torch(case):
    ours = case(tt, lambda n: _on(tt, n))
    theirs = case(torch, lambda n: _on(torch, n))
    assert ours.numpy().dtype == theirs.numpy().dtype and ours.shape == tuple(theirs.shape)
    assert ours.requires_grad == theirs.requires_grad


@pytest.mark.parametrize(
    "case",
    [
        lambda M, f: f("normal")(M.zeros(3, requires_grad=True), M.ones(3, requires_grad=True)),
        lambda M, f: f("normal")(M.zeros(2, 1, requires_grad=True), M.ones(3, requires_grad=True)),
        lambda M, f: f("normal")(M.zeros(2, 1, dtype=M.float64, requires_grad=True), M.ones(3)),
        lambda M, f: f("normal")(M.zeros(3, requires_grad=True), 2.0),
        lambda M, f: f("normal")(1.0, M.ones(3, requires_grad=True)),
        lambda M, f: f("normal")(M.zeros(3), M.ones(3, dtype=M.float64, requires_grad=True)),
        lambda M, f: f("bernoulli")(M.full((3,), 0.5, requires_grad=True)),
        lambda M, f: f("poisson")(M.tensor([1.0, 2.0], dtype=M.float64, requires_grad=True)),
    ],
)
def test_sampling_nodes_have_torchs_names_and_zero_gradients(case):
    results = []
    for M in (tt, torch):
        out = case(M, lambda n, M=M: _on(M, n))
        leaves = [x for x in _leaves(out.grad_fn)]
        (out * 3).sum().backward()
        grads = [x.grad.numpy() for x in leaves]
        results.append((out.grad_fn.name(), [g.shape for g in grads], [g.dtype for g in grads]))
        assert all(not g.any() for g in grads)
    assert results[0] == results[1]


def _leaves(fn):
    return [f.variable for f, _ in fn.next_functions if f is not None]


def test_multinomial_has_no_gradient():
    for M in (tt, torch):
        out = _on(M, "multinomial")(M.ones(4, requires_grad=True), 2)
        assert out.grad_fn is None and not out.requires_grad


def test_sampling_under_no_grad_records_nothing():
    with tt.no_grad():
        out = random.normal(tt.zeros(3, requires_grad=True), 1.0)
    assert out.grad_fn is None and not out.requires_grad


@pytest.mark.parametrize(
    "case",
    [
        lambda M, f: f("bernoulli")(M.tensor([1, 0])),
        lambda M, f: f("bernoulli")(M.tensor([1.5])),
        lambda M, f: f("bernoulli")(M.tensor([0.5]), 1.5),
        lambda M, f: f("multinomial")(M.ones(2, 3, 4), 1),
        lambda M, f: f("multinomial")(M.tensor([1, 2]), 1),
        lambda M, f: f("multinomial")(M.ones(3), 0),
        lambda M, f: f("multinomial")(M.tensor([1.0, 2.0]), 3),
        lambda M, f: f("multinomial")(M.tensor([[1.0, 0.0], [0.0, 0.0]]), 1),
        lambda M, f: f("multinomial")(M.tensor([1.0, -1.0]), 2, True),
        lambda M, f: f("poisson")(M.tensor([-1.0])),
        lambda M, f: f("poisson")(M.tensor([1])),
        lambda M, f: f("normal")(0.0, -1.0, (2, 3)),
        lambda M, f: f("normal")(M.zeros(3), -1.0),
        lambda M, f: f("normal")(M.zeros(3), -M.ones(3)),
        lambda M, f: f("normal")(M.zeros(3, dtype=M.int64), 1.0),
        lambda M, f: f("normal")(M.zeros(3), M.ones(4)),
        lambda M, f: f("randint")(5, 5, (2,)),
        lambda M, f: f("randint_like")(M.zeros(2), 3, 3),
        lambda M, f: f("rand")(2, dtype=M.int64),
        lambda M, f: f("randn")(2, dtype=M.int64),
        lambda M, f: f("rand_like")(M.zeros(2, dtype=M.int64)),
    ],
)
def test_errors_match_torch(case):
    assert_same_error(
        lambda: case(tt, lambda n: _on(tt, n)),
        lambda: case(torch, lambda n: _on(torch, n)),
        scalar_names=True,
    )


def test_type_errors_of_arguments():
    for ours, theirs in [
        (lambda: random.rand(2, generator=3), lambda: torch.rand(2, generator=3)),
        (lambda: random.normal(0.0, 1.0), lambda: torch.normal(0.0, 1.0)),
        (
            lambda: random.normal(tt.zeros(2), 1.0, (2,)),
            lambda: torch.normal(torch.zeros(2), 1.0, (2,)),
        ),  # noqa: E501
    ]:
        with pytest.raises(TypeError):
            ours()
        with pytest.raises(TypeError):
            theirs()


# -- assert_close -------------------------------------------------------------------------------
_NAN, _INF = math.nan, math.inf
_CASES = [
    ("t", [1.0, 2.0, 3.0], "t", [1.0, 2.1, 3.0], {}),
    ("t64", [[1.0, 2.0], [3.0, 4.0]], "t64", [[1.0, 2.0], [3.0, 5.0]], {}),
    ("t", 1.0, "t", 1.5, {}),
    ("n", 1.0, "n", 1.5, {}),
    ("n", 1, "n", 2, {}),
    ("n", 1, "n", 1.0, {}),
    ("n", True, "n", False, {}),
    ("t", [1, 2], "t", [1, 3], {}),
    ("t", [True, False], "t", [True, True], {}),
    ("t", [1.0, 2.0], "t", [1.0, 2.0, 3.0], {}),
    ("t", [1.0, 2.0], "t64", [1.0, 2.0], {}),
    ("t", [1.0, 2.0], "t64", [1.0, 2.0], {"check_dtype": False}),
    ("t", 1.0, "t64", 1.5, {"check_dtype": False}),
    ("t", [1, 2], "t", [1.0, 2.0], {"check_dtype": False}),
    ("t", [1.0, 2.0], "t", [1.0, 2.1], {"rtol": 0.1}),
    ("t", [1.0, 2.0], "t", [1.0, 2.1], {"atol": 0.2}),
    ("t", [1.0, 2.0], "t", [1.0, 2.1], {"atol": 0.2, "rtol": 0.0}),
    ("t", [1.0, 2.0, 3.0, 4.0], "t", [1.0, 2.0, 3.0, 40.0], {"atol": 1e-5, "rtol": 0}),
    ("t", [[1, 2], [3, 4]], "t", [[1, 2], [3, 5]], {"atol": 0.5, "rtol": 0}),
    ("t", [1.0, _NAN], "t", [1.0, _NAN], {}),
    ("t", [1.0, _NAN], "t", [1.0, _NAN], {"equal_nan": True}),
    ("t", [1.0, 2.0], "t", [1.0, _INF], {}),
    ("t", [_INF], "t", [_INF], {}),
    ("t", [_INF], "t", [-_INF], {}),
    ("t", [0.0, 2.0], "t", [1e-9, 2.0], {}),
    ("t", [1.0, 2.0], "t", [0.0, 2.0], {}),
    ("t", [1 + 1j], "t", [1 + 2j], {}),
    ("t", [1.0, 2.0], "t", [1.0, 2.00001], {}),
    ("t64", [1.0, 2.0], "t64", [1.0, 2.000001], {}),
    ("t", [1.0, 2.0], "t", [1.0, 2.1], {"msg": "custom"}),
    ("t", [1], "t", [2], {"msg": lambda m: "X" + m[:5]}),
    ("n", 1.0, "t", 1.0, {}),
    ("t", [1.0, 2.0], "n", [1.0, 2.0], {}),
    ("n", "a", "n", "b", {}),
    ("n", None, "n", None, {}),
    ("l", [1.0, 2.0], "l", [1.0, 2.5], {}),
    ("l", [1.0], "l", [1.0, 2.0], {}),
    ("d", {"a": 1.0}, "d", {"a": 2.0}, {}),
    ("d", {"a": 1.0}, "d", {"b": 1.0}, {}),
    ("d", {"b": [1.0, 2.0], "a": 1.0}, "d", {"b": [1.0, 3.0], "a": 1.0}, {}),
]


def _make(M, kind, value):
    if kind == "t":
        return M.tensor(value)
    if kind == "t64":
        return M.tensor(value, dtype=M.float64)
    if kind == "l":
        return [M.tensor(v) for v in value]
    if kind == "d":
        return {k: [M.tensor(x) for x in v] if isinstance(v, list) else M.tensor(v)
                for k, v in value.items()}  # fmt: skip
    return value


def _outcome(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the exception is the result
        return type(e).__name__, str(e)
    return None


def _normalized(outcome):
    if outcome is None or outcome[0] == "TypeError":  # TypeErrors name the library's classes
        return outcome and outcome[0]
    lines = outcome[1].split("\n")
    return outcome[0], "\n".join(normalize_torch_message(line) for line in lines)


@pytest.mark.parametrize("case", _CASES, ids=range(len(_CASES)))
def test_assert_close_matches_torch(case):
    kind_a, a, kind_e, e, options = case
    ours = _outcome(lambda: assert_close(_make(tt, kind_a, a), _make(tt, kind_e, e), **options))
    theirs = _outcome(
        lambda: torch.testing.assert_close(
            _make(torch, kind_a, a), _make(torch, kind_e, e), **options
        )
    )
    assert _normalized(ours) == _normalized(theirs)


def test_assert_close_wants_both_tolerances_or_neither():
    for options in ({"rtol": 0.1}, {"atol": 0.1}):
        assert_same_error(
            lambda o=options: assert_close(tt.ones(1), tt.ones(1), **o),
            lambda o=options: torch.testing.assert_close(torch.ones(1), torch.ones(1), **o),
        )


def test_assert_close_compares_numpy_arrays_and_ignores_requires_grad():
    assert_close(np.ones(3), np.ones(3))
    assert_close(tt.ones(2, requires_grad=True), tt.ones(2))
    with pytest.raises(AssertionError, match="^Tensor-likes are not close!"):
        assert_close(np.ones(3), np.zeros(3))


# -- once wired into tracegrad.torch ----------------------------------------------------------
def test_wired_names():
    assert tt.device is device and tt.cuda is cuda and tt.accelerator is accelerator
    assert tt.testing.assert_close is assert_close
    for name in random.__all__:  # rand, randn, randint, randperm: wrapped to take `out=`
        fn = getattr(tt, name)
        assert getattr(fn, "__wrapped__", fn) is getattr(random, name), name
    out = tt.zeros(3, dtype=tt.float64)
    assert tt.rand(3, dtype=tt.float64, generator=tt.Generator(), out=out) is out
    np.testing.assert_array_equal(
        out.numpy(), torch.rand(3, dtype=torch.float64, generator=torch.Generator()).numpy()
    )
    g, t = _pair()
    ours = tt.empty(20, dtype=tt.float64).normal_(1.0, 2.0, generator=g).uniform_(generator=g)
    theirs = torch.empty(20, dtype=torch.float64).normal_(1.0, 2.0, generator=t)
    np.testing.assert_array_equal(ours.numpy(), theirs.uniform_(generator=t).numpy())
    x = tt.ones(2)
    assert x.device == tt.device("cpu") and x.to(tt.device("cpu")) is x and x.cpu() is x
    assert (x.is_cpu, x.is_cuda) == (True, False) and x.to("cpu", copy=True) is not x
    assert x.to("cpu", tt.float64).dtype == np.float64
    with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled$"):
        x.cuda()
    with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled$"):
        x.to("cuda")
    with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled$"):
        tt.zeros(2, device="cuda")
    g = tt.Generator().manual_seed(0)
    b = x.bernoulli(generator=g)
    assert b.shape == (2,) and x.multinomial(1, generator=g).dtype == np.int64
