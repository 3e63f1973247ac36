"""docs/complex.md: its code blocks run (each asserts what the page says), and the numbers the
page states for each convention are the oracles' own: JAX's for `tg.grad`, PyTorch's for the
tensors."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.torch as tt

DOCS = pathlib.Path(__file__).resolve().parent.parent / "docs" / "complex.md"


def test_the_code_blocks_of_the_page_run():
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    assert len(blocks) >= 6
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOCS), "exec"), namespace)  # the blocks assert their results


def test_the_table_of_the_page_holds_for_jax_and_torch():
    """The table's rows, against the libraries they are named after."""
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    torch = pytest.importorskip("torch")
    jax.config.update("jax_enable_x64", True)
    z = np.array([1 + 1j, 0.5 - 2j])
    ours = tg.grad(lambda v: np.sum(np.abs(v) ** 2))(z)
    theirs = jax.grad(lambda v: jnp.sum(jnp.abs(v) ** 2))(z)
    np.testing.assert_allclose(ours, np.asarray(theirs))
    np.testing.assert_allclose(ours, 2 * np.conj(z))
    for lib in (tt, torch):
        t = lib.tensor(z, requires_grad=True)
        (t.abs() ** 2).sum().backward()
        np.testing.assert_allclose(t.grad.detach().numpy(), 2 * z)
    # vjp of a holomorphic function: v f'(z) (JAX) and v conj(f'(z)) (PyTorch)
    seed = 0.5 - 1j
    assert (
        tg.vjp(lambda v: v * v, 1 + 1j)[1](seed)[0] == jax.vjp(lambda v: v * v, 1 + 1j)[1](seed)[0]
    )
    for lib in (tt, torch):
        w = lib.tensor(1 + 1j, dtype=lib.complex128, requires_grad=True)
        (g,) = lib.autograd.grad(w * w, w, lib.tensor(seed, dtype=lib.complex128))
        assert np.isclose(g.item(), seed * np.conj(2 * (1 + 1j)))
    # holomorphic=True: JAX's derivative
    assert tg.grad(lambda v: v * v, holomorphic=True)(1 + 1j) == jax.grad(
        lambda v: v * v, holomorphic=True
    )(1 + 1j)


def test_the_error_rows_of_the_table_hold_for_jax_and_torch():
    """A complex output without a seed, and a complex seed for a real output: the errors the
    table names, raised by tracegrad as by the library of its convention."""
    jax = pytest.importorskip("jax")
    torch = pytest.importorskip("torch")
    jax.config.update("jax_enable_x64", True)
    for grad in (tg.grad, jax.grad):
        with pytest.raises(TypeError, match="holomorphic=True"):
            grad(lambda v: v * v)(1 + 1j)
    for vjp in (tg.vjp, jax.vjp):
        with pytest.raises(ValueError, match="complex128"):
            vjp(lambda x: x * 2.0, 1.0)[1](1 + 1j)
    for lib in (tt, torch):
        w = lib.tensor(1 + 1j, dtype=lib.complex128, requires_grad=True)
        with pytest.raises(RuntimeError, match="only for real scalar outputs"):
            (w * w).backward()
        x = lib.tensor(1.0, dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match="both grad_output and output are required"):
            (x * 2).backward(lib.tensor(1j, dtype=lib.complex128))


def test_the_page_lists_every_complex_function_of_the_tensors():
    text = DOCS.read_text()
    for name in ("real", "imag", "conj", "conj_physical", "resolve_conj", "is_conj", "angle"):
        assert f"`z.{name}" in text and hasattr(tt.Tensor, name), name
    for name in ("sgn", "view_as_real", "view_as_complex", "complex", "polar"):
        assert f"`torch.{name}`" in text and callable(getattr(tt, name)), name
