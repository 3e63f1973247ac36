"""Random NumPy programs (`tracegrad.testing.programs`) under `jit` on array-api-strict and on
dask, against NumPy: forward values and gradients to 1e-12 relative.

array-api-strict has nothing beyond the standard, so a call outside the standard that the
lowering table does not cover fails here. A program whose primitive has no lowering for the
library is refused with `LoweringError` before it runs (and an index outside the standard's
forms, on array_api_strict, when it runs), which is the contract: such examples are
discarded, and hypothesis fails the test if too many are.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import tracegrad as tg
from tests.backends.helpers import assert_close, to_dask, to_strict
from tracegrad.backends.libraries import LoweringError
from tracegrad.testing import programs, run_numpy

pytest.importorskip("array_api_strict")
pytest.importorskip("dask.array")

TAKE = {"array_api_strict": to_strict, "dask": to_dask}
# what each library refuses when the code runs: an index form outside the standard; a reshape
# of a chunked axis that does not split or merge whole chunks
REFUSALS = {
    "array_api_strict": "outside what the array API standard indexes",
    "dask": "without gathering a chunked axis into one chunk",
}
LIBRARIES = pytest.mark.parametrize("library", sorted(TAKE))


def _run(fn, args, library):
    try:
        return tg.jit(fn)(*map(TAKE[library], args))
    except LoweringError:  # refused while generating the code
        assume(False)
    except NotImplementedError as refusal:  # refused when run (see REFUSALS)
        assert REFUSALS[library] in str(refusal), refusal
        assume(False)


@LIBRARIES
@given(data=st.data())
def test_forward_values_equal_numpy(library, data):
    program = data.draw(programs(dtype=np.float64), label="program")
    args = program.draw_inputs(data)
    got = _run(program.fn, args, library)
    want = run_numpy(program, args)
    for g, w in zip(
        got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)
    ):
        assert_close(g, w)


@LIBRARIES
@given(data=st.data())
def test_gradients_equal_numpys(library, data):
    program = data.draw(
        programs(dtype=np.float64, scalar_output=True, smooth=True), label="program"
    )
    args = program.draw_inputs(data)
    argnums = tuple(range(len(args)))
    got = _run(tg.grad(program.fn, argnums=argnums), args, library)
    want = tg.grad(program.fn, argnums=argnums)(*args)
    for g, w in zip(got, want):
        assert_close(g, w)
