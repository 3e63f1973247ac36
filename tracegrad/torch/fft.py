"""`tracegrad.torch.fft`: PyTorch's `torch.fft` on tensors, over `tracegrad.numpy.fft`.

The transforms are NumPy's pocketfft calls (tracegrad.primitives.fft), recorded like any shim
operation, so gradients are the primitives' adjoint transforms with the shim's complex
convention. What is PyTorch's is the argument handling, done here before NumPy sees it:
`dim` (not `axis`), unique dims only, `s` without `dim` meaning the last `len(s)` dims, `-1` in
`s` for "this dimension's size", integer inputs promoted to the default float dtype, float16
refused, and `fftn` over no dims returning a complex copy. float32 stays single precision
(complex64), as in PyTorch and NumPy 2. `fftshift`, `ifftshift`, `fftfreq` and `rfftfreq`
(of the default float dtype) complete the module.
"""

from __future__ import annotations

import numbers

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.torch.creation_from_data import _check_device
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.linalg import scalar_type
from tracegrad.torch.ops.conventions import _alias, _as_tensor, _named
from tracegrad.torch.tensor import Tensor

__all__ = [
    "fft",
    "ifft",
    "rfft",
    "irfft",
    "hfft",
    "ihfft",
    "fft2",
    "ifft2",
    "rfft2",
    "irfft2",
    "fftn",
    "ifftn",
    "rfftn",
    "irfftn",
    "fftshift",
    "ifftshift",
    "fftfreq",
    "rfftfreq",
]

_NORMS = (None, "backward", "ortho", "forward")

#: PyTorch's grad_fn per transform kind (real-to-complex, complex-to-complex, complex-to-real)
_GRAD_FN = {"rfft": "FftR2CBackward0", "fft": "FftC2CBackward0", "irfft": "FftC2RBackward0"}


def _input(name: str, x, out, *, real: bool = False) -> Tensor:
    """The tensor to transform: integers and bools promoted to the default float dtype, float16
    refused (PyTorch's CPU transforms have no half kernel), complex refused for real ones."""
    if out is not None:
        raise NotImplementedError(
            f"tracegrad.torch.fft.{name}: out= is not supported (the shim's tensors are "
            "immutable arrays); assign the result instead"
        )
    x = _as_tensor(x)
    if x.dtype.kind in "biu":
        x = x._astype(get_default_dtype())
    if x.dtype == np.float16:
        raise RuntimeError("Unsupported dtype Half")
    if real and x.dtype.kind == "c":
        if name.endswith(("n", "2")):  # rfft2 is rfftn in PyTorch's messages
            message = "rfftn expects a real-valued input tensor"
        else:
            message = f"{name} expects a real input tensor"
        raise RuntimeError(f"{message}, but got {scalar_type(x.dtype)}")
    return x


def _norm(norm) -> str | None:
    if norm not in _NORMS:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _dim(dim, ndim: int) -> int:
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -ndim <= dim < ndim:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but "
            f"got {dim})"
        )
    return int(dim) % ndim


def _points(n: int) -> int:
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return int(n)


def _complex(x: Tensor) -> Tensor:
    """A new complex tensor of `x`'s values (PyTorch's `fftn` over no dims, never `x` itself)."""
    if x.dtype.kind == "c":
        return _alias(x, _GRAD_FN["fft"])
    return _named(x._astype(np.result_type(x.dtype, np.complex64)), _GRAD_FN["fft"], (x,))


# -- one dimension ------------------------------------------------------------------------------


def _one(name: str, kind: str, x, n, dim, norm, out):
    x = _input(name, x, out, real=kind in ("rfft", "ihfft"))
    norm = _norm(norm)
    axis = _dim(dim, x.ndim)
    if n is None:
        n = 2 * (x.shape[axis] - 1) if kind in ("irfft", "hfft") else x.shape[axis]
    result = getattr(tnp.fft, name)(x, n=_points(n), axis=axis, norm=norm)
    return _named(result, _grad_fn(name, kind, x), (x,))


def _grad_fn(name: str, kind: str, x: Tensor) -> str:
    """PyTorch's name for the node: by the kind of transform it runs, which for a real input
    to a complex 1-D transform is real-to-complex (the inverse one then conjugates it)."""
    if kind in ("irfft", "hfft"):
        return _GRAD_FN["irfft"]
    if name in ("ifft", "ihfft") and x.dtype.kind != "c":
        return "ConjBackward0"
    if kind in ("rfft", "ihfft") or x.dtype.kind != "c" and name in ("fft", "ifft"):
        return _GRAD_FN["rfft"]
    return _GRAD_FN["fft"]


def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D discrete Fourier transform along `dim`, the input cropped or zero-padded to `n`."""
    return _one("fft", "fft", input, n, dim, norm, out)


def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    return _one("ifft", "fft", input, n, dim, norm, out)


def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The transform of a real input, its `n // 2 + 1` non-negative frequencies."""
    return _one("rfft", "rfft", input, n, dim, norm, out)


def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The real signal of length `n` (default `2 * (m - 1)`) whose half-spectrum is `input`."""
    return _one("irfft", "irfft", input, n, dim, norm, out)


def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    return _one("hfft", "hfft", input, n, dim, norm, out)


def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    return _one("ihfft", "ihfft", input, n, dim, norm, out)


# -- several dimensions -------------------------------------------------------------------------


def _sizes(s) -> list:
    if isinstance(s, numbers.Integral):
        return [int(s)]
    s = list(s)
    for i, v in enumerate(s):
        if not isinstance(v, numbers.Integral):
            raise TypeError(
                f"fft: argument 's' failed to unpack the object at pos {i + 1} with error "
                f'"type must be tuple of ints,but got {type(v).__name__}"'
            )
    return [int(v) for v in s]


def _shape_and_dims(x: Tensor, s, dim):
    """PyTorch's `s`/`dim` resolution: dim None means every dim, or the last `len(s)` when
    `s` is given; `-1` in `s` keeps that dimension's size (resolved by the caller)."""
    if dim is not None:
        dims = [_dim(d, x.ndim) for d in ((dim,) if isinstance(dim, numbers.Integral) else dim)]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is None:
        dims = list(range(x.ndim)) if dim is None else dims
        return [-1] * len(dims), dims
    s = _sizes(s)
    if dim is None:
        if len(s) > x.ndim:
            raise RuntimeError(
                f"Got shape with {len(s)} values but input tensor only has {x.ndim} dimensions."
            )
        dims = list(range(x.ndim - len(s), x.ndim))
    elif len(s) != len(dims):
        raise RuntimeError("When given, dim and shape arguments must have the same length")
    return s, dims


def _nd(name: str, kind: str, x, s, dim, norm, out):
    x = _input(name, x, out, real=kind == "rfft")
    norm = _norm(norm)
    s, dims = _shape_and_dims(x, s, dim)
    if not dims:
        if kind != "fft":
            raise RuntimeError(f"{name.replace('2', 'n')} must transform at least one axis")
        return _complex(x)  # PyTorch returns a complex copy of the input
    if kind == "irfft" and s[-1] == -1:  # the output length of the last dim: 2 * (m - 1)
        s[-1] = 2 * (x.shape[dims[-1]] - 1)
    s = [x.shape[d] if n == -1 else n for n, d in zip(s, dims)]
    s = [_points(n) for n in s]
    numpy_name = name.replace("2", "n")
    result = getattr(tnp.fft, numpy_name)(x, s=tuple(s), axes=tuple(dims), norm=norm)
    return _named(result, _grad_fn(name, kind, x), (x,))


def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D transform over `dim` (every dim by default, or the last `len(s)` with `s`)."""
    return _nd("fftn", "fft", input, s, dim, norm, out)


def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    return _nd("ifftn", "fft", input, s, dim, norm, out)


def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The n-D transform of a real input; the last of `dim` keeps `s[-1] // 2 + 1` bins."""
    return _nd("rfftn", "rfft", input, s, dim, norm, out)


def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of `rfftn`; the last of `dim` has length `s[-1]`, default `2 * (m - 1)`."""
    return _nd("irfftn", "irfft", input, s, dim, norm, out)


def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _nd("fft2", "fft", input, s, dim, norm, out)


def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _nd("ifft2", "fft", input, s, dim, norm, out)


def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _nd("rfft2", "rfft", input, s, dim, norm, out)


def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    return _nd("irfft2", "irfft", input, s, dim, norm, out)


# -- shifts -------------------------------------------------------------------------------------


def fftshift(input, dim=None):
    """The zero frequency moved to the middle of each of `dim` (every dim by default)."""
    x = _as_tensor(input)
    dims = None if dim is None else tuple(_dim(d, x.ndim) for d in _dims_of(dim))
    return tnp.fft.fftshift(x, axes=dims)


def ifftshift(input, dim=None):
    x = _as_tensor(input)
    dims = None if dim is None else tuple(_dim(d, x.ndim) for d in _dims_of(dim))
    return tnp.fft.ifftshift(x, axes=dims)


def _dims_of(dim):
    return (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)


# -- sample frequencies -------------------------------------------------------------------------


def _frequencies(name: str, n, d, dtype, requires_grad):
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name}(): argument 'n' (position 1) must be int, not {type(n).__name__}")
    values = getattr(np.fft, name)(int(n), d)  # NumPy's float64 values, then the dtype's
    dtype = np.dtype(get_default_dtype() if dtype is None else dtype)
    out = Tensor._wrap(values.astype(dtype))
    return out.requires_grad_(requires_grad) if requires_grad else out


def fftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """The sample frequencies of an `n`-point transform with spacing `d`, of the default float
    dtype (or `dtype`)."""
    _check_device(device)
    return _frequencies("fftfreq", n, d, dtype, requires_grad)


def rfftfreq(n, d=1.0, *, dtype=None, device=None, requires_grad=False):
    """The non-negative sample frequencies of an `n`-point real transform."""
    _check_device(device)
    return _frequencies("rfftfreq", n, d, dtype, requires_grad)
