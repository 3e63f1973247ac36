"""docs/fft.md: its code blocks run (each asserts what the page says), and the generated
source it shows is the one `jit` writes."""

from __future__ import annotations

import contextlib
import io
import pathlib
import re

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "fft.md"


def test_the_code_blocks_of_the_page_run():
    text = DOCS.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 5
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in blocks:
            exec(compile(block, str(DOCS), "exec"), namespace)  # the blocks assert their results
    (shown,) = re.findall(r"```text\n(.*?)```", text, re.S)
    assert out.getvalue().strip() == shown.strip()
