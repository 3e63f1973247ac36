"""tracegrad.torch.nn's recurrent layers against torch.nn: RNN (tanh, relu), LSTM (with
projections), GRU and their cells, packed sequences; outputs, final states and the gradients
of inputs, initial states and every parameter (torch takes our weights by name), float64 and
float32; parameter names, initialisation, repr and PyTorch's messages."""

from __future__ import annotations

import math
from functools import partial
from types import SimpleNamespace

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim import torch_oracle
from tests.shim.torch_oracle import torch_one_thread  # noqa: F401 - the `torch` fixture
from tracegrad.torch.nn import recurrent
from tracegrad.torch.nn.recurrent_cells import LSTMSequence, lstm_composed
from tracegrad.torch.nn.utils import rnn as rnn_utils

OURS = SimpleNamespace(
    RNN=recurrent.RNN,
    LSTM=recurrent.LSTM,
    GRU=recurrent.GRU,
    RNNCell=recurrent.RNNCell,
    LSTMCell=recurrent.LSTMCell,
    GRUCell=recurrent.GRUCell,
    utils=SimpleNamespace(rnn=rnn_utils),
)

assert_same_error = partial(torch_oracle.assert_same_error, scalar_names=True)
TOL = {np.float64: (1e-10, 1e-12), np.float32: (2e-4, 2e-5)}


def nn_of(torch, lib):
    """Our classes (imported by module path, before `tracegrad.torch.nn` re-exports them)
    or torch.nn."""
    return OURS if lib is tt else torch.nn


def to_torch_state(torch, module) -> dict:
    return {k: torch.tensor(np.array(v.detach().numpy())) for k, v in module.state_dict().items()}


def both(torch, build, arrays: dict, forward, dtype=np.float64):
    """Build our module (`build(nn)`, in `dtype`), give torch's the same weights by name, run
    `forward(lib, nn, module, tensors)` (a list of output tensors) in both on the same
    `arrays` (float ones require grad), then backpropagate `sum(out * r)` with fixed random
    `r`; outputs, input gradients and parameter gradients must agree."""
    rtol, atol = TOL[dtype]
    results = []
    for lib in (tt, torch):
        nn = nn_of(torch, lib)
        module = build(nn)
        module = module.double() if dtype == np.float64 else module.float()
        if lib is tt:
            ours = module
        else:
            module.load_state_dict(to_torch_state(torch, ours))
            module.train(ours.training)
        tensors = {
            k: lib.tensor(v, requires_grad=v.dtype.kind == "f") if isinstance(v, np.ndarray) else v
            for k, v in arrays.items()
        }
        outs = forward(lib, nn, module, tensors)
        rng = np.random.default_rng(7)
        loss = 0
        for o in outs:
            r = rng.standard_normal(tuple(o.shape)).astype(dtype)
            loss = loss + (o * lib.tensor(r)).sum()
        loss.backward()
        grads = {
            k: t.grad
            for k, t in tensors.items()
            if isinstance(t, lib.Tensor) and t.grad is not None
        }
        params = {k: p.grad for k, p in module.named_parameters()}
        results.append((outs, grads, params))
    (outs, grads, params), (t_outs, t_grads, t_params) = results
    assert len(outs) == len(t_outs)
    for i, (a, b) in enumerate(zip(outs, t_outs)):
        assert tuple(a.shape) == tuple(b.shape), f"output {i}: {a.shape} vs {b.shape}"
        assert a.dtype == dtype
        np.testing.assert_allclose(
            a.detach().numpy(), b.detach().numpy(), rtol, atol, err_msg=f"output {i}"
        )
    assert grads.keys() == t_grads.keys()
    for k in grads:
        np.testing.assert_allclose(grads[k].numpy(), t_grads[k].numpy(), rtol, atol, err_msg=k)
    assert params.keys() == t_params.keys()
    for k in params:
        assert (params[k] is None) == (t_params[k] is None), k
        if params[k] is None:  # a test of functions with a dummy module
            continue
        np.testing.assert_allclose(params[k].numpy(), t_params[k].numpy(), rtol, atol, err_msg=k)
    return outs


def randn(*shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# -- layers -------------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:LSTM with projections is not supported with oneDNN")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "config",
    [
        dict(num_layers=1),
        dict(num_layers=2, bidirectional=True, batch_first=True),
        dict(num_layers=2, bidirectional=True, proj_size=3),
        dict(num_layers=1, bias=False, batch_first=True),
    ],
    ids=["plain", "bidir-2-layers-batch-first", "bidir-proj", "no-bias"],
)
def test_lstm_matches_torch(torch, config, dtype):
    layers, dirs = config["num_layers"], 2 if config.get("bidirectional") else 1
    real = config.get("proj_size", 0) or 6
    x = randn(4, 3, 5, dtype=dtype)  # (T, B, F), or (B, T, F) with batch_first
    h0 = randn(layers * dirs, 4 if config.get("batch_first") else 3, real, dtype=dtype, seed=1)
    c0 = randn(layers * dirs, h0.shape[1], 6, dtype=dtype, seed=2)

    def forward(lib, nn, lstm, t):
        out, (h, c) = lstm(t["x"], (t["h0"], t["c0"]))
        return [out, h, c]

    build = lambda nn: nn.LSTM(5, 6, **config)  # noqa: E731
    both(torch, build, {"x": x, "h0": h0, "c0": c0}, forward, dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("kind", ["GRU", "RNN-tanh", "RNN-relu"])
def test_gru_and_rnn_match_torch(torch, kind, dtype):
    name, _, nonlinearity = kind.partition("-")
    extra = {"nonlinearity": nonlinearity} if nonlinearity else {}
    x = randn(3, 4, 5, dtype=dtype)  # batch_first: (B, T, F)
    h0 = randn(4, 3, 6, dtype=dtype, seed=1)

    def forward(lib, nn, module, t):
        out, h = module(t["x"], t["h0"])
        out2, h2 = module(t["x"])  # zero initial state
        return [out, h, out2, h2]

    def build(nn):
        return getattr(nn, name)(5, 6, num_layers=2, bidirectional=True, batch_first=True, **extra)

    both(torch, build, {"x": x, "h0": h0}, forward, dtype)


@pytest.mark.parametrize("name", ["LSTM", "GRU", "RNN"])
def test_unbatched_input(torch, name):
    x, h0 = randn(4, 5), randn(2, 6, seed=1)

    def forward(lib, nn, module, t):
        hx = (t["h0"], t["h0"] * 0.5) if name == "LSTM" else t["h0"]
        out, h = module(t["x"], hx)
        return [out, *(h if name == "LSTM" else (h,))]

    both(
        torch,
        lambda nn: getattr(nn, name)(5, 6, num_layers=2),
        {"x": x, "h0": h0},
        forward,
    )


def test_dropout_between_layers(torch):
    """dropout=0 in train mode equals eval mode (and torch); dropout > 0 is ignored in eval and
    drops in training (the mask is tracegrad's own random draw)."""
    x = randn(4, 3, 5)

    def forward(lib, nn, lstm, t):
        return [lstm(t["x"])[0]]

    def build(p, training):
        def make(nn):
            m = nn.LSTM(5, 6, num_layers=2, dropout=p)
            return m.train(training)

        return make

    for p, training in ((0.0, True), (0.0, False), (0.5, False)):
        both(torch, build(p, training), {"x": x}, forward)
    lstm = recurrent.LSTM(5, 6, num_layers=2, dropout=0.5, dtype=np.float64)
    tt.manual_seed(0)
    train_out = lstm(tt.tensor(x))[0]
    eval_out = lstm.eval()(tt.tensor(x))[0]
    assert train_out.shape == eval_out.shape
    assert not np.allclose(train_out.detach().numpy(), eval_out.detach().numpy())


@pytest.mark.parametrize("bidirectional", [False, True])
def test_lstm_double_backward_matches_torch(torch, bidirectional):
    """`create_graph=True` through the one-node LSTM: its backward is then the composed steps'
    (differentiable again); second derivatives match torch's."""
    x = randn(5, 2, 3)
    results = []
    for lib, nn in ((tt, OURS), (torch, torch.nn)):
        lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=bidirectional).double()
        if lib is tt:
            ours = lstm
        else:
            lstm.load_state_dict(to_torch_state(torch, ours))
        xt = lib.tensor(x, requires_grad=True)
        out, (h, c) = lstm(xt)
        (g,) = lib.autograd.grad((out * out).sum() + (c * h).sum(), xt, create_graph=True)
        (g * g).sum().backward()
        results.append([g, xt.grad, *(p.grad for p in lstm.parameters())])
    for a, b in zip(*results):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), 1e-10, 1e-12)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("reverse", [False, True])
def test_lstm_sequence_node_equals_composed_steps(reverse, bias):
    """The one-node LSTM (NumPy steps, backpropagation through time by hand) and the composed
    steps give the same outputs and gradients."""
    shapes = [(4 * 3, 5), (8, 5), (8, 2), (8,), (8,), (3, 2), (3, 2)]
    arrays = [randn(*shape, seed=k) for k, shape in enumerate(shapes)]
    if not bias:
        arrays[3] = arrays[4] = None
    results = []
    for run in (LSTMSequence.apply, lstm_composed):
        ts = [None if a is None else tt.tensor(a, requires_grad=True) for a in arrays]
        outs = run(*ts, 4, reverse)
        sum((o * tt.tensor(randn(*o.shape, seed=9))).sum() for o in outs).backward()
        results.append([*outs, *(t.grad for t in ts if t is not None)])
    for a, b in zip(*results):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), 1e-12, 1e-14)


def test_lstm_without_grad():
    lstm = recurrent.LSTM(3, 4, dtype=np.float64)
    x = tt.tensor(randn(5, 2, 3))
    with tt.no_grad():
        out, (h, c) = lstm(x)
    assert not out.requires_grad and out.grad_fn is None
    np.testing.assert_allclose(out.numpy(), lstm(x)[0].detach().numpy(), 1e-15)


# -- cells --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_match_torch(torch, name, dtype):
    x, h = randn(3, 5, dtype=dtype), randn(3, 6, dtype=dtype, seed=1)

    def forward(lib, nn, cell, t):
        hx = (t["h"], t["h"] * 2) if name == "LSTMCell" else t["h"]
        outs = []
        for result in (cell(t["x"], hx), cell(t["x"]), cell(t["x"][0], _first(hx))):
            outs.extend(result if isinstance(result, tuple) else (result,))
        return outs

    both(torch, lambda nn: getattr(nn, name)(5, 6), {"x": x, "h": h}, forward, dtype)
    if name == "RNNCell":
        both(
            torch,
            lambda nn: nn.RNNCell(5, 6, nonlinearity="relu", bias=False),
            {"x": x, "h": h},
            forward,
            dtype,
        )


def _first(hx):
    return tuple(h[0] for h in hx) if isinstance(hx, tuple) else hx[0]


def test_lstm_cell_loop_equals_lstm_layer():
    """Unrolling LSTMCell with the layer's weights gives the layer's outputs."""
    lstm = recurrent.LSTM(5, 6, dtype=np.float64)
    cell = recurrent.LSTMCell(5, 6, dtype=np.float64)
    cell.load_state_dict({k[:-3]: v for k, v in lstm.state_dict().items()})
    x = tt.tensor(randn(4, 3, 5))
    out, (h, c) = lstm(x)
    hx = None
    for t in range(4):
        hx = cell(x[t], hx)
        np.testing.assert_allclose(hx[0].detach().numpy(), out[t].detach().numpy(), 1e-12)
    np.testing.assert_allclose(hx[1].detach().numpy(), c[0].detach().numpy(), 1e-12)


# -- packed sequences ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_packed_lstm_matches_torch(torch, dtype):
    """Unsorted lengths, two bidirectional layers, given initial states: packed outputs, final
    states, padded outputs and every gradient."""
    x = randn(3, 5, 4, dtype=dtype)  # (B, T, F)
    h0, c0 = randn(4, 3, 6, dtype=dtype, seed=1), randn(4, 3, 6, dtype=dtype, seed=2)

    def forward(lib, nn, lstm, t):
        packed = nn.utils.rnn.pack_padded_sequence(
            t["x"], [2, 5, 3], batch_first=True, enforce_sorted=False
        )
        out, (h, c) = lstm(packed, (t["h0"], t["c0"]))
        padded, lengths = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=6)
        assert lengths.tolist() == [2, 5, 3]
        assert out.batch_sizes.tolist() == [3, 3, 2, 1, 1]
        return [out.data, h, c, padded]

    def build(nn):
        return nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=True)

    both(torch, build, {"x": x, "h0": h0, "c0": c0}, forward, dtype)


@pytest.mark.parametrize("name", ["GRU", "RNN"])
def test_packed_gru_and_rnn_match_torch(torch, name):
    seqs = [randn(n, 4, seed=n) for n in (5, 3, 3, 1)]

    def forward(lib, nn, module, t):
        packed = nn.utils.rnn.pack_sequence([t[f"s{i}"] for i in range(4)])
        out, h = module(packed)
        return [out.data, h]

    arrays = {f"s{i}": s for i, s in enumerate(seqs)}
    both(
        torch,
        lambda nn: getattr(nn, name)(4, 6, bidirectional=True),
        arrays,
        forward,
    )


def test_pad_sequence_and_unpack_match_torch(torch):
    seqs = [randn(n, 2, seed=n) for n in (2, 4, 1)]

    def forward(lib, nn, module, t):
        ts = [t[f"s{i}"] for i in range(3)]
        u = nn.utils.rnn
        outs = [
            u.pad_sequence(ts),
            u.pad_sequence(ts, batch_first=True, padding_value=-1.0, padding_side="left"),
        ]
        packed = u.pack_sequence(ts, enforce_sorted=False)
        outs += [packed.data, *u.unpack_sequence(packed)]
        padded, lengths = u.pad_packed_sequence(packed, padding_value=3.0)
        outs.append(padded)
        return outs

    arrays = {f"s{i}": s for i, s in enumerate(seqs)}
    both(torch, lambda nn: nn.RNNCell(1, 1), arrays, forward)


# -- parameters, initialisation, repr -----------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda nn: nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2),
        lambda nn: nn.GRU(3, 4, bias=False, batch_first=True),
        lambda nn: nn.RNN(3, 4, 3, "relu", dropout=0.25),
        lambda nn: nn.LSTMCell(3, 4),
        lambda nn: nn.GRUCell(3, 4, bias=False),
        lambda nn: nn.RNNCell(3, 4, nonlinearity="relu"),
    ],
)
def test_names_shapes_init_and_repr(torch, make):
    ours, theirs = make(OURS), make(torch.nn)
    mine = {k: tuple(v.shape) for k, v in ours.state_dict().items()}
    assert mine == {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    assert [k for k, _ in ours.named_parameters()] == [k for k, _ in theirs.named_parameters()]
    assert repr(ours) == repr(theirs)
    bound = 1 / math.sqrt(4)  # U(-1/sqrt(hidden), 1/sqrt(hidden)), std bound / sqrt(3)
    values = np.concatenate([p.detach().numpy().ravel() for p in ours.parameters()])
    assert all(p.dtype == np.float32 for p in ours.parameters())
    assert np.all(np.abs(values) <= bound) and values.std() > 0.4 * bound
    ours.load_state_dict({k: tt.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    for k, v in theirs.state_dict().items():
        np.testing.assert_array_equal(ours.state_dict()[k].numpy(), v.numpy())


def test_all_weights_and_flatten(torch):
    lstm = recurrent.LSTM(3, 4, bidirectional=True)
    assert [[tuple(w.shape) for w in ws] for ws in lstm.all_weights] == [
        [tuple(w.shape) for w in ws] for ws in torch.nn.LSTM(3, 4, bidirectional=True).all_weights
    ]
    lstm.flatten_parameters()
    lstm.double()
    assert lstm(tt.zeros(2, 1, 3, dtype=tt.float64))[0].dtype == np.float64


# -- messages -----------------------------------------------------------------------------------


def _error_cases():
    def lstm(nn):
        return nn.LSTM(16, 4)

    return {
        "input size": lambda lib, nn: lstm(nn)(lib.zeros(3, 2, 8)),
        "hidden[0] size": lambda lib, nn: lstm(nn)(
            lib.zeros(3, 2, 16), (lib.zeros(1, 3, 4), lib.zeros(1, 2, 4))
        ),
        "hidden[1] size": lambda lib, nn: lstm(nn)(
            lib.zeros(3, 2, 16), (lib.zeros(1, 2, 4), lib.zeros(1, 2, 5))
        ),
        "hx dims": lambda lib, nn: lstm(nn)(
            lib.zeros(3, 2, 16), (lib.zeros(2, 4), lib.zeros(1, 2, 4))
        ),
        "input dims": lambda lib, nn: lstm(nn)(lib.zeros(3, 2, 1, 16)),
        "dtype": lambda lib, nn: lstm(nn)(lib.zeros(3, 2, 16, dtype=lib.float64)),
        "gru hidden": lambda lib, nn: nn.GRU(3, 4)(lib.zeros(2, 2, 3), lib.zeros(1, 3, 4)),
        "rnn input dims": lambda lib, nn: nn.RNN(3, 4)(lib.zeros(3)),
        "rnn hx dims": lambda lib, nn: nn.RNN(3, 4)(lib.zeros(2, 2, 3), lib.zeros(3, 4)),
        "nonlinearity": lambda lib, nn: nn.RNN(3, 4, nonlinearity="sigmoid"),
        "proj_size": lambda lib, nn: nn.LSTM(3, 4, proj_size=4),
        "proj_size gru": lambda lib, nn: nn.GRU(3, 4, proj_size=2),
        "dropout": lambda lib, nn: nn.LSTM(3, 4, dropout=1.5),
        "hidden size": lambda lib, nn: nn.LSTM(3, 0),
        "cell input": lambda lib, nn: nn.LSTMCell(16, 4)(lib.zeros(2, 8)),
        "cell batch": lambda lib, nn: nn.LSTMCell(16, 4)(
            lib.zeros(2, 16), (lib.zeros(3, 4), lib.zeros(2, 4))
        ),
        "cell hidden": lambda lib, nn: nn.GRUCell(16, 4)(lib.zeros(2, 16), lib.zeros(2, 5)),
        "cell dims": lambda lib, nn: nn.RNNCell(16, 4)(lib.zeros(1, 2, 16)),
        "unsorted": lambda lib, nn: nn.utils.rnn.pack_padded_sequence(
            lib.zeros(5, 3, 2), [2, 5, 3]
        ),
        "zero length": lambda lib, nn: nn.utils.rnn.pack_padded_sequence(
            lib.zeros(5, 3, 2), [5, 3, 0]
        ),
        "lengths count": lambda lib, nn: nn.utils.rnn.pack_padded_sequence(
            lib.zeros(5, 3, 2), [5, 3]
        ),
        "total_length": lambda lib, nn: nn.utils.rnn.pad_packed_sequence(
            nn.utils.rnn.pack_sequence([lib.zeros(3, 2), lib.zeros(1, 2)]), total_length=2
        ),
        "padding_side": lambda lib, nn: nn.utils.rnn.pad_sequence(
            [lib.zeros(2)], padding_side="middle"
        ),
    }


@pytest.mark.parametrize("case", list(_error_cases()))
def test_messages_match_torch(torch, case):
    fn = _error_cases()[case]
    assert_same_error(lambda: fn(tt, OURS), lambda: fn(torch, torch.nn))


def test_lstm_input_size_message():
    with pytest.raises(
        RuntimeError, match=r"input.size\(-1\) must be equal to input_size. Expected 16, got 8"
    ):
        recurrent.LSTM(16, 4)(tt.zeros(3, 2, 8))
    with pytest.raises(
        RuntimeError, match=r"Expected hidden\[0\] size \(1, 2, 4\), got \[1, 3, 4\]"
    ):
        recurrent.LSTM(16, 4)(tt.zeros(3, 2, 16), (tt.zeros(1, 3, 4), tt.zeros(1, 2, 4)))


def test_dropout_warning_matches_torch(torch):
    for nn in (OURS, torch.nn):
        with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
            nn.GRU(3, 4, dropout=0.2)


def test_lstm_training_losses_match_torch(torch):
    """Twenty SGD steps of an LSTM regressor on random sequences (float32), written once for
    both libraries: the losses agree with torch's at every step."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((12, 8, 4)).astype(np.float32)
    y = rng.standard_normal((8, 1)).astype(np.float32)
    ours = (OURS.LSTM(4, 16, num_layers=2), tt.nn.Linear(16, 1))
    theirs = (torch.nn.LSTM(4, 16, num_layers=2), torch.nn.Linear(16, 1))
    for a, b in zip(ours, theirs):
        b.load_state_dict(to_torch_state(torch, a))
    losses = []
    for lib, (lstm, head) in ((tt, ours), (torch, theirs)):
        opt = lib.optim.SGD([*lstm.parameters(), *head.parameters()], lr=0.1)
        xt, yt = lib.tensor(x), lib.tensor(y)
        run = []
        for _ in range(20):
            opt.zero_grad()
            out, _ = lstm(xt)
            loss = lib.nn.functional.mse_loss(head(out[-1]), yt)
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append(run)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-4)
    assert losses[0][-1] < losses[0][0]
