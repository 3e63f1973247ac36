"""`out=`: PyTorch's functions that write their result into a tensor the caller gives.

`torch.matmul(a, b, out=c)` computes the result, then writes it into `c` as an in-place
method does (`inplace.rebind`: cast to `c`'s dtype where PyTorch casts, version counter
bumped) and returns `c` itself. As in PyTorch, such a call records no derivative, so it is
refused when grad mode is on and an argument (or `out`) requires grad; an `out` of another
shape is resized, with PyTorch's deprecation warning unless it is empty. Methods take no
`out=` (nor do PyTorch's), so only the functions `tracegrad.torch` exports are wrapped.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from tracegrad.torch.grad_mode import _enabled
from tracegrad.torch.ops.inplace import rebind
from tracegrad.torch.tensor import Tensor

#: the functions of tracegrad.torch that take `out=` in PyTorch (single-result ones)
OUT_FUNCTIONS = tuple(
    """abs acos acosh add addcdiv addcmul all amax amin angle any arange asin asinh atan atan2
    atanh bmm cat ceil clamp clip complex concat concatenate conj_physical cos cosh cumprod
    cumsum div dot empty eq exp exp2 expm1 eye floor floor_divide full gather ge gt
    index_select le lerp linspace log log10 log1p log2 logical_and logical_not logical_or
    logsumexp lt matmul maximum mean minimum mm mul mv ne neg negative outer polar pow rand
    randint randn randperm reciprocal remainder round rsqrt sgn sigmoid sign sin sinh sqrt
    square stack std sub sum prod tan tanh tril triu trunc var where zeros ones scatter
    scatter_add scatter_reduce index_add index_copy take take_along_dim erf erfc erfinv lgamma
    digamma polygamma i0 sinc xlogy hypot addmm addmv addbmm baddbmm diag""".split()
)

_RESIZED = (
    "An output with one or more elements was resized since it had shape {}, which does not "
    "match the required output shape {}. This behavior is deprecated, and in a future PyTorch "
    "release outputs will not be resized unless they have zero elements. You can explicitly "
    "reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0)."
)


def _requires_grad(values) -> bool:
    for v in values:
        if isinstance(v, Tensor) and v._requires_grad:
            return True
        if isinstance(v, list | tuple) and _requires_grad(v):  # cat's and stack's tensors
            return True
    return False


def with_out(fn, name: str | None = None):
    """`fn` taking PyTorch's keyword `out=` (see the module docstring)."""
    name = name or fn.__name__

    @functools.wraps(fn)
    def call(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if not isinstance(out, Tensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
        if _enabled.get() and (out._requires_grad or _requires_grad((*args, *kwargs.values()))):
            raise RuntimeError(
                f"{name}(): functions with out=... arguments don't support automatic "
                "differentiation, but one of the arguments requires grad."
            )
        result = fn(*args, **kwargs)
        if not isinstance(result, Tensor):  # a Python number (`dot` of 0-d, ...)
            result = Tensor._wrap(np.asarray(result))
        if result.shape != out.shape:
            if out.numel() != 0:
                warnings.warn(
                    _RESIZED.format(list(out.shape), list(result.shape)), UserWarning, stacklevel=2
                )
            out._check_inplace()
            out._cell.value = np.empty(result.shape, out.dtype)
        out._check_inplace()
        return rebind(out, result)

    return call
