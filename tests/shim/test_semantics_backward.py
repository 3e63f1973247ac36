"""SHIM_SEMANTICS.md sections A-E: backward and autograd.grad arguments, freed graphs,
accumulation into leaves, non-leaf `.grad` and `retain_grad`, hooks; with PyTorch as the oracle.

Each scenario is written once against the names tracegrad and torch share and run in both by
`run_both` (tests/shim/torch_oracle.py), which compares results, caught errors (type and first
line) and warnings. Closed-form checks follow, so the tests still mean something without torch.
"""

import warnings

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import (
    Raised,
    attempt,
    fn_tree,
    libraries,
    numpy_of,
    run_both,
    torch,
    values,
)

NONSCALAR = "grad can be implicitly created only for scalar outputs"
NO_GRAD_FN = "element {} of tensors does not require grad and does not have a grad_fn"
NOT_REQUIRING = "One of the differentiated Tensors does not require grad"
UNUSED = (
    "The differentiated Tensor at index {} appears to not have been used in the graph. "
    "Set allow_unused=True if this is the desired behavior."
)
FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you "
    "call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward "
    "through the graph a second time or if you need to access saved tensors after calling "
    "backward."
)
CYCLE = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter "
    "and its gradient which can cause a memory leak. We recommend using autograd.grad when "
    "creating the graph to avoid this. If you have to use this function, make sure to reset the "
    ".grad fields of your parameters to None after use to break the cycle and avoid the leak."
)
NONLEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
    "github.com/pytorch/pytorch/pull/30531 for more information."
)


def RT(message: str) -> Raised:  # noqa: N802 - reads like the exception it stands for
    return Raised("RuntimeError", message)


@pytest.fixture(autouse=True)
def _torch_settings():
    """One torch thread; warn-once warnings (the create_graph cycle warning) every time."""
    if torch is None:
        yield
        return
    threads, always = torch.get_num_threads(), torch.is_warn_always_enabled()
    torch.set_num_threads(1)
    torch.set_warn_always(True)
    yield
    torch.set_num_threads(threads)
    torch.set_warn_always(always)


def f64(lib, data, requires_grad=True):
    return lib.tensor(data, dtype=lib.float64, requires_grad=requires_grad)


def clone_grad(t):
    return None if t.grad is None else t.grad.clone()


# -- A. backward / autograd.grad arguments ---------------------------------------------------


def test_nonscalar_output_needs_a_gradient():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0, 3.0])
        y = x * x
        return attempt(y.backward), attempt(lib.autograd.grad, y, x), x.grad

    out = run_both(scenario)
    assert out.value == (RT(NONSCALAR), RT(NONSCALAR), None)


@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (1, 1, 1)], ids=str)
def test_one_element_outputs_of_any_shape_are_seeded_with_ones(shape):
    def scenario(lib):
        x = f64(lib, [1.5, -2.0])
        y = (x * x).sum().reshape(shape)
        (g,) = lib.autograd.grad(y, x, retain_graph=True)
        y.backward()
        return g, x.grad

    out = run_both(scenario)
    np.testing.assert_array_equal(numpy_of(out.value[0]), [3.0, -4.0])
    np.testing.assert_array_equal(numpy_of(out.value[1]), [3.0, -4.0])


@pytest.mark.parametrize(
    ("out_shape", "grad_shape"),
    [((3,), (4,)), ((3,), (1, 3)), ((), (1,)), ((1,), ()), ((2, 3), (3, 2)), ((3,), ())],
    ids=str,
)
def test_gradient_shape_must_match_exactly(out_shape, grad_shape):
    def scenario(lib):
        x = f64(lib, np.ones(out_shape))
        y = x * 2.0
        seed = lib.ones(grad_shape, dtype=lib.float64)
        return (
            attempt(y.backward, seed),
            attempt(lib.autograd.grad, y, x, grad_outputs=seed),
            attempt(lib.autograd.grad, [y], [x], grad_outputs=[seed]),
            x.grad,
        )

    out = run_both(scenario)
    message = (
        f"Mismatch in shape: grad_output[0] has a shape of {grad_shape} and output[0] has a "
        f"shape of {out_shape}."
    )
    assert out.value == (RT(message),) * 3 + (None,)


def test_gradient_shape_mismatch_names_the_position():
    """PyTorch 2.13 reports a mismatch at position 1 with a broadcasting message (`The size of
    tensor a (3) must match the size of tensor b (2) ...`); the shim names the position."""
    x = f64(tt, [1.0, 2.0, 3.0])
    a, b = x * 2.0, x * 3.0
    seeds = [tt.ones(3, dtype=tt.float64), tt.ones(2, dtype=tt.float64)]
    assert attempt(tt.autograd.backward, [a, b], seeds) == RT(
        "Mismatch in shape: grad_output[1] has a shape of (2,) and output[1] has a shape of (3,)."
    )
    assert x.grad is None


@pytest.mark.parametrize("seed_dtype", ["float64", "int64", "float32"])
def test_gradient_of_another_dtype_is_cast_to_the_output_dtype(seed_dtype):
    def scenario(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * x
        seed = lib.tensor([1, 2, 3], dtype=getattr(lib, seed_dtype))
        y.backward(seed)
        (g,) = lib.autograd.grad(x * x, x, grad_outputs=seed)
        return x.grad, g

    out = run_both(scenario)
    for g in out.value:
        assert g.dtype == np.float32
        np.testing.assert_array_equal(numpy_of(g), [2.0, 8.0, 18.0])


def test_fewer_gradients_than_tensors_raises():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        a, b = (x * x).sum(), x.sum()
        seed = [lib.tensor(1.0, dtype=lib.float64)]
        return (
            attempt(lib.autograd.backward, [a, b], seed),
            attempt(lib.autograd.grad, [a, b], [x], grad_outputs=seed),
            x.grad,
        )

    out = run_both(scenario)
    assert out.value == (RT("got 2 tensors and 1 gradients"),) * 2 + (None,)


def test_more_gradients_than_tensors_raises_in_tracegrad_only():
    """Decision: PyTorch ignores the extra gradient silently; the shim raises."""

    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        a = (x * x).sum()
        seeds = [lib.tensor(1.0, dtype=lib.float64), lib.tensor(5.0, dtype=lib.float64)]
        return (
            attempt(lib.autograd.backward, [a], seeds, retain_graph=True),
            attempt(lib.autograd.grad, [a], [x], grad_outputs=seeds),
            clone_grad(x),
        )

    if torch is not None:  # the quirk being departed from
        extra, g, grad = scenario(torch)
        assert extra is None and grad is not None
        np.testing.assert_array_equal(g[0].numpy(), [2.0, 4.0])
    extra, g, grad = scenario(tt)
    assert extra == g == RT("got 1 tensors and 2 gradients")
    assert grad is None


def test_backward_on_tensors_that_do_not_require_grad_names_their_position():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        c = f64(lib, [3.0, 4.0], requires_grad=False)
        a = (x * x).sum()
        return (
            attempt(c.sum().backward),
            attempt(lib.autograd.backward, [a, c.sum()]),
            attempt(lib.autograd.grad, [a, c.sum()], [x]),
            attempt(lib.autograd.backward, [c.sum(), a]),
            x.grad,
        )

    out = run_both(scenario)
    assert out.value == (
        RT(NO_GRAD_FN.format(0)),
        RT(NO_GRAD_FN.format(1)),
        RT(NO_GRAD_FN.format(1)),
        RT(NO_GRAD_FN.format(0)),
        None,
    )


def test_grad_of_an_input_that_does_not_require_grad_raises():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        c = f64(lib, [3.0, 4.0], requires_grad=False)
        d = x.detach()
        y = (x * c).sum()
        return (
            attempt(lib.autograd.grad, y, c, retain_graph=True),
            attempt(lib.autograd.grad, y, [x, d], retain_graph=True),
            d.requires_grad,
            d.is_leaf,
        )

    out = run_both(scenario)
    assert out.value == (RT(NOT_REQUIRING), RT(NOT_REQUIRING), False, True)


def test_unused_input_raises_or_gives_none_or_zeros():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        w = f64(lib, [[1.0, 2.0], [3.0, 4.0]])
        y = (x * x).sum()
        return (
            attempt(lib.autograd.grad, y, [x, w], retain_graph=True),
            lib.autograd.grad(y, [x, w], retain_graph=True, allow_unused=True),
            lib.autograd.grad(y, [w, x], retain_graph=True, materialize_grads=True),
            lib.autograd.grad(
                y, [w, x], retain_graph=True, allow_unused=True, materialize_grads=True
            ),
            attempt(lib.autograd.grad, y, [x, w], allow_unused=False, materialize_grads=True),
        )

    out = run_both(scenario)
    raised, unused, zeros, zeros2, conflict = out.value
    assert raised == RT(UNUSED.format(1))
    np.testing.assert_array_equal(numpy_of(unused[0]), [2.0, 4.0])
    assert unused[1] is None
    for z in (zeros, zeros2):
        np.testing.assert_array_equal(numpy_of(z[0]), np.zeros((2, 2)))
        np.testing.assert_array_equal(numpy_of(z[1]), [2.0, 4.0])
    assert conflict == Raised(
        "ValueError",
        "Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
        "allow_unused=False.",
    )


def test_unused_input_reached_through_a_constant_branch_is_zero_not_unused():
    # x reaches y only through a multiplication by zero: used, with gradient 0
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        w = f64(lib, [5.0])
        y = (x * 0.0).sum() + (w * w).sum()
        return lib.autograd.grad(y, [x, w])

    out = run_both(scenario)
    np.testing.assert_array_equal(numpy_of(out.value[0]), [0.0, 0.0])
    np.testing.assert_array_equal(numpy_of(out.value[1]), [10.0])


def test_retain_graph_defaults_to_create_graph():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = (x**3).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        y.backward()  # the graph was kept; this pass frees it
        last = attempt(lib.autograd.grad, y, x)
        (h,) = lib.autograd.grad(g.sum(), x)  # the gradient's own graph: 6x
        return g, x.grad, last, h

    out = run_both(scenario)
    g, grad, last, h = out.value
    np.testing.assert_allclose(numpy_of(g), [3.0, 12.0])
    np.testing.assert_allclose(numpy_of(grad), [3.0, 12.0])
    np.testing.assert_allclose(numpy_of(h), [6.0, 12.0])
    assert last == RT(FREED)


def test_autograd_grad_frees_the_graph_too():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = x.exp().sum()
        first = lib.autograd.grad(y, x)
        return first, attempt(lib.autograd.grad, y, x), attempt(y.backward), x.grad

    out = run_both(scenario)
    np.testing.assert_allclose(numpy_of(out.value[0][0]), np.exp([1.0, 2.0]))
    assert out.value[1:] == (RT(FREED), RT(FREED), None)


def test_grad_of_a_tensor_with_respect_to_itself():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = x * 3.0
        seed = f64(lib, [4.0, 5.0], requires_grad=False)
        return (
            lib.autograd.grad(x.sum(), x),
            lib.autograd.grad(x, x, grad_outputs=lib.ones(2, dtype=lib.float64)),
            lib.autograd.grad(y, y, grad_outputs=seed),
            lib.autograd.grad(y.sum(), y),
        )

    out = run_both(scenario)
    (a,), (b,), (c,), (d,) = out.value
    np.testing.assert_array_equal(numpy_of(a), [1.0, 1.0])
    np.testing.assert_array_equal(numpy_of(b), [1.0, 1.0])
    np.testing.assert_array_equal(numpy_of(c), [4.0, 5.0])
    np.testing.assert_array_equal(numpy_of(d), [1.0, 1.0])


def test_grads_of_several_outputs_are_summed():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        a, b = (x * x).sum(), (x * 3.0).sum()
        c = x * 5.0
        seed = lib.ones(2, dtype=lib.float64)
        g = lib.autograd.grad([a, b, c], x, grad_outputs=[None, None, seed], retain_graph=True)
        lib.autograd.backward([a, b])
        return g, x.grad

    out = run_both(scenario)
    np.testing.assert_array_equal(numpy_of(out.value[0][0]), [10.0, 12.0])
    np.testing.assert_array_equal(numpy_of(out.value[1]), [5.0, 7.0])


def test_backward_and_grad_work_inside_no_grad():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = (x**3).sum()
        with lib.no_grad():
            (g,) = lib.autograd.grad(y, x, retain_graph=True)
            y.backward(retain_graph=True)
            (g2,) = lib.autograd.grad(y, x, create_graph=True)
            inside = lib.is_grad_enabled()
        (h,) = lib.autograd.grad(g2.sum(), x)
        return g, x.grad, g2, g2.grad_fn.name(), inside, h

    out = run_both(scenario)
    g, grad, g2, name, inside, h = out.value
    assert not g.requires_grad and g2.requires_grad and not inside
    np.testing.assert_array_equal(numpy_of(g), [3.0, 12.0])
    np.testing.assert_array_equal(numpy_of(grad), [3.0, 12.0])
    np.testing.assert_array_equal(numpy_of(h), [6.0, 12.0])
    assert name == "MulBackward0"


def test_backward_with_create_graph_inside_no_grad_records_the_gradient():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = (x**2).sum()
        with lib.no_grad():
            y.backward(create_graph=True)
        g = x.grad
        x.grad = None
        g.sum().backward()
        return g, x.grad

    out = run_both(scenario)
    g, second = out.value
    assert g.requires_grad
    np.testing.assert_array_equal(numpy_of(g), [2.0, 4.0])
    np.testing.assert_array_equal(numpy_of(second), [2.0, 2.0])
    assert out.warnings == [("UserWarning", CYCLE)]


def test_gradient_of_the_wrong_type_raises_type_error():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = (x * x).sum()
        return (
            attempt(lib.autograd.grad, y, x, grad_outputs=[2.0]),
            attempt(lib.autograd.backward, [y], [3]),
            attempt(lib.autograd.grad, y, x, grad_outputs=2.0),
        )

    out = run_both(scenario)
    assert out.value == (
        Raised("TypeError", "gradients can be either Tensors or None, but got float"),
        Raised("TypeError", "gradients can be either Tensors or None, but got int"),
        Raised("TypeError", "'float' object is not iterable"),
    )


def test_tensor_backward_with_a_number_as_gradient_raises_type_error():
    # API.md's message; PyTorch raises TypeError("'int' object is not iterable") here
    x = tt.tensor([1.0, 2.0], dtype=np.float64, requires_grad=True)
    with pytest.raises(TypeError, match="^gradients can be either Tensors or None, but got int$"):
        (x * x).sum().backward(1)


# -- B. freed graphs -------------------------------------------------------------------------


def test_second_backward_after_free_raises_the_exact_message():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0, 3.0])
        y = (x * x).sum()
        y.backward()
        first = x.grad.clone()
        return first, attempt(y.backward), attempt(lib.autograd.grad, y, x), x.grad

    out = run_both(scenario)
    first, again, again_grad, grad = out.value
    assert again == again_grad == RT(FREED)
    np.testing.assert_array_equal(numpy_of(first), [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(numpy_of(grad), [2.0, 4.0, 6.0])


# op, and whether its node saves values (PyTorch's answer, the shim's contract)
SAVING_DECISIONS = [
    ("mul_python_scalar", lambda lib, x: x * 2.0, True),
    ("mul_tensor", lambda lib, x: x * x, True),
    ("div_python_scalar", lambda lib, x: x / 2.0, True),
    ("div_tensor", lambda lib, x: x / (x.detach() + 1.0), True),
    ("exp", lambda lib, x: x.exp(), True),
    ("pow_scalar", lambda lib, x: x**2, True),
    ("pow_tensor", lambda lib, x: x ** x.detach(), True),
    ("tanh", lambda lib, x: lib.tanh(x), True),
    ("matmul_dot", lambda lib, x: x @ x.detach(), True),
    ("matmul_mm", lambda lib, x: x.reshape(3, 1) @ x.detach().reshape(1, 3), True),
    ("add_python_scalar", lambda lib, x: x + 1.0, False),
    ("add_tensor", lambda lib, x: x + x, False),
    ("sub", lambda lib, x: x - 1.0, False),
    ("sub_tensor", lambda lib, x: x - x.detach(), False),
    ("negative", lambda lib, x: -x, False),
    ("sum", lambda lib, x: x.sum(), False),
    ("reshape", lambda lib, x: x.reshape(3, 1), False),
    ("transpose", lambda lib, x: x.reshape(1, 3).transpose(0, 1), False),
    ("t", lambda lib, x: x.reshape(1, 3).t(), False),
]


@pytest.mark.parametrize(
    ("op", "saves"),
    [(op, s) for _, op, s in SAVING_DECISIONS],
    ids=[name for name, _, _ in SAVING_DECISIONS],
)
def test_which_nodes_save_values_and_cannot_run_twice(op, saves):
    def scenario(lib):
        x = f64(lib, [1.0, 2.0, 3.0])
        loss = op(lib, x).sum()
        loss.backward()
        first = x.grad.clone()
        return first, attempt(loss.backward), x.grad

    out = run_both(scenario)
    first, second, grad = out.value
    if saves:
        assert second == RT(FREED)
        np.testing.assert_array_equal(numpy_of(grad), numpy_of(first))
    else:
        assert second is None
        np.testing.assert_array_equal(numpy_of(grad), 2 * numpy_of(first))


# more ops, PyTorch's answer in the last column
SAVING_MORE = [
    pytest.param(lambda lib, x: 1.0 - x, False, id="rsub"),
    pytest.param(
        lambda lib, x: x.mean(),
        False,
        id="mean",
    ),
    pytest.param(lambda lib, x: x[1:], False, id="slice"),
    pytest.param(lambda lib, x: x[1], False, id="select"),
    pytest.param(lambda lib, x: lib.cat([x, x]), False, id="cat"),
    pytest.param(lambda lib, x: lib.stack([x, x]), False, id="stack"),
    pytest.param(lambda lib, x: x.unsqueeze(0), False, id="unsqueeze"),
    pytest.param(lambda lib, x: x.expand(2, 3), False, id="expand"),
    pytest.param(lambda lib, x: x.to(lib.float32), False, id="to_float32"),
    pytest.param(lambda lib, x: x.reshape(1, 3).permute(1, 0), False, id="permute"),
    pytest.param(lambda lib, x: x.reshape(1, 3).squeeze(0), False, id="squeeze"),
    pytest.param(lambda lib, x: x.flip(0), False, id="flip"),
    pytest.param(lambda lib, x: x.cumsum(0), False, id="cumsum"),
    pytest.param(lambda lib, x: x.sum(0), False, id="sum_dim"),
    pytest.param(lambda lib, x: x.clone(), False, id="clone"),
    pytest.param(lambda lib, x: lib.sigmoid(x), True, id="sigmoid"),
    pytest.param(lambda lib, x: lib.relu(x), True, id="relu"),
    pytest.param(lambda lib, x: x.clamp(0.0, 2.5), True, id="clamp"),
    pytest.param(lambda lib, x: x.abs(), True, id="abs"),
    pytest.param(lambda lib, x: lib.where(x > 1.5, x, 0.0), True, id="where"),
    pytest.param(lambda lib, x: x.sin(), True, id="sin"),
    pytest.param(lambda lib, x: x.sqrt(), True, id="sqrt"),
    pytest.param(lambda lib, x: x.max(), True, id="max"),
    pytest.param(lambda lib, x: 2.0 / x, True, id="rdiv"),
]


@pytest.mark.parametrize(("op", "saves"), SAVING_MORE)
def test_more_nodes_save_values_as_in_pytorch(op, saves):
    test_which_nodes_save_values_and_cannot_run_twice(op, saves)


def test_saved_tensor_access_after_free_raises():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = x * x
        before = y.grad_fn._saved_self
        y.sum().backward()
        e = x.exp()
        e_saved = e.grad_fn._saved_result
        e.sum().backward()
        return (
            before,
            attempt(lambda: y.grad_fn._saved_self),
            e_saved,
            attempt(lambda: e.grad_fn._saved_result),
        )

    out = run_both(scenario)
    before, after, e_saved, e_after = out.value
    np.testing.assert_array_equal(numpy_of(before), [1.0, 2.0])
    np.testing.assert_allclose(numpy_of(e_saved), np.exp([1.0, 2.0]))
    assert after == e_after == RT(FREED)


def test_saved_tensor_names_exist_where_pytorch_has_them():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        e, y = x.exp(), x * x
        return (
            hasattr(e.grad_fn, "_saved_result"),
            hasattr(y.grad_fn, "_saved_other"),
            attempt(lambda: e.grad_fn._saved_other),  # a one-input node has no other input
        )

    out = run_both(scenario)
    assert out.value[:2] == (True, True) and out.value[2].type == "AttributeError"


def test_a_new_loss_through_a_freed_subgraph_raises():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = x.exp()
        y.sum().backward()
        z = x + 1.0
        z.sum().backward()  # saves nothing: can be reused
        return attempt((y * 2.0).sum().backward), attempt((z * 2.0).sum().backward), x.grad

    out = run_both(scenario)
    freed, reused, grad = out.value
    assert freed == RT(FREED) and reused is None
    np.testing.assert_allclose(numpy_of(grad), np.exp([1.0, 2.0]) + 3.0)


def test_retain_graph_then_second_backward_accumulates():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = (x.exp() * x).sum()
        y.backward(retain_graph=True)
        first = x.grad.clone()
        y.backward(retain_graph=True)
        second = x.grad.clone()
        y.backward()
        return first, second, x.grad, attempt(y.backward)

    out = run_both(scenario, rtol=1e-12)
    first, second, third, last = out.value
    closed = np.exp([1.0, 2.0]) * (1.0 + np.array([1.0, 2.0]))
    np.testing.assert_allclose(numpy_of(first), closed, rtol=1e-12)
    np.testing.assert_allclose(numpy_of(second), 2 * closed, rtol=1e-12)
    np.testing.assert_allclose(numpy_of(third), 3 * closed, rtol=1e-12)
    assert last == RT(FREED)


def test_freed_error_is_raised_lazily_only_at_the_saving_node():
    # the root path saves nothing; the error comes from the exp node further down, and
    # tensor hooks above it have already fired
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        e = x.exp()
        s = e + 1.0
        seen = []
        s.register_hook(lambda g: seen.append(g.sum().item()))
        loss = s.sum()
        loss.backward()
        return attempt(loss.backward), seen

    out = run_both(scenario)
    assert out.value == (RT(FREED), [2.0, 2.0])


# -- C. accumulation into leaves -------------------------------------------------------------


def test_leaves_accumulate_in_place_without_create_graph():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        (x * 3.0).sum().backward()
        g = x.grad
        first = g.clone()
        (x * 3.0).sum().backward()
        return first, x.grad, x.grad is g, x.grad.requires_grad, x.grad.grad_fn is None

    out = run_both(scenario)
    first, grad, same, requires, no_fn = out.value
    np.testing.assert_array_equal(numpy_of(first), [3.0, 3.0])
    np.testing.assert_array_equal(numpy_of(grad), [6.0, 6.0])
    assert same and not requires and no_fn


def test_accumulation_with_create_graph_is_out_of_place_and_recorded():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        (x**2).sum().backward(create_graph=True)
        g1 = x.grad
        (x**3).sum().backward(create_graph=True)
        g2 = x.grad
        (h,) = lib.autograd.grad(g2.sum(), x)
        return g1, g2, g2.grad_fn.name(), g2 is g1, h

    out = run_both(scenario)
    g1, g2, name2, same, h = out.value
    assert (name2, same) == ("AddBackward0", False)
    np.testing.assert_array_equal(numpy_of(g1), [2.0, 4.0])
    np.testing.assert_array_equal(numpy_of(g2), [5.0, 16.0])
    np.testing.assert_array_equal(numpy_of(h), [8.0, 14.0])  # 2 + 6x
    assert out.warnings == [("UserWarning", CYCLE)] * 2


def test_first_write_with_create_graph_is_a_copy_node():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        (x**2).sum().backward(create_graph=True)
        fn = x.grad.grad_fn
        return fn.name(), [None if f is None else f.name() for f, _ in fn.next_functions]

    out = run_both(scenario)
    assert out.value == ("torch::autograd::CopyBackwards", [None, "MulBackward0"])


def test_create_graph_into_an_existing_plain_grad_is_out_of_place():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        (x * 3.0).sum().backward()
        g0 = x.grad
        (x**2).sum().backward(create_graph=True)
        return g0, x.grad, x.grad is g0, x.grad.grad_fn.name()

    out = run_both(scenario)
    g0, grad, same, name = out.value
    np.testing.assert_array_equal(numpy_of(g0), [3.0, 3.0])
    np.testing.assert_array_equal(numpy_of(grad), [5.0, 7.0])
    assert not same and name == "AddBackward0"


def test_autograd_grad_leaves_grad_alone_but_fires_hooks_and_retains():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        log = []
        x.register_hook(lambda g: log.append(("x hook", g.tolist())))
        x.register_post_accumulate_grad_hook(lambda t: log.append(("post acc", t.grad.tolist())))
        y = x * 3.0
        y.retain_grad()
        z = y.exp()
        (g,) = lib.autograd.grad(z.sum(), x)
        return g, x.grad, y.grad, log

    out = run_both(scenario, rtol=1e-12)
    g, xgrad, ygrad, log = out.value
    e = np.exp(3.0 * np.array([1.0, 2.0]))
    np.testing.assert_allclose(numpy_of(g), 3 * e, rtol=1e-12)
    np.testing.assert_allclose(numpy_of(ygrad), e, rtol=1e-12)
    assert xgrad is None
    assert [entry[0] for entry in log] == ["x hook"]


def test_setting_grad_to_none_resets_and_wrong_size_raises():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0, 3.0])
        (x * 2.0).sum().backward()
        x.grad = None
        cleared = x.grad
        (x * 5.0).sum().backward()
        return cleared, x.grad, attempt(setattr, x, "grad", lib.zeros(4, dtype=lib.float64))

    out = run_both(scenario)
    cleared, grad, wrong = out.value
    assert cleared is None
    np.testing.assert_array_equal(numpy_of(grad), [5.0, 5.0, 5.0])
    assert wrong == RT(
        "attempting to assign a gradient of size '[4]' to a tensor of size '[3]'. Please ensure "
        "that the gradient and the tensor are the same size"
    )


def test_a_preset_grad_is_accumulated_into():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        preset = lib.zeros(2, dtype=lib.float64)
        x.grad = preset
        (x * 4.0).sum().backward()
        ones = lib.ones(2, dtype=lib.float64)
        x.grad = ones
        (x * 4.0).sum().backward()
        return x.grad, x.grad is ones

    out = run_both(scenario)
    np.testing.assert_array_equal(numpy_of(out.value[0]), [5.0, 5.0])
    assert out.value[1] is True


def test_optimizer_zero_grad_sets_grads_to_none_by_default():
    def scenario(lib):
        p = f64(lib, [1.0, 2.0])
        opt = lib.optim.SGD([p], lr=0.1)
        (p * p).sum().backward()
        before = p.grad.clone()
        opt.zero_grad()
        cleared = p.grad
        (p * p).sum().backward()
        opt.zero_grad(set_to_none=False)
        return before, cleared, p.grad

    out = run_both(scenario)
    before, cleared, zeroed = out.value
    np.testing.assert_array_equal(numpy_of(before), [2.0, 4.0])
    assert cleared is None
    np.testing.assert_array_equal(numpy_of(zeroed), [0.0, 0.0])


# -- D. non-leaf .grad and retain_grad ---------------------------------------------------------


def test_reading_grad_of_a_non_leaf_warns_and_gives_none():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = x * 2.0
        y.sum().backward()
        return y.grad, x.grad

    out = run_both(scenario)
    assert out.value[0] is None
    np.testing.assert_array_equal(numpy_of(out.value[1]), [2.0, 2.0])
    assert out.warnings == [("UserWarning", NONLEAF_GRAD)]


def test_retain_grad_on_a_non_leaf_populates_grad():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = x * 2.0
        y.retain_grad()
        z = (y * y).sum()
        z.backward(retain_graph=True)
        first = y.grad.clone()
        z.backward()
        return y.retains_grad, first, y.grad, x.grad

    out = run_both(scenario)
    retains, first, second, xgrad = out.value
    assert retains is True
    np.testing.assert_array_equal(numpy_of(first), [4.0, 8.0])
    np.testing.assert_array_equal(numpy_of(second), [8.0, 16.0])
    np.testing.assert_array_equal(numpy_of(xgrad), [16.0, 32.0])
    assert out.warnings == []


def test_retain_grad_on_a_leaf_is_a_no_op_and_needs_requires_grad():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        x.retain_grad()
        c = f64(lib, [1.0, 2.0], requires_grad=False)
        with lib.no_grad():
            n = x * 2.0
        return x.retains_grad, attempt(c.retain_grad), attempt(n.retain_grad)

    out = run_both(scenario)
    message = "can't retain_grad on Tensor that has requires_grad=False"
    assert out.value == (False, RT(message), RT(message))


@pytest.mark.parametrize("retain_first", [True, False])
def test_the_retained_grad_is_after_all_tensor_hooks(retain_first):
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = x * 2.0
        if retain_first:
            y.retain_grad()
        y.register_hook(lambda g: g * 10.0)
        if not retain_first:
            y.retain_grad()
        y.register_hook(lambda g: g + 1.0)
        y.grad_fn.register_prehook(lambda grads: (grads[0] * 3.0,))
        y.sum().backward()
        return y.grad, x.grad

    out = run_both(scenario)
    np.testing.assert_array_equal(numpy_of(out.value[0]), [11.0, 11.0])  # before the prehook
    np.testing.assert_array_equal(numpy_of(out.value[1]), [66.0, 66.0])


def test_retain_grad_on_a_multiply_used_non_leaf_sums_its_uses():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = x * 2.0
        y.retain_grad()
        (y.exp() + y * y).sum().backward()
        return y.grad

    out = run_both(scenario, rtol=1e-12)
    y = np.array([2.0, 4.0])
    np.testing.assert_allclose(numpy_of(out.value), np.exp(y) + 2 * y, rtol=1e-12)


def test_is_leaf():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        c = f64(lib, [1.0, 2.0], requires_grad=False)
        y = x * 2.0
        with lib.no_grad():
            n = x * 2.0
        d = y.detach()
        k = c * 2.0
        return [(t.is_leaf, t.requires_grad, t.grad_fn is None) for t in (x, c, y, n, d, k)]

    out = run_both(scenario)
    assert out.value == [
        (True, True, True),
        (True, False, True),
        (False, True, False),
        (True, False, True),
        (True, False, True),
        (True, False, True),
    ]


# -- E. hooks ----------------------------------------------------------------------------------


def test_tensor_hooks_replace_keep_chain_and_remove():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = x * 2.0
        seen = []
        h1 = y.register_hook(lambda g: g * 10.0)
        y.register_hook(lambda g: seen.append(g.tolist()))  # None keeps the gradient
        h3 = y.register_hook(lambda g: g + 1.0)
        loss = y.sum()
        loss.backward(retain_graph=True)
        first = x.grad.clone()
        h1.remove()
        h3.remove()
        x.grad = None
        loss.backward()
        return first, x.grad, seen

    out = run_both(scenario)
    first, second, seen = out.value
    np.testing.assert_array_equal(numpy_of(first), [22.0, 22.0])
    np.testing.assert_array_equal(numpy_of(second), [2.0, 2.0])
    assert seen == [[10.0, 10.0], [1.0, 1.0]]


def test_leaf_hooks_run_before_accumulation_and_post_accumulate_hooks_after():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        log = []

        def hook(g):
            log.append(("hook", g.tolist(), None if x.grad is None else x.grad.tolist()))
            return g * 2.0

        def post(t):
            log.append(("post", t is x, t.grad.tolist()))

        x.register_hook(hook)
        x.register_post_accumulate_grad_hook(post)
        (x * 3.0).sum().backward()
        (x * 3.0).sum().backward()
        return log, x.grad

    out = run_both(scenario)
    log, grad = out.value
    assert log == [
        ("hook", [3.0, 3.0], None),
        ("post", True, [6.0, 6.0]),
        ("hook", [3.0, 3.0], [6.0, 6.0]),
        ("post", True, [12.0, 12.0]),
    ]
    np.testing.assert_array_equal(numpy_of(grad), [12.0, 12.0])


def test_post_accumulate_hook_only_on_leaves_that_require_grad():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        c = f64(lib, [1.0, 2.0], requires_grad=False)
        y = x * 2.0
        return (
            attempt(y.register_post_accumulate_grad_hook, lambda t: None),
            attempt(c.register_post_accumulate_grad_hook, lambda t: None),
        )

    out = run_both(scenario)
    assert out.value == (
        RT("post accumulate grad hooks cannot be registered on non-leaf tensors"),
        RT("cannot register a hook on a tensor that doesn't require gradient"),
    )


def test_hook_order_tensor_hook_node_prehook_node_posthook():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = x * 2.0
        log = []
        y.grad_fn.register_hook(lambda gi, go: log.append("node posthook"))
        y.grad_fn.register_prehook(lambda go: log.append("node prehook"))
        y.register_hook(lambda g: log.append("tensor hook"))
        y.sum().backward()
        return log

    out = run_both(scenario)
    assert out.value == ["tensor hook", "node prehook", "node posthook"]


def test_node_hooks_see_and_replace_gradients():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        w = f64(lib, [3.0, 4.0])
        y = x * w
        log = []

        def pre(grad_outputs):
            log.append(("pre", [g.tolist() for g in grad_outputs]))
            return (grad_outputs[0] * 3.0,)

        def post(grad_inputs, grad_outputs):
            log.append(
                ("post", [g.tolist() for g in grad_inputs], [g.tolist() for g in grad_outputs])
            )
            return (grad_inputs[0] + 1.0, grad_inputs[1])

        y.grad_fn.register_prehook(pre)
        y.grad_fn.register_hook(post)
        y.sum().backward()
        return log, x.grad, w.grad

    out = run_both(scenario)
    log, xgrad, wgrad = out.value
    assert log == [
        ("pre", [[1.0, 1.0]]),
        ("post", [[9.0, 12.0], [3.0, 6.0]], [[3.0, 3.0]]),
    ]
    np.testing.assert_array_equal(numpy_of(xgrad), [10.0, 13.0])
    np.testing.assert_array_equal(numpy_of(wgrad), [3.0, 6.0])


def test_node_hook_handles_remove():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = x * 2.0
        h = y.grad_fn.register_prehook(lambda go: (go[0] * 5.0,))
        p = y.grad_fn.register_hook(lambda gi, go: (gi[0] + 7.0, None))
        loss = y.sum()
        loss.backward(retain_graph=True)
        first = x.grad.clone()
        h.remove()
        p.remove()
        loss.backward()
        return first, x.grad

    out = run_both(scenario)
    np.testing.assert_array_equal(numpy_of(out.value[0]), [17.0, 17.0])
    np.testing.assert_array_equal(numpy_of(out.value[1]), [19.0, 19.0])


def test_accumulate_grad_node_hooks():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = x * 2.0
        acc = y.grad_fn.next_functions[0][0]
        log = []
        acc.register_prehook(lambda go: log.append(("acc pre", [g.tolist() for g in go])))
        x.register_hook(lambda g: g + 1.0)
        y.sum().backward()
        return acc.name(), log, x.grad

    out = run_both(scenario)
    name, log, grad = out.value
    assert name == "torch::autograd::AccumulateGrad"
    assert log == [("acc pre", [[3.0, 3.0]])]
    np.testing.assert_array_equal(numpy_of(grad), [3.0, 3.0])


def _hooked(lib):
    x = f64(lib, [1.0, 2.0])
    y = x * 3.0
    z = (y * y).sum()
    y.register_hook(lambda g: g * 2.0)
    x.register_hook(lambda g: g + 1.0)
    return x, y, z


def test_tensor_hooks_on_grad_inputs_change_the_returned_gradient():
    def scenario(lib):
        x, y, z = _hooked(lib)
        (gy,) = lib.autograd.grad(z, y, retain_graph=True)
        (gx,) = lib.autograd.grad(z, x)
        return gy, gx

    out = run_both(scenario)
    np.testing.assert_array_equal(numpy_of(out.value[0]), [12.0, 24.0])
    np.testing.assert_array_equal(numpy_of(out.value[1]), [37.0, 73.0])


def test_tensor_hooks_on_grad_inputs_apply_with_several_inputs_too():
    """PyTorch 2.13 returns the un-hooked [6, 12] for `y` here (its node also runs, to reach x),
    though `grad(z, y)` alone returns the hooked value; the shim applies the hooks both times."""
    x, y, z = _hooked(tt)
    gy, gx = tt.autograd.grad(z, [y, x])
    np.testing.assert_array_equal(numpy_of(gy), [12.0, 24.0])
    np.testing.assert_array_equal(numpy_of(gx), [37.0, 73.0])


def _logged(lib):
    x = f64(lib, [1.0, 2.0])
    y = x * 3.0
    z = (y * y).sum()
    log = []
    y.grad_fn.register_prehook(lambda go: log.append("y pre"))
    y.grad_fn.register_hook(lambda gi, go: log.append("y post"))
    y.register_hook(lambda g: log.append("y tensor hook"))
    return x, y, z, log


def test_node_hooks_do_not_fire_when_grad_stops_at_the_nodes_output():
    def scenario(lib):
        x, y, z, log = _logged(lib)
        (gy,) = lib.autograd.grad(z, y, retain_graph=True)
        first = list(log)
        log.clear()
        (gx,) = lib.autograd.grad(z, x)
        return gy, first, gx, log, x.grad

    out = run_both(scenario)
    gy, first, gx, second, xgrad = out.value
    np.testing.assert_array_equal(numpy_of(gy), [6.0, 12.0])
    np.testing.assert_array_equal(numpy_of(gx), [18.0, 36.0])
    assert first == ["y tensor hook"]
    assert second == ["y tensor hook", "y pre", "y post"]
    assert xgrad is None


def test_node_hooks_fire_with_backward_inputs():
    def scenario(lib):
        x, y, z, log = _logged(lib)
        z.backward(inputs=[y])
        return log, y.grad, x.grad

    out = run_both(scenario)
    log, ygrad, xgrad = out.value
    np.testing.assert_array_equal(numpy_of(ygrad), [6.0, 12.0])
    assert log == ["y tensor hook", "y pre", "y post"]
    assert xgrad is None
    assert out.warnings == []


def test_a_hook_on_a_tensor_used_twice_sees_the_summed_gradient():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = x * 2.0
        seen = []
        y.register_hook(lambda g: seen.append(g.tolist()))
        (y * y + y.exp()).sum().backward()
        return seen, x.grad

    out = run_both(scenario, rtol=1e-12)
    (seen,), grad = out.value
    y = np.array([2.0, 4.0])
    np.testing.assert_allclose(seen, 2 * y + np.exp(y), rtol=1e-12)
    np.testing.assert_allclose(numpy_of(grad), 2 * (2 * y + np.exp(y)), rtol=1e-12)


def test_hook_registration_errors():
    def scenario(lib):
        c = f64(lib, [1.0, 2.0], requires_grad=False)
        return attempt(c.register_hook, lambda g: g)

    out = run_both(scenario)
    assert out.value == RT("cannot register a hook on a tensor that doesn't require gradient")


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "nonleaf"])
def test_hooks_that_change_size_or_type_raise(leaf):
    def scenario(lib):
        out = []
        for hook in (lambda g: g[:1], lambda g: g.double(), lambda g: g.sum()):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            y = x if leaf else x * 2.0
            y.register_hook(hook)
            out.append(attempt((y * y).sum().backward))
        return tuple(out)

    out = run_both(scenario)
    assert out.value == (
        RT("hook '<lambda>' has changed the size of value"),
        RT("hook '<lambda>' has changed the type of value (was float32 got float64)"),
        RT("hook '<lambda>' has changed the size of value"),
    )


def test_hook_error_names_a_named_function():
    def scenario(lib):
        def widen(g):
            return g.double()

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2.0
        y.register_hook(widen)
        return attempt(y.sum().backward)

    out = run_both(scenario)
    assert out.value == RT("hook 'widen' has changed the type of value (was float32 got float64)")


def test_hooks_registered_before_an_in_place_op_stay_with_the_old_grad_fn():
    def scenario(lib):
        x = f64(lib, [1.0, 2.0])
        y = x * 2.0
        log = []
        y.register_hook(lambda g: log.append(("old", g.tolist())))
        old_fn = y.grad_fn.name()
        y.mul_(3.0)
        y.register_hook(lambda g: log.append(("new", g.tolist())))
        y.sum().backward()
        return old_fn, y.grad_fn.name(), log, x.grad

    out = run_both(scenario)
    old_fn, new_fn, log, grad = out.value
    assert (old_fn, new_fn) == ("MulBackward0", "MulBackward0")
    assert log == [("new", [1.0, 1.0]), ("old", [3.0, 3.0])]
    np.testing.assert_array_equal(numpy_of(grad), [6.0, 6.0])


def test_hooks_receive_read_only_gradients():
    """The shim passes read-only arrays, so a hook cannot corrupt a shared or expanded gradient
    (PyTorch raises `unsupported operation: more than one element...` on expanded ones)."""
    x = tt.tensor([1.0, 2.0, 3.0], dtype=tt.float64, requires_grad=True)
    y = x * 2.0
    flags = []
    y.register_hook(lambda g: flags.append(g.numpy().flags.writeable))
    y.sum().backward()
    assert flags == [False]
    np.testing.assert_array_equal(numpy_of(x.grad), [2.0, 2.0, 2.0])


# -- grad_fn names and next_functions ------------------------------------------------------------


def _inputs(lib):
    x = f64(lib, [1.0, 2.0, 3.0])
    y = f64(lib, [0.5, 1.5, 2.0])
    m = f64(lib, [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    v = f64(lib, [1.0, -1.0, 2.0])
    return x, y, m, v


# (op, PyTorch's grad_fn name, marks for the next_functions comparison)
NAMED_OPS = {
    "mul": (lambda lib, x, y, m, v: x * y, "MulBackward0", ()),
    "mul_scalar": (lambda lib, x, y, m, v: x * 2.0, "MulBackward0", ()),
    "add": (lambda lib, x, y, m, v: x + y, "AddBackward0", ()),
    "add_scalar": (lambda lib, x, y, m, v: x + 1.0, "AddBackward0", ()),
    "sub": (lambda lib, x, y, m, v: x - y, "SubBackward0", ()),
    "div": (lambda lib, x, y, m, v: x / y, "DivBackward0", ()),
    "div_scalar": (lambda lib, x, y, m, v: x / 2.0, "DivBackward0", ()),
    "neg": (lambda lib, x, y, m, v: -x, "NegBackward0", ()),
    "exp": (lambda lib, x, y, m, v: x.exp(), "ExpBackward0", ()),
    "tanh": (lambda lib, x, y, m, v: lib.tanh(x), "TanhBackward0", ()),
    "sum": (lambda lib, x, y, m, v: x.sum(), "SumBackward0", ()),
    "sum_dim": (lambda lib, x, y, m, v: m.sum(1), "SumBackward1", ()),
    "sum_dim_keepdim": (lambda lib, x, y, m, v: m.sum(1, keepdim=True), "SumBackward1", ()),
    "mean": (lambda lib, x, y, m, v: x.mean(), "MeanBackward0", ()),
    "mean_dim": (lambda lib, x, y, m, v: m.mean(0), "MeanBackward1", ()),
    "matmul_2d_2d": (lambda lib, x, y, m, v: m @ m.t(), "MmBackward0", ()),
    "matmul_2d_1d": (lambda lib, x, y, m, v: m @ v, "MvBackward0", ()),
    "matmul_1d_1d": (lambda lib, x, y, m, v: v @ x, "DotBackward0", ()),
    "pow_scalar": (lambda lib, x, y, m, v: x**2, "PowBackward0", ()),
    "pow_tensor": (lambda lib, x, y, m, v: x**y, "PowBackward1", ()),
    "reshape": (lambda lib, x, y, m, v: m.reshape(3, 2), "ViewBackward0", ()),
    "view": (lambda lib, x, y, m, v: m.view(6), "ViewBackward0", ()),
    "t": (lambda lib, x, y, m, v: m.t(), "TBackward0", ()),
    "transpose": (lambda lib, x, y, m, v: m.transpose(0, 1), "TransposeBackward0", ()),
    "permute": (lambda lib, x, y, m, v: m.permute(1, 0), "PermuteBackward0", ()),
    "unsqueeze": (lambda lib, x, y, m, v: x.unsqueeze(0), "UnsqueezeBackward0", ()),
    "cat": (lambda lib, x, y, m, v: lib.cat([x, y]), "CatBackward0", ()),
    "stack": (lambda lib, x, y, m, v: lib.stack([x, y]), "StackBackward0", ()),
    "slice": (lambda lib, x, y, m, v: x[1:], "SliceBackward0", ()),
    "select": (lambda lib, x, y, m, v: x[1], "SelectBackward0", ()),
    "sigmoid": (lambda lib, x, y, m, v: lib.sigmoid(x), "SigmoidBackward0", ()),
    "relu": (lambda lib, x, y, m, v: lib.relu(x), "ReluBackward0", ()),
    "clamp": (lambda lib, x, y, m, v: x.clamp(1.5, 2.5), "ClampBackward1", ()),
    "abs": (lambda lib, x, y, m, v: x.abs(), "AbsBackward0", ()),
    "where": (lambda lib, x, y, m, v: lib.where(x > 1.5, x, y), "WhereBackward0", ()),
    "to_float32": (lambda lib, x, y, m, v: x.to(lib.float32), "ToCopyBackward0", ()),
    "to_float64": (
        lambda lib, x, y, m, v: x.float().to(lib.float64),
        "ToCopyBackward0",
        (),
    ),
}


@pytest.mark.parametrize(
    ("op", "name"), [(op, n) for op, n, _ in NAMED_OPS.values()], ids=list(NAMED_OPS)
)
def test_grad_fn_name(op, name):
    def scenario(lib):
        return op(lib, *_inputs(lib)).grad_fn.name()

    assert run_both(scenario).value == name


@pytest.mark.parametrize(
    "op",
    [pytest.param(op, marks=marks) for op, _, marks in NAMED_OPS.values()],
    ids=list(NAMED_OPS),
)
def test_grad_fn_next_functions(op):
    if torch is None:
        pytest.skip("PyTorch is the oracle for next_functions")

    def scenario(lib):
        return fn_tree(op(lib, *_inputs(lib)).grad_fn, depth=2)

    run_both(scenario)


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        (lambda lib, x, y, m, v: (x * y).grad_fn, 2),
        (lambda lib, x, y, m, v: x.exp().grad_fn, 1),
        (lambda lib, x, y, m, v: (x * 2.0).grad_fn, 2),
    ],
    ids=["mul", "exp", "mul_scalar"],
)
def test_next_functions_point_at_the_leaves_accumulators(op, expected):
    def scenario(lib):
        x, y, m, v = _inputs(lib)
        fn = op(lib, x, y, m, v)
        accs = [f for f, _ in fn.next_functions if f is not None]
        # the AccumulateGrad node of a leaf is one object, its `variable` the leaf itself
        return len(fn.next_functions), [a.variable is x or a.variable is y for a in accs]

    out = run_both(scenario)
    assert out.value[0] == expected and all(out.value[1])


def test_backward_values_and_second_derivatives_agree_with_torch():
    def scenario(lib):
        x, y, m, v = _inputs(lib)
        loss = (lib.tanh(m @ v) * (x * y).exp().sum()).sum() + (x**y).sum() / 3.0
        gx, gm = lib.autograd.grad(loss, [x, m], create_graph=True)
        hx = lib.autograd.grad(gx.sum(), [x, y, v], retain_graph=True)
        hm = lib.autograd.grad((gm * gm).sum(), [m, v])
        return loss, gx, gm, hx, hm

    run_both(scenario, rtol=1e-8)


def test_grad_variables_is_the_deprecated_name_of_grad_tensors():
    # API.md: it warns (FutureWarning); passing both raises RuntimeError
    x = tt.tensor([1.0, 2.0], dtype=np.float64, requires_grad=True)
    with pytest.warns(FutureWarning, match="`grad_variables` is deprecated"):
        tt.autograd.backward([x * 3.0], grad_variables=[tt.tensor([1.0, 2.0], dtype=np.float64)])
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 6.0])
    with pytest.raises(RuntimeError, match="arguments both passed to `backward\\(\\)`"):
        tt.autograd.backward(
            [x * 3.0], grad_tensors=[tt.ones(2, dtype=np.float64)], grad_variables=[tt.ones(2)]
        )


def test_autograd_grad_with_a_repeated_input_returns_its_gradient_at_each_position():
    for M in libraries():
        x = M.tensor([1.0, 2.0], requires_grad=True)
        gx, gx2 = M.autograd.grad((x * x).sum(), [x, x])
        np.testing.assert_array_equal(values(gx), [2.0, 4.0])
        np.testing.assert_array_equal(values(gx2), [2.0, 4.0])
        y = x * 2
        gy, gy2, g = M.autograd.grad((y * y).sum(), [y, y, x])
        np.testing.assert_array_equal(values(gy), [4.0, 8.0])
        np.testing.assert_array_equal(values(gy2), [4.0, 8.0])
        np.testing.assert_array_equal(values(g), [8.0, 16.0])


def test_a_plain_backward_after_a_create_graph_one_adds_in_place():
    for M in libraries():
        x = M.tensor([1.0, 2.0], requires_grad=True)
        with warnings.catch_warnings():  # the create_graph cycle warning (torch: once only)
            warnings.simplefilter("ignore", UserWarning)
            (x**2).sum().backward(create_graph=True)
        first = x.grad
        (x**2).sum().backward()
        assert x.grad is first and x.grad.requires_grad
        np.testing.assert_array_equal(values(x.grad), [4.0, 8.0])


_ZERO_DERIVATIVE = {
    "floor": lambda M, x: M.floor(x),
    "ceil": lambda M, x: x.ceil(),
    "round": lambda M, x: M.round(x),
    "trunc": lambda M, x: M.trunc(x),
    "sign": lambda M, x: M.sign(x),
    "div trunc": lambda M, x: M.div(x, 2.0, rounding_mode="trunc"),
    "div floor": lambda M, x: M.div(x, 2.0, rounding_mode="floor"),
    "floor then exp": lambda M, x: M.exp(M.floor(x)),
    "where, other branch": lambda M, x: M.where(x > 100.0, x, M.zeros(3)),
}


@pytest.mark.parametrize("name", list(_ZERO_DERIVATIVE))
@pytest.mark.parametrize("api", ["backward", "autograd.grad", "create_graph"])
def test_a_leaf_reached_only_through_zero_derivatives_gets_zeros_not_none(name, api):
    # PyTorch's formulas return zeros there, so .grad is a zero tensor (an optimizer then
    # still applies weight decay and momentum to it)
    got = []
    for M in (torch, tt):
        x = M.tensor([1.5, -2.5, 3.0], dtype=M.float64, requires_grad=True)
        y = _ZERO_DERIVATIVE[name](M, x).sum()
        if api == "backward":
            y.backward()
            g = x.grad
        else:
            (g,) = M.autograd.grad(y, x, create_graph=api == "create_graph")
        dtype = None if g is None else str(g.dtype).replace("torch.", "")
        got.append((None if g is None else g.tolist(), dtype))
    assert got[1] == got[0]
    assert got[0][0] == [0.0, 0.0, 0.0]


def test_a_custom_functions_none_still_leaves_grad_none():
    grads = []
    for M in (torch, tt):

        class F(M.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * 2 + y

            @staticmethod
            def backward(ctx, g):
                return g * 2, None

        x = M.ones(2, requires_grad=True)
        y = M.ones(2, requires_grad=True)
        F.apply(x, y).sum().backward()
        grads.append((x.grad.tolist(), y.grad))
    assert grads[1] == grads[0] == ([2.0, 2.0], None)
