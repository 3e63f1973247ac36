"""tracegrad: automatic differentiation of NumPy programs through an immutable IR graph."""

import numpy as np

from tracegrad import autograd, nn, numpy, optim, tree
from tracegrad.api import grad, stop_gradient, value_and_grad, vjp
from tracegrad.api_forward import jvp, linearize
from tracegrad.api_jacobian import hessian, jacfwd, jacrev
from tracegrad.api_vmap import vmap

# The PyTorch-style shim (DESIGN.md §6): tensors, grad modes and PyTorch-named functions.
from tracegrad.autograd import (
    enable_grad,
    inference_mode,
    is_anomaly_enabled,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from tracegrad.errors import ConcretizationError, EscapedTracerError
from tracegrad.ir import Aval, Graph
from tracegrad.jit import jit
from tracegrad.tensor import Tensor, get_default_dtype, set_default_dtype, tensor
from tracegrad.testing import check_grads
from tracegrad.torch_ops import *  # noqa: F403 - the tg.* tensor functions, listed below
from tracegrad.torch_ops import __all__ as _torch_names
from tracegrad.tracing import make_graph

# dtypes under PyTorch's names (NumPy dtypes: `t.dtype == tg.float32` holds)
float16, float32, float64 = (np.dtype(t) for t in ("float16", "float32", "float64"))
half, float, double = float16, float32, float64  # noqa: A001 - PyTorch's names
int8, int16, int32, int64 = (np.dtype(t) for t in ("int8", "int16", "int32", "int64"))
uint8, bool = np.dtype("uint8"), np.dtype("bool")  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001
complex64, complex128 = np.dtype("complex64"), np.dtype("complex128")

__version__ = "0.1.0"

__all__ = [
    "Aval",
    "ConcretizationError",
    "EscapedTracerError",
    "Graph",
    "check_grads",
    "grad",
    "hessian",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "linearize",
    "make_graph",
    "numpy",
    "stop_gradient",
    "tree",
    "value_and_grad",
    "vjp",
    "vmap",
    "Tensor",
    "autograd",
    "nn",
    "optim",
    "enable_grad",
    "get_default_dtype",
    "inference_mode",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "set_default_dtype",
    "set_grad_enabled",
    "tensor",
    *_torch_names,
]
