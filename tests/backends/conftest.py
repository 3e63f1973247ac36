"""The backend tests' shared fixture: JAX in 64 bits (NumPy's float64 results) while a test
that asks for it runs, restored after."""

import pytest


@pytest.fixture
def x64():
    jax = pytest.importorskip("jax")
    old = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", old)
