"""`tracegrad.torch.utils.checkpoint.checkpoint` against PyTorch's (use_reentrant=False): the
same gradients for inputs and a module's parameters, `autograd.grad`, the activations not kept
(one checkpoint node saving only its inputs), PyTorch's warning and errors.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tracegrad.torch as tt
import tracegrad.torch.utils.checkpoint as tcp

torch = pytest.importorskip("torch")
torch_checkpoint = pytest.importorskip("torch.utils.checkpoint")

RNG = np.random.default_rng(5)
X = RNG.standard_normal((3, 4))
W = RNG.standard_normal((4, 4)) * 0.5
B = RNG.standard_normal(4)


def block(lib, w, b):
    def f(x, scale=1.0):
        return lib.tanh(lib.tanh(x @ w + b) @ w) * scale

    return f


def _grads(lib, checkpoint, x, w, b, **kw):
    y = checkpoint(block(lib, w, b), x, **kw) if checkpoint else block(lib, w, b)(x)
    (y * y).sum().backward()
    return [t.grad.detach().numpy().copy() for t in (x, w, b)]


def test_gradients_match_pytorch_and_the_unchecked_ones():
    ours = [tt.tensor(v, requires_grad=True) for v in (X, W, B)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (X, W, B)]
    got = _grads(tt, tcp.checkpoint, *ours, use_reentrant=False)
    want = _grads(torch, torch_checkpoint.checkpoint, *theirs, use_reentrant=False)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-13)
    for t in ours:
        t.grad = None
    for g, w in zip(_grads(tt, None, *ours), got):
        np.testing.assert_allclose(g, w, rtol=1e-14)


def test_a_module_inside_gets_its_parameter_gradients():
    tt.manual_seed(0)
    layer = tt.nn.Linear(4, 4)
    x = tt.tensor(X.astype(np.float32))  # an input that does not require grad
    y = tcp.checkpoint(lambda v: tt.tanh(layer(v)), x, use_reentrant=False)
    assert y.grad_fn.name() == "CheckpointFunctionBackward"
    y.sum().backward()
    ref = tt.nn.Linear(4, 4)
    ref.load_state_dict(layer.state_dict())
    tt.tanh(ref(x)).sum().backward()
    np.testing.assert_allclose(layer.weight.grad.numpy(), ref.weight.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(layer.bias.grad.numpy(), ref.bias.grad.numpy(), rtol=1e-6)


def test_autograd_grad_and_keyword_arguments():
    x, w, b = (tt.tensor(v, requires_grad=True) for v in (X, W, B))
    y = tcp.checkpoint(block(tt, w, b), x, use_reentrant=False, scale=2.0)
    (g,) = tt.autograd.grad(y.sum(), [w])
    want = tt.autograd.grad(block(tt, w, b)(x, 2.0).sum(), [w])[0]
    np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-14)


def test_one_node_saving_only_its_inputs_and_the_function_rerun_in_backward():
    x, w, b = (tt.tensor(v, requires_grad=True) for v in (X, W, B))
    runs = []

    def f(v):
        runs.append(1)
        return block(tt, w, b)(v + 1.0)  # a constant operand too

    y = tcp.checkpoint(f, x, use_reentrant=False)
    assert len(y.grad_fn.node.inputs) == 3  # x and the two parameters it reads
    assert [n[0] for n in y.grad_fn.next_functions][0].name() == "torch::autograd::AccumulateGrad"
    assert runs == [1]
    y.sum().backward()
    assert runs == [1, 1]  # recomputed once, in the backward pass
    want = tt.autograd.grad(block(tt, w, b)(x + 1.0).sum(), [x])[0]
    np.testing.assert_allclose(x.grad.numpy(), want.numpy(), rtol=1e-14)


def test_without_grad_mode_the_function_just_runs():
    x = tt.tensor(X, requires_grad=True)
    with tt.no_grad():
        y = tcp.checkpoint(lambda v: v * 2, x, use_reentrant=False)
    assert y.grad_fn is None


def test_pytorch_warning_and_errors():
    x = tt.tensor(X, requires_grad=True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed"):
        tcp.checkpoint(lambda v: v * 2, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tcp.checkpoint(lambda v: v * 2, x, use_reentrant=True)  # the same semantics, no warning
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        tcp.checkpoint(lambda v, scale: v * scale, x, use_reentrant=True, scale=2.0)
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        tcp.checkpoint(lambda v: v, x, use_reentrant=False, determinism_check="strict")
    with pytest.raises(NotImplementedError, match="checkpoint: context_fn is not supported"):
        tcp.checkpoint(lambda v: v, x, use_reentrant=False, context_fn=lambda: (None, None))
    outside = x.exp()
    with pytest.raises(NotImplementedError, match="uses a tensor computed outside it"):
        tcp.checkpoint(lambda v: v * outside, x, use_reentrant=False)


def test_double_backward_through_the_recomputation():
    x, w = (tt.tensor(v, requires_grad=True) for v in (X, W))

    def f(v):
        return tt.tanh(v @ w)

    results = []
    for y in (tcp.checkpoint(f, x, use_reentrant=False), f(x)):
        (g,) = tt.autograd.grad(y.sum(), [x], create_graph=True)
        results.append(tt.autograd.grad((g * g).sum(), [w])[0].numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-14)


def test_random_operations_are_replayed_with_the_first_runs_numbers():
    """Dropout inside a checkpoint: the rerun draws the same mask (PyTorch's
    preserve_rng_state=True), so the gradient is the unchecked one; the global stream ends
    where the first run left it. With preserve_rng_state=False the rerun draws anew."""

    def f(x):
        return tt.nn.functional.dropout(x * 2.0, p=0.5, training=True).sum() * x.sum()

    def grads(checkpointed, **kw):
        tt.manual_seed(3)
        x = tt.ones(64, dtype=tt.float64, requires_grad=True)
        y = tcp.checkpoint(f, x, use_reentrant=False, **kw) if checkpointed else f(x)
        after = tt.rand(1).item()  # where the stream stands after the forward pass
        y.backward()
        return x.grad.numpy(), after

    plain, after = grads(False)
    kept, kept_after = grads(True)
    np.testing.assert_array_equal(kept, plain)
    assert kept_after == after
    fresh, _ = grads(True, preserve_rng_state=False)
    assert not np.array_equal(fresh, plain)
