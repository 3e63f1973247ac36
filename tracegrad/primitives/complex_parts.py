"""`complex`: a complex array from its real and imaginary parts (JAX's `lax.complex`).

NumPy has no function for it, and no composition of its ufuncs gives the exact bits: `re +
1j * im` turns `im = inf` into a NaN real part and `re = -0.0` into `+0.0`. The primitive
writes the two parts into a new complex array, so every bit of both survives; the shim's
`torch.complex`, `torch.polar` and `torch.view_as_complex` are built on it.
"""

from __future__ import annotations

import numpy as np

from tracegrad.core import bind
from tracegrad.ir.layout import Layout
from tracegrad.ir.primitive import READS_NOTHING, Primitive, rule_for
from tracegrad.ir.types import Aval, aval_of, carries_derivative, shape_of
from tracegrad.primitives import series
from tracegrad.primitives.batching import elementwise_batch
from tracegrad.primitives.broadcasting import broadcast_shapes, broadcast_to, unbroadcast
from tracegrad.primitives.elementwise import imag, negative, real

#: the complex dtype whose parts are each float dtype NumPy pairs (NumPy has no complex32)
_COMPLEX_OF = {
    np.dtype(np.float32): np.dtype(np.complex64),
    np.dtype(np.float64): np.dtype(np.complex128),
}


def complex_(re, im):
    """`re + 1j * im`, exactly: a complex array whose parts are `re` and `im` (broadcast)."""
    return bind(complex_p, re, im)


def _part_dtype(re: Aval, im: Aval) -> np.dtype:
    """The parts' common float dtype (a Python float takes the array's, as NumPy 2 does)."""
    for a in (re, im):
        if a.dtype.kind != "f":
            raise TypeError(
                f"complex: the parts must be float32 or float64, got {re.dtype.name} and "
                f"{im.dtype.name}"
            )
    if re.weak_type != im.weak_type:
        dtype = im.dtype if re.weak_type else re.dtype
    else:
        dtype = np.promote_types(re.dtype, im.dtype)
    if dtype not in _COMPLEX_OF:
        raise TypeError(
            f"complex: NumPy has no complex dtype with {dtype.name} parts; use float32 or float64"
        )
    return dtype


def _shape(re: Aval, im: Aval) -> Aval:
    dtype = _COMPLEX_OF[_part_dtype(re, im)]
    return Aval(broadcast_shapes("complex", re.shape, im.shape), dtype)


def _impl(re, im):
    aval = _shape(aval_of(re), aval_of(im))  # eager calls check their parts here
    out = np.empty(aval.shape, aval.dtype)
    out.real = re
    out.imag = im
    return out


def _emit(re, im) -> str:
    # the two parts side by side, read as complex: the same bits as `_impl`, in one expression
    dtype = f"np.result_type({re}, {im})"
    parts = f"np.broadcast_arrays(np.asarray({re}, {dtype}), np.asarray({im}, {dtype}))"
    return f"np.stack({parts}, -1).view(np.result_type({dtype}, 1j))[..., 0]"


def _jvp(primals, tangents, *, out):
    # linear: the tangent is complex(re_dot, im_dot), a missing one standing for zeros
    re_dot, im_dot = tangents
    if re_dot is None and im_dot is None:
        return None
    t = complex_(0.0 if re_dot is None else re_dot, 0.0 if im_dot is None else im_dot)
    return t if shape_of(t) == shape_of(out) else broadcast_to(t, shape_of(out))


def _re_bar(bar, re, im, *, out):
    # JAX's transpose under Re(sum(a * b)): Re(bar * (re + i im)) = Re(bar) re - Im(bar) im
    return unbroadcast(real(bar), shape_of(re)) if carries_derivative(re) else None


def _im_bar(bar, re, im, *, out):
    return unbroadcast(negative(imag(bar)), shape_of(im)) if carries_derivative(im) else None


complex_p = Primitive(
    "complex",
    impl=_impl,
    shape=_shape,
    jvp=_jvp,
    vjp=(_re_bar, _im_bar),
    batch=rule_for(elementwise_batch),
    emit=_emit,
    vjp_reads=READS_NOTHING,
    layout=Layout.C,
    torch_name="ComplexBackward0",
    taylor=series.LINEAR,
)

PRIMITIVES = (complex_p,)
