"""SAMPLES: one row per registered primitive (test_rules.py fails if any is missing).

Each family keeps its rows in its own module of this package (the row type is `row.Sample`);
this one merges them.
"""

from tests.primitives.samples.calculus import SAMPLES as _CALCULUS
from tests.primitives.samples.elementwise import SAMPLES as _ELEMENTWISE
from tests.primitives.samples.indexing import SAMPLES as _INDEXING
from tests.primitives.samples.linalg import SAMPLES as _LINALG
from tests.primitives.samples.masked import SAMPLES as _MASKED
from tests.primitives.samples.reduction import SAMPLES as _REDUCTION
from tests.primitives.samples.shape import SAMPLES as _SHAPE
from tests.primitives.samples.sorting import SAMPLES as _SORTING

SAMPLES = {
    **_CALCULUS,
    **_ELEMENTWISE,
    **_INDEXING,
    **_LINALG,
    **_MASKED,
    **_REDUCTION,
    **_SHAPE,
    **_SORTING,
}
