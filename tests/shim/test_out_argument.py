"""`out=` on tracegrad.torch's functions, against PyTorch (tests/shim/torch_oracle.py): the
result written into the given tensor, which is returned, its version bumped; refused under
autograd; resized with PyTorch's warning; cast as in-place methods cast."""

from __future__ import annotations

import warnings

import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import attempt, normalize_torch_message, run_both
from tracegrad.torch.ops.out_argument import OUT_FUNCTIONS

# documented without `out` but taking it in an overload (`torch.sum(x, dim, out=)`): the
# scenarios below call them
_OUT_BY_OVERLOAD = {"sum", "prod"}
# these take out= in torch 2.13 though their docstrings do not say so (probed)
_OUT_BY_OVERLOAD |= {"scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "take"}


def test_out_receives_the_result_and_is_returned():
    def scenario(M):
        a, b = M.arange(6.0).reshape(2, 3), M.ones(3, 2, dtype=M.float32)
        y, z, c, s = M.empty(2, 2), M.empty(2, 3), M.empty(4, 3), M.empty(3)
        v = y._version
        outs = (
            M.matmul(a, b, out=y),
            M.mul(a, 2, out=z),
            M.cat([a, a], out=c),
            M.sum(a, 0, out=s),
            M.prod(a, 1, out=M.empty(2)),
        )
        return (*outs, y._version - v, outs[0] is y, outs[2] is c)

    out = run_both(scenario)
    assert out.plain[-3:] == (1, True, True)


def test_out_casts_as_in_place_methods_and_refuses_what_they_refuse():
    def scenario(M):
        i32, f64 = M.empty(2, dtype=M.int32), M.empty(2, dtype=M.float64)
        M.add(M.ones(2, dtype=M.int64), 1, out=i32)
        M.add(M.ones(2), 1, out=f64)
        return i32, f64, attempt(M.add, M.ones(2), 1, out=[1])

    run_both(scenario)


def test_an_out_of_a_dtype_the_result_cannot_cast_to_is_refused_as_in_place_methods():
    torch = pytest.importorskip("torch")
    with pytest.raises(RuntimeError) as theirs:
        torch.add(torch.ones(2), 1, out=torch.empty(2, dtype=torch.int64))
    with pytest.raises(RuntimeError) as ours:
        tt.add(tt.ones(2), 1, out=tt.empty(2, dtype=tt.int64))
    assert str(ours.value) == normalize_torch_message(str(theirs.value), scalar_names=True)


def test_out_is_refused_under_autograd_but_not_under_no_grad():
    def scenario(M):
        a = M.ones(2, requires_grad=True)
        refused = (
            attempt(M.add, a, a, out=M.empty(2)),
            attempt(M.cat, [a, M.ones(1)], out=M.empty(3)),
            attempt(M.exp, M.ones(2), out=M.empty(2, requires_grad=True)),
        )
        with M.no_grad():
            o = M.empty(2)
            M.add(a, a, out=o)
        return (*refused, o)

    run_both(scenario)


def test_an_out_of_another_shape_is_resized_with_torchs_warning():
    def scenario(M):
        full, empty = M.empty(3), M.empty(0)
        M.add(M.ones(2), 1, out=full)
        M.add(M.ones(2), 1, out=empty)
        return full, empty

    run_both(scenario)


@pytest.mark.parametrize("name", OUT_FUNCTIONS)
def test_every_wrapped_function_takes_out_in_torch(name):
    """The list is PyTorch's: each function documents `out=` there (one that did not would
    make a program that runs here fail under torch)."""
    torch = pytest.importorskip("torch")
    doc = getattr(torch, name).__doc__ or ""
    assert "out (Tensor" in doc or "out=None" in doc or name in _OUT_BY_OVERLOAD, name


def test_the_warning_is_a_user_warning_naming_both_shapes():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tt.add(tt.ones(2), 1, out=tt.empty(3))
    assert caught[0].category is UserWarning
    assert "had shape [3], which does not match the required output shape [2]" in str(
        caught[0].message
    )


def test_where_with_python_numbers_takes_torchs_dtypes():
    """(Beside `out=`, issue 23's other calling conventions of the functions: numbers in place
    of tensors, and the one-argument form.) Two numbers give torch's default dtype for their
    kind, not NumPy's; `where(condition)` is `nonzero(condition, as_tuple=True)`."""

    def scenario(M):
        x = M.tensor([1.0, -2.0, 3.0], dtype=M.float64, requires_grad=True)
        picked = M.where(x > 0, x, 0.0)
        picked.sum().backward()
        return (
            picked,
            x.grad,
            M.where(x > 0, 1.0, 0.0),
            M.where(x > 0, 1, 0),
            M.where(x > 0, True, False),
            M.where(x > 0, 1j, 0),
            M.where(x > 0, 2, M.ones(3, dtype=M.float32)),
            *M.where(M.tensor([[1.0, 0.0], [0.0, 2.0]])),  # one argument: nonzero(as_tuple)
            *M.where(M.tensor(True)),
        )

    run_both(scenario)
