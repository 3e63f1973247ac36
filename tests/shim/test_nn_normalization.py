"""Batch, instance, group and local-response normalisation, channel-wise dropout and `Unflatten`
against torch: outputs, input and parameter gradients and running statistics from identical
weights over several train steps, eval mode, state dicts and messages (float64 and float32)."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import (
    normalize_torch_message,
    torch_one_thread,  # noqa: F401 - the `torch` fixture
)
from tracegrad.torch.nn import dropout as D
from tracegrad.torch.nn import normalization as N

TOL = {"float64": (1e-10, 1e-12), "float32": (2e-5, 2e-5)}
DTYPES = ["float64", "float32"]


def _close(ours, theirs, dtype) -> None:
    rtol, atol = TOL[dtype]
    a = ours.detach().numpy() if isinstance(ours, tt.Tensor) else np.asarray(ours)
    b = theirs.detach().numpy()
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _same_error(torch, ours, theirs) -> None:
    """Same exception type and (normalized) first line in both libraries."""
    with pytest.raises(Exception) as theirs_info:
        theirs()
    with pytest.raises(type(theirs_info.value)) as ours_info:
        ours()
    expected = normalize_torch_message(str(theirs_info.value))
    assert str(ours_info.value).split("\n")[0] == expected


def _copy_state(torch, theirs, ours) -> None:
    """Our module takes torch's values (parameters made non-trivial first)."""
    with torch.no_grad():
        for p in theirs.parameters():
            p.copy_(torch.linspace(-1.5, 2.0, p.numel(), dtype=p.dtype).reshape(p.shape))
    ours.load_state_dict({k: tt.tensor(v.numpy()) for k, v in theirs.state_dict().items()})


def _step(torch, ours, theirs, x: np.ndarray, dtype: str) -> None:
    """One forward and backward in both: outputs, input and parameter gradients agree."""
    xo, xt = tt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yo, yt = ours(xo), theirs(xt)
    _close(yo, yt, dtype)
    mix = np.random.default_rng(1).standard_normal(yo.shape)
    (yo * tt.tensor(mix.astype(x.dtype))).sum().backward()
    (yt * torch.tensor(mix.astype(x.dtype))).sum().backward()
    _close(xo.grad, xt.grad, dtype)
    theirs_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        _close(p.grad, theirs_params[name].grad, dtype)


def _buffers_agree(ours, theirs, dtype) -> None:
    ours_buffers = dict(ours.named_buffers())
    theirs_buffers = dict(theirs.named_buffers())
    assert ours_buffers.keys() == theirs_buffers.keys()
    for name, buf in theirs_buffers.items():
        if buf.dtype.is_floating_point:
            _close(ours_buffers[name], buf, dtype)
        else:
            assert int(ours_buffers[name]) == int(buf)


def _data(shape, dtype, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 2 + 0.5).astype(dtype)


# -- batch norm -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("cls", "shape"),
    [("BatchNorm1d", (5, 3)), ("BatchNorm1d", (4, 3, 6)), ("BatchNorm2d", (3, 3, 4, 2)),
     ("BatchNorm3d", (2, 3, 2, 3, 2))],
)  # fmt: skip
def test_batch_norm_train_steps_then_eval_match_torch(torch, cls, shape, dtype):
    ours = getattr(N, cls)(3, dtype=dtype)
    theirs = getattr(torch.nn, cls)(3, dtype=getattr(torch, dtype))
    _copy_state(torch, theirs, ours)
    for step in range(3):
        _step(torch, ours, theirs, _data(shape, dtype, step), dtype)
        _buffers_agree(ours, theirs, dtype)
    assert int(ours.num_batches_tracked) == 3
    ours.eval(), theirs.eval()
    _step(torch, ours, theirs, _data(shape, dtype, 7), dtype)
    _buffers_agree(ours, theirs, dtype)  # eval leaves the statistics alone


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "kwargs",
    [
        {"momentum": None},
        {"momentum": 0.5, "affine": False},
        {"track_running_stats": False},
        {"bias": False, "eps": 1e-3},
    ],
    ids=str,
)
def test_batch_norm_options_match_torch(torch, kwargs, dtype):
    ours = N.BatchNorm1d(3, dtype=dtype, **kwargs)
    theirs = torch.nn.BatchNorm1d(3, dtype=getattr(torch, dtype), **kwargs)
    _copy_state(torch, theirs, ours)
    for step in range(3):
        _step(torch, ours, theirs, _data((6, 3, 2), dtype, step), dtype)
        _buffers_agree(ours, theirs, dtype)
    ours.eval(), theirs.eval()
    _step(torch, ours, theirs, _data((6, 3, 2), dtype, 9), dtype)


def test_batch_norm_momentum_none_is_the_cumulative_average(torch):
    m = N.BatchNorm1d(2, momentum=None, dtype="float64")
    batches = [_data((4, 2), "float64", s) for s in range(3)]
    for b in batches:
        m(tt.tensor(b))
    expected = np.mean([b.mean(0) for b in batches], axis=0)
    np.testing.assert_allclose(m.running_mean.numpy(), expected, rtol=1e-12)
    unbiased = np.mean([b.var(0, ddof=1) for b in batches], axis=0)
    np.testing.assert_allclose(m.running_var.numpy(), unbiased, rtol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
def test_functional_batch_norm_matches_torch(torch, dtype):
    x = _data((4, 3, 5), dtype)
    w, b = _data(3, dtype, 1), _data(3, dtype, 2)
    rm, rv = _data(3, dtype, 3), np.abs(_data(3, dtype, 4)) + 0.5
    for training in (True, False):
        ours_stats = [tt.tensor(rm), tt.tensor(rv)]
        theirs_stats = [torch.tensor(rm), torch.tensor(rv)]
        xo, xt = tt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        wo, wt = tt.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
        yo = N.batch_norm(xo, *ours_stats, wo, tt.tensor(b), training, 0.3, 1e-4)
        yt = torch.nn.functional.batch_norm(
            xt, *theirs_stats, wt, torch.tensor(b), training, 0.3, 1e-4
        )
        _close(yo, yt, dtype)
        (yo * yo).sum().backward(), (yt * yt).sum().backward()
        _close(xo.grad, xt.grad, dtype)
        _close(wo.grad, wt.grad, dtype)
        for o, t in zip(ours_stats, theirs_stats):
            _close(o, t, dtype)
    # without running statistics in training: batch statistics, nothing to update
    yo = N.batch_norm(tt.tensor(x), None, None, training=True)
    _close(yo, torch.nn.functional.batch_norm(torch.tensor(x), None, None, training=True), dtype)
    assert yo.grad_fn is None
    assert N.batch_norm(xo, None, None, training=True).grad_fn.name() == "NativeBatchNormBackward0"


def test_batch_norm_state_dict_keys_and_repr(torch):
    ours, theirs = N.BatchNorm2d(4), torch.nn.BatchNorm2d(4)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert ours.num_batches_tracked.dtype == np.int64 and ours.num_batches_tracked.ndim == 0
    assert repr(ours) == repr(theirs)
    for kwargs in ({"affine": False, "momentum": None}, {"track_running_stats": False}):
        assert repr(N.BatchNorm1d(3, **kwargs)) == repr(torch.nn.BatchNorm1d(3, **kwargs))
    no_stats = N.BatchNorm1d(3, track_running_stats=False)
    assert list(no_stats.state_dict()) == ["weight", "bias"]
    assert no_stats.running_mean is None


def test_batch_norm_loads_a_checkpoint_without_num_batches_tracked(torch):
    """A plain dict (no version metadata) lacking it loads, keeping the counter (as torch);
    our own state dict carries the version, so there it is a missing key, as in torch."""
    ours, theirs = N.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    plain = {k: v for k, v in theirs.state_dict().items() if k != "num_batches_tracked"}
    assert str(theirs.load_state_dict(plain)) == "<All keys matched successfully>"
    result = ours.load_state_dict({k: tt.tensor(v.numpy()) for k, v in plain.items()})
    assert str(result) == "<All keys matched successfully>"
    sd = ours.state_dict()
    del sd["num_batches_tracked"]
    t_sd = theirs.state_dict()
    del t_sd["num_batches_tracked"]
    _same_error(torch, lambda: ours.load_state_dict(sd), lambda: theirs.load_state_dict(t_sd))


def test_batch_norm_errors_match_torch(torch):
    F = torch.nn.functional
    cases = [
        (lambda: N.BatchNorm1d(3)(tt.zeros(2, 3, 4, 5)),
         lambda: torch.nn.BatchNorm1d(3)(torch.zeros(2, 3, 4, 5))),
        (lambda: N.BatchNorm2d(3)(tt.zeros(2, 3, 4)),
         lambda: torch.nn.BatchNorm2d(3)(torch.zeros(2, 3, 4))),
        (lambda: N.BatchNorm3d(3)(tt.zeros(2, 3, 4, 4)),
         lambda: torch.nn.BatchNorm3d(3)(torch.zeros(2, 3, 4, 4))),
        (lambda: N.BatchNorm1d(3)(tt.zeros(1, 3)),
         lambda: torch.nn.BatchNorm1d(3)(torch.zeros(1, 3))),
        (lambda: N.BatchNorm2d(3)(tt.zeros(1, 3, 1, 1)),
         lambda: torch.nn.BatchNorm2d(3)(torch.zeros(1, 3, 1, 1))),
        (lambda: N.BatchNorm1d(3)(tt.zeros(2, 4)),
         lambda: torch.nn.BatchNorm1d(3)(torch.zeros(2, 4))),
        (lambda: N.batch_norm(tt.zeros(2, 3), None, None),
         lambda: F.batch_norm(torch.zeros(2, 3), None, None)),
        (lambda: N.batch_norm(tt.zeros(2, 3), tt.zeros(3), None, training=True),
         lambda: F.batch_norm(torch.zeros(2, 3), torch.zeros(3), None, training=True)),
        (lambda: N.batch_norm(tt.zeros(2, 3), None, None, tt.ones(4), training=True),
         lambda: F.batch_norm(torch.zeros(2, 3), None, None, torch.ones(4), training=True)),
        (lambda: N.batch_norm(tt.zeros(2, 3), None, None, training=True, eps=0),
         lambda: F.batch_norm(torch.zeros(2, 3), None, None, training=True, eps=0)),
        (lambda: N.batch_norm(tt.zeros(2, 3), None, None, tt.ones(3, dtype=tt.float64), None,
                              True),
         lambda: F.batch_norm(torch.zeros(2, 3), None, None, torch.ones(3, dtype=torch.float64),
                              None, True)),
    ]  # fmt: skip
    for ours, theirs in cases:
        _same_error(torch, ours, theirs)
    with pytest.raises(ValueError, match=r"^expected 2D or 3D input \(got 4D input\)$"):
        N.BatchNorm1d(3)(tt.zeros(2, 3, 4, 5))
    with pytest.raises(
        ValueError,
        match=r"^Expected more than 1 value per channel when training, got input size \(1, 3\)$",
    ):
        N.BatchNorm1d(3)(tt.zeros(1, 3))


def test_batch_norm_of_one_sample_is_fine_in_eval(torch):
    m = N.BatchNorm1d(3).eval()
    np.testing.assert_allclose(
        m(tt.ones(1, 3)).detach().numpy(), np.ones((1, 3)) / np.sqrt(1 + 1e-5), rtol=1e-6
    )


# -- instance norm --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("cls", "shape", "kwargs"),
    [
        ("InstanceNorm1d", (3, 4, 5), {}),
        ("InstanceNorm1d", (4, 5), {"affine": True}),
        ("InstanceNorm2d", (2, 4, 3, 3), {"affine": True, "track_running_stats": True}),
        ("InstanceNorm2d", (4, 3, 3), {"track_running_stats": True, "momentum": 0.4}),
        ("InstanceNorm3d", (2, 4, 2, 2, 3), {"affine": True}),
    ],
    ids=str,
)
def test_instance_norm_train_then_eval_match_torch(torch, cls, shape, kwargs, dtype):
    ours = getattr(N, cls)(4, dtype=dtype, **kwargs)
    theirs = getattr(torch.nn, cls)(4, dtype=getattr(torch, dtype), **kwargs)
    _copy_state(torch, theirs, ours)
    for step in range(2):
        _step(torch, ours, theirs, _data(shape, dtype, step), dtype)
        _buffers_agree(ours, theirs, dtype)
    ours.eval(), theirs.eval()
    _step(torch, ours, theirs, _data(shape, dtype, 5), dtype)
    assert repr(ours) == repr(theirs)


def test_instance_norm_errors_and_warning_match_torch(torch):
    _same_error(
        torch,
        lambda: N.InstanceNorm1d(3)(tt.zeros(2, 3, 4, 5)),
        lambda: torch.nn.InstanceNorm1d(3)(torch.zeros(2, 3, 4, 5)),
    )
    _same_error(
        torch,
        lambda: N.InstanceNorm1d(3)(tt.zeros(2, 3, 1)),
        lambda: torch.nn.InstanceNorm1d(3)(torch.zeros(2, 3, 1)),
    )
    _same_error(
        torch,
        lambda: N.InstanceNorm2d(3, affine=True)(tt.zeros(2, 4, 5, 5)),
        lambda: torch.nn.InstanceNorm2d(3, affine=True)(torch.zeros(2, 4, 5, 5)),
    )
    _same_error(
        torch,
        lambda: N.instance_norm(tt.zeros(2, 3, 4), use_input_stats=False),
        lambda: torch.nn.functional.instance_norm(torch.zeros(2, 3, 4), use_input_stats=False),
    )
    with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
        N.InstanceNorm2d(3)(tt.ones(2, 4, 5, 5))


# -- group norm and local response norm -----------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("groups", "shape", "kwargs"),
    [(2, (3, 6, 4), {}), (3, (2, 6, 2, 3), {"eps": 1e-3}), (6, (2, 6), {"affine": False}),
     (1, (2, 6, 5), {"bias": False})],
    ids=str,
)  # fmt: skip
def test_group_norm_matches_torch(torch, groups, shape, kwargs, dtype):
    ours = N.GroupNorm(groups, 6, dtype=dtype, **kwargs)
    theirs = torch.nn.GroupNorm(groups, 6, dtype=getattr(torch, dtype), **kwargs)
    _copy_state(torch, theirs, ours)
    _step(torch, ours, theirs, _data(shape, dtype), dtype)
    assert repr(ours) == repr(theirs)
    out = ours(tt.tensor(_data(shape, dtype), requires_grad=True))
    assert out.grad_fn.name() == "NativeGroupNormBackward0"


def test_group_norm_errors_match_torch(torch):
    F = torch.nn.functional
    with pytest.raises(ValueError, match=r"^num_channels \(3\) must be divisible by num_groups"):
        N.GroupNorm(2, 3)
    _same_error(torch, lambda: N.GroupNorm(2, 3), lambda: torch.nn.GroupNorm(2, 3))
    _same_error(
        torch,
        lambda: N.group_norm(tt.zeros(2, 3, 4), 2),
        lambda: F.group_norm(torch.zeros(2, 3, 4), 2),
    )
    _same_error(
        torch,
        lambda: N.group_norm(tt.zeros(2, 4, 4), 2, tt.ones(3)),
        lambda: F.group_norm(torch.zeros(2, 4, 4), 2, torch.ones(3)),
    )
    _same_error(
        torch,
        lambda: N.GroupNorm(2, 4)(tt.zeros(4)),
        lambda: torch.nn.GroupNorm(2, 4)(torch.zeros(4)),
    )
    _same_error(
        torch, lambda: N.group_norm(tt.zeros(1, 4), 4), lambda: F.group_norm(torch.zeros(1, 4), 4)
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("size", "shape"), [(2, (2, 5, 3)), (3, (2, 4, 3, 2)), (5, (1, 3, 2, 2, 2))]
)
def test_local_response_norm_matches_torch(torch, size, shape, dtype):
    ours = N.LocalResponseNorm(size, alpha=0.3, beta=0.6, k=1.5)
    theirs = torch.nn.LocalResponseNorm(size, alpha=0.3, beta=0.6, k=1.5)
    _step(torch, ours, theirs, _data(shape, dtype), dtype)
    assert repr(ours) == repr(theirs)
    _same_error(
        torch,
        lambda: N.local_response_norm(tt.zeros(2, 3), 2),
        lambda: torch.nn.functional.local_response_norm(torch.zeros(2, 3), 2),
    )


# -- channel-wise dropout and Unflatten -----------------------------------------------------------


@pytest.mark.parametrize(
    ("fn", "shape"),
    [("dropout1d", (8, 16, 5)), ("dropout1d", (16, 5)), ("dropout2d", (4, 16, 3, 3)),
     ("dropout3d", (2, 16, 2, 2, 2)), ("dropout3d", (16, 2, 2, 2))],
)  # fmt: skip
def test_channel_dropout_zeroes_whole_channels_and_scales_the_rest(fn, shape):
    tt.manual_seed(0)
    x = tt.tensor(np.random.default_rng(0).uniform(1, 2, shape), requires_grad=True)
    out = getattr(D, fn)(x, p=0.25)
    y, v = out.detach().numpy(), x.detach().numpy()
    batched = len(shape) in (3, 4, 5) and not (fn == "dropout3d" and len(shape) == 4)
    channels = y.reshape((shape[0] * shape[1], -1) if batched else (shape[0], -1))
    ratio = (y / v).reshape(channels.shape)
    kept = (ratio != 0).all(axis=1)
    assert ((ratio == 0).all(axis=1) | kept).all()  # a channel is dropped or kept whole
    np.testing.assert_allclose(ratio[kept], 1 / 0.75)
    assert 0 < kept.sum() < kept.size
    out.sum().backward()  # the gradient is the same mask and scale
    np.testing.assert_allclose(x.grad.numpy(), y / v)


def test_channel_dropout_identity_cases_and_errors(torch):
    x = tt.ones(2, 3, 4)
    assert D.dropout1d(x, 0.5, training=False) is x
    assert D.dropout1d(x, 0.0) is x
    assert (D.dropout2d(tt.ones(2, 3, 2, 2), 1.0).numpy() == 0).all()
    np.testing.assert_array_equal(D.Dropout2d(0.3).eval()(tt.ones(2, 3, 2, 2)).numpy(), 1.0)
    _same_error(
        torch,
        lambda: D.dropout1d(tt.zeros(2, 3, 4, 5)),
        lambda: torch.nn.functional.dropout1d(torch.zeros(2, 3, 4, 5)),
    )
    _same_error(torch, lambda: D.Dropout1d(1.5), lambda: torch.nn.Dropout1d(1.5))
    for name in ("Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"):
        assert repr(getattr(D, name)(0.2)) == repr(getattr(torch.nn, name)(0.2))
    with pytest.warns(UserWarning, match="dropout2d: Received a 3D input"):
        D.dropout2d(tt.ones(2, 3, 4))


def test_alpha_dropout_keeps_mean_and_variance():
    tt.manual_seed(1)
    x = tt.tensor(np.random.default_rng(2).standard_normal(200_000))
    y = D.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    assert D.alpha_dropout(x, 0.2) is x  # training defaults to False, as in torch
    dropped = -1.7580993408473766 / np.sqrt((1.7580993408473766**2 * 0.2 + 1) * 0.8)
    dropped += 1.7580993408473766 * 0.2 / np.sqrt((1.7580993408473766**2 * 0.2 + 1) * 0.8)
    assert np.isclose(y, dropped).mean() == pytest.approx(0.2, abs=0.01)


@pytest.mark.parametrize(
    ("dim", "sizes"), [(1, (2, 3)), (1, (2, -1)), (-2, [3, 2]), (2, (1, 3, 1))]
)
def test_unflatten_matches_torch(torch, dim, sizes):
    x = _data((2, 6, 3), "float64")
    ours, theirs = D.Unflatten(dim, sizes), torch.nn.Unflatten(dim, sizes)
    _step(torch, ours, theirs, x, "float64")
    assert repr(ours) == repr(theirs)


def test_unflatten_errors_match_torch(torch):
    x, t = tt.zeros(2, 6, 3), torch.zeros(2, 6, 3)
    for dim, sizes in [(1, (4, 2)), (1, (5, -1)), (1, ()), (5, (2, 3))]:
        _same_error(
            torch,
            lambda d=dim, s=sizes: D.Unflatten(d, s)(x),
            lambda d=dim, s=sizes: torch.nn.Unflatten(d, s)(t),
        )
    _same_error(torch, lambda: D.Unflatten(1, 2), lambda: torch.nn.Unflatten(1, 2))
    _same_error(torch, lambda: D.Unflatten(1, (2, 3.0)), lambda: torch.nn.Unflatten(1, (2, 3.0)))
