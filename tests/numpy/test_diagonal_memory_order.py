"""`np.diagonal` / `np.trace` on traced values sum in NumPy's order.

NumPy's diagonal is a view whose axis sits in memory where the first of its two axes was;
`np.trace` sums it in memory order, pairwise in blocks of eight, so from nine elements on the
bits depend on that order. tracegrad's diagonal is a gather; it is copied into the view's
order when an axis precedes the pair (tracegrad/numpy/_indexing.py). Oracle: NumPy's bits.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import tracegrad as tg
from tracegrad.testing import assert_bitwise_equal


@pytest.mark.parametrize("shape", [(3, 9, 9), (9, 3, 9), (9, 9, 3), (2, 3, 11, 11)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_trace_and_diagonal_give_numpys_bits_for_every_axis_pair(shape, dtype):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    for a1, a2 in itertools.permutations(range(len(shape)), 2):
        for offset in (0, 1, -1):
            for fn in (np.trace, np.diagonal):

                def f(v, fn=fn, a1=a1, a2=a2, offset=offset):
                    return fn(v, offset, a1, a2)

                want = f(x)
                assert_bitwise_equal([tg.make_graph(f)(x)(x)], [want])
                assert_bitwise_equal([tg.jit(f)(x)], [want])


def test_trace_of_the_last_two_axes_differentiates():
    g = tg.grad(lambda v: np.sum(np.trace(v, 0, 1, 2)))(np.ones((3, 9, 9)))
    np.testing.assert_array_equal(g, np.broadcast_to(np.eye(9), (3, 9, 9)))
