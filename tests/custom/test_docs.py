"""docs/custom_rules.md: its code blocks run and print what the page shows, and the numbers
it quotes are the ones the code gives."""

from __future__ import annotations

import contextlib
import io
import pathlib
import re

import numpy as np

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "custom_rules.md"


def test_the_code_blocks_of_the_page_run_and_print_what_it_shows():
    text = DOCS.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 3
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), np.errstate(all="raise"):
        for block in blocks:
            exec(compile(block, str(DOCS), "exec"), namespace)
    assert out.getvalue() == "".join(re.findall(r"```text\n(.*?)```", text, re.S))
    # the checkpointed chain's gradient is the unchecked one's
    tg = namespace["tg"]

    def unchecked(x, ws):
        for w in ws:
            x = np.tanh(x @ w)
        return np.sum(x)

    want = tg.grad(unchecked)(np.ones((2, 4)), namespace["ws"])
    np.testing.assert_allclose(namespace["g"], want, rtol=1e-13)
