"""Testing helpers: random NumPy programs, bitwise comparison, and finite-difference checks.

Re-exports only. Hypothesis is imported only inside the functions that build strategies
(`programs`, `InputSpec.strategy`, `Program.inputs_strategy`), so it stays a test dependency.
"""

from tracegrad.testing.bitwise import assert_bitwise_equal, run_numpy, run_traced
from tracegrad.testing.gradcheck import check_grads, numerical_jvp
from tracegrad.testing.ops import OPS, available_ops
from tracegrad.testing.random_programs import InputSpec, Program, programs
from tracegrad.testing.row import Op

__all__ = [
    "OPS",
    "Op",
    "InputSpec",
    "Program",
    "assert_bitwise_equal",
    "available_ops",
    "check_grads",
    "numerical_jvp",
    "programs",
    "run_numpy",
    "run_traced",
]
