"""Hypothesis profiles: `dev` (default), `ci` (derandomized and bounded; .ci/run selects it)
and `thorough` (many examples, for a long local run).

The oracles: tests compare against PyTorch, JAX, HIPS autograd and SciPy where they are
installed (`pytest.importorskip`), so a plain local `pytest` without them skips those tests.
With `TRACEGRAD_REQUIRE_ORACLES=1` (.ci/run sets it) a missing oracle instead stops the run
before any test, naming it, with exit status 4: CI cannot stay green while they skip.
"""

import importlib
import importlib.metadata
import os
import sys

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile(
    "ci",
    max_examples=20,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("thorough", max_examples=500, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

REQUIRE_ORACLES = "TRACEGRAD_REQUIRE_ORACLES"
# the modules the oracle tests import (with pytest.importorskip), by the package that gives them
ORACLES = {
    "torch": ("torch",),
    "jax": ("jax", "jax.numpy"),
    "autograd": ("autograd", "autograd.numpy"),
    "scipy": ("scipy.differentiate", "scipy.optimize", "scipy.special"),
    "sympy": ("sympy",),
    # the backends (tests/backends): not oracles, but their tests must not skip in CI either
    "dask": ("dask.array", "distributed"),
    "array-api-strict": ("array_api_compat", "array_api_strict"),
}


def _oracles_required() -> bool:
    return os.environ.get(REQUIRE_ORACLES, "").strip() not in ("", "0")


def _import_failures() -> dict[str, str]:
    """{package: why it cannot be imported} for the oracles that are missing or broken."""
    failures = {}
    for package, modules in ORACLES.items():
        for module in modules:
            try:
                importlib.import_module(module)
            except Exception as e:  # noqa: BLE001 - a broken install counts as missing
                failures[package] = f"import {module}: {type(e).__name__}: {e}"
                break
    return failures


def pytest_sessionstart(session):
    if not _oracles_required():
        return
    failures = _import_failures()
    if failures:
        lines = "\n".join(f"  {package}: {why}" for package, why in failures.items())
        pytest.exit(
            f"{REQUIRE_ORACLES}=1 and {len(failures)} oracle(s) cannot be imported, so their "
            f"tests would skip: {', '.join(failures)}\n{lines}\n"
            "Install them (.ci/run does), or unset the flag to let their tests skip.",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:  # importable without package metadata
        return getattr(sys.modules.get(package), "__version__", "(version unknown)")


def pytest_report_header(config):
    if _oracles_required():  # all imported at session start
        versions = ", ".join(f"{p} {_version(p)}" for p in ORACLES)
        return f"oracles (required by {REQUIRE_ORACLES}=1): {versions}"
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A shim test whose only check is `run_both`'s comparison with torch is skipped, not
    passed, where torch is missing (tests/shim/torch_oracle.py)."""
    oracle = sys.modules.get("tests.shim.torch_oracle")
    if oracle is not None:
        oracle.forget_unread()
    result = yield  # a failing test raises here and stays failed
    if oracle is not None:
        oracle.skip_if_nothing_was_checked()
    return result
