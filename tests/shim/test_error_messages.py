"""PyTorch's error messages for shapes that do not fit, a non-boolean `where` condition,
iterating a 0-d tensor and integer division by zero: the first line is PyTorch's (checked
against torch), and floats still divide by zero as IEEE says."""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import libraries, values


def test_where_wants_a_boolean_condition_and_0d_tensors_are_not_iterable():
    for M in libraries():
        with pytest.raises(RuntimeError, match="^where expected condition to be a boolean"):
            M.where(M.tensor([1.0, 0.0]), M.ones(2), M.zeros(2))
        with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
            iter(M.tensor(1.0))


_SIZE = "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"


_EXPAND = (
    "The expanded size of the tensor (3) must match the existing size (2) at non-singleton "
    "dimension 1.  Target sizes: [3, 3].  Tensor sizes: [2]"
)


_PERMUTE = (
    "permute(sparse_coo): number of dimensions in the tensor input does not match the length "
    "of the desired ordering of dimensions i.e. input.dim() = 2 is not equal to len(dims) = 1"
)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda M: M.ones(3) + M.ones(4), _SIZE),
        (
            lambda M: M.ones(2, 3) @ M.ones(4, 5),
            "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
        ),
        (lambda M: M.ones(2, 3).reshape(4, 2), "shape '[4, 2]' is invalid for input of size 6"),
        (lambda M: M.ones(2, 3).view(4, 2), "shape '[4, 2]' is invalid for input of size 6"),
        (lambda M: M.ones(2, 3).reshape(-1, 4), "shape '[-1, 4]' is invalid for input of size 6"),
        (lambda M: M.ones(2, 3).permute(0), _PERMUTE),
        (lambda M: M.ones(2).expand(3, 3), _EXPAND),
    ],
    ids=["broadcast", "matmul", "reshape", "view", "reshape(-1, 4)", "permute", "expand"],
)
def test_shape_errors_say_what_pytorch_says(make, message):
    for M in libraries():  # the text is PyTorch's (checked against torch where it is installed)
        with pytest.raises(RuntimeError) as e:
            make(M)
        assert str(e.value).splitlines()[0] == message


@pytest.mark.parametrize(
    "make",
    [
        lambda M: M.tensor([1, 2]) // M.tensor([0, 1]),
        lambda M: M.tensor([1, 2]) % 0,
        lambda M: M.tensor([1, 2]) // 0,
        lambda M: M.div(M.tensor([1, 2]), 0, rounding_mode="floor"),
    ],
    ids=["//tensor", "%0", "//0", "div(floor)"],
)
def test_integer_division_by_zero_raises_as_in_torch(make):
    for M in libraries():
        with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
            make(M)
    with np.errstate(divide="ignore"):  # floats divide as IEEE says (NumPy's warning aside)
        np.testing.assert_array_equal(values(tt.tensor([1.0, -2.0]) // 0), [np.inf, -np.inf])
