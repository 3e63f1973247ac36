"""PyTorch's comparisons and logical operations (bool results, no gradient), and the
whole-tensor predicates `equal`, `allclose` and `isclose`, which compare concrete values.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.primitives import elementwise as ew
from tracegrad.torch.creation_from_data import tensor
from tracegrad.torch.ops.conventions import _as_tensor, _no_complex
from tracegrad.torch.ops.promotion import _compare
from tracegrad.torch.tensor import Tensor


def eq(input, other):
    return _compare(ew.equal_p, input, other)


def ne(input, other):
    return _compare(ew.not_equal_p, input, other)


def lt(input, other):
    _no_complex("\"lt_cpu\" not implemented for '{}'", input, other)
    return _compare(ew.less_p, input, other)


def le(input, other):
    _no_complex("\"le_cpu\" not implemented for '{}'", input, other)
    return _compare(ew.less_equal_p, input, other)


def gt(input, other):
    _no_complex("\"gt_cpu\" not implemented for '{}'", input, other)
    return _compare(ew.greater_p, input, other)


def ge(input, other):
    _no_complex("\"ge_cpu\" not implemented for '{}'", input, other)
    return _compare(ew.greater_equal_p, input, other)


def isnan(input):
    return bind(ew.isnan_p, input)


def isfinite(input):
    return bind(ew.isfinite_p, input)


def isinf(input):
    return bind(ew.isinf_p, input)


def logical_not(input):
    return bind(ew.logical_not_p, input)


def logical_and(input, other):
    return bind(ew.logical_and_p, input, other)


def logical_or(input, other):
    return bind(ew.logical_or_p, input, other)


def _array(x):
    return _as_tensor(x).numpy(force=True)


def equal(input, other) -> bool:
    return input.shape == other.shape and bool(
        np.array_equal(input.numpy(force=True), other.numpy(force=True))
    )


def allclose(input, other, rtol=1e-5, atol=1e-8, equal_nan=False) -> bool:
    return bool(np.allclose(_array(input), _array(other), rtol, atol, equal_nan))


def isclose(input, other, rtol=1e-5, atol=1e-8, equal_nan=False) -> Tensor:
    return tensor(np.isclose(_array(input), _array(other), rtol, atol, equal_nan))


__all__ = [
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "isnan",
    "isfinite",
    "isinf",
    "logical_not",
    "logical_and",
    "logical_or",
    "equal",
    "allclose",
    "isclose",
]
