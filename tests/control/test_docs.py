"""docs/control_flow.md: its code blocks run (the first asserts its gradient against the
unrolled loop), and the graph it prints is the one the page shows."""

from __future__ import annotations

import contextlib
import io
import pathlib
import re

import numpy as np

import tracegrad as tg

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "control_flow.md"


def test_the_code_blocks_of_the_page_run_and_print_what_it_shows():
    text = DOCS.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 2
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, str(DOCS), "exec"), namespace)
    shown = re.findall(r"```text\n(.*?)```", text, re.S)
    assert out.getvalue() == shown[0]


def test_the_generated_loop_the_page_shows_is_the_one_jit_writes():
    shown = re.findall(r"```text\n(.*?)```", DOCS.read_text(), re.S)[1]

    def g(x):
        return tg.fori_loop(0, 10000, lambda i, v: np.sin(v) * 0.5 + v, x)

    source = tg.jit(g).lower(np.ones(2)).source
    for line in shown.splitlines():
        if line.strip() != "...":
            assert line in source.splitlines(), line
