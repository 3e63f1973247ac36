"""tracegrad: automatic differentiation of NumPy programs through an immutable IR graph."""

from tracegrad import numpy, tree
from tracegrad.api import grad, stop_gradient, value_and_grad, vjp
from tracegrad.api_forward import jvp, linearize
from tracegrad.api_jacobian import hessian, jacfwd, jacrev
from tracegrad.api_vmap import vmap
from tracegrad.errors import ConcretizationError, EscapedTracerError
from tracegrad.ir import Aval, Graph
from tracegrad.jit import jit
from tracegrad.testing import check_grads
from tracegrad.tracing import make_graph

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
]
