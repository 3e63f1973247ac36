"""tracegrad.torch.utils.data and tracegrad.torch.Generator against torch's: a seeded
generator, or the global stream after `manual_seed`, draws torch's numbers (randperm, randint,
random_, multinomial), so DataLoader batches equal torch's sequentially and shuffled, for every
epoch; default collation gives the
same structures, dtypes and values; datasets, samplers, random_split and the messages match."""

from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import (
    assert_same_error,
    caught,
    torch_one_thread,  # noqa: F401 - the `torch` fixture
)


def data(lib):
    return lib.utils.data


def plain(value):
    """A batch in terms both libraries share: tensors as (dtype, shape, values), containers
    with their type names, the rest as is."""
    if hasattr(value, "detach") and hasattr(value, "shape"):
        array = np.asarray(value.detach().numpy())
        return ("tensor", array.dtype.name, array.shape, array.tolist())
    if isinstance(value, dict):
        return (type(value).__name__, {k: plain(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return (type(value).__name__, [plain(v) for v in value])
    return (type(value).__name__, value)


# -- the generator -------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 7, -1, 2**40 + 3, 2**64 - 5])
def test_a_seeded_generator_draws_torchs_numbers(torch, seed):
    g, t = tt.Generator().manual_seed(seed), torch.Generator().manual_seed(seed)
    assert g.initial_seed() == t.initial_seed()
    assert g._randperm(100).tolist() == torch.randperm(100, generator=t).tolist()
    assert g._random_int64() == torch.empty((), dtype=torch.int64).random_(generator=t).item()
    assert g._randint(3, 17, 50).tolist() == torch.randint(3, 17, (50,), generator=t).tolist()
    assert g._randint(0, 2**40, 5).tolist() == torch.randint(0, 2**40, (5,), generator=t).tolist()
    np.testing.assert_array_equal(
        g._uniform(20), torch.rand(20, dtype=torch.float64, generator=t).numpy()
    )
    w = np.array([0.1, 0.0, 3.0, 1.0, 2.0])
    for n, replacement in ((40, True), (4, False), (1, True), (5, False)):
        ours = g._multinomial(w, n, replacement)
        assert ours == torch.multinomial(torch.tensor(w), n, replacement, generator=t).tolist()


def test_generator_defaults_state_and_errors(torch):
    g = tt.Generator()
    assert g.initial_seed() == torch.Generator().initial_seed() and g.device == "cpu"
    assert g._randperm(10).tolist() == torch.randperm(10, generator=torch.Generator()).tolist()
    state = g.get_state()
    first = g._randperm(10).tolist()
    assert g.set_state(state)._randperm(10).tolist() == first
    assert g.manual_seed(3) is g
    reseeded = g.seed()
    assert g.initial_seed() == reseeded
    for bad in (2**64, -(2**63) - 1, 1.5, "3"):
        assert_same_error(
            lambda bad=bad: tt.Generator().manual_seed(bad),
            lambda bad=bad: torch.Generator().manual_seed(bad),
        )
    with pytest.raises(AssertionError, match="^Torch not compiled with CUDA enabled$"):
        tt.Generator("cuda")
    assert_same_error(
        lambda: g.set_state(tt.zeros(5, dtype=tt.uint8)),
        lambda: torch.Generator().set_state(torch.zeros(5, dtype=torch.uint8)),
    )


def test_multinomial_errors_match_torch(torch):
    cases = [
        ([1.0, -1.0], 2, True),
        ([1.0, np.inf], 2, True),
        ([0.0, 0.0], 2, True),
        ([1.0, -1.0], 1, False),
        ([0.0, 0.0], 1, False),
        ([1.0, 2.0], 3, False),
    ]
    for weights, n, replacement in cases:
        assert_same_error(
            lambda w=weights, n=n, r=replacement: tt.Generator()._multinomial(np.array(w), n, r),
            lambda w=weights, n=n, r=replacement: torch.multinomial(torch.tensor(w), n, r),
        )


def test_the_default_generator_is_the_global_stream(torch):
    """Unseeded shuffles draw from `torch.manual_seed`'s stream, `default_generator`: the same
    seed gives the same order, torch's (tests/shim/test_global_rng.py checks more)."""
    loader = data(tt).DataLoader(range(20), batch_size=4, shuffle=True)
    tt.manual_seed(5)
    first = [b.tolist() for b in loader]
    tt.manual_seed(5)
    assert [b.tolist() for b in loader] == first
    assert sorted(sum(first, [])) == list(range(20))
    tt.default_generator.manual_seed(5)
    assert [b.tolist() for b in loader] == first
    torch.manual_seed(5)
    assert [b.tolist() for b in data(torch).DataLoader(range(20), 4, shuffle=True)] == first


# -- collation -------------------------------------------------------------------------------------

Point = collections.namedtuple("Point", "x y")

BATCHES = [
    [np.float32(1.5), np.float32(2)],
    [np.int32(1), np.int32(2)],
    [np.float64(1), np.float64(2)],
    [np.bool_(True), np.bool_(False)],
    [1.5, 2.0],
    [1, 2],
    [True, False],
    ["a", "b"],
    [b"a", b"b"],
    [np.arange(3.0), np.arange(3.0) + 1],
    [np.arange(3, dtype=np.int16), np.arange(3, dtype=np.int16)],
    [{"x": 1, "y": [1.0, 2.0]}, {"x": 2, "y": [3.0, 4.0]}],
    [Point(1, 2.0), Point(3, 4.0)],
    [(1, "a"), (2, "b")],
    [[np.float32(1), 2], [np.float32(3), 4]],
    [collections.OrderedDict(a=1, b=(2.0, 3)), collections.OrderedDict(a=4, b=(5.0, 6))],
]


@pytest.mark.parametrize("index", range(len(BATCHES)))
def test_default_collate_matches_torch(torch, index):
    batch = BATCHES[index]
    assert plain(data(tt).default_collate(batch)) == plain(data(torch).default_collate(batch))


def test_default_collate_of_tensors_matches_torch(torch):
    rng = np.random.default_rng(0)
    samples = [(rng.standard_normal((2, 3)).astype(np.float32), i) for i in range(4)]
    ours = data(tt).default_collate([(tt.tensor(a), i) for a, i in samples])
    theirs = data(torch).default_collate([(torch.tensor(a), i) for a, i in samples])
    assert plain(ours) == plain(theirs)
    assert ours[0].shape == (4, 2, 3)


def test_default_convert_matches_torch(torch):
    for value in (
        np.float32(1.5),
        np.arange(3),
        {"a": np.arange(2)},
        (np.int64(3), 2),
        [np.arange(2)],
        "s",
        Point(np.float64(1), 2),
        np.array(["a", "b"]),
    ):
        ours = data(tt).default_convert(value)
        assert plain(ours) == plain(data(torch).default_convert(value))


def test_collation_errors_match_torch(torch):
    for batch in ([object(), object()], [[1, 2], [3]], [np.array([object()]), np.array([1])]):
        assert_same_error(
            lambda b=batch: data(tt).default_collate(b),
            lambda b=batch: data(torch).default_collate(b),
        )


# -- the loader --------------------------------------------------------------------------------


class Squares:
    """A map-style dataset of dicts, not deriving from Dataset (any indexable works)."""

    def __init__(self, lib, n=11):
        self.lib, self.n = lib, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": self.lib.tensor([float(i), float(i * i)]), "label": i % 3, "name": f"s{i}"}


def tensor_dataset(lib, n=23):
    x = lib.tensor(np.arange(2.0 * n).reshape(n, 2))
    return data(lib).TensorDataset(x, lib.tensor(np.arange(n)))


def epochs(loader, n=3):
    return [[plain(batch) for batch in loader] for _ in range(n)]


LOADERS = {
    "sequential": lambda lib: data(lib).DataLoader(tensor_dataset(lib), batch_size=5),
    "batch_size 1": lambda lib: data(lib).DataLoader(tensor_dataset(lib, 4)),
    "no batching": lambda lib: data(lib).DataLoader(Squares(lib), batch_size=None),
    "dict samples": lambda lib: data(lib).DataLoader(Squares(lib), batch_size=4),
    "drop_last": lambda lib: data(lib).DataLoader(tensor_dataset(lib), 5, drop_last=True),
    "shuffled": lambda lib: data(lib).DataLoader(
        tensor_dataset(lib), batch_size=5, shuffle=True, generator=lib.Generator().manual_seed(3)
    ),
    "shuffled, drop_last": lambda lib: data(lib).DataLoader(
        Squares(lib, 30),
        batch_size=4,
        shuffle=True,
        drop_last=True,
        generator=lib.Generator().manual_seed(11),
    ),
    "explicit permutation": lambda lib: data(lib).DataLoader(
        tensor_dataset(lib, 10), batch_size=3, sampler=[3, 1, 4, 0, 5, 9, 2, 6, 8, 7]
    ),
    "subset random sampler": lambda lib: data(lib).DataLoader(
        tensor_dataset(lib),
        batch_size=4,
        sampler=data(lib).SubsetRandomSampler([1, 5, 7, 9, 11, 20], lib.Generator().manual_seed(1)),
    ),
    "random sampler with replacement": lambda lib: data(lib).DataLoader(
        tensor_dataset(lib),
        batch_size=8,
        sampler=data(lib).RandomSampler(
            range(23), replacement=True, num_samples=40, generator=lib.Generator().manual_seed(2)
        ),
    ),
    "random sampler, more samples": lambda lib: data(lib).DataLoader(
        tensor_dataset(lib, 7),
        batch_size=4,
        sampler=data(lib).RandomSampler(
            range(7), num_samples=17, generator=lib.Generator().manual_seed(4)
        ),
    ),
    "weighted sampler": lambda lib: data(lib).DataLoader(
        tensor_dataset(lib, 6),
        batch_size=5,
        sampler=data(lib).WeightedRandomSampler(
            [0.1, 0.5, 1.0, 2.0, 0.0, 3.0], 12, generator=lib.Generator().manual_seed(6)
        ),
    ),
    "weighted sampler without replacement": lambda lib: data(lib).DataLoader(
        tensor_dataset(lib, 6),
        batch_size=2,
        sampler=data(lib).WeightedRandomSampler(
            [0.1, 0.5, 1.0, 2.0, 0.0, 3.0], 5, False, generator=lib.Generator().manual_seed(6)
        ),
    ),
    "batch_sampler": lambda lib: data(lib).DataLoader(
        tensor_dataset(lib), batch_sampler=[[0, 1], [5, 6, 7], [22]]
    ),
    "BatchSampler": lambda lib: data(lib).DataLoader(
        tensor_dataset(lib),
        batch_sampler=data(lib).BatchSampler(data(lib).SequentialSampler(range(23)), 6, False),
    ),
    "collate_fn": lambda lib: data(lib).DataLoader(
        Squares(lib), batch_size=3, collate_fn=lambda batch: [s["name"] for s in batch]
    ),
}


@pytest.mark.parametrize("name", sorted(LOADERS))
def test_loader_batches_match_torch(torch, name):
    ours, theirs = LOADERS[name](tt), LOADERS[name](torch)
    assert epochs(ours) == epochs(theirs)
    assert len(ours) == len(theirs)


def test_shuffled_epochs_differ_and_cover_the_data():
    """The test above cannot pass by accident: each epoch is a new permutation of all keys."""
    runs = epochs(LOADERS["shuffled"](tt))
    keys = [sum((batch[1][1][3] for batch in run), []) for run in runs]
    assert all(sorted(k) == list(range(23)) for k in keys)
    assert keys[0] != keys[1] != keys[2] and keys[0] != list(range(23))


class Countdown:
    """An iterable-style dataset with a length (`len(loader)` reads it)."""

    def __init__(self, lib, n, reported=None):
        self.lib, self.n, self.reported = lib, n, reported or n

    def __iter__(self):
        return iter(self.lib.tensor(float(i)) for i in range(self.n, 0, -1))

    def __len__(self):
        return self.reported


def iterable(lib, n, reported=None):
    base = type("It", (Countdown, data(lib).IterableDataset), {})
    return base(lib, n, reported)


def test_iterable_datasets_match_torch(torch):
    for kwargs in ({"batch_size": 3}, {"batch_size": 3, "drop_last": True}, {"batch_size": None}):
        ours = data(tt).DataLoader(iterable(tt, 8), **kwargs)
        theirs = data(torch).DataLoader(iterable(torch, 8), **kwargs)
        assert epochs(ours, 2) == epochs(theirs, 2)
        assert len(ours) == len(theirs)
    runs = []
    for lib in (tt, torch):
        loader = data(lib).DataLoader(iterable(lib, 6, reported=2), batch_size=2)
        len(loader)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            batches = [plain(b) for b in loader]
        runs.append((batches, [str(w.message).split(" was reported")[1] for w in record]))
    assert runs[0] == runs[1] and len(runs[0][1]) == 1


def test_datasets_match_torch(torch):
    def run(lib):
        d = data(lib)
        base = tensor_dataset(lib, 10)
        subset = d.Subset(base, [9, 2, 4])
        concat = base + d.TensorDataset(lib.tensor(np.arange(6.0).reshape(3, 2)), lib.zeros(3))
        stacked = d.StackDataset(a=range(10), b=base)
        tupled = d.StackDataset(range(10), [str(i) for i in range(10)])
        chained = iterable(lib, 3) + iterable(lib, 2)
        loader = d.DataLoader(stacked, batch_size=4)
        return [
            plain(subset[1]),
            plain(subset.__getitems__([0, 2])),
            len(subset),
            plain(concat[11]),
            plain(concat[-1]),
            len(concat),
            concat.cumulative_sizes,
            plain(stacked[3]),
            plain(tupled.__getitems__([1, 2])),
            plain(list(chained)),
            len(chained),
            [plain(b) for b in loader],
        ]

    assert run(tt) == run(torch)


def test_dataset_errors_match_torch(torch):
    def cases(lib):
        d = data(lib)
        base = tensor_dataset(lib, 10)
        return [
            lambda: d.TensorDataset(lib.zeros(3), lib.zeros(4)),
            lambda: d.Dataset()[0],
            lambda: d.ConcatDataset([]),
            lambda: d.ConcatDataset([iterable(lib, 2)]),
            lambda: (base + base)[-21],
            lambda: d.StackDataset(),
            lambda: d.StackDataset(range(2), range(3)),
            lambda: d.StackDataset(range(2), b=range(2)),
            lambda: list(d.ChainDataset([base])),
            lambda: d.random_split(base, [3, 3]),
            lambda: d.random_split(base, [0.5, 1.5]),
            lambda: d.RandomSampler(base, replacement=1),
            lambda: d.RandomSampler(base, num_samples=0),
            lambda: d.WeightedRandomSampler([1.0], 0),
            lambda: d.WeightedRandomSampler([1.0], 1, replacement=1),
            lambda: d.WeightedRandomSampler([[1.0]], 1),
            lambda: d.BatchSampler(range(3), 0, False),
            lambda: d.BatchSampler(range(3), 2, 0),
            lambda: len(d.DataLoader(iterable(lib, 3)).sampler),
        ]

    for ours, theirs in zip(cases(tt), cases(torch), strict=True):
        assert_same_error(ours, theirs)


@pytest.mark.parametrize("seed", [0, 42])
def test_random_split_matches_torch(torch, seed):
    for lengths in ([3, 7], [0.3, 0.3, 0.4], [0.5, 0.5], [0.34, 0.33, 0.33]):
        splits = []
        for lib in (tt, torch):
            parts = data(lib).random_split(
                range(10), lengths, generator=lib.Generator().manual_seed(seed)
            )
            splits.append([list(p) for p in parts])
        assert splits[0] == splits[1]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        parts = data(tt).random_split(range(3), [0.1, 0.9])
    assert [len(p) for p in parts] == [1, 2] and not record
    with pytest.warns(UserWarning, match="^Length of split at index 0 is 0. This might"):
        data(tt).random_split(range(3), [0.0, 1.0])


def test_loader_argument_errors_match_torch(torch):
    def cases(lib):
        d = data(lib)
        ds = tensor_dataset(lib, 10)
        return [
            lambda: d.DataLoader(ds, num_workers=-1),
            lambda: d.DataLoader(ds, timeout=-1),
            lambda: d.DataLoader(ds, prefetch_factor=2),
            lambda: d.DataLoader(ds, persistent_workers=True),
            lambda: d.DataLoader(ds, shuffle=True, sampler=[1, 2]),
            lambda: d.DataLoader(ds, batch_sampler=[[1]], batch_size=2),
            lambda: d.DataLoader(ds, batch_size=None, drop_last=True),
            lambda: d.DataLoader(ds, multiprocessing_context="fork"),
            lambda: d.DataLoader(iterable(lib, 3), shuffle=True),
            lambda: d.DataLoader(iterable(lib, 3), sampler=[1]),
            lambda: d.DataLoader(iterable(lib, 3), batch_sampler=[[1]]),
            lambda: setattr(d.DataLoader(ds), "batch_size", 3),
            lambda: next(iter(d.DataLoader(ds, timeout=2))),
        ]

    for ours, theirs in zip(cases(tt), cases(torch), strict=True):
        assert_same_error(ours, theirs)


def test_workers_are_refused_and_pin_memory_warns_as_torch(torch):
    ds = tensor_dataset(tt, 4)
    with pytest.raises(NotImplementedError, match="num_workers=2 is not supported"):
        data(tt).DataLoader(ds, num_workers=2)
    assert data(tt).get_worker_info() is None
    texts = []
    for lib in (tt, torch):
        loader = data(lib).DataLoader(tensor_dataset(lib, 4), pin_memory=True)
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            next(iter(loader))
        texts.append([str(w.message) for w in record])
    assert texts[0] == texts[1] and len(texts[0]) == 1


def test_a_training_loop_with_loader_and_scheduler_matches_torch(torch):
    """The pieces together: a shuffled loader (seeded generator), an MLP, Adam and OneCycleLR
    over three epochs give torch's losses and weights."""

    def run(lib):
        rng = np.random.default_rng(0)
        x, y = rng.standard_normal((40, 3)), rng.standard_normal((40, 1))
        ds = data(lib).TensorDataset(lib.tensor(x), lib.tensor(y))
        loader = data(lib).DataLoader(
            ds, batch_size=8, shuffle=True, generator=lib.Generator().manual_seed(0)
        )
        model = lib.nn.Sequential(
            lib.nn.Linear(3, 5, dtype=lib.float64),
            lib.nn.Tanh(),
            lib.nn.Linear(5, 1, dtype=lib.float64),
        )
        weights = np.random.default_rng(1)
        model.load_state_dict(
            {
                k: lib.tensor(weights.uniform(-0.5, 0.5, v.shape))
                for k, v in model.state_dict().items()
            }
        )
        opt = lib.optim.Adam(model.parameters(), lr=0.01)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, 0.05, epochs=3, steps_per_epoch=len(loader))
        losses = []
        for _ in range(3):
            for xb, yb in loader:
                opt.zero_grad()
                loss = lib.nn.functional.mse_loss(model(xb), yb)
                loss.backward()
                opt.step()
                sched.step()
                losses.append(loss.item())
        return losses, [p.detach().numpy().copy() for p in model.parameters()]

    (losses, params), (t_losses, t_params) = run(tt), run(torch)
    np.testing.assert_allclose(losses, t_losses, rtol=1e-12)
    for a, b in zip(params, t_params):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-14)
    assert losses[-1] < losses[0]


def test_without_a_generator_the_shuffle_is_torchs_after_the_same_seed(torch):
    """Without a generator, the loader's base seed, then the sampler's seed and permutation,
    come from the global stream, as torch's: two epochs give torch's batches."""
    tt.manual_seed(0)
    torch.manual_seed(0)
    ours = data(tt).DataLoader(range(30), batch_size=7, shuffle=True)
    theirs = data(torch).DataLoader(range(30), batch_size=7, shuffle=True)
    for _ in range(2):
        assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]
    assert caught(lambda: data(tt).DataLoader(range(3), num_workers=1))[0] == "NotImplementedError"


def test_samples_of_tensors_that_require_grad_keep_the_graph(torch):
    """Reading samples and collating them records, as torch's, when the dataset's tensors
    require grad (the plain reads are only for tensors that do not)."""
    grads = []
    for lib in (tt, torch):
        x = lib.tensor(np.arange(12.0).reshape(6, 2), requires_grad=True)
        loader = data(lib).DataLoader(data(lib).TensorDataset(x, lib.arange(6)), batch_size=4)
        loss = sum((xb**2).sum() * (i + 1) for i, (xb, _) in enumerate(loader))
        loss.backward()
        grads.append(x.grad.numpy().tolist())
    assert grads[0] == grads[1]
    batch = next(iter(data(tt).DataLoader(data(tt).TensorDataset(tt.arange(3.0)), 2)))[0]
    assert not batch.requires_grad and batch.tolist() == [0.0, 1.0]
