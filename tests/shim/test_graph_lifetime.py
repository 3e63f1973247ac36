"""The recorded graph's lifetime: freed by reference counting, saved values released.

Oracle: `weakref`s to GradFns and arrays; with the cycle collector off, an object that a
reference cycle kept alive would survive.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import tracegrad.torch as tt
from tracegrad.torch.graph import GradFn


@pytest.fixture
def no_gc():
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _chain(x, n):
    y = x
    for i in range(n):
        y = tt.tanh(y * 1.01) + (0.1 if i % 2 else y)
    return y.sum()


def _grad_fns(root) -> list:
    """Weak references to every GradFn reachable from `root` (and the arrays they save)."""
    refs, stack, seen = [], [root.grad_fn], set()
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen or not isinstance(fn, GradFn):
            continue
        seen.add(id(fn))
        refs.append(weakref.ref(fn))
        stack.extend(n for n, _ in fn.next_functions)
    return refs


def test_dropping_the_output_frees_the_whole_graph(no_gc):
    x = tt.tensor(np.linspace(-1, 1, 5), requires_grad=True)
    loss = _chain(x, 200)
    refs = _grad_fns(loss)
    assert len(refs) > 400
    del loss
    assert all(r() is None for r in refs)


def test_graph_freed_after_backward_and_after_create_graph_once_grad_is_reset(no_gc):
    x = tt.tensor(np.linspace(-1, 1, 5), requires_grad=True)
    loss = _chain(x, 50)
    refs = _grad_fns(loss)
    loss.backward()
    del loss
    assert all(r() is None for r in refs)

    with pytest.warns(UserWarning, match="reference cycle"):
        loss = _chain(x, 50)
        refs = _grad_fns(loss)
        x.grad = None
        loss.backward(create_graph=True)
    assert x.grad.grad_fn is not None
    grad_refs = _grad_fns(x.grad)
    del loss
    x.grad = None  # as PyTorch's warning says: reset .grad to release the graph
    assert all(r() is None for r in refs + grad_refs)


def test_backward_releases_saved_values_unless_retained(no_gc):
    x = tt.tensor(np.ones(1000), requires_grad=True)
    y = tt.exp(x)
    saved = weakref.ref(y.grad_fn._outs[0])
    z = y.sum()
    del y
    z.backward(retain_graph=True)
    assert saved() is not None
    z.backward()
    assert saved() is None
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.backward()


def _saved_arrays(refs, *, but) -> list:
    """Weak references to the arrays the GradFns of `refs` saved for backward, except those
    in `but`."""
    saved = []
    for ref in refs:
        for value in ref()._values or ():
            if isinstance(value, np.ndarray) and not any(value is b for b in but):
                saved.append(weakref.ref(value))
    return saved


def test_a_long_chain_records_differentiates_and_is_freed(no_gc):
    # every graph walk is iterative (no recursion limit); benchmarks/shim_chain.py runs 10^6
    n = 2 * 10**5
    x = tt.tensor(1.0, dtype=np.float64, requires_grad=True)
    s = tt.tensor(1.0, dtype=np.float64, requires_grad=True)
    y = x
    for _ in range(n):
        y = y * s + 1e-6
    refs = _grad_fns(y)
    assert len(refs) == 2 * n  # a MulBackward0 and an AddBackward0 per step
    # each multiply saves its input (for s's gradient: `y * 1.0` would save none, as PyTorch)
    saved = _saved_arrays(refs, but=(x.detach().numpy(), s.detach().numpy()))
    assert len(saved) == n - 1
    y.backward()
    assert x.grad.item() == 1.0
    assert y.item() == pytest.approx(1.2, rel=1e-9)
    # backward released the saved values; the nodes live on while `y` holds them
    assert all(r() is None for r in saved)
    assert all(r() is not None for r in refs)
    del y
    assert all(r() is None for r in refs)


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
        x = tt.tensor([1.0, 2.0], requires_grad=True)
        y = x * 1
        update(y)
        ref = weakref.ref(y.grad_fn)
        del y
        assert ref() is None
    finally:
        gc.enable()
