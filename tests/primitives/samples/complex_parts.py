"""SAMPLES row for `complex` (tracegrad.primitives.complex_parts): two real parts, broadcast.

The inputs are real and the output complex, so the row draws real parts in both its real and
its complex draw (for a complex dtype, parts of the matching real dtype); the function is
linear, so any finite parts are away from kinks.
"""

from __future__ import annotations

from tests import strategies as S
from tests.primitives.samples.row import REAL_OF, Sample
from tracegrad.primitives.complex_parts import complex_p


def _parts(data, dtype):
    s1, s2 = S.broadcast_shapes(data, 2)
    return (S.array(data, s1, dtype), S.array(data, s2, dtype)), {}


def _parts_of(data, complex_dtype):
    """The parts of a `complex_dtype` output: real arrays of the matching float dtype."""
    return _parts(data, REAL_OF[complex_dtype])


SAMPLES = {complex_p: Sample(_parts, complex=_parts_of)}
