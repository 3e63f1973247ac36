"""The in-place tensor methods (`add_`, `zero_`, `fill_`, `copy_`, `normal_` ...).

They are functional: each computes a new value and rebinds the tensor to it (`Tensor._rebind`),
after `Tensor._check_inplace` has refused what PyTorch refuses. `_inplace(name)` makes `name_`
from the method `name`; `normal_` and `uniform_` draw from `creation._rng`, read at call time so
that `manual_seed` reaches them.
"""

from __future__ import annotations

import numpy as np

from tracegrad.tensor import Tensor
from tracegrad.torch_ops import creation
from tracegrad.torch_ops.conventions import _as_tensor
from tracegrad.torch_ops.shapes import clone, expand


def _inplace(name: str):
    def method(self, *args, **kwargs):
        self._check_inplace()
        result = getattr(self._snapshot(), name)(*args, **kwargs)
        return self._rebind(result)

    method.__name__ = name + "_"
    return method


def _zero_(self):
    self._check_inplace()
    return self._rebind(Tensor._wrap(np.zeros(self.shape, self.dtype)))


def _fill_(self, value):
    self._check_inplace()
    if isinstance(value, Tensor) and value._requires_grad:
        return self._rebind(expand(value._astype(self.dtype), self.shape))
    return self._rebind(Tensor._wrap(np.full(self.shape, value, self.dtype)))


def _copy_(self, src, non_blocking=False):
    self._check_inplace()
    src = _as_tensor(src)
    return self._rebind(
        expand(src._astype(self.dtype) if src.dtype != self.dtype else src, self.shape)
        if src.shape != self.shape
        else clone(src)
        if src._requires_grad
        else src
    )


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    self._check_inplace()
    return self._rebind(
        Tensor._wrap(creation._rng.normal(mean, std, self.shape).astype(self.dtype))
    )


def _uniform_(self, a=0.0, b=1.0, *, generator=None):
    self._check_inplace()
    return self._rebind(Tensor._wrap(creation._rng.uniform(a, b, self.shape).astype(self.dtype)))
