"""tracegrad in one screen: gradients of plain NumPy code, higher order, and the IR.

Run: python examples/quickstart.py
"""

import numpy as np

import tracegrad as tg
import tracegrad.torch as torch


def loss(w, x, y):
    """Plain NumPy: a tanh layer and a squared error. tracegrad needs no changes to it."""
    pred = np.tanh(x @ w)
    return np.mean((pred - y) ** 2)


rng = np.random.default_rng(0)
x = rng.standard_normal((8, 3))
y = rng.standard_normal((8, 2))
w = rng.standard_normal((3, 2)) * 0.1

print("loss:", loss(w, x, y))
print("grad of loss w.r.t. w:\n", tg.grad(loss)(w, x, y))

# Higher order by nesting: the backward pass is made of ordinary operations, so it
# differentiates again. Derivatives of sin cycle: cos, -sin, -cos, sin, ...
d = np.sin
for k in range(1, 5):
    d = tg.grad(d)
    print(f"d^{k}/dx^{k} sin(x) at 0.5 = {d(0.5):+.6f}")


# The IR: a traced function is an immutable graph of primitives named after NumPy's functions.
def f(x):
    return np.sum(np.sin(x) * x)


print("\nThe graph of f:")
print(tg.make_graph(f)(np.ones(3)))
print("\nThe graph of grad(f):")
print(tg.make_graph(tg.grad(f))(np.ones(3)))

# jit: trace once per signature, simplify, and run generated NumPy code.
step = tg.jit(tg.value_and_grad(loss))
value, g = step(w, x, y)
print("\nThe NumPy code jit generated for value_and_grad(loss):")
print(step.lower(w, x, y).source)

# vjp: f runs once, vjp_fn runs only the backward graph, as often as you like.
out, vjp_fn = tg.vjp(np.sin, np.array([0.0, 1.0]))
print("\nvjp of sin at [0, 1] with cotangent 1:", vjp_fn(np.ones(2))[0])

# The PyTorch-style front end, tracegrad.torch: tensors record the same IR nodes as they run,
# and backward() differentiates them with the same rules. Gradients accumulate into .grad.
x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
y = (x * x).sin().sum()
y.backward()
expected = 2 * np.array([1.0, 2.0, 3.0]) * np.cos([1.0, 4.0, 9.0])
print("\ntensor.backward(): y =", y, "\nx.grad =", x.grad, "; 2x cos(x^2) =", expected.round(4))
g = torch.autograd.grad((x**3).sum(), x, create_graph=True)[0]  # a gradient with a grad_fn
print("d/dx sum(x^3) =", g, "and its own gradient, sum(6x):", torch.autograd.grad(g.sum(), x)[0])
