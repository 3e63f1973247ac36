"""Scenarios a review against PyTorch found, each with PyTorch as the oracle (where it is
installed) and a closed form: duplicated inputs, cycles from in-place updates, version stamps
only where PyTorch saves, finite gradients of norm at 0, in-place on non-view results,
PyTorch's shape messages, and tensors refused inside jit."""

from __future__ import annotations

import gc
import warnings
import weakref

import numpy as np
import pytest

import tracegrad as tg


def _libs():
    try:
        import torch
    except ImportError:
        return [tg]
    torch.set_num_threads(1)
    return [tg, torch]


def _np(t):
    return t.detach().numpy()


def test_autograd_grad_with_a_repeated_input_returns_its_gradient_at_each_position():
    for M in _libs():
        x = M.tensor([1.0, 2.0], requires_grad=True)
        gx, gx2 = M.autograd.grad((x * x).sum(), [x, x])
        np.testing.assert_array_equal(_np(gx), [2.0, 4.0])
        np.testing.assert_array_equal(_np(gx2), [2.0, 4.0])
        y = x * 2
        gy, gy2, g = M.autograd.grad((y * y).sum(), [y, y, x])
        np.testing.assert_array_equal(_np(gy), [4.0, 8.0])
        np.testing.assert_array_equal(_np(gy2), [4.0, 8.0])
        np.testing.assert_array_equal(_np(g), [8.0, 16.0])


@pytest.mark.parametrize(
    "update",
    [
        lambda y: y.add_(y.exp()),
        lambda y: y.add_(y.sin()),
        lambda y: y.mul_(y),
        lambda y: y.__iadd__(y * 2),
        lambda y: y.__setitem__(0, y[1] * 2),
    ],
    ids=["add_(exp)", "add_(sin)", "mul_(self)", "+= y*2", "y[0] = y[1]*2"],
)
def test_in_place_updates_that_read_the_tensor_leave_no_reference_cycle(update):
    gc.collect()
    gc.disable()
    try:
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        update(y)
        ref = weakref.ref(y.grad_fn)
        del y
        assert ref() is None
    finally:
        gc.enable()


def test_version_stamps_only_what_pytorch_saves():
    for M in _libs():
        X = M.tensor([[1.0, 2.0], [3.0, 4.0]])
        w = M.tensor([1.0, 2.0], requires_grad=True)
        out = (X @ w).sum()  # w's gradient reads X only
        with M.no_grad():
            w.sub_(0.1)
        out.backward()
        np.testing.assert_array_equal(_np(w.grad), [4.0, 6.0])
        x = M.tensor([1.0, 2.0], requires_grad=True)
        y = (x * 3).sum()  # x's gradient reads the 3 only
        with M.no_grad():
            x.mul_(2)
        y.backward()
        np.testing.assert_array_equal(_np(x.grad), [3.0, 3.0])
    # and a value that is read still raises
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with tg.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_norm_at_zero_has_a_finite_gradient():
    for M in _libs():
        x = M.zeros(2, requires_grad=True)
        x.norm().backward()
        np.testing.assert_array_equal(_np(x.grad), [0.0, 0.0])
    x = tg.tensor([3.0, 4.0], dtype=np.float64, requires_grad=True)
    x.norm().backward()
    np.testing.assert_allclose(_np(x.grad), [0.6, 0.8])


def test_in_place_on_results_that_are_not_views():
    for M in _libs():
        x = M.tensor([[1.0, 5.0], [3.0, 2.0]], requires_grad=True)
        y = x.max(1).values
        y.add_(1)
        z = x.T.contiguous()
        z.add_(1)
        (y.sum() + z.sum()).backward()
        np.testing.assert_array_equal(_np(x.grad), [[1.0, 2.0], [2.0, 1.0]])


def test_a_tensor_inside_jit_is_refused_not_baked_in():
    w = tg.tensor([1.0, 2.0], requires_grad=True)

    def f(x):
        return (x * w).sum()

    with pytest.raises(TypeError, match="inside a function traced by jit or make_graph"):
        tg.jit(f)(np.ones(2))
    np.testing.assert_array_equal(tg.grad(f)(np.ones(2)), [1.0, 2.0])  # read at call time
    with tg.no_grad():
        w.mul_(10)
    np.testing.assert_array_equal(tg.grad(f)(np.ones(2)), [10.0, 20.0])


def test_where_wants_a_boolean_condition_and_0d_tensors_are_not_iterable():
    for M in _libs():
        with pytest.raises(RuntimeError, match="^where expected condition to be a boolean"):
            M.where(M.tensor([1.0, 0.0]), M.ones(2), M.zeros(2))
        with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
            iter(M.tensor(1.0))


def test_cumprod_gradient_at_a_zero_matches_torch():
    for M in _libs():
        x = M.tensor([2.0, 0.0, 3.0], dtype=M.float64, requires_grad=True)
        x.cumprod(0).sum().backward()
        np.testing.assert_array_equal(_np(x.grad), [1.0, 8.0, 0.0])


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
    for M in _libs():  # the text is PyTorch's (checked against torch where it is installed)
        with pytest.raises(RuntimeError) as e:
            make(M)
        assert str(e.value).splitlines()[0] == message


def test_a_plain_backward_after_a_create_graph_one_adds_in_place():
    for M in _libs():
        x = M.tensor([1.0, 2.0], requires_grad=True)
        with warnings.catch_warnings():  # the create_graph cycle warning (torch: once only)
            warnings.simplefilter("ignore", UserWarning)
            (x**2).sum().backward(create_graph=True)
        first = x.grad
        (x**2).sum().backward()
        assert x.grad is first and x.grad.requires_grad
        np.testing.assert_array_equal(_np(x.grad), [4.0, 8.0])


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
    for M in _libs():
        with pytest.raises(RuntimeError, match="^ZeroDivisionError$"):
            make(M)
    with np.errstate(divide="ignore"):  # floats divide as IEEE says (NumPy's warning aside)
        np.testing.assert_array_equal(_np(tg.tensor([1.0, -2.0]) // 0), [np.inf, -np.inf])
