"""The global random stream is PyTorch's: after the same `manual_seed`, every sampler without
`generator=` draws torch's numbers, bit for bit, and leaves the stream where torch's is.

Each scenario runs in both libraries after `manual_seed(seed)` and compares the values (dtype,
shape, every bit) and then the two streams' states (`get_rng_state`, torch's 5056-byte layout in
both), so a call that consumed one word too many or too few, or kept a different normal sample
for later, fails. Covered: the samplers over shapes and dtypes (normals below and above the 16
elements where ATen switches kernels), interleaved calls, `Tensor.uniform_`/`normal_`,
`nn.init`, the default initialisation of the layers, dropout, the state functions, and the data
loader's shuffles. The arithmetic helpers (`aten_math`) and the vectorised Fisher-Yates are
checked against exact arithmetic and the sequential loop.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import assert_same_error, torch_one_thread  # noqa: F401 - fixture
from tracegrad.torch import aten_math
from tracegrad.torch.generator import _swaps


def _arrays(value) -> list[np.ndarray]:
    if isinstance(value, dict):
        return [a for k in value for a in _arrays(value[k])]
    if isinstance(value, list | tuple):
        return [a for v in value for a in _arrays(v)]
    if hasattr(value, "detach"):
        return [np.asarray(value.detach().numpy())]
    return [np.asarray(value)]


def assert_same_draws(torch, draw, seed=0):
    """`draw(lib)` after `lib.manual_seed(seed)`: torch's values, bit for bit, and the stream
    left in torch's state."""
    tt.manual_seed(seed)
    ours = _arrays(draw(tt))
    torch.manual_seed(seed)
    theirs = _arrays(draw(torch))
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), i
        np.testing.assert_array_equal(a, b, err_msg=f"draw {i}")
    np.testing.assert_array_equal(tt.get_rng_state().numpy(), torch.get_rng_state().numpy())


SIZES = [(), (1,), (3,), (15,), (16,), (17,), (4, 5), (33,), (2, 3, 40), (1000,)]
REAL = ["float32", "float64"]


# -- the samplers ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(1,), (17,), (4, 5)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int16"])
def test_bernoulli_exponential_and_random_in_place(torch, shape, dtype):
    def draw(lib):
        t = lib.empty(shape, dtype=getattr(lib, dtype))
        out = [t.bernoulli_(0.3), t.clone().bernoulli_(lib.full(shape, 0.6)), t.random_(3, 17)]
        out += [t.clone().random_(10), t.clone().random_(-5, 2**40 if "64" in dtype else 99)]
        if dtype.startswith("float"):
            out.append(t.clone().exponential_(2.5))
        return out

    assert_same_draws(torch, draw)


def test_bernoulli_exponential_and_random_refuse_bad_arguments(torch):
    for call in (
        lambda lib: lib.empty(3).bernoulli_(1.5),
        lambda lib: lib.empty(3).exponential_(-1.0),
        lambda lib: lib.empty(3).random_(5, 2),
        lambda lib: lib.empty(3, dtype=lib.int64).exponential_(),
    ):
        assert_same_error(lambda c=call: c(tt), lambda c=call: c(torch), scalar_names=True)


@pytest.mark.parametrize("dtype", [*REAL, "float16", "complex64", "complex128"])
@pytest.mark.parametrize("shape", SIZES, ids=str)
def test_rand_and_randn(torch, shape, dtype):
    assert_same_draws(
        torch,
        lambda lib: [
            lib.rand(shape, dtype=getattr(lib, dtype)),
            lib.randn(*shape, dtype=getattr(lib, dtype)) if shape else lib.randn(()),
        ],
    )


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("shape", SIZES, ids=str)
def test_the_like_forms(torch, shape, dtype):
    def draw(lib):
        x = lib.zeros(shape, dtype=getattr(lib, dtype))
        return [lib.rand_like(x), lib.randn_like(x), lib.randint_like(x, 3, 9)]

    assert_same_draws(torch, draw)


@pytest.mark.parametrize("shape", SIZES, ids=str)
@pytest.mark.parametrize("dtype", [*REAL, "float16"])
def test_uniform_and_normal_in_place(torch, shape, dtype):
    # fused multiply-adds in the kernels: u * (b - a) + a and z * std + mean, rounded once
    def draw(lib):
        x = lib.empty(shape, dtype=getattr(lib, dtype))
        return [
            x.uniform_(-0.37, 2.3).clone(),
            x.normal_(0.37, 2.3).clone(),
            x.uniform_().clone(),
            x.normal_().clone(),
        ]

    assert_same_draws(torch, draw)


@pytest.mark.parametrize("shape", SIZES, ids=str)
@pytest.mark.parametrize("dtype", REAL)
def test_normal_overloads(torch, shape, dtype):
    def draw(lib):
        d = getattr(lib, dtype)
        n = math.prod(shape)
        mean = lib.tensor(np.linspace(-2, 3, n).reshape(shape), dtype=d)
        std = lib.tensor(np.linspace(0.1, 4, n).reshape(shape), dtype=d)
        return [
            lib.normal(1.5, 0.3, shape, dtype=d),
            lib.normal(mean, 0.7),
            lib.normal(0.25, std),
            lib.normal(mean, std),
            lib.normal(mean),
        ]

    assert_same_draws(torch, draw)


def test_integers(torch):
    # random() % range below 2**28, random64() % range from there
    assert_same_draws(
        torch,
        lambda lib: [
            lib.randint(10, (40,)),
            lib.randint(-5, 7, (3, 4)),
            lib.randint(0, 2**28 - 1, (9,)),
            lib.randint(0, 2**28, (9,)),
            lib.randint(-(2**40), 2**40, (5,)),
            lib.randint(0, 3, (2, 2), dtype=lib.int32),
        ],
    )


@pytest.mark.parametrize("n", [0, 1, 2, 3, 10, 1000, 70_000])
def test_randperm(torch, n):
    assert_same_draws(torch, lambda lib: [lib.randperm(n), lib.randperm(n, dtype=lib.int32)])


@pytest.mark.parametrize("dtype", REAL)
def test_bernoulli(torch, dtype):
    # float64 probabilities are compared with float64 uniforms, float32 ones with float32's
    probs = np.random.default_rng(0).random((6, 7)).astype(dtype)
    assert_same_draws(
        torch,
        lambda lib: [
            lib.bernoulli(lib.tensor(probs)),
            lib.tensor(probs).bernoulli(),
            lib.bernoulli(lib.tensor(probs), 0.3),
        ],
    )


@pytest.mark.parametrize("dtype", REAL)
def test_multinomial(torch, dtype):
    weights = np.random.default_rng(1).random((3, 12)).astype(dtype)
    weights[0, 4] = 0

    def draw(lib):
        w = lib.tensor(weights)
        return [
            lib.multinomial(w, 1),
            lib.multinomial(w, 5),
            lib.multinomial(w[0], 12),
            lib.multinomial(w, 40, replacement=True),
            lib.multinomial(w[1], 1, replacement=True),
            w.multinomial(3),
        ]

    assert_same_draws(torch, draw)


def test_interleaved_calls_keep_the_streams_in_step(torch):
    """Fewer than 16 normals are Box-Muller pairs whose second sample waits for the next call,
    through other draws, as torch's (the state's `normal_y`)."""

    def draw(lib):
        out = [lib.randn(3, dtype=lib.float64), lib.rand(2)]
        out += [lib.randn(1, dtype=lib.float64), lib.randint(0, 5, (3,)), lib.randn(20)]
        out += [lib.randn(1, dtype=lib.float64), lib.randperm(7), lib.randn(5)]
        out += [lib.empty(3).normal_(), lib.bernoulli(lib.full((4,), 0.5))]
        out += [lib.multinomial(lib.ones(5), 2), lib.randn(2, 9, dtype=lib.complex64)]
        return out

    assert_same_draws(torch, draw, seed=12345)


@pytest.mark.parametrize("seed", [0, 1, -1, 2**32 + 5, 2**63 - 1, 2**64 - 1])
def test_any_seed(torch, seed):
    assert_same_draws(torch, lambda lib: [lib.rand(5), lib.randn(20)], seed=seed)
    assert tt.initial_seed() == torch.initial_seed()


# -- modules and nn.init --------------------------------------------------------------------------
MODULES = {
    "Linear": lambda nn: nn.Linear(5, 3),
    "Linear without bias": lambda nn: nn.Linear(40, 30, bias=False),
    "Conv1d": lambda nn: nn.Conv1d(3, 8, 5),
    "Conv2d": lambda nn: nn.Conv2d(3, 8, 3, groups=1),
    "Conv3d": lambda nn: nn.Conv3d(2, 4, 2),
    "ConvTranspose2d": lambda nn: nn.ConvTranspose2d(4, 6, 3),
    "RNN": lambda nn: nn.RNN(4, 6),
    "LSTM": lambda nn: nn.LSTM(4, 6, num_layers=2, bidirectional=True),
    "GRU": lambda nn: nn.GRU(4, 6),
    "LSTMCell": lambda nn: nn.LSTMCell(4, 6),
    "Embedding": lambda nn: nn.Embedding(10, 4),
    "Embedding, padding": lambda nn: nn.Embedding(100, 33, padding_idx=3),
    "EmbeddingBag": lambda nn: nn.EmbeddingBag(10, 4),
    "Bilinear": lambda nn: nn.Bilinear(3, 4, 5),
    "MultiheadAttention": lambda nn: nn.MultiheadAttention(8, 2),
    "MultiheadAttention, kdim": lambda nn: nn.MultiheadAttention(8, 2, kdim=5, vdim=3),
    "TransformerEncoderLayer": lambda nn: nn.TransformerEncoderLayer(8, 2, 16),
    "Sequential": lambda nn: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)),
}


@pytest.mark.parametrize("name", MODULES)
def test_the_initial_weights_are_torchs(torch, name):
    def draw(lib):
        state = MODULES[name](lib.nn).state_dict()
        return {k: state[k] for k in sorted(state)}

    tt.manual_seed(3)
    torch.manual_seed(3)
    assert list(MODULES[name](tt.nn).state_dict()) == list(MODULES[name](torch.nn).state_dict())
    assert_same_draws(torch, draw)


INITS = {
    "uniform_": ((-0.5, 2.0), {}),
    "normal_": ((0.3, 1.7), {}),
    "xavier_uniform_": ((), {"gain": 2.0}),
    "xavier_normal_": ((), {}),
    "kaiming_uniform_": ((), {"a": math.sqrt(5)}),
    "kaiming_normal_": ((), {"mode": "fan_out", "nonlinearity": "relu"}),
    "trunc_normal_": ((), {"std": 0.02}),
    "sparse_": ((0.4,), {}),
}


@pytest.mark.parametrize("name", INITS)
@pytest.mark.parametrize("dtype", REAL)
def test_nn_init(torch, name, dtype):
    args, kwargs = INITS[name]
    shape = (7, 6) if name == "sparse_" else (12, 5, 3)
    assert_same_draws(
        torch,
        lambda lib: getattr(lib.nn.init, name)(
            lib.empty(shape, dtype=getattr(lib, dtype)), *args, **kwargs
        ),
    )


def test_trunc_normal_with_narrow_bounds_takes_the_rejection_branch(torch):
    # under 30% of the mass in [a, b]: uniform candidates, accepted by their density (float64:
    # the float32 log of the acceptance test is SLEEF's in torch, NumPy's here)
    assert_same_draws(
        torch,
        lambda lib: lib.nn.init.trunc_normal_(
            lib.empty(300, dtype=lib.float64), mean=0.0, std=1.0, a=1.5, b=3.0
        ),
    )


def test_orthogonal_draws_torchs_normals_then_factorises_with_numpy(torch):
    tt.manual_seed(4)
    ours = tt.nn.init.orthogonal_(tt.empty(6, 4)).numpy()
    torch.manual_seed(4)
    theirs = torch.nn.init.orthogonal_(torch.empty(6, 4)).numpy()
    np.testing.assert_allclose(ours, theirs, atol=1e-6)  # LAPACK's QR against NumPy's
    np.testing.assert_array_equal(tt.get_rng_state().numpy(), torch.get_rng_state().numpy())


# -- dropout --------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [0.1, 0.2, 0.25, 0.5, 0.9])
def test_dropout_masks_are_torchs(torch, p):
    def draw(lib):
        F = lib.nn.functional
        x = lib.linspace(1, 2, 60).reshape(3, 4, 5)
        return [
            F.dropout(x, p),
            lib.nn.Dropout(p)(x),
            F.dropout(x.double(), p),
            F.dropout2d(x.reshape(3, 4, 5, 1), p),
            lib.nn.Dropout1d(p)(x),
            F.alpha_dropout(x, p, True),
            F.feature_alpha_dropout(x, p, True),
        ]

    assert_same_draws(torch, draw)


def test_dropout_in_a_training_step_is_torchs(torch):
    def run(lib):
        model = lib.nn.Sequential(
            lib.nn.Linear(6, 16), lib.nn.ReLU(), lib.nn.Dropout(0.3), lib.nn.Linear(16, 2)
        )
        x = lib.linspace(-1, 1, 24).reshape(4, 6)
        out = model(x)
        out.sum().backward()
        return [out, model[0].weight.grad]

    tt.manual_seed(0)
    ours = _arrays(run(tt))
    torch.manual_seed(0)
    theirs = _arrays(run(torch))
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)  # the same units dropped
        assert ((a == 0) == (b == 0)).all()


# -- the state --------------------------------------------------------------------------------
def test_the_state_is_torchs_byte_for_byte(torch):
    for seed in (0, 7, 2**40 + 3):
        tt.manual_seed(seed)
        torch.manual_seed(seed)
        np.testing.assert_array_equal(tt.get_rng_state().numpy(), torch.get_rng_state().numpy())
        for draw in (
            lambda lib: lib.rand(700),
            lambda lib: lib.randn(3, dtype=lib.float64),
            lambda lib: lib.randn(1, dtype=lib.float64),
        ):
            draw(tt)
            draw(torch)
            state = tt.get_rng_state()
            assert state.dtype == np.uint8 and state.shape == (5056,)
            np.testing.assert_array_equal(state.numpy(), torch.get_rng_state().numpy())
    assert tt.initial_seed() == torch.initial_seed()
    g, t = tt.Generator(), torch.Generator()
    np.testing.assert_array_equal(g.get_state().numpy(), t.get_state().numpy())


def test_set_rng_state_round_trips():
    tt.manual_seed(1)
    tt.randn(5, dtype=tt.float64)  # a normal sample waits in the state
    state = tt.get_rng_state()
    first = [tt.randn(3, dtype=tt.float64).numpy(), tt.rand(40).numpy(), tt.randperm(9).numpy()]
    assert tt.set_rng_state(state) is None
    again = [tt.randn(3, dtype=tt.float64).numpy(), tt.rand(40).numpy(), tt.randperm(9).numpy()]
    for a, b in zip(first, again, strict=True):
        np.testing.assert_array_equal(a, b)
    tt.default_generator.set_state(state)
    np.testing.assert_array_equal(tt.randn(3, dtype=tt.float64).numpy(), first[0])
    assert tt.default_generator.get_state().numpy().tobytes() != state.numpy().tobytes()


def test_states_move_between_the_libraries(torch):
    torch.manual_seed(3)
    torch.randn(5, dtype=torch.float64)
    tt.set_rng_state(tt.tensor(torch.get_rng_state().numpy()))
    assert tt.initial_seed() == 3
    assert_same_draws_from_here(torch)
    tt.manual_seed(9)
    tt.randn(7, dtype=tt.float64)
    torch.set_rng_state(torch.tensor(tt.get_rng_state().numpy()))
    assert_same_draws_from_here(torch)


def assert_same_draws_from_here(torch):
    for draw in (
        lambda lib: lib.randn(1, dtype=lib.float64),
        lambda lib: lib.randn(30),
        lambda lib: lib.randperm(12),
    ):
        np.testing.assert_array_equal(draw(tt).numpy(), draw(torch).numpy())


def test_seeding_functions_follow_torchs(torch):
    assert tt.manual_seed(5) is tt.default_generator
    assert tt.default_generator.initial_seed() == 5 and tt.initial_seed() == 5
    tt.manual_seed(6.0)  # torch.manual_seed takes int(seed)
    assert tt.initial_seed() == 6
    seed = tt.seed()
    assert isinstance(seed, int) and 0 <= seed < 2**64 and tt.initial_seed() == seed
    torch.manual_seed(seed)
    np.testing.assert_array_equal(tt.rand(4).numpy(), torch.rand(4).numpy())
    assert tt.default_generator.device == "cpu"


@pytest.mark.parametrize(
    "bad",
    [
        lambda lib: lib.zeros(5056),  # not bytes
        lambda lib: lib.zeros(10, dtype=lib.uint8),  # not a whole state
        lambda lib: lib.zeros(5056, dtype=lib.uint8),  # not seeded
        lambda lib: [1, 2],
    ],
)
def test_set_rng_state_refuses_what_torch_refuses(torch, bad):
    assert_same_error(lambda: tt.set_rng_state(bad(tt)), lambda: torch.set_rng_state(bad(torch)))


# -- data -----------------------------------------------------------------------------------------
def test_dataloader_shuffles_as_torchs(torch):
    def draw(lib):
        data = lib.utils.data
        dataset = data.TensorDataset(lib.arange(23.0), lib.arange(23))
        loader = data.DataLoader(dataset, batch_size=5, shuffle=True)
        return [[b[1] for b in loader] for _ in range(3)]

    assert_same_draws(torch, draw)


def test_samplers_and_random_split_as_torchs(torch):
    def draw(lib):
        data = lib.utils.data
        return [
            list(data.RandomSampler(range(10))),
            list(data.RandomSampler(range(10), replacement=True, num_samples=70)),
            list(data.RandomSampler(range(4), num_samples=9)),
            list(data.SubsetRandomSampler([3, 5, 7, 9])),
            list(data.WeightedRandomSampler([0.1, 0.5, 2.0, 1.0], 10)),
            list(data.WeightedRandomSampler([0.1, 0.5, 2.0, 1.0], 3, replacement=False)),
            [list(s.indices) for s in data.random_split(range(10), [3, 7])],
            [list(s.indices) for s in data.random_split(range(11), [0.5, 0.5])],
        ]

    assert_same_draws(torch, draw, seed=21)


# -- the pieces --------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [2, 3, 5, 17, 200, 5000])
def test_the_vectorised_shuffle_is_fisher_yates(n):
    rng = np.random.default_rng(n)
    for offsets in (
        rng.integers(0, np.arange(n - 1, 0, -1) + 1),
        np.zeros(n - 1, np.int64),  # no swap moves anything
        np.arange(n - 1, 0, -1),  # every step swaps with the last position
        (rng.random(n - 1) < 0.5) * rng.integers(0, np.arange(n - 1, 0, -1) + 1),
    ):
        perm = list(range(n))
        for i, z in enumerate(offsets.tolist()):
            perm[i], perm[i + z] = perm[i + z], perm[i]
        assert _swaps(np.asarray(offsets, np.int64)).tolist() == perm


def _edge_doubles(rng, n):
    values = rng.standard_normal(n) * 10.0 ** rng.integers(-12, 12, n)
    values[::7] = np.round(values[::7], 2)  # short mantissas: exact products, ties
    return values


def test_fma64_rounds_once():
    rng = np.random.default_rng(0)
    a, b, c = (_edge_doubles(rng, 4000) for _ in range(3))
    c[::5] = -a[::5] * b[::5]  # cancellation
    got = aten_math.fma64(a, b, c)
    for x, y, z, r in zip(a.tolist(), b.tolist(), c.tolist(), got.tolist(), strict=True):
        assert float(Fraction(x) * Fraction(y) + Fraction(z)) == r, (x, y, z)


def test_fma32_rounds_once():
    rng = np.random.default_rng(1)
    a, b, c = (_edge_doubles(rng, 4000).astype(np.float32) for _ in range(3))
    a[::3] = (rng.integers(0, 2**24, a[::3].size) * 2.0**-24).astype(np.float32)
    got = aten_math.fma32(a, b, c)
    assert got.dtype == np.float32
    for x, y, z, r in zip(a.tolist(), b.tolist(), c.tolist(), got.tolist(), strict=True):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        assert np.float32(_round_to_float32(exact)) == np.float32(r), (x, y, z)


def _round_to_float32(q: Fraction) -> float:
    """q rounded to the nearest float32 (ties to even), exactly."""
    if q == 0:
        return 0.0
    sign, q = (-1 if q < 0 else 1), abs(q)
    exponent = math.floor(math.log2(q))
    while Fraction(2) ** exponent > q:
        exponent -= 1
    while Fraction(2) ** (exponent + 1) <= q:
        exponent += 1
    ulp = Fraction(2) ** (max(exponent, -126) - 23)
    units, rest = divmod(q, ulp)
    if rest > ulp / 2 or (rest == ulp / 2 and units % 2):
        units += 1
    return sign * float(units * ulp)


# -- distributions ----------------------------------------------------------------------------
DISTRIBUTIONS = {
    "Normal": lambda D, f: D.Normal(f([0.5, -1.0, 2.0]), f([1.0, 0.3, 2.5])),
    "Uniform": lambda D, f: D.Uniform(f([0.0, -1.0]), f([1.0, 3.0])),
    "Exponential": lambda D, f: D.Exponential(f([0.5, 2.0, 3.0])),
    "Bernoulli": lambda D, f: D.Bernoulli(f([0.1, 0.5, 0.9])),
    "Categorical": lambda D, f: D.Categorical(f([[0.1, 0.5, 0.4], [0.3, 0.3, 0.4]])),
    "Categorical, one": lambda D, f: D.Categorical(f([0.1, 0.5, 0.4])),
}
ROUNDED = {  # torch's noise, then a transform whose last bit is SLEEF's or LAPACK's in torch
    "Laplace": lambda D, f: D.Laplace(f([0.5, -1.0]), f([1.0, 0.3])),
    "MultivariateNormal": lambda D, f: D.MultivariateNormal(
        f([0.5, -1.0]), f([[2.0, 0.3], [0.3, 1.0]])
    ),
}


def _samples(lib, make, dtype):
    pytest.importorskip("scipy")
    d = make(lib.distributions, lambda v: lib.tensor(np.asarray(v), dtype=getattr(lib, dtype)))
    out = [d.sample(), d.sample((4,)), d.sample((2, 3))]
    return out + ([d.rsample((5,))] if d.has_rsample else [])


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("name", DISTRIBUTIONS)
def test_distributions_sample_torchs_numbers(torch, name, dtype):
    assert_same_draws(torch, lambda lib: _samples(lib, DISTRIBUTIONS[name], dtype))


@pytest.mark.parametrize("dtype", REAL)
@pytest.mark.parametrize("name", ROUNDED)
def test_distributions_transform_torchs_noise(torch, name, dtype):
    tt.manual_seed(2)
    ours = _arrays(_samples(tt, ROUNDED[name], dtype))
    torch.manual_seed(2)
    theirs = _arrays(_samples(torch, ROUNDED[name], dtype))
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6 if dtype == "float32" else 1e-14, atol=1e-7)
    np.testing.assert_array_equal(tt.get_rng_state().numpy(), torch.get_rng_state().numpy())
