"""docs/linalg.md: its code blocks run (each asserts what the page says), and the page's
claims about the backward graph hold in the code `jit` generates."""

from __future__ import annotations

import pathlib
import re

import numpy as np

import tracegrad as tg

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "linalg.md"


def test_the_code_blocks_of_the_page_run():
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, str(DOCS), "exec"), {})  # the blocks assert their results


def _nll(K, y):
    return 0.5 * y @ np.linalg.solve(K, y) + 0.5 * np.linalg.slogdet(K)[1]


def test_the_gradient_factorises_as_the_page_says():
    """jit(grad) of solve + slogdet: the forward solve, solve's vjp (a solve of K^T, no
    inverse) and slogdet's vjp (one inverse); slogdet's own value is unused and dropped."""
    rng = np.random.default_rng(0)
    b = rng.standard_normal((6, 6))
    K, y = b @ b.T + 6 * np.eye(6), rng.standard_normal(6)
    source = tg.jit(tg.grad(_nll)).lower(K, y).source
    assert source.count("np.linalg.solve(") == 2
    assert source.count("np.linalg.inv(") == 1
    assert "slogdet" not in source
    a = np.linalg.solve(K, y)
    want = 0.5 * (np.linalg.inv(K) - np.outer(a, a)).T
    np.testing.assert_allclose(tg.jit(tg.grad(_nll))(K, y), want, rtol=1e-12)


def test_solve_alone_forms_no_inverse():
    rng = np.random.default_rng(1)
    K, y = rng.standard_normal((5, 5)) + 5 * np.eye(5), rng.standard_normal(5)
    source = tg.jit(tg.grad(lambda K: np.sum(np.linalg.solve(K, y) ** 2))).lower(K).source
    assert "inv(" not in source
    assert source.count("np.linalg.solve(") == 2
