"""Training loops written the way PyTorch's documentation writes them (its "Learning PyTorch
with Examples" programs: a cubic fit of sin(x) by autograd on scalar tensors, by `nn.Sequential`
with a hand-written update under `no_grad`, by a custom `autograd.Function`, and by
`optim.RMSprop`) run with `import tracegrad.torch as torch` in place of `import torch` and no
other change.

Each program is run as text: once as written (real torch, showing it is a PyTorch program) and
once with only its import line replaced, both after the same `manual_seed`, so they start from
the same weights, bit for bit (the global stream is torch's). The oracles are PyTorch's own run
and a NumPy replay of the same gradient descent, in float64, from those initial values.
"""

from __future__ import annotations

import math

import numpy as np

import tracegrad.torch as tt
from tests.shim.torch_oracle import torch_one_thread  # noqa: F401 - the `torch` fixture
from tracegrad.torch import nn

AUTOGRAD = """\
import math

import torch

dtype = torch.float
x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
y = torch.sin(x)

# one weight per coefficient of a + b x + c x^2 + d x^3
a = torch.randn((), dtype=dtype, requires_grad=True)
b = torch.randn((), dtype=dtype, requires_grad=True)
c = torch.randn((), dtype=dtype, requires_grad=True)
d = torch.randn((), dtype=dtype, requires_grad=True)

learning_rate = 1e-6
for t in range(2000):
    y_pred = a + b * x + c * x**2 + d * x**3
    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(t, loss.item())
    loss.backward()
    with torch.no_grad():
        a -= learning_rate * a.grad
        b -= learning_rate * b.grad
        c -= learning_rate * c.grad
        d -= learning_rate * d.grad
        a.grad = None
        b.grad = None
        c.grad = None
        d.grad = None

print(f"Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3")
"""

NN = """\
import math

import torch

x = torch.linspace(-math.pi, math.pi, 2000)
y = torch.sin(x)

# the features (x, x^2, x^3): (2000, 1) against (3,) broadcasts to (2000, 3)
p = torch.tensor([1, 2, 3])
xx = x.unsqueeze(-1).pow(p)

model = torch.nn.Sequential(
    torch.nn.Linear(3, 1),
    torch.nn.Flatten(0, 1),
)
loss_fn = torch.nn.MSELoss(reduction="sum")

learning_rate = 1e-6
for t in range(2000):
    y_pred = model(xx)
    loss = loss_fn(y_pred, y)
    if t % 100 == 99:
        print(t, loss.item())
    model.zero_grad()
    loss.backward()
    with torch.no_grad():
        for param in model.parameters():
            param -= learning_rate * param.grad

linear_layer = model[0]
print(
    f"Result: y = {linear_layer.bias.item()} + {linear_layer.weight[:, 0].item()} x + "
    f"{linear_layer.weight[:, 1].item()} x^2 + {linear_layer.weight[:, 2].item()} x^3"
)
"""

FUNCTION = """\
import math

import torch


class LegendrePolynomial3(torch.autograd.Function):
    # P3(z) = (5 z^3 - 3 z) / 2, with its derivative written by hand

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input**3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input**2 - 1)


dtype = torch.float
x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype)
y = torch.sin(x)

# y = a + b P3(c + d x), started near a solution so that it converges
a = torch.full((), 0.0, dtype=dtype, requires_grad=True)
b = torch.full((), -1.0, dtype=dtype, requires_grad=True)
c = torch.full((), 0.0, dtype=dtype, requires_grad=True)
d = torch.full((), 0.3, dtype=dtype, requires_grad=True)

learning_rate = 5e-6
for t in range(2000):
    P3 = LegendrePolynomial3.apply
    y_pred = a + b * P3(c + d * x)
    loss = (y_pred - y).pow(2).sum()
    if t % 100 == 99:
        print(t, loss.item())
    loss.backward()
    with torch.no_grad():
        for weight in (a, b, c, d):
            weight -= learning_rate * weight.grad
            weight.grad = None

print(f"Result: y = {a.item()} + {b.item()} * P3({c.item()} + {d.item()} x)")
"""


def _with_optimizer(program: str) -> str:
    """The nn program with `torch.optim.RMSprop` doing the update (as the tutorial's next step
    does): the loop's last lines become `zero_grad()`, `backward()`, `step()`."""
    manual = (
        "    model.zero_grad()\n"
        "    loss.backward()\n"
        "    with torch.no_grad():\n"
        "        for param in model.parameters():\n"
        "            param -= learning_rate * param.grad\n"
    )
    stepped = "    optimizer.zero_grad()\n    loss.backward()\n    optimizer.step()\n"
    rate = "learning_rate = 1e-6\n"
    optimizer = (
        "learning_rate = 1e-3\n"
        "optimizer = torch.optim.RMSprop(model.parameters(), lr=learning_rate)\n"
    )
    assert program.count(manual) == 1 and program.count(rate) == 1
    return program.replace(manual, stepped).replace(rate, optimizer)


OPTIM = _with_optimizer(NN)


def _run(source: str, *, ours: bool, capsys) -> dict:
    """Execute the program (ours: its `import torch` line replaced, nothing else changed) and
    return its globals; what it printed must end with the result line."""
    if ours:
        assert source.count("import torch\n") == 1
        source = source.replace("import torch\n", "import tracegrad.torch as torch\n")
    namespace: dict = {"__name__": "__main__"}
    exec(compile(source, "<example>", "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1].startswith("Result: y = ") and len(printed) == 21
    return namespace


def _grid():
    x = np.linspace(-math.pi, math.pi, 2000, dtype=np.float32).astype(np.float64)
    return x, np.sin(x)


def _descend(coef: np.ndarray, features: np.ndarray, y: np.ndarray, lr: float) -> np.ndarray:
    """Plain gradient descent on sum((features @ coef - y)^2), 2000 steps, in float64."""
    for _ in range(2000):
        residual = features @ coef - y
        coef = coef - lr * (2.0 * features.T @ residual)
    return coef


def _scalar(t) -> float:
    return float(t.detach().numpy())


def _seeded_run(program: str, lib, capsys) -> dict:
    lib.manual_seed(0)
    return _run(program, ours=lib is tt, capsys=capsys)


def test_the_autograd_example_descends_as_torchs_run(capsys, torch):
    tt.manual_seed(0)
    torch.manual_seed(0)
    start = np.array([_scalar(tt.randn(())) for _ in range(4)])
    assert start.tolist() == [torch.randn(()).item() for _ in range(4)]  # torch's stream
    got = _seeded_run(AUTOGRAD, tt, capsys)
    theirs = _seeded_run(AUTOGRAD, torch, capsys)
    coef = np.array([_scalar(got[k]) for k in "abcd"])
    np.testing.assert_allclose(coef, [theirs[k].item() for k in "abcd"], rtol=1e-4, atol=1e-6)
    x, y = _grid()
    want = _descend(start, np.stack([x**0, x, x**2, x**3], axis=1), y, 1e-6)
    np.testing.assert_allclose(coef, want, rtol=1e-4, atol=1e-6)
    assert isinstance(got["loss"], tt.Tensor) and got["a"].grad is None


def _linear_coefficients(namespace) -> np.ndarray:
    linear = namespace["model"][0]
    return np.concatenate([linear.bias.detach().numpy(), linear.weight.detach().numpy()[0]])


def test_the_nn_example_descends_as_torchs_run(capsys, torch):
    tt.manual_seed(0)
    torch.manual_seed(0)
    layer, t_layer = nn.Linear(3, 1), torch.nn.Linear(3, 1)
    start = np.concatenate([layer.bias.detach().numpy(), layer.weight.detach().numpy()[0]])
    t_start = np.concatenate([t_layer.bias.detach().numpy(), t_layer.weight.detach().numpy()[0]])
    np.testing.assert_array_equal(start, t_start)  # torch's initial weights
    got = _seeded_run(NN, tt, capsys)
    theirs = _seeded_run(NN, torch, capsys)
    coef = _linear_coefficients(got)
    np.testing.assert_allclose(coef, _linear_coefficients(theirs), rtol=1e-4, atol=1e-6)
    x, y = _grid()
    want = _descend(start.astype(np.float64), np.stack([x**0, x, x**2, x**3], axis=1), y, 1e-6)
    np.testing.assert_allclose(coef, want, rtol=1e-4, atol=1e-6)
    assert got["model"][0].weight.dtype == np.float32


def test_the_custom_function_example_matches_torch(capsys, torch):
    theirs = _run(FUNCTION, ours=False, capsys=capsys)
    got = _run(FUNCTION, ours=True, capsys=capsys)
    for k in ("a", "b", "c", "d", "loss"):
        np.testing.assert_allclose(
            _scalar(got[k]), theirs[k].item(), rtol=1e-4, atol=1e-7, err_msg=k
        )


def _rmsprop(coef, features, y, lr=1e-3, alpha=0.99, eps=1e-8):
    """PyTorch's RMSprop (defaults but `lr`) on sum((features @ coef - y)^2), 2000 steps."""
    square_avg = np.zeros_like(coef)
    for _ in range(2000):
        g = 2.0 * features.T @ (features @ coef - y)
        square_avg = alpha * square_avg + (1 - alpha) * g * g
        coef = coef - lr * g / (np.sqrt(square_avg) + eps)
    return coef


def test_the_optim_example_steps_as_torchs_run(capsys, torch):
    """Both libraries from the same initial weights (drawn after the same seed), against each
    other and the float64 replay; RMSprop's steps near the optimum have the size of `lr`
    whatever the gradient, so float32 roundings leave differences of about lr."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 1)
    start = np.concatenate([layer.bias.detach().numpy(), layer.weight.detach().numpy()[0]])
    got = _seeded_run(OPTIM, tt, capsys)
    theirs = _seeded_run(OPTIM, torch, capsys)
    coef = _linear_coefficients(got)
    np.testing.assert_allclose(coef, _linear_coefficients(theirs), atol=5e-3)
    x, y = _grid()
    features = np.stack([x**0, x, x**2, x**3], axis=1)
    want = _rmsprop(start.astype(np.float64), features, y)
    np.testing.assert_allclose(coef, want, atol=5e-3)
    best, residual, *_ = np.linalg.lstsq(features, y, rcond=None)
    np.testing.assert_allclose(want, best, atol=5e-3)  # this start converges
    # near the optimum RMSprop hovers at steps of about lr: its float32 loss lands within a few
    # percent of the least-squares minimum (8.82 here), by an amount that depends on the CPU's
    # float32 rounding (9.007 on one machine, below 8.99 on another)
    assert got["loss"].item() < 1.05 * residual[0]
    assert theirs["loss"].item() < 1.05 * residual[0]
