"""PyTorch's beginner tutorial on tensors ("Learn the Basics: Tensors", tensorqs_tutorial.py)
run with `import tracegrad.torch as torch` in place of `import torch`, and no other change.

The program is run as text twice: as written, with real torch, and with only its import line
replaced; the oracle is torch's own run. Its deterministic values (initialisation from data
and from NumPy, ones, indexing and assignment, `cat`, the three matrix products, `out=`, the
elementwise products, `sum().item()`, `add_`) must be equal, value and dtype; the random
tensors (the two libraries' streams differ: docs in tracegrad.torch's generator) by shape and
dtype. The tutorial's last section, the NumPy bridge, shows memory shared between a tensor and
its `.numpy()` after an in-place update; tracegrad's in-place methods rebind the tensor to a
new array (SHIM_SEMANTICS.md: `.numpy()` is a read-only view of the value it had), so that
section is left out here and documented there.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

TUTORIAL = """\
import torch
import numpy as np

data = [[1, 2], [3, 4]]
x_data = torch.tensor(data)

np_array = np.array(data)
x_np = torch.from_numpy(np_array)

x_ones = torch.ones_like(x_data)  # retains the properties of x_data
print(f"Ones Tensor: \\n {x_ones} \\n")

x_rand = torch.rand_like(x_data, dtype=torch.float)  # overrides the datatype of x_data
print(f"Random Tensor: \\n {x_rand} \\n")

shape = (2, 3,)
rand_tensor = torch.rand(shape)
ones_tensor = torch.ones(shape)
zeros_tensor = torch.zeros(shape)

print(f"Random Tensor: \\n {rand_tensor} \\n")
print(f"Ones Tensor: \\n {ones_tensor} \\n")
print(f"Zeros Tensor: \\n {zeros_tensor}")

tensor = torch.rand(3, 4)

print(f"Shape of tensor: {tensor.shape}")
print(f"Datatype of tensor: {tensor.dtype}")
print(f"Device tensor is stored on: {tensor.device}")
device_before = str(tensor.device)

# We move our tensor to the current accelerator if available
if torch.accelerator.is_available():
    tensor = tensor.to(torch.accelerator.current_accelerator())

tensor = torch.ones(4, 4)
print(f"First row: {tensor[0]}")
print(f"First column: {tensor[:, 0]}")
print(f"Last column: {tensor[..., -1]}")
tensor[:, 1] = 0
print(tensor)

t1 = torch.cat([tensor, tensor, tensor], dim=1)
print(t1)

# This computes the matrix multiplication between two tensors. y1, y2, y3 will have the same value
# ``tensor.T`` returns the transpose of a tensor
y1 = tensor @ tensor.T
y2 = tensor.matmul(tensor.T)

y3 = torch.rand_like(y1)
torch.matmul(tensor, tensor.T, out=y3)


# This computes the element-wise product. z1, z2, z3 will have the same value
z1 = tensor * tensor
z2 = tensor.mul(tensor)

z3 = torch.rand_like(tensor)
torch.mul(tensor, tensor, out=z3)

agg = tensor.sum()
agg_item = agg.item()
print(agg_item, type(agg_item))

print(f"{tensor} \\n")
tensor.add_(5)
print(tensor)
"""

EQUAL = "x_data x_np x_ones ones_tensor zeros_tensor t1 y1 y2 y3 z1 z2 z3 agg tensor".split()
RANDOM = "x_rand rand_tensor".split()


def _run(source: str) -> dict:
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(source, "<tensor tutorial>", "exec"), namespace)
    return namespace


def _array(t) -> np.ndarray:
    return np.asarray(t.detach().numpy() if hasattr(t, "detach") else t)


def test_the_tensor_tutorial_runs_as_with_torch():
    torch = pytest.importorskip("torch")
    theirs = _run(TUTORIAL)
    assert theirs["torch"] is torch  # the program as written is a PyTorch program
    ours = _run(TUTORIAL.replace("import torch\n", "import tracegrad.torch as torch\n", 1))
    assert ours["torch"].__name__ == "tracegrad.torch"
    for name in EQUAL:
        a, b = _array(ours[name]), _array(theirs[name])
        assert a.dtype == b.dtype and a.shape == b.shape, name
        np.testing.assert_array_equal(a, b, err_msg=name)
    for name in RANDOM:
        a, b = _array(ours[name]), _array(theirs[name])
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert ((a >= 0) & (a < 1)).all(), name
    assert ours["agg_item"] == theirs["agg_item"] and type(ours["agg_item"]) is float
    assert ours["device_before"] == theirs["device_before"] == "cpu"
    assert str(ours["tensor"].device) == "cpu"
