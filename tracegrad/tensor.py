"""The PyTorch-style `Tensor`: a NumPy array that records the operations applied to it.

A tensor holds its array in a `_Cell` (shared with `detach()`ed aliases, as PyTorch shares
storage and the version counter) and, once an operation that requires grad produced it, the
`GradFn` of that operation. Operations run eagerly through the same primitives as everything
else: `bind` hands any call with a tensor argument to `record` (`recording.py`), which runs
the primitive's NumPy implementation and, in grad mode with an input that requires grad,
builds the IR node and its `GradFn` (DESIGN.md §6). Tensor methods and operators follow PyTorch
(`tracegrad/torch_ops/` adds them); NumPy functions on tensors follow NumPy.

Arrays are never written in place: an in-place method computes a new array and rebinds the
cell to it, bumping the version. Every array a tensor holds is read-only, so a value a graph
saved cannot change behind its back.
"""

from __future__ import annotations

import weakref

import numpy as np

from tracegrad.autograd.function import AccumulateGrad, GradFn
from tracegrad.autograd.grad_mode import _enabled
from tracegrad.core import Boxed, _numpy_dispatch  # NumPy functions on tensors follow NumPy
from tracegrad.ir.graph import Edge, arg_node
from tracegrad.ir.types import Aval

_default_dtype = np.dtype(np.float32)


def set_default_dtype(dtype) -> None:
    """The dtype Python floats become (float32 unless changed, as in PyTorch)."""
    global _default_dtype
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise TypeError(f"only floating-point types are supported as the default type, got {dtype}")
    _default_dtype = dtype


def get_default_dtype() -> np.dtype:
    return _default_dtype


def _default_complex() -> np.dtype:
    return np.dtype(np.complex64 if _default_dtype == np.float32 else np.complex128)


def _format(value: np.ndarray) -> str:
    """PyTorch's printing: four decimals, scientific when the magnitudes span a lot."""
    kw = {}
    if value.dtype.kind == "f" and value.size:
        finite = np.abs(value[np.isfinite(value)].astype(np.float64))
        nonzero = finite[finite != 0]
        if nonzero.size and (nonzero.max() >= 1e8 or nonzero.max() / nonzero.min() > 1e3):
            kw["formatter"] = {"float_kind": lambda v: f"{v:.4e}"}
        elif bool(np.any(finite != np.round(finite))):
            kw["floatmode"] = "fixed"
    return np.array2string(value, separator=", ", prefix="tensor(", precision=4, **kw)


def type_string(dtype, shape) -> str:
    """PyTorch's `torch.FloatTensor [3]` in messages, with NumPy's dtype name for the type."""
    return f"{np.dtype(dtype).name} [{', '.join(map(str, shape))}]"


_NO_NEXT = (None, 0)  # `next_functions` entry of an input that takes no gradient


class _Cell:
    """A tensor's storage: the current (read-only) array and its version counter."""

    __slots__ = ("value", "version")

    def __init__(self, value: np.ndarray):
        self.value = value
        self.version = 0


def _readonly(a) -> np.ndarray:
    if not isinstance(a, np.ndarray):
        a = np.asarray(a)
    if a.flags.writeable:
        a.flags.writeable = False
    return a


_NON_LEAF_FLAG = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed "
    "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
)
_FACTORY_FLAG = "Only Tensors of floating point and complex dtype can require gradients"

VIEW_OF_LEAF_IN_PLACE = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)
_WARN_NONLEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
    "github.com/pytorch/pytorch/pull/30531 for more information."
)


class Tensor(Boxed):
    """A NumPy array with PyTorch's autograd surface (`requires_grad`, `grad`, `backward`)."""

    __slots__ = (
        "_cell",
        "_requires_grad",
        "_grad",
        "_grad_fn",
        "_index",
        "_base",
        "_hooks",
        "_post_acc_hooks",
        "_retains_grad",
        "_acc",
        "__weakref__",
    )
    __array_priority__ = 1000
    __hash__ = object.__hash__  # tensors are dict keys by identity (optimizer state)

    def __init__(self, data=None, *, dtype=None, requires_grad=False):
        value = _as_array(data, dtype)
        self._init(_Cell(_readonly(value)), None, 0)
        if requires_grad:
            self._set_requires_grad(True, _FACTORY_FLAG)

    def _init(self, cell: _Cell, grad_fn: GradFn | None, index: int) -> None:
        self._cell = cell
        self._grad_fn = grad_fn
        self._index = index
        self._requires_grad = grad_fn is not None
        self._grad = None
        self._base = None
        self._hooks = None
        self._post_acc_hooks = None
        self._retains_grad = False
        self._acc = None

    @classmethod
    def _wrap(cls, value, grad_fn: GradFn | None = None, index: int = 0) -> Tensor:
        t = cls.__new__(cls)
        t._init(_Cell(_readonly(value)), grad_fn, index)
        return t

    # -- what NumPy code and PyTorch code read -----------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._cell.value.shape

    def size(self, dim=None):
        shape = self._cell.value.shape
        return shape if dim is None else shape[dim]

    @property
    def dtype(self) -> np.dtype:
        return self._cell.value.dtype

    @property
    def ndim(self) -> int:
        return self._cell.value.ndim

    def dim(self) -> int:
        return self._cell.value.ndim

    def numel(self) -> int:
        return self._cell.value.size

    nelement = numel

    @property
    def device(self) -> str:
        return "cpu"

    @property
    def is_leaf(self) -> bool:
        return self._grad_fn is None

    @property
    def grad_fn(self):
        return self._grad_fn

    @property
    def _version(self) -> int:
        return self._cell.version

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        if self._grad_fn is not None:
            if flag:
                raise RuntimeError("you can only change requires_grad flags of leaf variables.")
            raise RuntimeError(_NON_LEAF_FLAG)
        self._set_requires_grad(
            flag, "only Tensors of floating point and complex dtype can require gradients"
        )

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if self._grad_fn is not None:
            if requires_grad:
                return self
            raise RuntimeError(_NON_LEAF_FLAG)
        self._set_requires_grad(
            requires_grad, "only Tensors of floating point dtype can require gradients"
        )
        return self

    def _set_requires_grad(self, flag, message: str) -> None:
        flag = bool(flag)
        if flag and self.dtype.kind not in "fc":
            raise RuntimeError(message)
        self._requires_grad = flag

    @property
    def data(self) -> Tensor:
        """A detached alias (same cell): `p.data.add_(...)` updates `p` and bumps its version,
        so a graph that saved `p` raises at backward instead of using a changed value."""
        return self.detach()

    @data.setter
    def data(self, new) -> None:
        value = new._cell.value if isinstance(new, Tensor) else _readonly(np.array(new))
        self._cell.value = value
        self._cell.version += 1

    @property
    def grad(self):
        if self._grad is None and self._grad_fn is not None and not self._retains_grad:
            import warnings

            warnings.warn(_WARN_NONLEAF_GRAD, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is None:
            self._grad = None
            return
        if not isinstance(value, Tensor):
            raise TypeError(
                "assigned grad expected to be a Tensor or None but got grad of type "
                f"{type(value).__name__}"
            )
        if value.shape != self.shape:
            raise RuntimeError(
                f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of "
                f"size '{list(self.shape)}'. Please ensure that the gradient and the tensor are "
                "the same size"
            )
        if value.dtype != self.dtype:
            raise RuntimeError(
                f"attempting to assign a gradient with dtype '{value.dtype.name}' to a tensor with "
                f"dtype '{self.dtype.name}'. Please ensure that the gradient and the tensor have "
                "the same dtype"
            )
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    # -- graph plumbing --------------------------------------------------------------------
    def _edge_and_fn(self):
        """The edge this tensor's value flows along, and the node that receives its grad."""
        fn = self._grad_fn
        if fn is not None:
            return Edge(fn.node, self._index), (fn, self._index)
        if self._requires_grad:
            acc = self._accumulator()
            return Edge(acc.node, 0), (acc, 0)
        return None, _NO_NEXT

    def _accumulator(self) -> AccumulateGrad:
        acc = self._acc() if self._acc is not None else None
        if acc is None:
            value = self._cell.value
            acc = AccumulateGrad(self, arg_node(Aval(value.shape, value.dtype)))
            self._acc = weakref.ref(acc)
        return acc

    def _bind_eager(self, prim, args, params):
        return _recording.record(prim, args, params)

    def _constant_value(self):
        return self._cell.value

    def _stop_gradient(self):
        return self.detach()

    # -- conversions ----------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The array itself, read-only (copy it to write)."""
        if self._requires_grad and not force:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() "
                "instead."
            )
        return self._cell.value

    def __array__(self, dtype=None, copy=None):
        value = self.numpy()
        if dtype is not None and np.dtype(dtype) != value.dtype:
            return value.astype(dtype)
        return value.copy() if copy else value

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return _numpy_dispatch().array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return _numpy_dispatch().array_function(func, args, kwargs)

    def item(self):
        value = self._cell.value
        if value.size != 1:
            raise RuntimeError(f"a Tensor with {value.size} elements cannot be converted to Scalar")
        return value.item()

    def tolist(self):
        return self._cell.value.tolist()

    def _scalar(self):
        value = self._cell.value
        if value.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return value.item()

    def __float__(self) -> float:
        return float(self._scalar())

    def __int__(self) -> int:
        return int(self._scalar())

    def __bool__(self) -> bool:
        value = self._cell.value
        if value.size == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if value.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(value.item())

    def __index__(self) -> int:
        value = self._cell.value
        if value.dtype.kind not in "iub" or value.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(value.item())

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")  # at iter(), as PyTorch
        return (self[i] for i in range(self.shape[0]))

    def __repr__(self) -> str:
        value = self._cell.value
        body = _format(value)
        extras = []
        if value.size == 0 and value.ndim != 1:
            extras.append(f"size={value.shape}")
        defaults = (_default_dtype, np.dtype(np.int64), np.dtype(np.bool_), _default_complex())
        if value.dtype not in defaults:
            extras.append(f"dtype={value.dtype.name}")
        if self._grad_fn is not None:
            name = self._grad_fn.name().removeprefix("torch::autograd::")
            extras.append(f"grad_fn=<{name}>")
        elif self._requires_grad:
            extras.append("requires_grad=True")
        return f"tensor({body}{''.join(', ' + e for e in extras)})"

    def __getattr__(self, name: str):
        # NumPy's array methods that PyTorch lacks (`astype`, `swapaxes`, ...) keep NumPy code
        # working on tensors; PyTorch-named methods are attributes of the class and win.
        if not name.startswith("_"):
            method = _numpy_dispatch().METHODS.get(name)
            if method is not None:
                return method.__get__(self)
        raise AttributeError(f"'Tensor' object has no attribute '{name}'")

    # -- autograd surface -------------------------------------------------------------------
    def detach(self) -> Tensor:
        """A leaf sharing this tensor's cell (array and version counter), not requiring grad."""
        t = Tensor.__new__(Tensor)
        t._init(self._cell, None, 0)
        return t

    def detach_(self) -> Tensor:
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self._grad_fn = None
        self._index = 0
        self._requires_grad = False
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        from tracegrad.autograd.engine import backward

        gradient = None if gradient is None else (gradient,)
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        """`hook(grad) -> Tensor | None`, called with this tensor's gradient; a returned tensor
        replaces it. Returns a handle whose `.remove()` takes the hook out."""
        from tracegrad.autograd.function import RemovableHandle

        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        fn = self._grad_fn
        if fn is None:
            if self._hooks is None:
                self._hooks = []
            hooks = self._hooks
        else:
            if fn._tensor_hooks is None:
                fn._tensor_hooks = {}
            hooks = fn._tensor_hooks.setdefault(self._index, [])
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """`hook(tensor)`, called on a leaf after its `.grad` was accumulated."""
        from tracegrad.autograd.function import RemovableHandle

        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        if self._post_acc_hooks is None:
            self._post_acc_hooks = []
        self._post_acc_hooks.append(hook)
        return RemovableHandle(self._post_acc_hooks, hook)

    def retain_grad(self) -> None:
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        fn = self._grad_fn
        if fn is None or self._retains_grad:
            return
        if fn._retained is None:
            fn._retained = {}
        fn._retained.setdefault(self._index, []).append(weakref.ref(self))
        self._retains_grad = True

    # -- in place: rebind the cell to a new array ---------------------------------------------
    def _check_inplace(self) -> None:
        grad_on = _enabled.get()
        base = self._base
        if base is not None:
            if grad_on and base._requires_grad and base._grad_fn is None:
                raise RuntimeError(VIEW_OF_LEAF_IN_PLACE)
            raise NotImplementedError(
                "in-place on a view is not supported by the tracegrad shim; use out-of-place ops "
                "(for example `y = x.clone(); y[...] = v`, or `torch.where`) instead"
            )
        if grad_on and self._requires_grad and self._grad_fn is None:
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation."
            )

    def _snapshot(self) -> Tensor:
        """This tensor as it is now, in a cell of its own: the input of an in-place update."""
        t = Tensor.__new__(Tensor)
        t._init(_Cell(self._cell.value), self._grad_fn, self._index)
        t._requires_grad = self._requires_grad
        return t

    def _rebind(self, result: Tensor) -> Tensor:
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
            from tracegrad.primitives.elementwise import where_p

            old = self._snapshot()
            result = _recording.record(where_p, (np.zeros(self.shape, bool), old, result), {})
            value = result._cell.value
        self._cell.value = value
        self._cell.version += 1
        if result._grad_fn is not None:
            self._grad_fn = result._grad_fn
            self._index = result._index
            self._requires_grad = True
        return self

    def _astype(self, dtype) -> Tensor:
        from tracegrad.primitives.elementwise import astype

        return astype(self, np.dtype(dtype))


def _as_array(data, dtype) -> np.ndarray:
    """`torch.tensor(data)`'s conversion: a copy; Python floats become the default dtype."""
    if isinstance(data, Tensor):
        data = data._cell.value
    if dtype is not None:
        return np.array(data, dtype=np.dtype(dtype))
    if isinstance(data, np.ndarray | np.generic):
        return np.array(data)
    value = np.array(data)
    if value.dtype == np.float64:
        value = value.astype(_default_dtype)
    elif value.dtype == np.complex128 and _default_dtype == np.float32:
        value = value.astype(np.complex64)
    elif value.dtype.kind not in "biufc":
        raise TypeError(
            f"tensor: could not infer a numeric dtype from data of type {type(data).__name__}"
        )
    return value


def tensor(data, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """A new leaf tensor holding a copy of `data` (PyTorch's `torch.tensor`)."""
    _check_device(device)
    if isinstance(data, Tensor) and data._requires_grad:
        data = data._cell.value
    elif isinstance(data, list | tuple) and _holds_tensors(data):
        data = _nested_values(data)
    return Tensor(data, dtype=dtype, requires_grad=requires_grad)


def _holds_tensors(data) -> bool:
    stack = [data]
    while stack:
        d = stack.pop()
        for x in d:
            if isinstance(x, Tensor):
                return True
            if isinstance(x, list | tuple):
                stack.append(x)
    return False


def _nested_values(data):
    if isinstance(data, Tensor):
        return data._cell.value
    if isinstance(data, list | tuple):
        return [_nested_values(x) for x in data]
    return data


def _check_device(device) -> None:
    if device is not None and str(device) != "cpu":
        raise RuntimeError(f"tracegrad tensors live on the CPU; device={device!r} is not available")


# `record` builds the graph and needs the class above: its module is imported after the class
# and read at call time (either module may be imported first).
from tracegrad import recording as _recording  # noqa: E402
