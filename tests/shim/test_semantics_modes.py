"""SHIM_SEMANTICS.md sections F-K and `Tensor.__setitem__`, with PyTorch as the oracle.

F `create_graph` (grads with `grad_fn`, constant derivatives, the stateful second derivative,
third and fourth derivatives against torch and closed forms), G `backward(inputs=...)`,
H grad modes (`no_grad`, `enable_grad`, `set_grad_enabled`, `inference_mode`), I `detach`,
`requires_grad` flags and `.data`, J in-place ops and version counters, K the NaN gradient of
`where(x > 0, sqrt(x), 0)` (autograd.Function, anomaly mode, checkpoint and gradcheck are not
in `tracegrad.torch.autograd` yet, so they have no tests here), and `x[idx] = v`.

Each scenario is a function of the library module (`torch` or `tracegrad`) written once with
the names both share. Errors are compared by type and first line, PyTorch's normalized with
`normalize_torch_message`. Tests that need torch take the `torch` fixture (skipped without it);
closed-form checks run everywhere.

`.data` (section I): tracegrad's `.data` is a detached alias sharing the cell and the version
counter, so `y = x.exp(); y.data.add_(1); y.sum().backward()` raises PyTorch's version error
(`... which is output 0 of Exp, is at version 1 ...`) where PyTorch silently returns the wrong
gradient `exp(x) + 1`. A side effect: `x.data.mul_(2)` bumps `x._version` (PyTorch's stays 0).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.torch as tt
from tests.shim.torch_oracle import (
    libraries,
    normalize_torch_message,
    torch_one_thread,  # noqa: F401 - the `torch` fixture
    values,
)

# -- helpers ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Raised:
    type: str
    message: str


def _first_line(e) -> str:
    return str(e).split("\n", 1)[0]


def outcome(scenario, lib):
    """What `scenario(lib)` returns, or a `Raised` for the exception it raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return scenario(lib)
        except Exception as e:  # noqa: BLE001 - the exception is the result compared
            return Raised(type(e).__name__, _first_line(e))


def same_error(scenario, torch) -> str:
    """Both libraries raise the same type with the same (normalized) first line; returns it."""
    ours, theirs = outcome(scenario, tt), outcome(scenario, torch)
    assert isinstance(theirs, Raised), f"torch did not raise: {theirs!r}"
    assert isinstance(ours, Raised), f"tracegrad did not raise (torch: {theirs}): {ours!r}"
    assert ours.type == theirs.type, f"tracegrad {ours} but torch {theirs}"
    assert ours.message == normalize_torch_message(theirs.message)
    return ours.message


def arr(t):
    """A tensor of either library as a NumPy array (None stays None)."""
    if t is None:
        return None
    return np.array(t.detach().numpy(), copy=True)


def dtype_name(t) -> str:
    if isinstance(t.dtype, np.dtype):
        return t.dtype.name
    return str(t.dtype).removeprefix("torch.")


def assert_tensors_match(ours, theirs, rtol=1e-12, atol=0.0) -> None:
    """Values, shapes, dtypes and requires_grad of (nested tuples of) tensors agree."""
    if isinstance(theirs, tuple | list):
        assert isinstance(ours, tuple | list) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_tensors_match(a, b, rtol, atol)
        return
    if theirs is None:
        assert ours is None, f"torch gave None, tracegrad {ours!r}"
        return
    if not hasattr(theirs, "detach"):
        assert ours == theirs, f"tracegrad {ours!r} but torch {theirs!r}"
        return
    assert ours is not None, f"torch gave {theirs!r}, tracegrad None"
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert dtype_name(ours) == dtype_name(theirs)
    assert ours.requires_grad == theirs.requires_grad
    np.testing.assert_allclose(arr(ours), arr(theirs), rtol=rtol, atol=atol, equal_nan=True)


def run_both(scenario, torch, rtol=1e-12, atol=0.0):
    """Run in both libraries; results (tensors, flags, names) must agree. Returns ours."""
    ours, theirs = outcome(scenario, tt), outcome(scenario, torch)
    assert not isinstance(ours, Raised) or isinstance(theirs, Raised), (
        f"tracegrad raised {ours} but torch returned {theirs!r}"
    )
    assert not isinstance(theirs, Raised), f"torch raised {theirs} but tracegrad gave {ours!r}"
    assert_tensors_match(ours, theirs, rtol, atol)
    return ours


def f64(lib, values, requires_grad=True):
    return lib.tensor(values, dtype=lib.float64, requires_grad=requires_grad)


VERSION_ERROR = "one of the variables needed for gradient computation has been modified"


# -- F: create_graph -------------------------------------------------------------------------------


def test_create_graph_grad_carries_grad_fn(torch):
    def scenario(L):
        x = L.tensor(2.0, requires_grad=True)
        (g,) = L.autograd.grad(x**3, x, create_graph=True)
        (h,) = L.autograd.grad(g, x)
        return g, g.is_leaf, g.grad_fn.name(), h

    g, is_leaf, name, h = run_both(scenario, torch)
    assert (g.item(), is_leaf, name, h.item()) == (12.0, False, "MulBackward0", 12.0)


def test_create_graph_constant_derivative_has_no_grad_fn(torch):
    def flags(L):
        x = L.tensor(2.0, requires_grad=True)
        (g,) = L.autograd.grad(3 * x, x, create_graph=True)
        return g, g.grad_fn is None, g.is_leaf

    g, no_fn, leaf = run_both(flags, torch)
    assert (g.item(), g.requires_grad, no_fn, leaf) == (3.0, False, True, True)

    def again(L):
        x = L.tensor(2.0, requires_grad=True)
        (g,) = L.autograd.grad(3 * x, x, create_graph=True)
        return L.autograd.grad(g, x)

    msg = same_error(again, torch)
    assert msg == "element 0 of tensors does not require grad and does not have a grad_fn"


def test_functional_grad_of_constant_derivative_is_zero():
    # the functional API has no such quirk: d2(3x)/dx2 == 0 (closed form)
    assert tg.grad(tg.grad(lambda x: 3.0 * x))(2.0) == 0.0


def test_second_derivative_via_stateful_api(torch):
    def scenario(L):
        x = L.tensor([3.0, -1.5], dtype=L.float64, requires_grad=True)
        (x**3).sum().backward(create_graph=True)
        g = x.grad
        x.grad = None
        g.sum().backward()
        return g, g.grad_fn is not None, x.grad

    g, has_fn, second = run_both(scenario, torch)
    assert has_fn
    np.testing.assert_allclose(arr(g), 3 * np.array([3.0, -1.5]) ** 2)
    np.testing.assert_allclose(arr(second), 6 * np.array([3.0, -1.5]))


def test_second_derivative_stateful_scalar_closed_form(torch):
    # SHIM_SEMANTICS F: x**2 -> x.grad == 2 after the second backward
    def scenario(L):
        x = L.tensor([3.0], requires_grad=True)
        (x**2).sum().backward(create_graph=True)
        g = x.grad
        x.grad = None
        g.sum().backward()
        return x.grad

    assert arr(run_both(scenario, torch)).tolist() == [2.0]


CYCLE_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter "
    "and its gradient which can cause a memory leak. We recommend using autograd.grad when "
    "creating the graph to avoid this. If you have to use this function, make sure to reset the "
    ".grad fields of your parameters to None after use to break the cycle and avoid the leak."
)


def test_backward_create_graph_warns():
    # PyTorch's text (SHIM_SEMANTICS C); PyTorch warns once per process, so it is not re-run here
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning) as record:
        (x * x).sum().backward(create_graph=True)
    assert [str(w.message) for w in record] == [CYCLE_WARNING]
    assert x.grad.requires_grad


def test_create_graph_grad_of_0d_leaf_keeps_shape(torch):
    def scenario(L):
        x = L.tensor(3.0, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            (x**3).backward(create_graph=True)
        return x.grad

    g = run_both(scenario, torch)
    assert g.shape == ()


# (name, function of (lib, x), derivatives 1..4 as NumPy closed forms, domain)
HIGHER = [
    (
        "sin",
        lambda L, x: L.sin(x),
        [np.cos, lambda x: -np.sin(x), lambda x: -np.cos(x), np.sin],
        (-2.0, 2.0),
    ),
    (
        "exp2x",
        lambda L, x: L.exp(2 * x),
        [lambda x, k=k: 2.0**k * np.exp(2 * x) for k in range(1, 5)],
        (-1.0, 1.0),
    ),
    (
        "pow5",
        lambda L, x: x**5,
        [lambda x: 5 * x**4, lambda x: 20 * x**3, lambda x: 60 * x**2, lambda x: 120 * x],
        (-2.0, 2.0),
    ),
    (
        "log",
        lambda L, x: L.log(x),
        [lambda x: 1 / x, lambda x: -1 / x**2, lambda x: 2 / x**3, lambda x: -6 / x**4],
        (0.5, 3.0),
    ),
    (
        "reciprocal",
        lambda L, x: 1.0 / x,
        [lambda x: -1 / x**2, lambda x: 2 / x**3, lambda x: -6 / x**4, lambda x: 24 / x**5],
        (0.5, 3.0),
    ),
    (
        "tanh",
        lambda L, x: L.tanh(x),
        [
            lambda x: 1 - np.tanh(x) ** 2,
            lambda x: -2 * np.tanh(x) * (1 - np.tanh(x) ** 2),
            lambda x: (6 * np.tanh(x) ** 2 - 2) * (1 - np.tanh(x) ** 2),
            lambda x: 8 * np.tanh(x) * (1 - np.tanh(x) ** 2) * (2 - 3 * np.tanh(x) ** 2),
        ],
        (-1.5, 1.5),
    ),
    (
        "sin_times_exp",
        lambda L, x: L.sin(x) * L.exp(x),
        [
            lambda x: np.exp(x) * (np.sin(x) + np.cos(x)),
            lambda x: 2 * np.exp(x) * np.cos(x),
            lambda x: 2 * np.exp(x) * (np.cos(x) - np.sin(x)),
            lambda x: -4 * np.exp(x) * np.sin(x),
        ],
        (-2.0, 2.0),
    ),
]


def _derivatives(L, f, values, order):
    """d^k f/dx^k (elementwise f) for k = 1..order, by repeated autograd.grad(create_graph)."""
    x = L.tensor(values, dtype=L.float64, requires_grad=True)
    out = []
    y = f(L, x)
    for _ in range(order):
        (y,) = L.autograd.grad(y.sum(), x, create_graph=True)
        out.append(y)
    return out


@pytest.mark.parametrize("name, f, closed, domain", HIGHER, ids=[h[0] for h in HIGHER])
def test_higher_order_derivatives(name, f, closed, domain, torch):
    values = np.linspace(*domain, 7)
    ours = _derivatives(tt, f, values, 4)
    for k, d in enumerate(ours):
        assert d.requires_grad and d.grad_fn is not None, f"order {k + 1} lost its graph"
        assert d.dtype == np.float64
        np.testing.assert_allclose(arr(d), closed[k](values), rtol=1e-10, atol=1e-10)
    theirs = _derivatives(torch, f, values, 4)
    assert_tensors_match(ours, theirs, rtol=1e-12, atol=1e-12)


def test_higher_order_of_a_coupled_function(torch):
    # f(x) = (sum x^2)^2 = r^2, S = sum x: grad 4 r x; then d/dx_i of the sum of the previous
    # gradient: 8 S x_i + 4 r, 16 S + 8 n x_i, 24 n (closed forms and torch)
    values = np.array([0.5, -1.0, 2.0])

    def scenario(L):
        x = L.tensor(values, dtype=L.float64, requires_grad=True)
        g1 = L.autograd.grad(((x * x).sum()) ** 2, x, create_graph=True)[0]
        g2 = L.autograd.grad(g1.sum(), x, create_graph=True)[0]
        g3 = L.autograd.grad(g2.sum(), x, create_graph=True)[0]
        g4 = L.autograd.grad(g3.sum(), x, allow_unused=True, materialize_grads=True)[0]
        return g1, g2, g3, g4

    g1, g2, g3, g4 = run_both(scenario, torch)
    r, s, n = (values**2).sum(), values.sum(), len(values)
    np.testing.assert_allclose(arr(g1), 4 * r * values)
    np.testing.assert_allclose(arr(g2), 8 * values * s + 4 * r)
    np.testing.assert_allclose(arr(g3), 16 * s + 8 * n * values)
    np.testing.assert_allclose(arr(g4), np.full(n, 24.0 * n))


def test_hessian_vector_product_through_create_graph(torch):
    a = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, -1.0], [0.0, -1.0, 4.0]])

    def scenario(L):
        x = L.tensor([0.3, -0.7, 1.1], dtype=L.float64, requires_grad=True)
        A = L.tensor(a, dtype=L.float64)
        v = L.tensor([1.0, 2.0, -1.0], dtype=L.float64)
        (g,) = L.autograd.grad((x @ A @ x) / 2 + L.sin(x).sum(), x, create_graph=True)
        (hv,) = L.autograd.grad((g * v).sum(), x)
        return g, hv

    g, hv = run_both(scenario, torch)
    x = np.array([0.3, -0.7, 1.1])
    v = np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(arr(hv), a @ v - np.sin(x) * v)
    np.testing.assert_allclose(arr(g), a @ x + np.cos(x))


# -- G: backward(inputs=...) -----------------------------------------------------------------------


def test_backward_inputs_only_listed_accumulate(torch):
    def scenario(L):
        x, w = f64(L, [1.0, 2.0]), f64(L, [3.0, 4.0])
        (x * w).sum().backward(inputs=[x])
        return x.grad, w.grad

    xg, wg = run_both(scenario, torch)
    assert arr(xg).tolist() == [3.0, 4.0] and wg is None


def test_backward_inputs_single_tensor_accepted(torch):
    def scenario(L):
        x, w = f64(L, [1.0, 2.0]), f64(L, [3.0, 4.0])
        (x * w).sum().backward(inputs=w)
        return x.grad, w.grad

    xg, wg = run_both(scenario, torch)
    assert xg is None and arr(wg).tolist() == [1.0, 2.0]


def test_backward_inputs_unused_stays_none(torch):
    def scenario(L):
        x, w, u = f64(L, [1.0, 2.0]), f64(L, [3.0, 4.0]), f64(L, [5.0, 6.0])
        (x * w).sum().backward(inputs=[x, u])
        return x.grad, w.grad, u.grad

    xg, wg, ug = run_both(scenario, torch)
    assert wg is None and ug is None and arr(xg).tolist() == [3.0, 4.0]


def test_backward_inputs_non_leaf_gets_grad_without_warning(torch):
    def scenario(L):
        x, w = f64(L, [1.0, 2.0]), f64(L, [3.0, 4.0])
        h = x * w
        h.exp().sum().backward(inputs=[h, x])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no non-leaf .grad warning once it was populated
            hg = h.grad
        return hg, x.grad, w.grad, h.is_leaf

    hg, xg, wg, leaf = run_both(scenario, torch)
    h = np.array([3.0, 8.0])
    np.testing.assert_allclose(arr(hg), np.exp(h))
    np.testing.assert_allclose(arr(xg), np.exp(h) * [3.0, 4.0])
    assert wg is None and not leaf


def test_backward_inputs_accumulate_across_calls(torch):
    def scenario(L):
        x, w = f64(L, [1.0, 2.0]), f64(L, [3.0, 4.0])
        y = (x * w).sum()
        y.backward(inputs=[x], retain_graph=True)
        y.backward(inputs=[w], retain_graph=True)
        y.backward(inputs=[x, w])
        return x.grad, w.grad

    xg, wg = run_both(scenario, torch)
    assert arr(xg).tolist() == [6.0, 8.0] and arr(wg).tolist() == [2.0, 4.0]


def test_backward_inputs_with_create_graph(torch):
    def scenario(L):
        x, w = f64(L, [1.0, 2.0]), f64(L, [3.0, 4.0])
        (x * x * w).sum().backward(inputs=[x], create_graph=True)
        (second,) = L.autograd.grad(x.grad.sum(), w)
        return x.grad, w.grad, second

    xg, wg, second = run_both(scenario, torch)
    assert xg.grad_fn is not None and wg is None
    np.testing.assert_allclose(arr(second), [2.0, 4.0])


@pytest.mark.parametrize(
    "case",
    ["empty", "not_requiring_grad", "integer"],
)
def test_backward_inputs_errors(case, torch):
    def scenario(L):
        x = f64(L, [1.0, 2.0])
        c = L.tensor([1, 2]) if case == "integer" else f64(L, [1.0, 2.0], requires_grad=False)
        loss = (x * c).sum()
        loss.backward(inputs=[] if case == "empty" else [c])

    msg = same_error(scenario, torch)
    expected = {
        "empty": "`inputs` argument to `backward()` cannot be empty.",
        "not_requiring_grad": "can't retain_grad on Tensor that has requires_grad=False",
        "integer": "can't retain_grad on Tensor that has requires_grad=False",
    }
    assert msg == expected[case]


# -- H: grad modes ---------------------------------------------------------------------------------


def test_no_grad_results_are_leaves_and_enable_grad_reenables(torch):
    def scenario(L):
        x = f64(L, [1.0, 2.0])
        with L.no_grad():
            y = x * 2
            inside = L.is_grad_enabled()
            with L.enable_grad():
                z = x * 3
                again = L.is_grad_enabled()
        return (y, y.grad_fn is None, y.is_leaf, z, z.grad_fn.name(), z.is_leaf, inside, again)

    out = run_both(scenario, torch)
    assert out[1:3] == (True, True) and out[4:] == ("MulBackward0", False, False, True)
    assert not out[0].requires_grad and out[3].requires_grad
    assert tt.is_grad_enabled()


def test_backward_on_no_grad_result_raises(torch):
    def scenario(L):
        x = f64(L, [1.0, 2.0])
        with L.no_grad():
            y = (x * 2).sum()
        y.backward()

    msg = same_error(scenario, torch)
    assert msg == "element 0 of tensors does not require grad and does not have a grad_fn"


def test_no_grad_and_enable_grad_as_decorators(torch):
    def scenario(L):
        x = f64(L, [1.0, 2.0])

        @L.no_grad()
        def off(t):
            @L.enable_grad()
            def on(t):
                return t * 3, L.is_grad_enabled()

            return t * 2, L.is_grad_enabled(), on(t)

        y, mode, (z, inner) = off(x)
        return y, mode, z, inner, L.is_grad_enabled()

    y, mode, z, inner, after = run_both(scenario, torch)
    assert not y.requires_grad and z.requires_grad
    assert (mode, inner, after) == (False, True, True)


def test_set_grad_enabled_as_context_decorator_and_function(torch):
    def scenario(L):
        x = f64(L, [1.0, 2.0])
        with L.set_grad_enabled(False):
            a = x * 2
        after_with = L.is_grad_enabled()
        with L.set_grad_enabled(True):
            b = x * 2
        L.set_grad_enabled(False)
        as_function = L.is_grad_enabled()
        c = x * 2
        L.set_grad_enabled(True)

        @L.set_grad_enabled(False)
        def f(t):
            return t * 2, L.is_grad_enabled()

        not_yet = L.is_grad_enabled()  # decorating does not change the mode
        d, inside = f(x)
        return a, after_with, b, as_function, c, not_yet, d, inside, L.is_grad_enabled()

    a, after_with, b, as_function, c, not_yet, d, inside, end = run_both(scenario, torch)
    assert [t.requires_grad for t in (a, b, c, d)] == [False, True, False, False]
    assert (after_with, as_function, not_yet, inside, end) == (True, False, True, False, True)


def test_grad_modes_nest_and_unwind_on_exceptions(torch):
    def scenario(L):
        modes = []
        with L.no_grad():
            with L.set_grad_enabled(True):
                modes.append(L.is_grad_enabled())
                with L.no_grad():
                    modes.append(L.is_grad_enabled())
                modes.append(L.is_grad_enabled())
            modes.append(L.is_grad_enabled())
        try:
            with L.no_grad():
                raise KeyError("x")
        except KeyError:
            modes.append(L.is_grad_enabled())

        @L.no_grad()
        def boom():
            raise KeyError("y")

        try:
            boom()
        except KeyError:
            modes.append(L.is_grad_enabled())
        return tuple(modes)

    assert run_both(scenario, torch) == (True, False, True, False, True, True)


def test_inference_mode_alias(torch):
    # tracegrad's inference_mode is an alias of no_grad (inference tensors are not modelled):
    # the recording flags agree with PyTorch's
    def scenario(L):
        x = f64(L, [1.0, 2.0])
        with L.inference_mode():
            y = x * 2
            inside = L.is_grad_enabled()
        with L.inference_mode(False):
            z = x * 2

        @L.inference_mode()
        def f(t):
            return t * 2

        return y, y.grad_fn is None, inside, z, z.grad_fn.name(), f(x), L.is_grad_enabled()

    y, no_fn, inside, z, name, w, after = run_both(scenario, torch)
    assert not y.requires_grad and no_fn and not inside and z.requires_grad
    assert name == "MulBackward0" and not w.requires_grad and after


def test_backward_and_grad_inside_no_grad(torch):
    def scenario(L):
        x = f64(L, [1.0, 2.0])
        y, z, w = (x**2).sum(), (x**3).sum(), (x**3).sum()
        with L.no_grad():
            y.backward()
            (gz,) = L.autograd.grad(z, x)
            (gw,) = L.autograd.grad(w, x, create_graph=True)
            mode = L.is_grad_enabled()
        return x.grad, gz, gw, gw.grad_fn is not None, mode

    xg, gz, gw, has_fn, mode = run_both(scenario, torch)
    np.testing.assert_allclose(arr(xg), [2.0, 4.0])
    np.testing.assert_allclose(arr(gz), [3.0, 12.0])
    assert gw.requires_grad and has_fn and not gz.requires_grad and not mode


def test_inplace_on_leaf_under_no_grad_bumps_version(torch):
    # an optimizer step: allowed, bumps _version, and later graphs see the new values
    def scenario(L):
        x = f64(L, [1.0, 2.0, 3.0])
        versions = [x._version]
        with L.no_grad():
            x.mul_(2)
            versions.append(x._version)
            x -= 0.5
            versions.append(x._version)
        (x * x).sum().backward()
        return x, x.grad, x.is_leaf, tuple(versions)

    x, xg, leaf, versions = run_both(scenario, torch)
    assert versions == (0, 1, 2) and leaf
    np.testing.assert_allclose(arr(xg), 2 * (2 * np.array([1.0, 2.0, 3.0]) - 0.5))


def test_inplace_on_saved_leaf_under_no_grad_then_backward_raises(torch):
    def scenario(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = (x * x).sum()
        with L.no_grad():
            x.add_(1.0)
        y.backward()

    msg = same_error(scenario, torch)
    assert msg.startswith(f"{VERSION_ERROR} by an inplace operation: [float32 [3]] is at")
    assert "which is output" not in msg


def test_inplace_on_input_of_exp_under_no_grad_is_harmless(torch):
    # ExpBackward0 saves only its result, so changing x afterwards is fine in PyTorch
    def scenario(L):
        x = f64(L, [1.0, 2.0, 3.0])
        y = x.exp()
        with L.no_grad():
            x.add_(1.0)
        y.sum().backward()
        return x.grad

    np.testing.assert_allclose(arr(run_both(scenario, torch)), np.exp([1.0, 2.0, 3.0]))


# -- I: detach, requires_grad flags, .data ---------------------------------------------------------


def test_detach_shares_cell_and_version_counter(torch):
    def scenario(L):
        x = f64(L, [1.0, 2.0, 3.0])
        y = x.exp()
        d = y.detach()
        before = (d.is_leaf, d.requires_grad, d.grad_fn is None, d._version, y._version)
        d.add_(1)
        return before, (d._version, y._version), y, d

    before, after, y, d = run_both(scenario, torch)
    assert before == (True, False, True, 0, 0) and after == (1, 1)
    np.testing.assert_allclose(arr(y), np.exp([1.0, 2.0, 3.0]) + 1)


def test_detach_shares_cell_ours():
    y = tt.tensor([1.0, 2.0]).exp()
    assert y.detach()._cell is y._cell


def test_mutating_detached_alias_of_saved_output_raises_version_error(torch):
    def scenario(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x.exp()
        y.detach().add_(1)
        y.sum().backward()

    msg = same_error(scenario, torch)
    assert ", which is output 0 of Exp, is at version 1; expected version 0" in msg


def test_detach_of_leaf_mutation_is_visible(torch):
    def scenario(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        d = x.detach()
        d.zero_()
        return x, x._version, d._version, x.is_leaf

    x, xv, dv, leaf = run_both(scenario, torch)
    assert arr(x).tolist() == [0.0, 0.0, 0.0] and (xv, dv, leaf) == (1, 1, True)


def test_requires_grad_false_on_non_leaf_raises(torch):
    def scenario(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        (x * 2).requires_grad_(False)

    msg = same_error(scenario, torch)
    assert msg.startswith("you can only change requires_grad flags of leaf variables. If you")


def test_requires_grad_true_on_non_leaf(torch):
    def method(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        return y.requires_grad_(True) is y, y.requires_grad

    assert run_both(method, torch) == (True, True)

    def assign(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.requires_grad = True

    assert same_error(assign, torch) == "you can only change requires_grad flags of leaf variables."


def test_requires_grad_assign_false_on_non_leaf(torch):
    def scenario(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.requires_grad = False

    same_error(scenario, torch)


def test_requires_grad_on_integer_tensor_method(torch):
    def scenario(L):
        L.tensor([1, 2, 3]).requires_grad_()

    msg = same_error(scenario, torch)
    assert msg == "only Tensors of floating point dtype can require gradients"


@pytest.mark.parametrize("how", ["tensor", "zeros", "assign"])
def test_requires_grad_on_integer_tensor_other_paths(how, torch):
    def scenario(L):
        if how == "tensor":
            L.tensor([1, 2, 3], requires_grad=True)
        elif how == "zeros":
            L.zeros(3, dtype=L.int64, requires_grad=True)
        else:
            L.tensor([1, 2, 3]).requires_grad = True

    same_error(scenario, torch)


def test_integer_tensors_never_require_grad(torch):
    def scenario(L):
        i = L.tensor([1, 2, 3])
        x = L.tensor([1.5, 2.5, 3.5], requires_grad=True)
        j = (x * 2).long()
        k = L.argmax(x)
        return (
            i.requires_grad_(False).requires_grad,
            (i * 2).requires_grad,
            dtype_name(i * 2),
            j.requires_grad,
            j.grad_fn is None,
            j.is_leaf,
            k.requires_grad,
        )

    assert run_both(scenario, torch) == (False, False, "int64", False, True, True, False)


def test_data_is_a_detached_leaf(torch):
    def scenario(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        d = x.data
        return d, d.is_leaf, d.grad_fn is None, x._version

    d, leaf, no_fn, version = run_both(scenario, torch)
    assert not d.requires_grad and leaf and no_fn and version == 0


def test_data_inplace_on_saved_output_is_not_silently_wrong(torch):
    # PyTorch bypasses version tracking and returns exp(x) + 1 (wrong); tracegrad raises the
    # version error PyTorch gives for the same mutation through detach()
    def via(attr):
        def scenario(L):
            x = f64(L, [1.0, 2.0, 3.0])
            y = x.exp()
            alias = y.data if attr == "data" else y.detach()
            alias.add_(1)
            y.sum().backward()
            return x.grad

        return scenario

    wrong = outcome(via("data"), torch)
    np.testing.assert_allclose(arr(wrong), np.exp([1.0, 2.0, 3.0]) + 1)
    ours = outcome(via("data"), tt)
    expected = outcome(via("detach"), torch)
    assert isinstance(ours, Raised) and isinstance(expected, Raised)
    assert ours.type == expected.type == "RuntimeError"
    assert ours.message == normalize_torch_message(expected.message)
    assert "which is output 0 of Exp, is at version 1" in ours.message


def test_data_inplace_on_saved_leaf_raises(torch):
    # y = x * x saved x; PyTorch uses the changed x silently through .data and raises through
    # detach(); tracegrad raises in both cases, with the same message as PyTorch's detach()
    def via(attr):
        def scenario(L):
            x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
            y = x * x
            (x.data if attr == "data" else x.detach()).mul_(2)
            y.sum().backward()
            return x.grad

        return scenario

    assert arr(outcome(via("data"), torch)).tolist() == [4.0, 8.0, 12.0]
    ours = outcome(via("data"), tt)
    expected = outcome(via("detach"), torch)
    assert isinstance(ours, Raised) and isinstance(expected, Raised)
    assert ours.message == normalize_torch_message(expected.message)


def test_data_inplace_on_leaf_then_new_graph(torch):
    # the parameter update idiom: gradients agree; tracegrad counts the update as a version
    def scenario(L):
        x = f64(L, [1.0, 2.0, 3.0])
        x.data.mul_(2)
        (x * x).sum().backward()
        return x, x.grad

    x, xg = run_both(scenario, torch)
    np.testing.assert_allclose(arr(xg), [4.0, 8.0, 12.0])
    t = torch.tensor([1.0], requires_grad=True)
    t.data.mul_(2)
    assert t._version == 0  # PyTorch: .data bypasses the counter
    x = tt.tensor([1.0], requires_grad=True)
    x.data.mul_(2)
    assert x._version == 1  # tracegrad: .data shares it (see the module docstring)


def test_data_setter(torch):
    def scenario(L):
        x = f64(L, [1.0, 2.0, 3.0])
        x.data = L.tensor([5.0, 6.0, 7.0], dtype=L.float64)
        (x * x).sum().backward()
        return x, x.grad, x.is_leaf

    x, xg, leaf = run_both(scenario, torch)
    assert arr(xg).tolist() == [10.0, 12.0, 14.0] and leaf


# -- J: in-place ops and version counters ----------------------------------------------------------


@pytest.mark.parametrize(
    "op",
    ["add_", "iadd", "mul_", "zero_", "fill_", "copy_", "exp_", "clamp_", "setitem_tensor"],
)
def test_inplace_on_leaf_requiring_grad(op, torch):
    def scenario(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        if op == "add_":
            x.add_(1)
        elif op == "iadd":
            x += 1
        elif op == "mul_":
            x.mul_(x)
        elif op == "zero_":
            x.zero_()
        elif op == "fill_":
            x.fill_(2.0)
        elif op == "copy_":
            x.copy_(L.tensor([4.0, 5.0, 6.0]))
        elif op == "exp_":
            x.exp_()
        elif op == "clamp_":
            x.clamp_(0.0, 1.0)
        else:
            x[L.tensor([0, 2])] = 3.0

    msg = same_error(scenario, torch)
    assert msg == "a leaf Variable that requires grad is being used in an in-place operation."


@pytest.mark.parametrize("view", ["slice", "view", "transpose"])
def test_inplace_on_view_of_leaf_requiring_grad(view, torch):
    def scenario(L):
        x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        if view == "slice":
            x[:1].mul_(3)
        elif view == "view":
            x.view(4).add_(1)
        else:
            x.T.add_(1)

    msg = same_error(scenario, torch)
    assert msg == (
        "a view of a leaf Variable that requires grad is being used in an in-place operation."
    )


@pytest.mark.parametrize("view", ["select_2d", "select_1d", "view_then_select", "slice_of_slice"])
def test_inplace_on_chained_view_of_leaf(view, torch):
    def scenario(L):
        if view == "select_2d":
            L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)[0].add_(3)
        elif view == "select_1d":
            L.tensor([1.0, 2.0, 3.0], requires_grad=True)[0].fill_(3.0)
        elif view == "view_then_select":
            L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True).view(2, 2)[0].add_(1)
        else:
            L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)[:, :1][1:].zero_()

    same_error(scenario, torch)


@pytest.mark.parametrize("index", [0, (0, 1), slice(1, None)])
def test_setitem_basic_index_on_leaf_requiring_grad(index, torch):
    def scenario(L):
        x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        x[index] = 5.0

    same_error(scenario, torch)


@pytest.mark.parametrize("mutation", ["add_", "mul_", "twice", "setitem"])
def test_version_error_on_saved_output(mutation, torch):
    def scenario(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x.exp()
        if mutation == "add_":
            y.add_(1)
        elif mutation == "mul_":
            y.mul_(2)
        elif mutation == "twice":
            y.add_(1)
            y.sub_(1)
        else:
            y[0] = 0.0
        y.sum().backward()

    msg = same_error(scenario, torch)
    version = 2 if mutation == "twice" else 1
    assert msg == (
        f"{VERSION_ERROR} by an inplace operation: [float32 [3]], which is output 0 of Exp, is "
        f"at version {version}; expected version 0 instead. Hint: enable anomaly detection to "
        "find the operation that failed to compute its gradient, with "
        "torch.autograd.set_detect_anomaly(True, check_nan=False)."
    )


def test_version_error_without_producer_for_leaf(torch):
    def scenario(L):
        x = L.tensor([[1.0, 2.0, 3.0]], dtype=L.float64, requires_grad=True)
        y = (x * x).sum()
        with L.no_grad():
            x.zero_()
        y.backward()

    msg = same_error(scenario, torch)
    assert "[float64 [1, 3]] is at version 1; expected version 0 instead. Hint:" in msg


@pytest.mark.parametrize("producer", ["mul", "sin"])
def test_version_error_names_current_grad_fn(producer, torch):
    # z = y * y saved y; y.add_ rebased y onto AddBackward0: PyTorch says "output 0 of Add"
    def scenario(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 2 if producer == "mul" else x.sin()
        z = y * y
        y.add_(1)
        z.sum().backward()

    same_error(scenario, torch)


def test_inplace_on_unsaved_intermediate_rebases_grad_fn(torch):
    def scenario(L):
        x = f64(L, [1.0, 2.0, 3.0])
        y = x + 2
        names = [y.grad_fn.name()]
        y.add_(1)
        names.append(y.grad_fn.name())
        y.mul_(x)
        names.append(y.grad_fn.name())
        y.exp_()
        names.append(y.grad_fn.name())
        versions = y._version
        y.sum().backward()
        return x.grad, tuple(names), versions, y.is_leaf

    xg, names, versions, leaf = run_both(scenario, torch)
    assert names == ("AddBackward0", "AddBackward0", "MulBackward0", "ExpBackward0")
    assert versions == 3 and not leaf
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(arr(xg), np.exp((x + 3) * x) * (2 * x + 3))


@pytest.mark.parametrize("producer", ["mul", "sin", "setitem_after_mul"])
def test_inplace_on_output_of_node_that_saves_only_inputs(producer, torch):
    def scenario(L):
        x = f64(L, [1.0, 2.0, 3.0])
        y = x * 2 if producer != "sin" else x.sin()
        if producer == "setitem_after_mul":
            y[1] = 10.0
        else:
            y.add_(1)
        (y * y).sum().backward()
        return x.grad, y._version

    run_both(scenario, torch)


@pytest.mark.parametrize("grad_mode", ["requires_grad", "no_grad", "plain"])
def test_inplace_on_view_of_non_leaf_is_not_supported(grad_mode, torch):
    # PyTorch writes through the view (and rebases the base onto CopySlices); the shim refuses
    # with a message naming the out-of-place alternative
    def scenario(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=grad_mode != "plain")
        if grad_mode == "no_grad":
            with L.no_grad():
                y = x * 1
                y[:2].mul_(3)
            return y
        y = x * 1
        y[:2].mul_(3)
        if grad_mode == "requires_grad":
            y.sum().backward()
            return x.grad
        return y

    theirs = outcome(scenario, torch)
    expected = [3.0, 3.0, 1.0] if grad_mode == "requires_grad" else [3.0, 6.0, 3.0]
    assert arr(theirs).tolist() == expected
    with pytest.raises(NotImplementedError, match="out-of-place") as info:
        scenario(tt)
    assert "in-place on a view" in str(info.value)


def test_version_counter_increments(torch):
    def scenario(L):
        x = L.tensor([1.0, 2.0, 3.0])
        versions = [x._version]
        x.add_(1)
        versions.append(x._version)
        x.mul_(2)
        versions.append(x._version)
        x[0] = 1.0
        versions.append(x._version)
        x.zero_()
        versions.append(x._version)
        x += 1
        versions.append(x._version)
        x.fill_(2.0)
        versions.append(x._version)
        x.copy_(L.tensor([1.0, 1.0, 1.0]))
        versions.append(x._version)
        y = x + 1
        versions.append(y._version)
        return tuple(versions), x

    versions, x = run_both(scenario, torch)
    assert versions == (0, 1, 2, 3, 4, 5, 6, 7, 0)


# -- K: other behaviours ---------------------------------------------------------------------------


@pytest.mark.parametrize("other", ["scalar", "zeros_like"])
def test_where_sqrt_at_zero_gives_nan_gradient(other, torch):
    # the untaken branch's derivative (1 / (2 sqrt(0)) times 0) is nan in both libraries
    def scenario(L):
        x = f64(L, [0.0, 1.0, 4.0])
        y = L.where(x > 0, L.sqrt(x), 0.0 if other == "scalar" else L.zeros_like(x))
        y.sum().backward()
        return x.grad

    with np.errstate(all="ignore"):  # tracegrad's eager NumPy backward warns; torch is silent
        g = run_both(scenario, torch)
    assert np.isnan(arr(g)[0]) and arr(g)[1:].tolist() == [0.5, 0.25]


def test_double_where_avoids_nan(torch):
    def scenario(L):
        x = f64(L, [0.0, 1.0, 4.0])
        safe = L.where(x > 0, x, L.ones_like(x))
        L.where(x > 0, L.sqrt(safe), 0.0).sum().backward()
        return x.grad

    assert arr(run_both(scenario, torch)).tolist() == [0.0, 0.5, 0.25]


# -- Tensor.__setitem__ ----------------------------------------------------------------------------


def test_setitem_without_grad(torch):
    def scenario(L):
        x = L.tensor([1.0, 2.0, 3.0, 4.0], dtype=L.float64)
        x[1] = 10.0
        x[2:] = L.tensor([7.0, 8.0], dtype=L.float64)
        x[...] = x * 2
        return x, x._version, x.is_leaf

    x, version, leaf = run_both(scenario, torch)
    assert arr(x).tolist() == [2.0, 20.0, 14.0, 16.0] and version == 3 and leaf


def test_setitem_casts_to_the_target_dtype(torch):
    def scenario(L):
        x = L.zeros(4)
        x[1] = L.tensor(2.5, dtype=L.float64)
        x[2] = 7
        i = L.zeros(3, dtype=L.int64)
        i[0] = 3
        return x, i

    x, i = run_both(scenario, torch)
    assert arr(x).tolist() == [0.0, 2.5, 7.0, 0.0] and arr(i).tolist() == [3, 0, 0]


BASIC_INDICES = [
    1,
    -1,
    slice(1, 3),
    slice(None, None, 2),
    (slice(None), 0),
    (0, slice(None, None, 2)),
    (slice(1, None), slice(None, 3)),
    Ellipsis,
    (Ellipsis, 1),
    (None, 1),
    (1, 2),
]


@pytest.mark.parametrize("index", BASIC_INDICES, ids=repr)
@pytest.mark.parametrize("value", ["tensor", "scalar_tensor", "python"])
def test_setitem_gradients_basic_indices(index, value, torch):
    rng = np.random.default_rng(0)
    xv = rng.normal(size=(3, 4))
    wv = rng.normal(size=(3, 4))
    target_shape = xv[index].shape
    vv = rng.normal(size=target_shape)

    def scenario(L):
        x = L.tensor(xv, dtype=L.float64, requires_grad=True)
        w = L.tensor(wv, dtype=L.float64)
        y = x.clone()
        if value == "tensor":
            v = L.tensor(vv, dtype=L.float64, requires_grad=True)
            y[index] = v * v
        elif value == "scalar_tensor":
            v = L.tensor(1.5, dtype=L.float64, requires_grad=True)
            y[index] = L.sin(v)
        else:
            v = None
            y[index] = 0.25
        loss = (y * w).sum() + (y**3).sum()
        loss.backward()
        return y, x.grad, None if v is None else v.grad, y._version

    y, xg, vg, version = run_both(scenario, torch)
    assert version == 1
    # closed form: x's gradient vanishes where the assignment overwrote it
    yv = arr(y)
    covered = np.zeros(xv.shape, bool)
    covered[index] = True
    expected = np.where(covered, 0.0, wv + 3 * xv**2)
    np.testing.assert_allclose(arr(xg), expected, rtol=1e-12)
    if value == "tensor":
        np.testing.assert_allclose(arr(vg), ((wv + 3 * yv**2)[index]) * 2 * vv, rtol=1e-12)


@pytest.mark.parametrize(
    "index", ["int_tensor", "bool_mask", "list"], ids=["int_tensor", "bool_mask", "list"]
)
def test_setitem_gradients_advanced_indices(index, torch):
    def scenario(L):
        x = L.zeros(2, 3, dtype=L.float64)
        if index == "int_tensor":
            idx = L.tensor([1, 0])
        elif index == "bool_mask":
            idx = L.tensor([[True, False, True], [False, True, False]])
        else:
            idx = [1]
        v = L.tensor(3.0, dtype=L.float64, requires_grad=True)
        x[idx] = v * v
        (x * L.arange(6, dtype=L.float64).reshape(2, 3)).sum().backward()
        return x, v.grad, x.requires_grad, x.is_leaf

    x, vg, rg, leaf = run_both(scenario, torch)
    assert rg and not leaf
    # d/dv of sum(v^2 * positions written) = 2 v * (sum of the written positions)
    written = {"int_tensor": 15.0, "bool_mask": 6.0, "list": 12.0}[index]
    assert vg.item() == 2 * 3.0 * written


def test_setitem_into_plain_tensor_with_grad_values(torch):
    def scenario(L):
        x = L.zeros(2, 3, dtype=L.float64)
        v = f64(L, [1.0, 2.0, 3.0])
        x[0] = v
        x[1, 1:] = v[:2] * v[1:]
        (x**2).sum().backward()
        return x, v.grad, x.is_leaf

    x, vg, leaf = run_both(scenario, torch)
    assert arr(vg).tolist() == [10.0, 44.0, 30.0] and not leaf


def test_setitem_under_no_grad(torch):
    def scenario(L):
        x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        with L.no_grad():
            x[0] = 5.0
            y[1] = 7.0
        return x, x._version, x.is_leaf, y, y.grad_fn.name(), y._version

    x, xv, leaf, y, name, yv = run_both(scenario, torch)
    assert arr(x).tolist() == [5.0, 2.0, 3.0] and (xv, leaf, yv) == (1, True, 1)
    assert name == "MulBackward0"


def test_setitem_on_saved_output_raises_version_error(torch):
    def scenario(L):
        x = f64(L, [1.0, 2.0, 3.0])
        y = x.exp()
        y[0] = 0.0
        y.sum().backward()

    assert "which is output 0 of Exp, is at version 1" in same_error(scenario, torch)


@pytest.mark.parametrize("grad", [False, True])
def test_setitem_shape_mismatch(grad, torch):
    def scenario(L):
        x = L.zeros(4)
        x[:2] = L.ones(3, requires_grad=grad)

    same_error(scenario, torch)


@pytest.mark.parametrize("case", ["copy_slices", "index_put", "copy_backwards"])
def test_grad_fn_names_of_setitem_and_create_graph(case, torch):
    def scenario(L):
        x = f64(L, [1.0, 2.0, 3.0])
        if case == "copy_backwards":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                (x * x).sum().backward(create_graph=True)
            return x.grad.grad_fn.name()
        y = x.clone()
        if case == "copy_slices":
            y[1:] = 0.0
        else:
            y[L.tensor([0, 2])] = 0.0
        return y.grad_fn.name()

    run_both(scenario, torch)


def test_version_stamps_only_what_pytorch_saves():
    for M in libraries():
        X = M.tensor([[1.0, 2.0], [3.0, 4.0]])
        w = M.tensor([1.0, 2.0], requires_grad=True)
        out = (X @ w).sum()  # w's gradient reads X only
        with M.no_grad():
            w.sub_(0.1)
        out.backward()
        np.testing.assert_array_equal(values(w.grad), [4.0, 6.0])
        x = M.tensor([1.0, 2.0], requires_grad=True)
        y = (x * 3).sum()  # x's gradient reads the 3 only
        with M.no_grad():
            x.mul_(2)
        y.backward()
        np.testing.assert_array_equal(values(x.grad), [3.0, 3.0])
    # and a value that is read still raises
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with tt.no_grad():
        x.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_in_place_on_results_that_are_not_views():
    for M in libraries():
        x = M.tensor([[1.0, 5.0], [3.0, 2.0]], requires_grad=True)
        y = x.max(1).values
        y.add_(1)
        z = x.T.contiguous()
        z.add_(1)
        (y.sum() + z.sum()).backward()
        np.testing.assert_array_equal(values(x.grad), [[1.0, 2.0], [2.0, 1.0]])


def test_a_tensor_inside_jit_is_refused_not_baked_in():
    w = tt.tensor([1.0, 2.0], requires_grad=True)

    def f(x):
        return (x * w).sum()

    with pytest.raises(TypeError, match="inside a function traced by jit or make_graph"):
        tg.jit(f)(np.ones(2))
    np.testing.assert_array_equal(tg.grad(f)(np.ones(2)), [1.0, 2.0])  # read at call time
    with tt.no_grad():
        w.mul_(10)
    np.testing.assert_array_equal(tg.grad(f)(np.ones(2)), [10.0, 20.0])
