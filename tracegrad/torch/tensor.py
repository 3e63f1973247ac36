"""The PyTorch-style `Tensor`: a NumPy array that records the operations applied to it.

A tensor holds its array in a `_Cell` (shared with `detach()`ed aliases, as PyTorch shares
storage and the version counter) and, once an operation that requires grad produced it, the
`GradFn` of that operation. Operations run eagerly through the same primitives as everything
else: `bind` hands any call with a tensor argument to `record` (`recording.py`), which runs
the primitive's NumPy implementation and, in grad mode with an input that requires grad,
builds the IR node and its `GradFn` (DESIGN.md §6). Tensor methods and operators follow PyTorch:
the class declares them all, and `methods.py` implements them from `ops/` (each declaration
takes its implementation on first use); NumPy functions on tensors follow NumPy.

Arrays are never written in place: an in-place method computes a new array and rebinds the
cell to it, bumping the version. Every array a tensor holds is read-only, so a value a graph
saved cannot change behind its back.

Over 600 lines: the class declares PyTorch's whole tensor surface (a line per family of
methods, implemented in tracegrad.torch.methods), which grows with each family the shim adds.
"""

from __future__ import annotations

import warnings
import weakref
from typing import TYPE_CHECKING

import numpy as np

from tracegrad.core import Boxed, _numpy_dispatch  # NumPy functions on tensors follow NumPy
from tracegrad.diagnostics import tensor_causes
from tracegrad.numpy import _methods
from tracegrad.primitives.elementwise import astype
from tracegrad.torch.dtypes import _default_complex, get_default_dtype
from tracegrad.torch.grad_mode import _enabled
from tracegrad.torch.hooks import RemovableHandle
from tracegrad.torch.printing import add_suffixes, values_text

if TYPE_CHECKING:  # annotations only: the node classes build on this module
    from tracegrad.torch.graph import GradFn


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


# (globals: NumPy's module has a `__getattr__`, so CPython 3.11 reads `np.ndarray` unspecialized)
_ndarray, _array = np.ndarray, np.array


def _readonly(a) -> np.ndarray:
    # (`np.array` and `setflags` without reading `flags` first, its argument positional: a
    # fraction of the cost of `np.asarray`, the `flags` object and NumPy's keyword parsing,
    # which each operation would otherwise pay)
    if not isinstance(a, _ndarray):  # a NumPy scalar (a 0-d op's result): a new array
        a = _array(a)
    a.setflags(False)  # (`write=False`; an array already read-only stays as it is)
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


class _Implemented:
    """A method (or property) of `Tensor` declared in the class and implemented by a module
    that builds on the class: on first use it takes its implementation from
    `tracegrad.torch.methods.METHODS` and puts it in its own place on the class, so later
    uses cost what a plain method costs."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __set_name__(self, owner, name: str) -> None:
        if name != self.name:
            raise TypeError(f"Tensor: {name!r} is declared as {self.name!r}")

    def _implementation(self):
        # The one upward import of the shim: the methods' modules import this one.
        from tracegrad.torch.methods import METHODS

        impl = METHODS[self.name]
        setattr(Tensor, self.name, impl)
        return impl

    def __get__(self, obj, owner=None):
        # a method bound to obj, or a property's value
        return self._implementation().__get__(obj, Tensor)

    def __set__(self, obj, value) -> None:
        # `z.real = v` before any read of `z.real`: the property's setter
        impl = self._implementation()
        setter = getattr(impl, "__set__", None)
        if setter is None:
            raise AttributeError(f"'Tensor' object attribute '{self.name}' is read-only")
        setter(obj, value)


def _implemented(*names: str) -> tuple[_Implemented, ...]:
    return tuple(_Implemented(n) for n in names)


_COMPLEX_TO_REAL = "Casting complex values to real discards the imaginary part"
_SCALAR_WARNING = (
    "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
    "Consider using tensor.detach() first."
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
        "_conj",
        "__weakref__",
    )
    __array_priority__ = 1000
    __hash__ = object.__hash__  # tensors are dict keys by identity (optimizer state)

    def __init__(self, data=None, *, dtype=None, requires_grad=False):
        value = _as_array(data, dtype)
        self._init(_Cell(_readonly(value)), None, 0)
        if requires_grad:
            self._set_requires_grad(True, _FACTORY_FLAG)
        else:
            tensor_causes.created(self, "leaf")  # tracegrad.diagnostics: the line, if on

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
        self._conj = False  # the result of `conj()` (PyTorch's conjugate bit, for `is_conj`)

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
        tensor_causes.rebound(self._cell)  # tracegrad.diagnostics: the line, if on

    @property
    def grad(self):
        if self._grad is None and self._grad_fn is not None and not self._retains_grad:
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

    # -- what tracegrad's core asks of a value that records itself (`core.Boxed`) ----------
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
        if self._conj and not force:  # PyTorch's conjugate is lazy: its memory is not conj(z)
            raise RuntimeError(
                "Can't call numpy() on Tensor that has conjugate bit set. Use "
                "tensor.resolve_conj().numpy() instead."
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

    def _real_scalar(self, c_type: str):
        """The number for float() or int(): a complex one only when it is real, as PyTorch."""
        number = self._scalar()
        if isinstance(number, complex):
            if number.imag != 0:
                raise RuntimeError(f"value cannot be converted to type {c_type} without overflow")
            number = number.real
        return number

    def __float__(self) -> float:
        # PyTorch warns here (and not in int(), complex() or item()): the number keeps no
        # gradient. Only in grad mode, as PyTorch.
        if self.requires_grad and _enabled.get():
            warnings.warn(_SCALAR_WARNING, UserWarning, stacklevel=2)
        return float(self._real_scalar("double"))

    def __int__(self) -> int:
        return int(self._real_scalar("int64_t"))

    def __complex__(self) -> complex:
        return complex(self._scalar())

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
        body = values_text(value, len("tensor("))
        extras = []  # (text, its length in PyTorch's repr, where dtypes read `torch.float64`)
        if value.size == 0 and value.ndim != 1:
            extras.append((f"size={value.shape}", len(f"size={value.shape}")))
        defaults = (get_default_dtype(), np.dtype(np.int64), np.dtype(np.bool_), _default_complex())
        if value.size == 0:  # no values to tell an int64 or a complex tensor by, as PyTorch
            defaults = (get_default_dtype(),)
        if value.dtype not in defaults:
            text = f"dtype={value.dtype.name}"
            extras.append((text, len(text) + len("torch.")))
        if self._grad_fn is not None:
            name = self._grad_fn.name().removeprefix("torch::autograd::")
            extras.append((f"grad_fn=<{name}>", len(f"grad_fn=<{name}>")))
        elif self._requires_grad:
            extras.append(("requires_grad=True", len("requires_grad=True")))
        return add_suffixes(f"tensor({body}", extras, len("tensor("))

    # -- autograd surface -------------------------------------------------------------------
    def detach(self) -> Tensor:
        """A leaf sharing this tensor's cell (array and version counter), not requiring grad."""
        t = Tensor.__new__(Tensor)
        t._init(self._cell, None, 0)
        t._conj = self._conj  # the same values, conjugate bit included
        return tensor_causes.created(t, "detach")  # tracegrad.diagnostics: the line, if on

    def detach_(self) -> Tensor:
        if self._base is not None:
            raise RuntimeError("Can't detach views in-place. Use detach() instead.")
        self._grad_fn = None
        self._index = 0
        self._requires_grad = False
        return self

    def register_hook(self, hook):
        """`hook(grad) -> Tensor | None`, called with this tensor's gradient; a returned tensor
        replaces it. Returns a handle whose `.remove()` takes the hook out."""
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

    def _astype(self, dtype) -> Tensor:
        dtype = np.dtype(dtype)
        if self.dtype.kind == "c" and dtype.kind != "c":  # PyTorch's warning, not NumPy's
            warnings.warn(_COMPLEX_TO_REAL, UserWarning, stacklevel=3)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
                return astype(self, dtype)
        return astype(self, dtype)

    # -- the rest of the surface, implemented above this module --------------------------------
    # Recording an operation, the backward pass, and PyTorch's methods and operators all
    # build on this class (tracegrad.torch.recording, .autograd.engine, .ops), so it declares
    # them here and each finds its implementation in tracegrad.torch.methods at its first use.
    _bind_eager, backward = _implemented("_bind_eager", "backward")
    # arithmetic
    add, sub, subtract, mul, multiply = _implemented("add", "sub", "subtract", "mul", "multiply")
    div, divide, true_divide, pow = _implemented("div", "divide", "true_divide", "pow")
    remainder, floor_divide, neg = _implemented("remainder", "floor_divide", "neg")
    negative, abs, absolute, sign = _implemented("negative", "abs", "absolute", "sign")
    floor, ceil, trunc, round, square = _implemented("floor", "ceil", "trunc", "round", "square")
    reciprocal, sqrt, rsqrt, exp, exp2 = _implemented("reciprocal", "sqrt", "rsqrt", "exp", "exp2")
    expm1, log, log2, log10, log1p = _implemented("expm1", "log", "log2", "log10", "log1p")
    sin, cos, tan, sinh, cosh, tanh = _implemented("sin", "cos", "tan", "sinh", "cosh", "tanh")
    asin, acos, atan, arcsin, arccos = _implemented("asin", "acos", "atan", "arcsin", "arccos")
    arctan, asinh, arcsinh, acosh = _implemented("arctan", "asinh", "arcsinh", "acosh")
    arccosh, atanh, arctanh, atan2 = _implemented("arccosh", "atanh", "arctanh", "atan2")
    sigmoid, relu, maximum, minimum = _implemented("sigmoid", "relu", "maximum", "minimum")
    clamp, clip, clamp_min, clamp_max = _implemented("clamp", "clip", "clamp_min", "clamp_max")
    lerp, addcmul, addcdiv, masked_fill = _implemented("lerp", "addcmul", "addcdiv", "masked_fill")
    (where,) = _implemented("where")
    # special functions
    erf, erfc, erfinv, lgamma = _implemented("erf", "erfc", "erfinv", "lgamma")
    digamma, polygamma, i0, sinc = _implemented("digamma", "polygamma", "i0", "sinc")
    xlogy, hypot = _implemented("xlogy", "hypot")
    # complex numbers (`real` and `imag` are properties with setters)
    real, imag, conj, conj_physical = _implemented("real", "imag", "conj", "conj_physical")
    resolve_conj, is_conj, is_complex = _implemented("resolve_conj", "is_conj", "is_complex")
    angle, sgn = _implemented("angle", "sgn")
    # products
    matmul, mm, bmm, mv, dot, outer = _implemented("matmul", "mm", "bmm", "mv", "dot", "outer")
    det, inverse = _implemented("det", "inverse")
    addmm, addmv, addbmm, baddbmm = _implemented("addmm", "addmv", "addbmm", "baddbmm")
    diag, diag_embed, diagonal = _implemented("diag", "diag_embed", "diagonal")
    roll, rot90, unfold = _implemented("roll", "rot90", "unfold")
    # comparisons
    eq, ne, lt, le, gt, ge, isnan = _implemented("eq", "ne", "lt", "le", "gt", "ge", "isnan")
    isfinite, isinf, logical_not = _implemented("isfinite", "isinf", "logical_not")
    logical_and, logical_or, equal = _implemented("logical_and", "logical_or", "equal")
    allclose, isclose = _implemented("allclose", "isclose")
    # reductions
    sum, mean, prod, var, std, max = _implemented("sum", "mean", "prod", "var", "std", "max")
    min, amax, amin, argmax, argmin = _implemented("min", "amax", "amin", "argmax", "argmin")
    logsumexp, softmax, log_softmax = _implemented("logsumexp", "softmax", "log_softmax")
    norm, all, any, cumsum, cumprod = _implemented("norm", "all", "any", "cumsum", "cumprod")
    sort, argsort, msort, topk = _implemented("sort", "argsort", "msort", "topk")
    kthvalue, median, nanmedian, mode = _implemented("kthvalue", "median", "nanmedian", "mode")
    cummax, cummin, logcumsumexp = _implemented("cummax", "cummin", "logcumsumexp")
    masked_select, nonzero = _implemented("masked_select", "nonzero")
    argwhere, unique = _implemented("argwhere", "unique")
    # shapes
    reshape, view, view_as, reshape_as = _implemented("reshape", "view", "view_as", "reshape_as")
    flatten, t, transpose, swapaxes = _implemented("flatten", "t", "transpose", "swapaxes")
    swapdims, permute, unsqueeze = _implemented("swapdims", "permute", "unsqueeze")
    squeeze, expand, expand_as, repeat = _implemented("squeeze", "expand", "expand_as", "repeat")
    flip, chunk, split, unbind, select = _implemented("flip", "chunk", "split", "unbind", "select")
    narrow, gather, index_select, triu = _implemented("narrow", "gather", "index_select", "triu")
    tril, clone, contiguous, T, mT = _implemented("tril", "clone", "contiguous", "T", "mT")
    # scatter and index updates (ops/scatter.py)
    scatter, scatter_add, scatter_reduce = _implemented("scatter", "scatter_add", "scatter_reduce")
    index_add, index_copy, index_fill = _implemented("index_add", "index_copy", "index_fill")
    index_put, masked_scatter, take = _implemented("index_put", "masked_scatter", "take")
    (take_along_dim,) = _implemented("take_along_dim")
    # ops/shapes_extra.py and ops/products_extra.py
    arctan2, greater, greater_equal, less = _implemented(
        "arctan2", "greater", "greater_equal", "less"
    )
    less_equal, not_equal, positive, moveaxis = _implemented(
        "less_equal", "not_equal", "positive", "moveaxis"
    )
    movedim, ger, fliplr, flipud = _implemented("movedim", "ger", "fliplr", "flipud")
    hsplit, vsplit, dsplit, tensor_split = _implemented(
        "hsplit", "vsplit", "dsplit", "tensor_split"
    )
    broadcast_to, ravel, tile, unflatten = _implemented(
        "broadcast_to", "ravel", "tile", "unflatten"
    )
    repeat_interleave, narrow_copy, select_scatter, slice_scatter = _implemented(
        "repeat_interleave", "narrow_copy", "select_scatter", "slice_scatter"
    )
    diagonal_scatter, diagflat, trace, kron = _implemented(
        "diagonal_scatter", "diagflat", "trace", "kron"
    )
    inner, vdot, addr, cross = _implemented("inner", "vdot", "addr", "cross")
    dist, renorm = _implemented("dist", "renorm")
    # ops/math_extra.py, ops/math_extra_reductions.py and ops/linalg_names.py
    fmod, frac, float_power, copysign = _implemented("fmod", "frac", "float_power", "copysign")
    heaviside, logaddexp, logaddexp2, logit = _implemented(
        "heaviside", "logaddexp", "logaddexp2", "logit"
    )
    nan_to_num, signbit, isneginf, isposinf = _implemented(
        "nan_to_num", "signbit", "isneginf", "isposinf"
    )
    isreal, is_nonzero, deg2rad, rad2deg = _implemented(
        "isreal", "is_nonzero", "deg2rad", "rad2deg"
    )
    fmax, fmin, gcd, lcm, ldexp = _implemented("fmax", "fmin", "gcd", "lcm", "ldexp")
    frexp, nextafter, logical_xor = _implemented("frexp", "nextafter", "logical_xor")
    bitwise_and, bitwise_or, bitwise_xor = _implemented("bitwise_and", "bitwise_or", "bitwise_xor")
    bitwise_not, mvlgamma, igamma, igammac = _implemented(
        "bitwise_not", "mvlgamma", "igamma", "igammac"
    )
    nansum, nanmean, quantile, nanquantile = _implemented(
        "nansum", "nanmean", "quantile", "nanquantile"
    )
    count_nonzero, bincount, histc, diff = _implemented(
        "count_nonzero", "bincount", "histc", "diff"
    )
    aminmax, unique_consecutive, cov, corrcoef = _implemented(
        "aminmax", "unique_consecutive", "cov", "corrcoef"
    )
    cholesky, qr, svd, slogdet, logdet = _implemented("cholesky", "qr", "svd", "slogdet", "logdet")
    matrix_power, matrix_exp, pinverse = _implemented("matrix_power", "matrix_exp", "pinverse")
    (triangular_solve,) = _implemented("triangular_solve")
    # dtypes, devices, new tensors
    to, type, type_as = _implemented("to", "type", "type_as")
    float, double, half = _implemented("float", "double", "half")
    int, long, bool, cpu, cuda = _implemented("int", "long", "bool", "cpu", "cuda")
    is_floating_point, new_zeros = _implemented("is_floating_point", "new_zeros")
    new_ones, new_empty, new_full = _implemented("new_ones", "new_empty", "new_full")
    new_tensor, cfloat, cdouble = _implemented("new_tensor", "cfloat", "cdouble")
    device, is_cpu, is_cuda = _implemented("device", "is_cpu", "is_cuda")
    bernoulli, multinomial = _implemented("bernoulli", "multinomial")
    # in place
    zero_, fill_, copy_, normal_ = _implemented("zero_", "fill_", "copy_", "normal_")
    bernoulli_, exponential_, random_ = _implemented("bernoulli_", "exponential_", "random_")
    uniform_, add_, sub_, mul_, div_ = _implemented("uniform_", "add_", "sub_", "mul_", "div_")
    pow_, neg_, exp_, log_, sin_ = _implemented("pow_", "neg_", "exp_", "log_", "sin_")
    cos_, tanh_, sqrt_, abs_, sigmoid_ = _implemented("cos_", "tanh_", "sqrt_", "abs_", "sigmoid_")
    relu_, clamp_, clamp_min_ = _implemented("relu_", "clamp_", "clamp_min_")
    clamp_max_, lerp_, addcmul_ = _implemented("clamp_max_", "lerp_", "addcmul_")
    addcdiv_, masked_fill_, reciprocal_ = _implemented("addcdiv_", "masked_fill_", "reciprocal_")
    floor_, ceil_, round_, sign_ = _implemented("floor_", "ceil_", "round_", "sign_")
    square_, remainder_ = _implemented("square_", "remainder_")
    erf_, erfc_, erfinv_, lgamma_ = _implemented("erf_", "erfc_", "erfinv_", "lgamma_")
    digamma_, polygamma_, i0_, sinc_ = _implemented("digamma_", "polygamma_", "i0_", "sinc_")
    xlogy_, hypot_, addmm_, addmv_ = _implemented("xlogy_", "hypot_", "addmm_", "addmv_")
    addbmm_, baddbmm_ = _implemented("addbmm_", "baddbmm_")
    scatter_, scatter_add_ = _implemented("scatter_", "scatter_add_")
    scatter_reduce_, index_add_ = _implemented("scatter_reduce_", "index_add_")
    index_copy_, index_fill_ = _implemented("index_copy_", "index_fill_")
    index_put_, masked_scatter_ = _implemented("index_put_", "masked_scatter_")
    # operators
    __getitem__, __setitem__, __add__ = _implemented("__getitem__", "__setitem__", "__add__")
    __radd__, __sub__, __rsub__ = _implemented("__radd__", "__sub__", "__rsub__")
    __mul__, __rmul__, __truediv__ = _implemented("__mul__", "__rmul__", "__truediv__")
    __rtruediv__, __floordiv__ = _implemented("__rtruediv__", "__floordiv__")
    __rfloordiv__, __mod__, __rmod__ = _implemented("__rfloordiv__", "__mod__", "__rmod__")
    __pow__, __rpow__, __matmul__ = _implemented("__pow__", "__rpow__", "__matmul__")
    __rmatmul__, __neg__, __pos__ = _implemented("__rmatmul__", "__neg__", "__pos__")
    __abs__, __eq__, __ne__, __lt__ = _implemented("__abs__", "__eq__", "__ne__", "__lt__")
    __le__, __gt__, __ge__, __and__ = _implemented("__le__", "__gt__", "__ge__", "__and__")
    __or__, __invert__, __iadd__ = _implemented("__or__", "__invert__", "__iadd__")
    __isub__, __imul__, __itruediv__ = _implemented("__isub__", "__imul__", "__itruediv__")
    __ipow__, __imod__ = _implemented("__ipow__", "__imod__")


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
        value = value.astype(get_default_dtype())
    elif value.dtype == np.complex128 and get_default_dtype() == np.float32:
        value = value.astype(np.complex64)
    elif value.dtype.kind not in "biufc":
        raise TypeError(
            f"tensor: could not infer a numeric dtype from data of type {type(data).__name__}"
        )
    return value


# NumPy's array methods that PyTorch lacks (`astype`, `swapaxes`, ...) keep NumPy code working
# on tensors; PyTorch-named methods are attributes of the class and win.
_methods.install(Tensor)
