"""PyTorch training programs, written as plain PyTorch code, give torch's numbers when run with
`import tracegrad.torch as torch`: PyTorch's "dynamic net" example (a module whose forward
reuses a layer a random number of times), a quickstart-style MLP classifier (TensorDataset,
DataLoader, CrossEntropyLoss, SGD or Adam, StepLR, an evaluation pass under `no_grad` and
`model.eval()`) and a regression with `smooth_l1_loss`.

Each program is text run twice: once as written (real torch) and once with its `torch` imports
pointed at `tracegrad.torch` and nothing else changed. Both runs get the same data and the same
initial weights, as NumPy arrays: the program loads `initial_weights(model.state_dict())` into
its model, so the two libraries' generators play no part. Python's `random` (the dynamic net's
choices) is seeded in the program, so both runs take the same path. In float64 every recorded
loss, evaluation result and learning rate agrees to rtol 1e-10.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import torch_one_thread  # noqa: F401 - the `torch` fixture
from tracegrad.torch.nn import distance, loss_layers, losses, losses_margin

DYNAMIC_NET = """\
import random

import torch

torch.set_default_dtype(torch.float64)


class DynamicNet(torch.nn.Module):
    def __init__(self, D_in, H, D_out):
        super().__init__()
        self.input_linear = torch.nn.Linear(D_in, H)
        self.middle_linear = torch.nn.Linear(H, H)
        self.output_linear = torch.nn.Linear(H, D_out)

    def forward(self, x):
        # a random number (0 to 3) of passes through the same middle layer: the graph is
        # built anew on each forward pass, and the layer's weights are shared by every pass
        h_relu = self.input_linear(x).clamp(min=0)
        depth = random.randint(0, 3)
        depths.append(depth)
        for _ in range(depth):
            h_relu = self.middle_linear(h_relu).clamp(min=0)
        y_pred = self.output_linear(h_relu)
        return y_pred


N, D_in, H, D_out = 32, 20, 16, 5
x = torch.tensor(DATA["x"])
y = torch.tensor(DATA["y"])

model = DynamicNet(D_in, H, D_out)
model.load_state_dict({k: torch.tensor(v) for k, v in initial_weights(model.state_dict()).items()})

criterion = torch.nn.MSELoss(reduction="sum")
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
random.seed(0)
for t in range(40):
    y_pred = model(x)
    loss = criterion(y_pred, y)
    losses.append(loss.item())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
"""

QUICKSTART = """\
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.set_default_dtype(torch.float64)

training_data = TensorDataset(torch.tensor(DATA["x_train"]), torch.tensor(DATA["y_train"]))
test_data = TensorDataset(torch.tensor(DATA["x_test"]), torch.tensor(DATA["y_test"]))
batch_size = 16
train_dataloader = DataLoader(training_data, batch_size=batch_size)
test_dataloader = DataLoader(test_data, batch_size=batch_size)


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(4 * 5, 32),
            nn.ReLU(),
            nn.Linear(32, 32),
            nn.ReLU(),
            nn.Linear(32, 3),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


model = NeuralNetwork()
model.load_state_dict({k: torch.tensor(v) for k, v in initial_weights(model.state_dict()).items()})

loss_fn = nn.CrossEntropyLoss()
optimizer = OPTIMIZER
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)


def train(dataloader, model, loss_fn, optimizer):
    model.train()
    for batch, (X, y) in enumerate(dataloader):
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        if batch % 2 == 0:
            print(f"loss: {loss.item():>7f}  [{(batch + 1) * len(X):>5d}]")


def test(dataloader, model, loss_fn):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).sum().item()
    test_loss /= num_batches
    correct /= size
    evaluations.append((test_loss, correct))
    print(f"Test Error: Accuracy: {(100 * correct):>0.1f}%, Avg loss: {test_loss:>8f}")


epochs = 3
for t in range(epochs):
    print(f"Epoch {t + 1}")
    train(train_dataloader, model, loss_fn, optimizer)
    test(test_dataloader, model, loss_fn)
    scheduler.step()
    rates.append(scheduler.get_last_lr()[0])
print("Done!")
"""

OPTIMIZERS = {
    "sgd": "torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)",
    "adam": "torch.optim.Adam(model.parameters(), lr=1e-2)",
}

REGRESSION = """\
import torch

F = torch.nn.functional
torch.set_default_dtype(torch.float64)

X = torch.tensor(DATA["x"])
y = torch.tensor(DATA["y"])
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
model.load_state_dict({k: torch.tensor(v) for k, v in initial_weights(model.state_dict()).items()})
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)

for step in range(60):
    optimizer.zero_grad()
    prediction = model(X).squeeze(-1)
    loss = F.smooth_l1_loss(prediction, y, beta=0.5)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

with torch.no_grad():
    errors = (model(X).squeeze(-1) - y).abs()
evaluations.append((errors.mean().item(), errors.max().item()))
"""


def _initial_weights(state_dict) -> dict:
    """The same initial values for either library's model: uniform in +-1/sqrt(fan_in), as
    `nn.Linear`'s own, drawn from a NumPy generator keyed on nothing but the names' order."""
    rng = np.random.default_rng(7)
    out = {}
    for name, value in state_dict.items():
        shape = tuple(value.shape)
        fan_in = shape[1] if len(shape) > 1 else shape[0]
        bound = 1.0 / np.sqrt(fan_in)
        out[name] = rng.uniform(-bound, bound, shape)
    return out


def _data(program: str) -> dict:
    rng = np.random.default_rng(3)
    if program == "dynamic":
        return {"x": rng.standard_normal((32, 20)), "y": rng.standard_normal((32, 5))}
    if program == "quickstart":
        centres = rng.standard_normal((3, 4, 5)) * 1.5

        def draw(n):
            labels = rng.integers(0, 3, n)
            return centres[labels] + rng.standard_normal((n, 4, 5)), labels.astype(np.int64)

        (x_train, y_train), (x_test, y_test) = draw(96), draw(40)
        return {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test}
    x = rng.standard_normal((64, 8))
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1] * x[:, 2] + rng.standard_t(2, 64) * 0.3  # heavy tails
    return {"x": x, "y": y}


def _for_tracegrad(source: str) -> str:
    """The program with its imports of `torch` pointed at `tracegrad.torch`."""
    assert source.count("import torch\n") == 1
    source = source.replace("import torch\n", "import tracegrad.torch as torch\n")
    return source.replace("from torch", "from tracegrad.torch")


@pytest.fixture
def wired(monkeypatch):
    """`nn` and `nn.functional` with the losses and distances re-exported, as the wiring will
    have them (a no-op once it has landed)."""
    for module in (losses, losses_margin, distance):
        for name in module.__all__:
            monkeypatch.setattr(tt.nn.functional, name, getattr(module, name), raising=False)
    for module in (loss_layers, distance):
        for name in module.__all__:
            if name[0].isupper():
                monkeypatch.setattr(tt.nn, name, getattr(module, name), raising=False)


def _run(source: str, program: str, lib) -> dict:
    """Execute the program with the given data and initial weights; returns its records."""
    namespace = {
        "__name__": "__main__",
        "DATA": _data(program),
        "initial_weights": _initial_weights,
        "losses": [],
        "evaluations": [],
        "rates": [],
        "depths": [],
    }
    try:
        exec(compile(source, f"<{program}>", "exec"), namespace)
    finally:
        lib.set_default_dtype(lib.float32)
    return namespace


def _run_both(torch, source: str, program: str) -> tuple[dict, dict]:
    theirs = _run(source, program, torch)
    ours = _run(_for_tracegrad(source), program, tt)
    return ours, theirs


def _assert_same_records(ours: dict, theirs: dict) -> None:
    for key in ("losses", "evaluations", "rates", "depths"):
        assert len(ours[key]) == len(theirs[key]), key
        np.testing.assert_allclose(
            np.asarray(ours[key], dtype=float),
            np.asarray(theirs[key], dtype=float),
            rtol=1e-10,
            atol=1e-13,
            err_msg=key,
        )


def test_dynamic_net(torch, capsys):
    ours, theirs = _run_both(torch, DYNAMIC_NET, "dynamic")
    _assert_same_records(ours, theirs)
    assert len(set(ours["depths"])) > 1  # the forward took different paths
    assert ours["losses"][-1] < 0.7 * ours["losses"][0]
    for name, value in ours["model"].state_dict().items():
        np.testing.assert_allclose(
            value.numpy(), theirs["model"].state_dict()[name].numpy(), rtol=1e-10, atol=1e-13
        )


@pytest.mark.parametrize("optimizer", OPTIMIZERS)
def test_quickstart_classifier(torch, capsys, optimizer):
    source = QUICKSTART.replace("OPTIMIZER", OPTIMIZERS[optimizer])
    ours, theirs = _run_both(torch, source, "quickstart")
    _assert_same_records(ours, theirs)
    assert len(ours["losses"]) == 3 * 6 and ours["rates"] == [
        ours["rates"][0] * 2**-k for k in range(3)
    ]
    assert ours["evaluations"][-1][1] > 0.8  # the classes are separable: it learns them
    assert not ours["model"].training  # the evaluation pass left it in eval mode
    printed = capsys.readouterr().out
    half = len(printed) // 2
    assert printed[:half] == printed[half:]  # both runs printed the same progress


def test_smooth_l1_regression(torch, capsys, wired):
    ours, theirs = _run_both(torch, REGRESSION, "regression")
    _assert_same_records(ours, theirs)
    assert ours["losses"][-1] < 0.5 * ours["losses"][0]
