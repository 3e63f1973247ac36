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

# structured control flow (issue 18) and the conveniences that go with it
from tracegrad.api.control_flow import cond, fori_loop, map, scan, switch, while_loop  # noqa: E402, A004
from tracegrad.api.conveniences import debug_print, eval_shape, pure_callback  # noqa: E402
from tracegrad.api.jit import disable_jit  # noqa: E402

__all__ += ["cond", "fori_loop", "map", "scan", "switch", "while_loop"]  # control flow
__all__ += ["debug_print", "disable_jit", "eval_shape", "pure_callback"]  # conveniences

# custom derivative rules and checkpointing (issue 19)
from tracegrad.api.checkpoint import checkpoint, checkpoint_name, checkpoint_policies, remat  # noqa: E402
from tracegrad.api.custom_derivatives import custom_jvp, custom_vjp  # noqa: E402
from tracegrad.api.implicit import custom_root, fixed_point  # noqa: E402

__all__ += ["checkpoint", "checkpoint_name", "checkpoint_policies", "remat"]  # checkpoint
__all__ += ["custom_jvp", "custom_root", "custom_vjp", "fixed_point"]  # custom rules

# Taylor mode (issue 26)
from tracegrad.api.taylor import derivatives, jet, taylor  # noqa: E402

__all__ += ["derivatives", "jet", "taylor"]  # Taylor mode
