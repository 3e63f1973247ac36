"""SAMPLES: one row per registered primitive (test_rules.py fails if any is missing).

Each family keeps its rows in its own module; this one merges them.
"""

from tests.primitives.samples_elementwise import SAMPLES as _ELEMENTWISE
from tests.primitives.samples_indexing import SAMPLES as _INDEXING
from tests.primitives.samples_linalg import SAMPLES as _LINALG
from tests.primitives.samples_reduction import SAMPLES as _REDUCTION
from tests.primitives.samples_shape import SAMPLES as _SHAPE

SAMPLES = {**_ELEMENTWISE, **_INDEXING, **_LINALG, **_REDUCTION, **_SHAPE}
