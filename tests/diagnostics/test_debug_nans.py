"""`tg.debug_nans` / `tg.debug_infs`: the first NaN (inf) born raises FloatingPointError naming
the primitive, for a backward node the forward primitive and the user's line; forward and
backward, eager `tg.grad`, interpreted graphs, `tg.jit`, and the tensors' `.backward()`."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.torch as torch
from tests.diagnostics.helpers import line_of

HERE = __file__


def sqrt_where(x):
    return np.where(x > 0, np.sqrt(x), 0.0)  # LINE: sqrt_where


def safe_sqrt_where(x):
    safe = np.where(x > 0, x, 1.0)
    return np.where(x > 0, np.sqrt(safe), 0.0)


def norm(x):
    return np.sqrt(np.sum(x**2))  # LINE: norm


def log_shifted(x):
    return np.sum(np.log(x - 1.0))  # LINE: log


def reciprocal_sum(x):
    return np.sum(1.0 / x)  # LINE: reciprocal


@pytest.fixture(autouse=True)
def _switches_off():
    """Each test starts with the switches off and leaves them as it found them; NumPy's own
    RuntimeWarnings (which pytest turns into errors here) are silenced: the tests read
    tracegrad's FloatingPointError."""
    saved = (tg.config.debug_nans, tg.config.debug_infs, tg.config.provenance)
    tg.config.debug_nans = tg.config.debug_infs = tg.config.provenance = False
    with np.errstate(all="ignore"):
        yield
    tg.config.debug_nans, tg.config.debug_infs, tg.config.provenance = saved


def _where_message(err, step_in_message: bool) -> None:
    text = str(err.value)
    first = text.splitlines()[0]
    assert "invalid value (nan) produced in the backward pass" in first
    assert "in the derivative of `sqrt` created at " + line_of(HERE, "sqrt_where") in first
    assert "np.where(x > 0, np.sqrt(x), 0.0)" in first  # the user's code, quoted
    assert ("`multiply` in its vjp rule" in first) == step_in_message
    assert "Cause: 0 * inf. The cotangent reaching `sqrt` is 0 here" in text
    assert "double-where idiom" in text
    assert "safe_x = np.where(x > 0, x, 1.0)" in text


# -- forward -----------------------------------------------------------------------------------


def test_forward_nan_in_grad_names_the_primitive_and_line():
    with tg.debug_nans(), pytest.raises(FloatingPointError) as err:
        tg.grad(log_shifted)(np.array([2.0, 0.5]))
    first, detail = str(err.value).splitlines()[:2]
    assert first.startswith("tracegrad (debug_nans): invalid value (nan) produced by `log` at ")
    assert line_of(HERE, "log") in first
    assert detail == "log(-0.5) = nan at index (1,)."


def test_forward_nan_inside_jit_names_the_traced_line():
    g = tg.jit(log_shifted)
    assert np.isnan(g(np.array([2.0, 0.5])))  # compiled with the switch off: no check
    with tg.debug_nans(), pytest.raises(FloatingPointError) as err:
        g(np.array([2.0, 0.5]))
    first, detail = str(err.value).splitlines()[:2]
    assert first.startswith("tracegrad (debug_nans): invalid value (nan) produced by `log` at ")
    assert line_of(HERE, "log") in first
    assert detail == "log(-0.5) = nan at index (1,)."


def test_forward_nan_in_interpreted_graph():
    graph = tg.make_graph(log_shifted)(np.ones(2))
    with tg.debug_nans(), pytest.raises(FloatingPointError, match="produced by `log` at "):
        graph(np.array([0.5, 2.0]))


def test_forward_nan_eager_numpy_call():
    with tg.debug_nans(), pytest.raises(FloatingPointError, match=r"`arcsin` at .*test_debug"):
        tg.numpy.arcsin(np.array([0.5, 2.0]))


def test_off_by_default_returns_nan():
    assert np.isnan(tg.grad(sqrt_where)(0.0))


# -- backward: the where/sqrt pattern ----------------------------------------------------------


def test_where_sqrt_in_eager_grad():
    with tg.debug_nans(), pytest.raises(FloatingPointError) as err:
        tg.grad(sqrt_where)(0.0)
    _where_message(err, step_in_message=False)


def test_where_sqrt_in_jitted_grad():
    g = tg.jit(tg.grad(sqrt_where))
    assert np.isnan(g(0.0))  # compiled and cached with the switch off
    with tg.debug_nans(), pytest.raises(FloatingPointError) as err:
        g(0.0)
    _where_message(err, step_in_message=True)


def test_where_sqrt_in_interpreted_vjp_fn():
    with tg.debug_nans():
        _, vjp_fn = tg.vjp(sqrt_where, 0.0)  # vjp_fn runs the backward graph, interpreted
        with pytest.raises(FloatingPointError) as err:
            vjp_fn(1.0)
    _where_message(err, step_in_message=True)


def test_where_sqrt_in_tensor_backward():
    x = torch.tensor([0.0, 4.0], requires_grad=True)
    with tg.debug_nans():
        y = torch.where(x > 0, torch.sqrt(x), 0.0)  # LINE: tensor_where
        with pytest.raises(FloatingPointError) as err:
            y.sum().backward()
    first = str(err.value).splitlines()[0]
    assert "in the derivative of `sqrt` created at " + line_of(HERE, "tensor_where") in first
    assert "The cotangent of input 0 of `sqrt` is nan at index (0,)" in str(err.value)
    assert "double-where idiom" in str(err.value)


def test_where_sqrt_in_tensor_backward_create_graph():
    x = torch.tensor([0.0, 4.0], requires_grad=True)
    with tg.debug_nans():
        y = torch.where(x > 0, torch.sqrt(x), 0.0)  # LINE: tensor_where_cg
        with pytest.raises(FloatingPointError) as err:
            torch.autograd.grad(y.sum(), x, create_graph=True)
    first = str(err.value).splitlines()[0]
    assert "derivative of `sqrt` created at " + line_of(HERE, "tensor_where_cg") in first


def test_double_where_fix_raises_nothing():
    with tg.debug_nans():
        assert tg.grad(safe_sqrt_where)(0.0) == 0.0
        assert tg.jit(tg.grad(safe_sqrt_where))(0.0) == 0.0


# -- backward: the norm-at-zero pattern --------------------------------------------------------


@pytest.mark.parametrize("jitted", [False, True])
def test_norm_at_zero(jitted):
    g = tg.grad(norm)
    g = tg.jit(g) if jitted else g
    with tg.debug_nans(), pytest.raises(FloatingPointError) as err:
        g(np.zeros(3))
    text = str(err.value)
    at = line_of(HERE, "norm")
    assert f"in the derivative of `power` created at {at}" in text.splitlines()[0]
    assert f"An infinite cotangent reached `power` from the derivative of `sqrt` at {at}" in text
    assert "norm-at-zero pattern" in text
    assert "norm = np.where(sq > 0, np.sqrt(safe), 0.0)" in text


# -- the rule: only NaNs born in an operation --------------------------------------------------


def test_no_false_alarm_for_nan_inputs():
    x = np.array([np.nan, 1.0, 2.0])
    with tg.debug_nans(), tg.debug_infs():
        g = tg.grad(lambda v: np.sum(np.sin(v) * 2.0))(x)
        assert np.isnan(g[0]) and np.isfinite(g[1:]).all()
        assert np.isnan(tg.jit(lambda v: v * 3.0)(x)[0])
        t = torch.tensor(x, requires_grad=True)
        (t.sin() * 2.0).sum().backward()
        assert np.isnan(t.grad.numpy()[0]) and np.isfinite(t.grad.numpy()[1:]).all()


def test_inf_minus_inf_is_born_nan():
    with tg.debug_nans(), pytest.raises(FloatingPointError, match=r"`subtract` at .*test_debug"):
        tg.numpy.subtract(np.array([np.inf]), np.array([np.inf]))


def test_debug_infs_forward_and_backward():
    with tg.debug_infs(), pytest.raises(FloatingPointError) as err:
        tg.grad(reciprocal_sum)(np.array([1.0, 0.0]))
    first = str(err.value).splitlines()[0]
    assert first.startswith("tracegrad (debug_infs): infinite value (inf) produced by `divide`")
    assert line_of(HERE, "reciprocal") in first
    with tg.debug_infs(), pytest.raises(FloatingPointError) as err:
        # sqrt(0) is finite; its derivative 0.5 / 0 is not (jit checks every backward node;
        # eager tg.grad checks each rule's results, where 0 * inf is already nan)
        tg.jit(tg.grad(sqrt_where))(0.0)
    first = str(err.value).splitlines()[0]
    assert "infinite value (inf) produced in the backward pass" in first
    assert "derivative of `sqrt` created at " + line_of(HERE, "sqrt_where") in first


# -- the switches ------------------------------------------------------------------------------


def test_config_switch_and_context_manager_restore():
    assert not tg.config.debug_nans
    with tg.debug_nans():
        assert tg.config.debug_nans
        with tg.debug_nans(False):
            assert not tg.config.debug_nans
        assert tg.config.debug_nans
    assert not tg.config.debug_nans
    tg.config.debug_nans = True
    with pytest.raises(FloatingPointError, match="produced by `log`"):
        tg.grad(log_shifted)(np.array([0.5]))


def test_decorator_form():
    @tg.debug_nans()
    def run():
        return tg.grad(log_shifted)(np.array([0.5]))

    with pytest.raises(FloatingPointError):
        run()
    assert not tg.config.debug_nans


@pytest.mark.parametrize("var", ["TRACEGRAD_DEBUG_NANS", "TRACEGRAD_DEBUG_INFS"])
def test_environment_variables(var):
    code = (
        "import numpy as np, tracegrad as tg\n"
        "np.seterr(all='ignore')\n"
        "try:\n"
        "    tg.grad(lambda x: np.sum(np.log(x) * x))(np.array([0.0]))\n"
        "except FloatingPointError as e:\n"
        "    print('raised:', str(e).splitlines()[0])\n"
    )
    env = dict(os.environ, **{var: "1"})
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    kind = "nan" if var.endswith("NANS") else "inf"
    assert f"raised: tracegrad (debug_{kind}s)" in out.stdout, out.stderr
