"""docs/backends.md: its code blocks run (each asserts what the page says)."""

from __future__ import annotations

import pathlib
import re

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "backends.md"

pytest.importorskip("dask.array")


def test_the_code_blocks_of_the_page_run():
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    assert len(blocks) == 2
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOCS), "exec"), namespace)  # the blocks assert their results
