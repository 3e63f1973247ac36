"""PyTorch's operators, tensor methods and top-level functions, over tracegrad's primitives.

Everything here is a composition of the same primitives the functional API uses (so the
vjp, jvp and batching rules are theirs), with PyTorch's signatures (`dim`, `keepdim`),
semantics (`repeat` tiles, `std` is unbiased, `max(dim)` returns values and indices, `relu` and
`clamp` pass the gradient at the boundary as PyTorch does) and type promotion (`promotion`).

One module per family: `promotion` (dtypes and the binary-operation dispatch), `conventions`
(argument normalization and `grad_fn` names, shared by the rest), `arithmetic`, `comparisons`,
`reductions`, `selection` (sort, topk, median, unique, ...), `shapes`, `creation`
(factories), `random` (sampling, `generator=`), `indexing`
(`__getitem__`, `__setitem__`), `complex_numbers` (parts, conjugates, `complex`, `polar`),
`scatter` (scatter, index updates, `take`) and
`inplace` (`add_`, `zero_` ...), and `out_argument` (`out=` on the functions that take it, as
wrappers: methods take none); the tensor methods built from them are listed in
`tracegrad.torch.methods`. This package re-exports the functions; `__all__` collects the
families' lists, and `tracegrad.torch` re-exports them. Two more families: `special_math`
(erf, lgamma, polygamma, xlogy, ...) and `matrices` (addmm, diag, roll, unfold, ...);
`shapes_extra` (movedim, hstack, tensor_split, repeat_interleave, meshgrid, ...) and
`products_extra` (NumPy-style aliases, kron, tensordot, cross, cdist, renorm, logspace, ...).
"""

from tracegrad.torch.ops import (
    arithmetic,
    comparisons,
    complex_numbers,
    creation,
    math_extra,
    math_extra_reductions,
    matrices,
    products_extra,
    random,
    reductions,
    selection,
    shapes,
    shapes_extra,
    special_math,
)

# the module (imported before the star imports, after which `scatter` names the function)
from tracegrad.torch.ops import scatter as scatter_family
from tracegrad.torch.ops.arithmetic import *  # noqa: F403
from tracegrad.torch.ops.comparisons import *  # noqa: F403
from tracegrad.torch.ops.complex_numbers import *  # noqa: F403
from tracegrad.torch.ops.creation import *  # noqa: F403
from tracegrad.torch.ops.math_extra import *  # noqa: F403
from tracegrad.torch.ops.math_extra_reductions import *  # noqa: F403
from tracegrad.torch.ops.matrices import *  # noqa: F403
from tracegrad.torch.ops.products_extra import *  # noqa: F403
from tracegrad.torch.ops.promotion import result_type
from tracegrad.torch.ops.random import *  # noqa: F403
from tracegrad.torch.ops.reductions import *  # noqa: F403
from tracegrad.torch.ops.scatter import *  # noqa: F403
from tracegrad.torch.ops.selection import *  # noqa: F403
from tracegrad.torch.ops.shapes import *  # noqa: F403
from tracegrad.torch.ops.shapes_extra import *  # noqa: F403
from tracegrad.torch.ops.special_math import *  # noqa: F403

__all__ = [
    *arithmetic.__all__,
    *comparisons.__all__,
    *complex_numbers.__all__,
    *reductions.__all__,
    *scatter_family.__all__,
    *selection.__all__,
    *shapes.__all__,
    *creation.__all__,
    *random.__all__,
    *special_math.__all__,
    *matrices.__all__,
    *math_extra.__all__,
    *math_extra_reductions.__all__,
    *shapes_extra.__all__,
    *products_extra.__all__,
    "result_type",
]

# PyTorch's `out=` on the functions that take it (methods take none: they keep the originals)
from tracegrad.torch.ops.out_argument import OUT_FUNCTIONS, with_out  # noqa: E402

for _name in OUT_FUNCTIONS:
    globals()[_name] = with_out(globals()[_name])
del _name
