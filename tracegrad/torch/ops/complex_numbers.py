"""PyTorch's complex functions: parts, conjugates, angle, sgn, and complex from real tensors.

`real`, `imag`, `conj`, `view_as_real` and `view_as_complex` are views in PyTorch; here they
are new tensors that remember their base, so an in-place change of one raises (the shim's rule
for views) while `z.real = v` and `z.imag = v` rebind `z` itself, as PyTorch's copy into the
view changes `z`. `conj` is materialized but marked (`is_conj`), so `resolve_conj` behaves as
PyTorch's. Gradients are PyTorch's because the backward pass conjugates at its boundary
(`engine`); the functions here only compute values, with PyTorch's choices at the singular
points (`angle` and `sgn` have a zero gradient at 0).
"""

from __future__ import annotations

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.core import bind
from tracegrad.primitives import elementwise as ew
from tracegrad.primitives.complex_parts import complex_
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.grad_mode import _enabled
from tracegrad.torch.ops.conventions import _as_tensor, _named
from tracegrad.torch.ops.inplace import rebind
from tracegrad.torch.ops.promotion import _mismatch
from tracegrad.torch.recording import _root_base
from tracegrad.torch.tensor import VIEW_OF_LEAF_IN_PLACE, Tensor

_NOT_COMPLEX_IMAG = "imag is not implemented for tensors with non-complex dtypes."


def is_complex(input) -> bool:
    return _as_tensor(input).dtype.kind == "c"


def is_conj(input) -> bool:
    """Whether `input` is the (lazy, in PyTorch) result of `conj()`."""
    return _as_tensor(input)._conj


def _view(out: Tensor, of: Tensor) -> Tensor:
    """`out` marked as a view of `of`: in-place methods on it raise, as on any shim view."""
    out._base = _root_base(of)
    return out


def real(input):
    """The real part: the tensor itself when it is real, as in PyTorch."""
    x = _as_tensor(input)
    if x.dtype.kind != "c":
        return x
    return _named(bind(ew.real_p, x), "SelectBackward0")


def imag(input):
    x = _as_tensor(input)
    if x.dtype.kind != "c":
        raise RuntimeError(_NOT_COMPLEX_IMAG)
    return _view(_named(bind(ew.imag_p, x), "SelectBackward0"), x)


def conj(input):
    """The conjugate, marked as PyTorch's conjugate view (`is_conj()`); a real tensor itself."""
    x = _as_tensor(input)
    if x.dtype.kind != "c":
        return x
    out = _view(bind(ew.conjugate_p, x), x)
    out._conj = not x._conj
    return out


def conj_physical(input):
    x = _as_tensor(input)
    if x.dtype.kind != "c":
        return x
    return _named(bind(ew.conjugate_p, x), "ConjPhysicalBackward0")


def resolve_conj(input):
    """A tensor with the conjugation applied: a copy of a `conj()` result, else the input."""
    x = _as_tensor(input)
    if not x._conj:
        return x
    return _named(bind(ew.positive_p, x), "CloneBackward0", (x,))


def angle(input):
    """The argument: atan2(imag, real) for complex numbers (zero gradient at 0, as PyTorch);
    pi for negative real numbers, 0 otherwise, NaN for NaN (always a zero gradient)."""
    x = _as_tensor(input)
    if x.dtype.kind == "c":
        zero = ew.equal(x, 0)
        safe = ew.where(zero, 1.0, x)  # atan2's derivative is 0 / 0 at the origin
        fixed = x.detach()  # atan2 of the signed zeros there (0, pi, -0 or -pi)
        at_zero = bind(ew.arctan2_p, ew.imag(fixed), ew.real(fixed))
        out = ew.where(zero, at_zero, bind(ew.arctan2_p, ew.imag(safe), ew.real(safe)))
        return _named(out, "AngleBackward0", (x,))
    if x.dtype.kind in "biu":
        x = x._astype(get_default_dtype())
    still = bind(ew.stop_gradient_p, x)  # recorded, passing no gradient: PyTorch's zeros
    pi, zero = np.asarray(np.pi, x.dtype), np.zeros((), x.dtype)
    out = ew.where(bind(ew.isnan_p, still), still, ew.where(still < 0, pi, zero))
    return _named(out, "AngleBackward0", (x,))


def sgn(input):
    """z / |z| (0 at 0) for complex tensors, with PyTorch's bits (each part divided by the
    absolute value); `sign` for real ones."""
    x = _as_tensor(input)
    if x.dtype.kind != "c":
        return _named(bind(ew.sign_p, x), "SgnBackward0")
    zero = ew.equal(x, 0)
    safe = ew.where(zero, 1.0, x)
    size = bind(ew.absolute_p, safe)
    unit = complex_(ew.real(safe) / size, ew.imag(safe) / size)
    return _named(ew.where(zero, 0.0, unit), "SgnBackward0", (x,))


def view_as_real(input):
    x = _as_tensor(input)
    if x.dtype.kind != "c":
        raise RuntimeError("view_as_real is only supported for complex tensors")
    if x._conj:
        raise RuntimeError(
            "view_as_real doesn't work on unresolved conjugated tensors.  To resolve the "
            "conjugate tensor so you can view it as real, use self.resolve_conj(); however, be "
            "warned that the resulting tensor will NOT alias the original."
        )
    out = tnp.stack([bind(ew.real_p, x), bind(ew.imag_p, x)], axis=-1)
    return _view(_named(out, "ViewAsRealBackward0", (x,)), x)


def view_as_complex(input):
    """The pairs of the last axis (of size 2) as complex numbers. A copy, so any strides do
    (PyTorch's view needs a last axis of stride 1, and the shim's strides are NumPy's, which
    differ from PyTorch's where one copies and the other views, as `flip` does)."""
    x = _as_tensor(input)
    _check_parts_dtype(x.dtype, "view_as_complex")
    if x.dtype.kind != "f":
        raise RuntimeError(
            "view_as_complex is only supported for half, float and double tensors, but got a "
            f"tensor of scalar type: {x.dtype.name}"
        )
    if x.ndim == 0:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if x.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    out = complex_(tnp.getitem(x, (Ellipsis, 0)), tnp.getitem(x, (Ellipsis, 1)))
    return _view(_named(out, "ViewAsComplexBackward0", (x,)), x)


def _check_parts_dtype(dtype, name: str) -> None:
    if dtype == np.float16:
        raise NotImplementedError(
            f"{name}: float16 parts make PyTorch's complex32, which NumPy (and so tracegrad) "
            "does not have; convert the parts to float32 first"
        )


def _parts(real, imag, name: str):
    """PyTorch's checks on the two real tensors of `complex` and `polar`."""
    for i, (arg, t) in enumerate((("real", real), ("imag", imag))):
        if not isinstance(t, Tensor):
            which = ("abs", "angle")[i] if name == "polar" else arg
            raise TypeError(
                f"{name}(): argument '{which}' (position {i + 1}) must be Tensor, not "
                f"{type(t).__name__}"
            )
    if real.dtype.kind != "f" or imag.dtype.kind != "f":
        raise RuntimeError(
            "Expected both inputs to be float16, float32 or float64 tensors but got "
            f"{real.dtype.name} and {imag.dtype.name}"
        )
    if real.dtype != imag.dtype:
        raise RuntimeError(
            f"Expected object of scalar type {real.dtype.name} but got scalar type "
            f"{imag.dtype.name} for second argument"
        )
    _check_parts_dtype(real.dtype, name)
    message = _mismatch(real, imag)
    if message is not None:
        raise RuntimeError(message)


def complex(real, imag):  # noqa: A001 - PyTorch's name
    """`real + 1j * imag` from two float tensors of one dtype (broadcast), exactly."""
    _parts(real, imag, "complex")
    return _named(complex_(real, imag), "ComplexBackward0", (real, imag))


def polar(abs, angle):  # noqa: A002 - PyTorch's names
    """`abs * (cos(angle) + 1j * sin(angle))`, each part computed as PyTorch does."""
    _parts(abs, angle, "polar")
    out = complex_(abs * ew.cos(angle), abs * ew.sin(angle))
    return _named(out, "PolarBackward0", (abs, angle))


# -- z.real = v, z.imag = v ---------------------------------------------------------------------


def _set_part(self: Tensor, value, which: str) -> None:
    """`z.real = v` / `z.imag = v`: `z` rebound to the complex number with that part replaced
    (PyTorch copies into the view, which changes `z`); a real tensor's `.real` is itself."""
    if self.dtype.kind != "c":
        if which == "imag":
            raise RuntimeError(_NOT_COMPLEX_IMAG)
        self.copy_(value)
        return
    if _enabled.get() and self._requires_grad and self._grad_fn is None:
        raise RuntimeError(VIEW_OF_LEAF_IN_PLACE)
    self._check_inplace()
    old = self._snapshot()
    part = _as_tensor(value)
    real_dtype = np.dtype(f"f{self.dtype.itemsize // 2}")
    if part.dtype != real_dtype:
        part = part._astype(real_dtype)
    part = tnp.broadcast_to(part, self.shape)
    new = complex_(part, ew.imag(old)) if which == "real" else complex_(ew.real(old), part)
    rebind(self, _named(new, "torch::autograd::CopySlices", (old, part)))


def _part_property(which: str, getter):
    def set_part(self, value):
        _set_part(self, value, which)

    return property(getter, set_part)


real_property = _part_property("real", real)
imag_property = _part_property("imag", imag)

__all__ = [
    "is_complex",
    "is_conj",
    "real",
    "imag",
    "conj",
    "conj_physical",
    "resolve_conj",
    "angle",
    "sgn",
    "view_as_real",
    "view_as_complex",
    "complex",
    "polar",
]
