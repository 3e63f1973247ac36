"""ndarray's methods on traced arrays and tensors: `t.sum()`, `t.reshape(2, 3)`, `t.astype(...)`.

NumPy code calls methods as often as functions. Each is tracegrad.numpy's function of the
same name (a few take ndarray's method signature instead: `reshape(2, 3)`), and `install`
puts them on the class (`Tracer`, the tensors) as attributes.
"""

from __future__ import annotations

from tracegrad.numpy import (
    _calculus,
    _elementwise,
    _indexing,
    _products,
    _reductions,
    _shape,
    _sorting,
)

# method name = function name, by the module that defines the function
_SAME_AS_FUNCTION = {
    _reductions: (
        "sum", "prod", "mean", "var", "std", "max", "min", "argmax", "argmin", "all", "any",
        "cumsum", "cumprod", "ptp",
    ),
    _elementwise: ("clip", "round", "astype", "conj", "conjugate"),
    _shape: ("squeeze", "swapaxes", "ravel", "repeat"),
    _products: ("dot",),
    _indexing: ("take", "trace", "diagonal", "compress"),
    _sorting: ("nonzero", "argsort", "argpartition", "searchsorted"),
    _calculus: ("cumulative_sum", "cumulative_prod"),  # (NumPy 2.1's)
}  # fmt: skip


def _reshape(self, *shape, order="C"):
    if order != "C":
        raise NotImplementedError("reshape: only order='C' is supported")
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        shape = tuple(shape[0])
    return _shape.reshape(self, shape)


def _transpose(self, *axes):
    if len(axes) == 1 and isinstance(axes[0], tuple | list):
        axes = tuple(axes[0])
    return _shape.transpose(self, axes or None)


def _flatten(self, order="C"):
    return _shape.reshape(self, (-1,))


def _copy(self, order="K"):
    return self  # traced values are immutable: a copy is the same value


def _in_place(name: str, instead: str):
    def method(self, *args, **kwargs):
        raise TypeError(
            f"tracegrad: x.{name}() changes an array in place, which a traced value cannot be "
            f"(x would be left unchanged); use {instead}"
        )

    method.__name__ = name
    return method


METHODS = {
    name: getattr(module, name)
    for module, names in _SAME_AS_FUNCTION.items()
    for name in names
    if hasattr(module, name)
}
METHODS.update(reshape=_reshape, transpose=_transpose, flatten=_flatten, copy=_copy)
# ndarray methods that write into the array: refused by name rather than quietly returning a
# new value that the caller's code would drop
METHODS.update(
    sort=_in_place("sort", "x = np.sort(x, axis)"),
    partition=_in_place("partition", "x = np.partition(x, kth, axis)"),
    fill=_in_place("fill", "x = np.full_like(x, value)"),
    put=_in_place("put", "x = x.at[indices].set(values) on the flattened array"),
    resize=_in_place("resize", "x = np.resize(x, shape) or np.reshape"),
    itemset=_in_place("itemset", "x = x.at[index].set(value)"),
)


def install(cls) -> None:
    """Give `cls` the ndarray methods it does not define itself; its own methods win.

    They are class attributes rather than a `__getattr__` that looks them up: a class with
    `__getattr__` makes CPython (3.11) read every attribute of its instances on the
    unspecialized path (about twice the cost of each `t.aval` or `t._grad_fn`)."""
    for name, method in METHODS.items():
        # (the class dicts, not `hasattr`: that would run a descriptor, such as the tensors'
        # methods implemented by a module imported after the class)
        if not any(name in vars(k) for k in cls.__mro__):
            setattr(cls, name, method)
