"""SAMPLES: one row per registered primitive (test_rules.py fails if any is missing).

Each family keeps its rows in its own module of this package (the row type is `row.Sample`);
this one merges them.
"""

import importlib.util

from tests.primitives.samples.calculus import SAMPLES as _CALCULUS
from tests.primitives.samples.complex_parts import SAMPLES as _COMPLEX_PARTS
from tests.primitives.samples.control import SAMPLES as _CONTROL
from tests.primitives.samples.decompositions import SAMPLES as _DECOMPOSITIONS
from tests.primitives.samples.elementwise import SAMPLES as _ELEMENTWISE
from tests.primitives.samples.fft import SAMPLES as _FFT
from tests.primitives.samples.indexing import SAMPLES as _INDEXING
from tests.primitives.samples.linalg import SAMPLES as _LINALG
from tests.primitives.samples.masked import SAMPLES as _MASKED
from tests.primitives.samples.reduction import SAMPLES as _REDUCTION
from tests.primitives.samples.shape import SAMPLES as _SHAPE
from tests.primitives.samples.sorting import SAMPLES as _SORTING

SAMPLES = {
    **_CALCULUS,
    **_COMPLEX_PARTS,
    **_CONTROL,
    **_DECOMPOSITIONS,
    **_ELEMENTWISE,
    **_FFT,
    **_INDEXING,
    **_LINALG,
    **_MASKED,
    **_REDUCTION,
    **_SHAPE,
    **_SORTING,
}

# SciPy's special functions are primitives when SciPy (an optional extra) is installed
if importlib.util.find_spec("scipy") is not None:
    from tests.primitives.samples.special import SAMPLES as _SPECIAL

    SAMPLES.update(_SPECIAL)
    from tests.primitives.samples.scipy_linalg import SAMPLES as _SCIPY_LINALG

    SAMPLES.update(_SCIPY_LINALG)
    from tests.primitives.samples.scipy_matrix_functions import SAMPLES as _SCIPY_MATFUN

    SAMPLES.update(_SCIPY_MATFUN)
    from tests.primitives.samples.ode import SAMPLES as _ODE

    SAMPLES.update(_ODE)
    from tests.primitives.samples.scipy_signal import SAMPLES as _SCIPY_SIGNAL

    SAMPLES.update(_SCIPY_SIGNAL)

# checkpointing (issue 19): checkpoint and checkpoint_name
from tests.primitives.samples.custom import SAMPLES as _CUSTOM  # noqa: E402

SAMPLES.update(_CUSTOM)
