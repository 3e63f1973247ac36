"""The functional API, one module per kind of transform.

`common` holds what they share (tracing `f`, argnums and static arguments, `has_aux`,
gradients as NumPy values); `reverse` is grad / value_and_grad / vjp, `forward` is jvp /
linearize, `batching` is vmap, `jacobians` builds jacrev / jacfwd / hessian from those, and
`jit` compiles (with `make_graph`, the abstract trace alone).
"""

from tracegrad.api.batching import vmap
from tracegrad.api.forward import jvp, linearize
from tracegrad.api.jacobians import hessian, jacfwd, jacrev
from tracegrad.api.jit import CacheInfo, Jitted, Lowered, RetraceWarning, jit, make_graph
from tracegrad.api.reverse import grad, stop_gradient, value_and_grad, vjp

__all__ = ["grad", "stop_gradient", "value_and_grad", "vjp"]  # reverse
__all__ += ["jvp", "linearize", "vmap"]  # forward, batching
__all__ += ["hessian", "jacfwd", "jacrev"]  # jacobians
__all__ += ["CacheInfo", "Jitted", "Lowered", "RetraceWarning", "jit", "make_graph"]  # jit
