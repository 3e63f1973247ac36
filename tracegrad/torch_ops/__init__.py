"""PyTorch's operators, tensor methods and top-level functions, over tracegrad's primitives.

Everything here is a composition of the same primitives the functional API uses (so the
vjp, jvp and batching rules are theirs), with PyTorch's signatures (`dim`, `keepdim`),
semantics (`repeat` tiles, `std` is unbiased, `max(dim)` returns values and indices, `relu` and
`clamp` pass the gradient at the boundary as PyTorch does) and type promotion (`promotion`).

One module per family: `promotion` (dtypes and the binary-operation dispatch), `conventions`
(argument normalization and `grad_fn` names, shared by the rest), `arithmetic`, `comparisons`,
`reductions`, `shapes`, `creation` (factories and the random generator), `indexing`
(`__getitem__`, `__setitem__`), `inplace` (`add_`, `zero_` ...) and `methods` (the method table
and `install()`, which attaches the methods to `Tensor` on import). This package re-exports the
functions; `__all__` collects the families' lists, and `tracegrad/__init__.py` re-exports them
as `tg.*`.
"""

from tracegrad.tensor import tensor  # noqa: F401 - importable from here, as before the split
from tracegrad.torch_ops import arithmetic, comparisons, creation, reductions, shapes
from tracegrad.torch_ops.arithmetic import *  # noqa: F403
from tracegrad.torch_ops.comparisons import *  # noqa: F403
from tracegrad.torch_ops.creation import *  # noqa: F403
from tracegrad.torch_ops.methods import _INPLACE, _METHODS, install  # noqa: F401
from tracegrad.torch_ops.promotion import result_type
from tracegrad.torch_ops.reductions import *  # noqa: F403
from tracegrad.torch_ops.shapes import *  # noqa: F403

__all__ = [
    *arithmetic.__all__,
    *comparisons.__all__,
    *reductions.__all__,
    *shapes.__all__,
    *creation.__all__,
    "result_type",
]
