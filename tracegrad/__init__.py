"""tracegrad: automatic differentiation of NumPy programs through an immutable IR graph."""

from tracegrad import numpy, tree
from tracegrad.api import grad, stop_gradient, value_and_grad, vjp
from tracegrad.api_forward import jvp, linearize
from tracegrad.api_vmap import vmap
from tracegrad.api_jacobian import hessian, jacfwd, jacrev
from tracegrad.errors import ConcretizationError, EscapedTracerError
from tracegrad.ir import Aval, Graph
from tracegrad.testing import check_grads
from tracegrad.tracing import make_graph

__version__ = "0.1.0"

__all__ = [
    "grad",
    "stop_gradient",
    "value_and_grad",
    "vjp",
    "Aval",
    "ConcretizationError",
    "EscapedTracerError",
    "Graph",
    "make_graph",
    "numpy",
    "tree",
]
