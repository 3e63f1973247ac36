"""jit on JAX arrays (through jax.numpy, compiled by jax.jit) and `export(..., xp="jax.numpy")`,
whose module runs under jax.jit in a process without tracegrad."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tracegrad as tg
from tests.backends.helpers import assert_close

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


pytestmark = pytest.mark.usefixtures("x64")


def loss(w, x, y):
    z = x @ w
    return np.mean(np.logaddexp(0.0, z) - y * z) + 0.01 * np.sum(w**2)


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((30, 4))
    return rng.standard_normal(4), x, (x[:, 0] > 0).astype(np.float64)


def test_jax_arrays_run_through_jax_numpy_and_come_back_as_jax_arrays():
    w, x, y = _data()
    step = tg.jit(tg.value_and_grad(loss))
    value, grad = step(w, jnp.asarray(x), jnp.asarray(y))
    assert isinstance(value, jax.Array) and isinstance(grad, jax.Array)
    want_value, want_grad = tg.value_and_grad(loss)(w, x, y)
    assert_close(value, want_value)
    assert_close(grad, want_grad)


def test_gradient_of_indexing_runs_as_a_functional_scatter():
    x = np.random.default_rng(1).standard_normal((5, 3))
    idx = np.array([4, 0, 4])

    def f(x):
        return np.sum(np.sin(x[idx]) * x[idx])

    assert_close(tg.jit(tg.grad(f))(jnp.asarray(x)), tg.grad(f)(x))


def test_export_for_jax_runs_under_jax_jit_without_tracegrad(tmp_path):
    w, x, y = _data()
    step = tg.jit(tg.value_and_grad(loss))
    path = step.lower(w, x, y).export(tmp_path / "step.py", xp="jax.numpy")
    text = path.read_text()
    assert "import tracegrad" not in text and "from tracegrad" not in text
    for name, a in (("w", w), ("x", x), ("y", y)):
        np.save(tmp_path / f"{name}.npy", a)
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        import jax
        jax.config.update("jax_enable_x64", True)
        import numpy as np
        import step
        args = [np.load({str(tmp_path)!r} + f"/{{n}}.npy") for n in "wxy"]
        value, grad = jax.jit(getattr(step, step.__all__[0]))(*args)
        assert not any(m.startswith("tracegrad") for m in sys.modules)
        np.save({str(tmp_path)!r} + "/value.npy", np.asarray(value))
        np.save({str(tmp_path)!r} + "/grad.npy", np.asarray(grad))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    want_value, want_grad = tg.value_and_grad(loss)(w, x, y)
    assert_close(np.load(tmp_path / "value.npy"), want_value)
    assert_close(np.load(tmp_path / "grad.npy"), want_grad)


def test_export_names_an_unknown_namespace(tmp_path):
    lowered = tg.jit(np.sin).lower(np.ones(3))
    with pytest.raises(ValueError, match=r"export: xp must name one of .*'jax.numpy'.*got 'torch'"):
        lowered.export(tmp_path / "m.py", xp="torch")


def test_cupy_runs_where_a_gpu_is():
    cp = pytest.importorskip("cupy")
    try:
        cp.cuda.runtime.getDeviceCount()
    except Exception:  # CuPy installed without a usable GPU
        pytest.skip("CuPy is installed but no GPU is usable")
    w, x, y = _data()
    value, grad = tg.jit(tg.value_and_grad(loss))(w, cp.asarray(x), cp.asarray(y))
    want_value, want_grad = tg.value_and_grad(loss)(w, x, y)
    assert_close(cp.asnumpy(value), want_value)
    assert_close(cp.asnumpy(grad), want_grad)


def test_scipy_special_functions_run_as_jax_scipy_special():
    sp = pytest.importorskip("scipy.special")
    import tracegrad.scipy.special as tsp

    x = np.random.default_rng(5).uniform(0.1, 2.0, (8, 3))

    def f(x):
        return np.sum(sp.erf(x) * sp.gammaln(x + 1)) + np.sum(tsp.logsumexp(x, axis=1) ** 2)

    assert_close(tg.jit(f)(jnp.asarray(x)), f(x))
    assert_close(tg.jit(tg.grad(f))(jnp.asarray(x)), tg.grad(f)(x))
