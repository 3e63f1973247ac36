"""`embedding` / `Embedding` and `embedding_bag` / `EmbeddingBag` against torch from identical
weights (float64 and float32): outputs, weight and per-sample-weight gradients, `padding_idx`,
`max_norm` renormalisation in place, `scale_grad_by_freq`, every bag mode, and messages."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import (
    normalize_torch_message,
    torch_one_thread,  # noqa: F401 - the `torch` fixture
)
from tracegrad.torch.nn import embedding as E

TOL = {"float64": (1e-12, 1e-14), "float32": (1e-6, 1e-6)}
DTYPES = ["float64", "float32"]


def _close(ours, theirs, dtype) -> None:
    rtol, atol = TOL[dtype]
    a = ours.detach().numpy()
    b = theirs.detach().numpy()
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _same_error(ours, theirs, scalar_names=False) -> None:
    with pytest.raises(Exception) as theirs_info:
        theirs()
    with pytest.raises(type(theirs_info.value)) as ours_info:
        ours()
    expected = normalize_torch_message(str(theirs_info.value), scalar_names=scalar_names)
    assert str(ours_info.value).split("\n")[0] == expected


def _weight(dtype, rows=7, cols=4):
    return np.random.default_rng(3).standard_normal((rows, cols)).astype(dtype)


def _both(torch, fn_ours, fn_theirs, weight, dtype, *extra, indices_grad=None):
    """Runs both with a weight (and extra float arrays) requiring grad; compares the output and
    the gradients of `sum(out * mix)`. Returns both weights (for in-place checks)."""
    wo, wt = tt.tensor(weight, requires_grad=True), torch.tensor(weight, requires_grad=True)
    eo = [tt.tensor(a, requires_grad=True) for a in extra]
    et = [torch.tensor(a, requires_grad=True) for a in extra]
    yo, yt = fn_ours(wo, *eo), fn_theirs(wt, *et)
    _close(yo, yt, dtype)
    mix = np.random.default_rng(5).standard_normal(yo.shape).astype(dtype)
    (yo * tt.tensor(mix)).sum().backward()
    (yt * torch.tensor(mix)).sum().backward()
    _close(wo.grad, wt.grad, dtype)
    for a, b in zip(eo, et):
        _close(a.grad, b.grad, dtype)
    return wo, wt, yo


# -- embedding ------------------------------------------------------------------------------------

IDX = np.array([[1, 3, 3, 0], [6, 2, 1, 3]])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"padding_idx": 3}, {"padding_idx": -1}, {"scale_grad_by_freq": True},
     {"padding_idx": 1, "scale_grad_by_freq": True}],
    ids=str,
)  # fmt: skip
def test_embedding_matches_torch(torch, kwargs, dtype):
    F = torch.nn.functional
    for idx in (IDX, IDX[0], np.array(5)):
        _, _, out = _both(
            torch,
            lambda w, idx=idx: E.embedding(tt.tensor(idx), w, **kwargs),
            lambda w, idx=idx: F.embedding(torch.tensor(idx), w, **kwargs),
            _weight(dtype),
            dtype,
        )
    assert out.grad_fn.name() == "EmbeddingBackward0"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0])
def test_embedding_max_norm_renormalises_the_used_rows_in_place(torch, norm_type, dtype):
    F = torch.nn.functional
    weight = _weight(dtype) * 2
    wo, wt, _ = _both(
        torch,
        lambda w: E.embedding(tt.tensor(IDX), w, max_norm=1.5, norm_type=norm_type),
        lambda w: F.embedding(torch.tensor(IDX), w, max_norm=1.5, norm_type=norm_type),
        weight,
        dtype,
    )
    _close(wo, wt, dtype)  # the used rows were rescaled, the others (4, 5) kept
    np.testing.assert_array_equal(wo.detach().numpy()[[4, 5]], weight[[4, 5]])
    assert wo._version == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_layer_and_from_pretrained_match_torch(torch, dtype):
    ours = E.Embedding(7, 4, padding_idx=2, dtype=dtype)
    theirs = torch.nn.Embedding(7, 4, padding_idx=2, dtype=getattr(torch, dtype))
    assert ours.weight.shape == (7, 4) and ours.weight.dtype == np.dtype(dtype)
    assert not ours.weight.detach().numpy()[2].any()  # the padding row starts at zero
    assert repr(ours) == repr(theirs)
    ours.load_state_dict({"weight": tt.tensor(_weight(dtype))})
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(_weight(dtype)))
    yo, yt = ours(tt.tensor(IDX)), theirs(torch.tensor(IDX))
    _close(yo, yt, dtype)
    yo.pow(2).sum().backward(), yt.pow(2).sum().backward()
    _close(ours.weight.grad, theirs.weight.grad, dtype)
    assert not ours.weight.grad.numpy()[2].any()  # padding_idx gets no gradient

    pretrained = tt.tensor(_weight(dtype))
    frozen = E.Embedding.from_pretrained(pretrained)
    t_frozen = torch.nn.Embedding.from_pretrained(torch.tensor(_weight(dtype)))
    assert frozen.weight.requires_grad is t_frozen.weight.requires_grad is False
    assert E.Embedding.from_pretrained(pretrained, freeze=False).weight.requires_grad
    _close(frozen(tt.tensor(IDX)), t_frozen(torch.tensor(IDX)), dtype)
    for kwargs in ({"max_norm": 1.0, "norm_type": 1.0, "scale_grad_by_freq": True}, {}):
        assert repr(E.Embedding(5, 3, **kwargs)) == repr(torch.nn.Embedding(5, 3, **kwargs))


def test_embedding_errors_match_torch(torch):
    F = torch.nn.functional
    w, t_w = tt.zeros(5, 3), torch.zeros(5, 3)
    with pytest.raises(IndexError, match="^index out of range in self$"):
        E.embedding(tt.tensor([1, 5]), w)
    _same_error(
        lambda: E.embedding(tt.tensor([1, 5]), w), lambda: F.embedding(torch.tensor([1, 5]), t_w)
    )
    _same_error(
        lambda: E.embedding(tt.tensor([1, -1]), w), lambda: F.embedding(torch.tensor([1, -1]), t_w)
    )
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types"):
        E.embedding(tt.tensor([1.0, 2.0]), w)
    for dtype in ("float32", "int16", "uint8"):
        _same_error(
            lambda d=dtype: E.embedding(tt.tensor([1, 2], dtype=getattr(tt, d)), w),
            lambda d=dtype: F.embedding(torch.tensor([1, 2], dtype=getattr(torch, d)), t_w),
        )
    _same_error(
        lambda: E.Embedding(5, 3, padding_idx=5), lambda: torch.nn.Embedding(5, 3, padding_idx=5)
    )
    _same_error(
        lambda: E.embedding(tt.tensor([1]), w, padding_idx=-6),
        lambda: F.embedding(torch.tensor([1]), t_w, padding_idx=-6),
    )
    _same_error(
        lambda: E.Embedding(5, 3, _weight=tt.zeros(4, 3)),
        lambda: torch.nn.Embedding(5, 3, _weight=torch.zeros(4, 3)),
    )
    _same_error(
        lambda: E.Embedding.from_pretrained(tt.zeros(3)),
        lambda: torch.nn.Embedding.from_pretrained(torch.zeros(3)),
    )
    assert E.embedding(tt.tensor([1, 2], dtype=tt.int32), w).shape == (2, 3)  # int32 is fine


# -- embedding_bag --------------------------------------------------------------------------------

FLAT = np.array([1, 3, 3, 0, 6, 2, 1, 3, 5])
OFFSETS = np.array([0, 2, 2, 6])  # bags [1 3] [] [3 0 6 2] [1 3 5]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize(
    ("offsets", "kwargs"),
    [(OFFSETS, {}), (OFFSETS, {"padding_idx": 3}),
     (np.append(OFFSETS, FLAT.size), {"include_last_offset": True})],
    ids=["plain", "padding_idx", "include_last_offset"],
)  # fmt: skip
def test_embedding_bag_1d_with_offsets_matches_torch(torch, mode, offsets, kwargs, dtype):
    F = torch.nn.functional
    _, _, out = _both(
        torch,
        lambda w: E.embedding_bag(tt.tensor(FLAT), w, tt.tensor(offsets), mode=mode, **kwargs),
        lambda w: F.embedding_bag(
            torch.tensor(FLAT), w, torch.tensor(offsets), mode=mode, **kwargs
        ),
        _weight(dtype),
        dtype,
    )
    assert out.grad_fn.name() == "EmbeddingBagBackward0"


def test_embedding_bag_last_offset_ends_the_last_bag():
    """With `include_last_offset`, elements after the last offset are in no bag (PyTorch's
    float32 'sum' kernel does this; its other CPU kernels run the last bag to the end)."""
    w = tt.eye(7, dtype=tt.float64)
    out = E.embedding_bag(tt.tensor(FLAT), w, tt.tensor(OFFSETS), mode="sum",
                          include_last_offset=True)  # fmt: skip
    expected = np.zeros((3, 7))
    for bag, (start, stop) in enumerate(zip(OFFSETS[:-1], OFFSETS[1:])):
        np.add.at(expected[bag], FLAT[start:stop], 1.0)
    np.testing.assert_array_equal(out.numpy(), expected)


def test_embedding_bag_scale_grad_by_freq_divides_by_the_index_count():
    """Each element's gradient is divided by its index's count in the input, so a row's
    gradient is the mean of its elements' (PyTorch's CPU kernel scales rows by other rows'
    counts, a bug not copied)."""
    w = tt.tensor(_weight("float64"), requires_grad=True)
    for mode in ("sum", "mean"):
        w.grad = None
        out = E.embedding_bag(tt.tensor(FLAT), w, tt.tensor(OFFSETS), mode=mode,
                              scale_grad_by_freq=True)  # fmt: skip
        mix = np.random.default_rng(2).standard_normal(out.shape)
        (out * tt.tensor(mix)).sum().backward()
        bags = np.repeat(np.arange(4), np.diff(np.append(OFFSETS, FLAT.size)))
        sizes = np.bincount(bags, minlength=4) if mode == "mean" else np.ones(4)
        expected = np.zeros((7, 4))
        counts = np.bincount(FLAT, minlength=7)
        for i, bag in zip(FLAT, bags):
            expected[i] += mix[bag] / sizes[bag] / counts[i]
        np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_matches_torch(torch, mode, dtype):
    F = torch.nn.functional
    _both(
        torch,
        lambda w: E.embedding_bag(tt.tensor(IDX), w, mode=mode, padding_idx=1),
        lambda w: F.embedding_bag(torch.tensor(IDX), w, mode=mode, padding_idx=1),
        _weight(dtype),
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_bag_per_sample_weights_get_gradients(torch, dtype):
    F = torch.nn.functional
    psw = np.linspace(-1, 2, FLAT.size).astype(dtype)
    _both(
        torch,
        lambda w, p: E.embedding_bag(tt.tensor(FLAT), w, tt.tensor(OFFSETS), mode="sum",
                                     per_sample_weights=p),
        lambda w, p: F.embedding_bag(torch.tensor(FLAT), w, torch.tensor(OFFSETS), mode="sum",
                                     per_sample_weights=p),
        _weight(dtype),
        dtype,
        psw,
    )  # fmt: skip
    psw2 = np.linspace(-1, 2, IDX.size).reshape(IDX.shape).astype(dtype)
    _both(
        torch,
        lambda w, p: E.embedding_bag(tt.tensor(IDX), w, mode="sum", per_sample_weights=p,
                                     padding_idx=3),
        lambda w, p: F.embedding_bag(torch.tensor(IDX), w, mode="sum", per_sample_weights=p,
                                     padding_idx=3),
        _weight(dtype),
        dtype,
        psw2,
    )  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_bag_max_norm_and_layer_match_torch(torch, dtype):
    F = torch.nn.functional
    wo, wt, _ = _both(
        torch,
        lambda w: E.embedding_bag(tt.tensor(FLAT), w, tt.tensor(OFFSETS), max_norm=1.0),
        lambda w: F.embedding_bag(torch.tensor(FLAT), w, torch.tensor(OFFSETS), max_norm=1.0),
        _weight(dtype) * 2,
        dtype,
    )
    _close(wo, wt, dtype)
    ours = E.EmbeddingBag(7, 4, mode="sum", padding_idx=1, dtype=dtype)
    theirs = torch.nn.EmbeddingBag(7, 4, mode="sum", padding_idx=1, dtype=getattr(torch, dtype))
    assert repr(ours) == repr(theirs)
    assert not ours.weight.detach().numpy()[1].any()
    ours.load_state_dict({"weight": tt.tensor(_weight(dtype))})
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(_weight(dtype)))
    _close(
        ours(tt.tensor(FLAT), tt.tensor(OFFSETS)),
        theirs(torch.tensor(FLAT), torch.tensor(OFFSETS)),
        dtype,
    )
    bag = E.EmbeddingBag.from_pretrained(tt.tensor(_weight(dtype)), mode="max")
    t_bag = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(_weight(dtype)), mode="max")
    assert bag.weight.requires_grad is False
    _close(bag(tt.tensor(IDX)), t_bag(torch.tensor(IDX)), dtype)
    assert repr(bag) == repr(t_bag)


def test_embedding_bag_errors_match_torch(torch):
    """Each case: the same arguments (NumPy arrays become each library's tensors, "W" the
    weight) raise the same error in both."""
    F = torch.nn.functional

    def args_for(lib, args):
        weight = lib.zeros(5, 3)
        return [weight if a == "W" else lib.tensor(a) if isinstance(a, np.ndarray) else a
                for a in args]  # fmt: skip

    i, o = np.array([1, 2]), np.array([0, 1])
    for args, kwargs in [
        ((np.array([1, 5]), "W", np.array([0])), {}),
        ((np.array([1.0, 2.0]), "W", np.array([0])), {}),
        ((i, "W", np.array([1])), {}),
        ((i, "W", np.array([0, 3])), {}),
        ((i, "W", o), {"mode": "min"}),
        ((i, "W", o), {"mode": "max", "scale_grad_by_freq": True}),
        ((i, "W", o), {"padding_idx": 7}),
        ((i, "W"), {}),
        ((np.array([[1, 2]]), "W", o), {}),
        ((np.zeros((1, 1, 1), np.int64), "W", o), {}),
    ]:
        _same_error(
            lambda a=args, k=kwargs: E.embedding_bag(*args_for(tt, a), **k),
            lambda a=args, k=kwargs: F.embedding_bag(*args_for(torch, a), **k),
        )
    psw = np.ones(2, np.float32)
    _same_error(
        lambda: E.embedding_bag(tt.tensor(i), tt.zeros(5, 3), tt.tensor(o), mode="max",
                                per_sample_weights=tt.tensor(psw)),
        lambda: F.embedding_bag(torch.tensor(i), torch.zeros(5, 3), torch.tensor(o), mode="max",
                                per_sample_weights=torch.tensor(psw)),
    )  # fmt: skip
    with pytest.raises(ValueError, match="If per_sample_weights"):
        E.embedding_bag(tt.tensor(i), tt.zeros(5, 3), tt.tensor(o),
                        per_sample_weights=tt.ones(3))  # fmt: skip
