"""The in-place tensor methods (`add_`, `zero_`, `fill_`, `copy_`, `normal_` ...).

They are functional: each computes a new value and rebinds the tensor to it (`rebind`),
after `Tensor._check_inplace` has refused what PyTorch refuses. `_inplace(name)` makes `name_`
from the method `name`; `normal_` and `uniform_` run ATen's kernels on `generator=`, or on the
global `default_generator` that `manual_seed` seeds (`ops.random`), so they draw torch's numbers.
"""

from __future__ import annotations

import numpy as np

from tracegrad import config
from tracegrad.diagnostics import tensor_causes
from tracegrad.primitives import elementwise as ew
from tracegrad.torch.grad_mode import _enabled
from tracegrad.torch.ops import random
from tracegrad.torch.ops.conventions import _as_tensor
from tracegrad.torch.ops.shapes import clone, expand
from tracegrad.torch.recording import record
from tracegrad.torch.tensor import Tensor, _readonly


def rebind(self: Tensor, result: Tensor) -> Tensor:
    """`self` rebound to the value of `result` (cast to its dtype), version bumped: the end of
    every in-place method."""
    value = result._cell.value
    if value.dtype != self.dtype:
        if not np.can_cast(value.dtype, self.dtype, "same_kind"):
            raise RuntimeError(
                f"result type {value.dtype.name} can't be cast to the desired output type "
                f"{self.dtype.name}"
            )
        result = result._astype(self.dtype)
        value = result._cell.value
    if value.shape != self.shape:
        raise RuntimeError(
            f"output with shape {list(self.shape)} doesn't match the broadcast shape "
            f"{list(value.shape)}"
        )
    if result._grad_fn is None and self._grad_fn is not None and _enabled.get():
        # a constant overwrote a recorded value (zero_, fill_, copy_ of a constant): the
        # old value now gets a zero gradient, through a node that selects the new value
        old = self._snapshot()
        result = record(ew.where_p, (np.zeros(self.shape, bool), old, result), {})
        value = result._cell.value
    self._cell.value = value
    self._cell.version += 1
    if config.provenance or config.debug_nans or config.debug_infs:
        tensor_causes.changed_in_place(self._cell)  # tracegrad.diagnostics: the user's line
    if result._grad_fn is not None:
        self._grad_fn = result._grad_fn
        self._index = result._index
        self._requires_grad = True
    return self


def _inplace(name: str):
    arithmetic = _ARITHMETIC.get(name)

    def method(self, *args, **kwargs):
        if name == "abs" and self.dtype.kind == "c":  # a real result cannot replace z
            raise RuntimeError("In-place abs is not supported for complex tensors.")
        self._check_inplace()
        if _enabled.get():
            # the input as it is now, in a cell of its own, for the node that records it
            source = self._snapshot()
        else:  # nothing records it (an optimizer's step): the tensor itself serves
            if arithmetic is not None and len(args) == 1 and not kwargs:
                value = _updated(arithmetic, self, args[0])
                if value is not None:
                    self._cell.value = value
                    self._cell.version += 1
                    return self
            source = self
        result = getattr(source, name)(*args, **kwargs)
        return rebind(self, result)

    method.__name__ = name + "_"
    return method


# `p -= lr * p.grad` with grad mode off, an optimizer's update: the operator's NumPy function
# on the arrays, without the result tensor that `rebind` would read and drop
_ARITHMETIC = {"add": ew.add_p, "sub": ew.subtract_p, "mul": ew.multiply_p, "div": ew.divide_p}


def _updated(prim, self: Tensor, other):
    """`self`'s new value for `self op= other` when `op` would compute it in `self`'s float
    dtype and shape, from a tensor of that dtype or a Python number; None otherwise (the
    general path then casts, broadcasts or raises, as PyTorch does)."""
    value = self._cell.value
    if type(other) is float or type(other) is int:
        operand = other  # a weak scalar: NumPy computes in the array's dtype, as PyTorch
    elif isinstance(other, Tensor) and other._cell.value.dtype == value.dtype:
        operand = other._cell.value
    else:
        return None
    if value.dtype.kind not in "fc" or config.provenance or config.debug_nans or config.debug_infs:
        return None  # (tracegrad.diagnostics notes the change: the general path)
    out = prim.impl(value, operand)
    if out.shape != value.shape:
        return None  # `other` broadcasts self to a larger shape: the general path's error
    return _readonly(out)


def _zero_(self):
    self._check_inplace()
    return rebind(self, Tensor._wrap(np.zeros(self.shape, self.dtype)))


def _fill_(self, value):
    self._check_inplace()
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(
                "fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.ndim} dimensions."
            )
        if value._requires_grad:
            return rebind(self, expand(value._astype(self.dtype), self.shape))
        value = value._cell.value  # a constant 0-d tensor fills as its number
    return rebind(self, Tensor._wrap(np.full(self.shape, value, self.dtype)))


def _copy_(self, src, non_blocking=False):
    self._check_inplace()
    src = _as_tensor(src)
    return rebind(
        self,
        expand(src._astype(self.dtype) if src.dtype != self.dtype else src, self.shape)
        if src.shape != self.shape
        else clone(src)
        if src._requires_grad
        else src,
    )


def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    """ATen's `normal_`: `fma(z, std, mean)` of its normals (`Generator._normal`)."""
    self._check_inplace()
    dtype = random._float_dtype(self.dtype, "normal_kernel_cpu")
    random._check_std(std)
    g = random._kernels(generator, "normal_")
    values = random._sample(g, "normal", self.shape, dtype, mean, std)
    return rebind(self, Tensor._wrap(values))


def _bernoulli_(self, p=0.5, *, generator=None):
    """ATen's `bernoulli_`: a uniform below `p` (a number, or a tensor broadcast to self)."""
    self._check_inplace()
    g = random._kernels(generator, "bernoulli_")
    if isinstance(p, Tensor):
        probs = np.broadcast_to(p._cell.value, self.shape)
        draws = g._bernoulli_tensor(np.ascontiguousarray(probs))
    else:
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        draws = g._bernoulli(int(np.prod(self.shape)), p).reshape(self.shape)
    return rebind(self, Tensor._wrap(draws.astype(self.dtype)))


def _exponential_(self, lambd=1.0, *, generator=None):
    """ATen's `exponential_`: `-log1p(-u) / lambd` of float64 uniforms, in self's dtype."""
    self._check_inplace()
    if self.dtype.kind != "f":
        raise RuntimeError(
            "Exponential distribution is a continuous probability distribution. dtype must be "
            f"a floating point but you specified {self.dtype.name}"
        )
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    g = random._kernels(generator, "exponential_")
    values = g._exponential(int(np.prod(self.shape)), self.dtype, lambd).reshape(self.shape)
    return rebind(self, Tensor._wrap(values))


def _random_(self, from_=None, to=None, *, generator=None):
    """ATen's `random_(from, to)` (`random_(to)`: from 0): `random() % (to - from) + from`,
    on 64-bit words for wide ranges, in self's dtype."""
    self._check_inplace()
    if to is None and from_ is not None:
        from_, to = 0, from_
    if to is None:
        raise NotImplementedError(
            "random_() without bounds is not supported by tracegrad; give them: "
            "random_(to) or random_(from, to)"
        )
    if from_ >= to:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}"
        )
    g = random._kernels(generator, "random_")
    draws = g._randint(int(from_), int(to), int(np.prod(self.shape))).reshape(self.shape)
    return rebind(self, Tensor._wrap(draws.astype(self.dtype)))


def _uniform_(self, a=0.0, b=1.0, *, generator=None):
    """ATen's `uniform_`: `fma(u, b - a, a)`, in float32 for the dtypes narrower than float64."""
    self._check_inplace()
    dtype = random._float_dtype(self.dtype, "check_uniform_bounds")
    if a > b:
        raise RuntimeError(
            f"uniform_ expects to return a [from, to) range, but found from={a:g} > to={b:g}"
        )
    g = random._kernels(generator, "uniform_")
    values = random._sample(g, "uniform", self.shape, dtype, a, b)
    return rebind(self, Tensor._wrap(values))
