"""`parameters_to_vector` and `vector_to_parameters`: a model's parameters as one flat vector
and back, as PyTorch's (the first is differentiable; the second replaces each parameter's
data with its slice of the vector)."""

from __future__ import annotations

from tracegrad.torch import ops
from tracegrad.torch.nn.module import typename
from tracegrad.torch.tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters) -> Tensor:
    """The parameters flattened and concatenated, in iteration order."""
    return ops.cat([ops.reshape(p, (-1,)) for p in parameters])


def vector_to_parameters(vec, parameters) -> None:
    """Each parameter's data becomes the next `numel()` elements of `vec`, in its shape."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {typename(vec)}")
    pointer = 0
    for param in parameters:
        count = param.numel()
        param.data = ops.reshape(vec[pointer : pointer + count], param.shape).detach()
        pointer += count
