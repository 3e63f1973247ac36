"""Benchmarks (run as modules: `python -m benchmarks.grad_overhead`), never part of the tests.

Every library gets one thread: the variables are set here, before NumPy (and its BLAS), JAX
(and XLA) or any peer is imported, because each reads them once when it loads. Running a
benchmark as `python -m benchmarks.<name>` imports this package first, so that holds. torch
reads no variable in time for this; `harness.optional("torch")` calls `set_num_threads(1)`.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# XLA's CPU client parallelises inside one op through Eigen's pool unless told not to
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)
