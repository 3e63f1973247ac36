"""tracegrad: automatic differentiation of NumPy programs through an immutable IR graph.

The top level is the functional API (JAX's semantics: `grad`, `vjp`, `jvp`, `vmap`, `jit`,
jacobians, `make_graph`, ...). The PyTorch-style tensors and everything with PyTorch's
semantics live in `tracegrad.torch` (`import tracegrad.torch as torch`); a few of their entry
points are aliased here (`tensor`, `Tensor`, grad modes, `autograd`, `nn`, `optim`, dtypes).
A PyTorch-style function asked for here (`tg.sum`, `tg.cat`) is an AttributeError that names
its home, so it is never mistaken for NumPy's inside `tg.grad`.
"""

from tracegrad import extend, ir, numpy, testing, torch, tree
from tracegrad.api import (
    checkpoint,
    checkpoint_name,
    checkpoint_policies,
    custom_derivatives,  # noqa: F401 - an attribute (SymbolicZero), as JAX's module
    custom_jvp,
    custom_root,
    custom_vjp,
    derivatives,
    fixed_point,
    grad,
    hessian,
    jacfwd,
    jacrev,
    jet,
    jit,
    jvp,
    linearize,
    make_graph,
    remat,
    stop_gradient,
    taylor,
    value_and_grad,
    vjp,
    vmap,
)
from tracegrad.errors import ConcretizationError, EscapedTracerError
from tracegrad.ir import Aval, Graph
from tracegrad.testing import check_grads
from tracegrad.torch import (  # the tensor aliases listed in __all__
    Tensor,
    autograd,
    enable_grad,
    get_default_dtype,
    inference_mode,
    is_grad_enabled,
    manual_seed,
    nn,
    no_grad,
    optim,
    set_default_dtype,
    set_grad_enabled,
    tensor,
)
from tracegrad.torch.dtypes import (  # noqa: F401 - attributes only, see __all__
    bool,  # noqa: A004
    complex64,
    complex128,
    double,
    float,  # noqa: A004
    float16,
    float32,
    float64,
    half,
    int,  # noqa: A004
    int8,
    int16,
    int32,
    int64,
    long,
    short,
    uint8,
)

__version__ = "0.1.0"

__all__ = [
    "Aval",
    "ConcretizationError",
    "EscapedTracerError",
    "Graph",
    "check_grads",
    "extend",
    "grad",
    "hessian",
    "ir",
    "jacfwd",
    "jacrev",
    "jit",
    "jvp",
    "linearize",
    "make_graph",
    "numpy",
    "stop_gradient",
    "testing",
    "torch",
    "tree",
    "value_and_grad",
    "vjp",
    "vmap",
    # custom derivative rules and checkpointing (issue 19)
    "checkpoint",
    "checkpoint_name",
    "checkpoint_policies",
    "custom_jvp",
    "custom_root",
    "custom_vjp",
    "fixed_point",
    "remat",
    # Taylor mode (issue 26)
    "derivatives",
    "jet",
    "taylor",
]

# The tensor entry points kept here, as aliases of tracegrad.torch's. So are the dtypes under
# PyTorch's names (NumPy dtypes), but not in __all__: `from tracegrad import *` must not replace
# the builtins `int`, `float` and `bool`. Every other PyTorch-style name lives in tracegrad.torch.
__all__ += [
    "tensor",
    "Tensor",
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "autograd",
    "nn",
    "optim",
    "manual_seed",
    "set_default_dtype",
    "get_default_dtype",
]


def __getattr__(name: str):
    # A PyTorch-semantics name asked for at the top level: say where it lives now.
    if name in torch.__all__:
        hint = f"tracegrad.torch.{name} (import tracegrad.torch as torch)"
        if hasattr(numpy, name):
            hint += f", or tracegrad.numpy.{name} for NumPy's {name}"
        raise AttributeError(
            f"module 'tracegrad' has no attribute {name!r}: PyTorch-style functions live in "
            f"tracegrad.torch; use {hint}"
        )
    raise AttributeError(f"module 'tracegrad' has no attribute {name!r}")


# Structured control flow and the JAX conveniences that go with it (issue 18) are attributes:
# `tg.cond`, `tg.scan`, ..., `tg.debug.print`, `tg.lax` (jax.lax's names). Not in __all__, like
# the dtypes: `from tracegrad import *` must not replace the builtin `map`.
from tracegrad import debug, lax  # noqa: E402, F401
from tracegrad.api import (  # noqa: E402, F401
    cond,
    disable_jit,
    eval_shape,
    fori_loop,
    map,  # noqa: A004
    pure_callback,
    scan,
    switch,
    while_loop,
)

# Provenance diagnostics (issue 27): `with tg.debug_nans():` / `tg.debug_infs()` (as JAX's), the
# switches in `tg.config` (`debug_nans`, `debug_infs`, `provenance`; the submodule `config` is an
# attribute once imported, as core imports it). Attributes, not in __all__, like tg.cond.
# See docs/debugging.md.
from tracegrad.diagnostics import debug_infs, debug_nans  # noqa: E402, F401
