"""PyTorch's matrix functions: the fused products (`addmm`, `addmv`, `addbmm`, `baddbmm`),
diagonals (`diag`, `diag_embed`, `diagonal`), rearrangements (`roll`, `rot90`,
`Tensor.unfold`), index sets (`tril_indices`, `triu_indices`) and `nn.functional.one_hot`.

All are compositions of tracegrad's matmul, pad, take and shape primitives, so their
derivatives are those primitives'. The fused products check shapes and dtypes as PyTorch does
(no type promotion: its BLAS kernels take one dtype) and, as its kernels do, ignore `input`
when `beta == 0` and the product when `alpha == 0`, so a nan or inf there does not leak in.
"""

from __future__ import annotations

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.primitives import broadcasting
from tracegrad.torch.creation_from_data import _check_device
from tracegrad.torch.ops.arithmetic import add, matmul, mul, where
from tracegrad.torch.ops.conventions import _as_tensor, _dims, _named, _real_number
from tracegrad.torch.ops.shapes import clone, expand
from tracegrad.torch.tensor import Tensor


def _factor(value, dtype):
    """`beta` or `alpha` as PyTorch's kernel reads it for `dtype`: a real number, truncated
    to an integer for integer tensors (`beta=0.5` on int64 is 0)."""
    value = _real_number(value, dtype)
    return int(value) if np.dtype(dtype).kind in "biu" else value


def _scaled(value, factor, dtype):
    """`factor * value`, skipped for 1 (PyTorch's kernels do not round by a multiply by 1)."""
    if factor == 1:
        return value
    out = mul(value, factor)
    return out._astype(dtype) if out.dtype != dtype else out


def _fused(input, product, beta, alpha, shape, name: str, inputs):
    """beta * input + alpha * product, with `input` expanded to `shape`. A term whose factor
    is 0 is dropped from the sum and joined by a `where` that never selects it, so its
    inputs still get a (zero) gradient, as PyTorch's, but its values (nan, inf) never reach
    the result."""
    if input.ndim > len(shape):
        raise RuntimeError(
            f"expand({input.dtype.name}{{{list(input.shape)}}}, size={list(shape)}): the number "
            f"of sizes provided ({len(shape)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({input.ndim})"
        )
    base = expand(input, shape)
    dtype = product.dtype
    beta, alpha = _factor(beta, dtype), _factor(alpha, dtype)
    kept = [_scaled(v, f, dtype) for v, f in ((base, beta), (product, alpha)) if f != 0]
    out = add(*kept) if len(kept) == 2 else kept[0] if kept else _as_tensor(np.zeros(shape, dtype))
    never = _as_tensor(np.zeros(shape, np.bool_))
    for value, factor in ((base, beta), (product, alpha)):
        if factor == 0:
            out = where(never, value, out)
    return _named(out, name, inputs)


def _product(alpha, a, b):
    """`a @ b`; with `alpha == 0` it is computed only to pass a zero gradient on, so the
    nan and inf it may hold are not warned about (PyTorch's kernel never forms it)."""
    if alpha != 0:
        return matmul(a, b)
    with np.errstate(invalid="ignore", over="ignore"):
        return matmul(a, b)


def _mm_dtypes(input, mat1, mat2) -> None:
    """addmm's and addbmm's dtype check: `input` against `mat2`, then `mat1` against it."""
    if input.dtype != mat2.dtype:
        raise RuntimeError(
            "self and mat2 must have the same dtype, but got "
            f"{input.dtype.name} and {mat2.dtype.name}"
        )
    if mat1.dtype != mat2.dtype:
        raise RuntimeError(
            "mat1 and mat2 must have the same dtype, but got "
            f"{mat1.dtype.name} and {mat2.dtype.name}"
        )


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """`torch.addmm`: beta * input + alpha * (mat1 @ mat2), `input` broadcast to the product."""
    input, mat1, mat2 = _as_tensor(input), _as_tensor(mat1), _as_tensor(mat2)
    for name, m in (("mat1", mat1), ("mat2", mat2)):
        if m.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {m.ndim}-D tensor")
    _mm_dtypes(input, mat1, mat2)
    (n, k), (k2, m) = mat1.shape, mat2.shape
    if k != k2:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})")
    product = _product(alpha, mat1, mat2)
    return _fused(input, product, beta, alpha, (n, m), "AddmmBackward0", (input, mat1, mat2))


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """`torch.addmv`: beta * input + alpha * (mat @ vec)."""
    input, mat, vec = _as_tensor(input), _as_tensor(mat), _as_tensor(vec)
    if not (input.ndim <= 1 and mat.ndim == 2 and vec.ndim == 1):
        raise RuntimeError(
            f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, {vec.ndim}"
        )
    (n, k), (k2,) = mat.shape, vec.shape
    if k != k2 or input.shape not in ((), (1,), (n,)):
        got = "x".join(map(str, input.shape))
        raise RuntimeError(f"size mismatch, got input ({got}), mat ({n}x{k}), vec ({k2})")
    if not input.dtype == mat.dtype == vec.dtype:
        raise RuntimeError(
            "addmv input tensors must have the same dtype, but got "
            f"{input.dtype.name}, {mat.dtype.name}, and {vec.dtype.name}"
        )
    product = _product(alpha, mat, vec)
    return _fused(input, product, beta, alpha, (n,), "AddmvBackward0", (input, mat, vec))


def _batches(batch1, batch2) -> tuple[int, ...]:
    """(b, n, k, m, b2, k2) of two 3-D batches, or PyTorch's message."""
    for name, x in (("batch1", batch1), ("batch2", batch2)):
        if x.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    (b, n, k), (b2, k2, m) = batch1.shape, batch2.shape
    return b, n, k, m, b2, k2


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """`torch.addbmm`: beta * input + alpha * sum_i batch1[i] @ batch2[i]."""
    input, batch1, batch2 = _as_tensor(input), _as_tensor(batch1), _as_tensor(batch2)
    b, n, k, m, b2, k2 = _batches(batch1, batch2)
    if b != b2:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {b} and {b2}")
    if k != k2:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({n}x{k} and {k2}x{m})")
    _mm_dtypes(input, batch1, batch2)
    product = broadcasting.sum(_product(alpha, batch1, batch2), (0,), False)
    inputs = (input, batch1, batch2)
    return _fused(input, product, beta, alpha, (n, m), "AddbmmBackward0", inputs)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """`torch.baddbmm`: beta * input + alpha * (batch1 @ batch2), batch by batch."""
    input, batch1, batch2 = _as_tensor(input), _as_tensor(batch1), _as_tensor(batch2)
    b, n, k, m, b2, k2 = _batches(batch1, batch2)
    if (b2, k2) != (b, k):
        raise RuntimeError(
            "Expected size for first two dimensions of batch2 tensor to be: "
            f"[{b}, {k}] but got: [{b2}, {k2}]."
        )
    if input.dtype != batch1.dtype:
        raise RuntimeError(
            f"Input dtypes must be the same, got: input {input.dtype.name}, batch1: "
            f"{batch1.dtype.name}, batch2: {batch2.dtype.name}"
        )
    if batch2.dtype != batch1.dtype:
        raise RuntimeError(
            f"expected scalar type {batch1.dtype.name} but found {batch2.dtype.name}"
        )
    product = _product(alpha, batch1, batch2)
    inputs = (input, batch1, batch2)
    return _fused(input, product, beta, alpha, (b, n, m), "BaddbmmBackward0", inputs)


# -- diagonals ------------------------------------------------------------------------------------


def _view_of(out, x):
    """Mark `out` as a view of `x`, as PyTorch's result is: an in-place update of it is then
    refused (the shim's views do not alias their base), not silently lost."""
    if isinstance(out, Tensor):
        out._base = x._base if x._base is not None else x
    return out


def _new(out, x, name: str):
    """`out` named `name`, as a new tensor: PyTorch's result is a copy, so in-place updates
    of it are fine, though tracegrad built it from views (transposes, reshapes), and never
    `x` itself (a roll by 0 is `x`'s values)."""
    out = _named(clone(x) if out is x else out, name, (x,))
    out._base = None
    return out


def diagonal(input, offset=0, dim1=0, dim2=1):
    """`torch.diagonal`: the diagonal `offset` of the (dim1, dim2) planes, as the last
    dimension (a view in PyTorch; here a gather marked as a view)."""
    x = _as_tensor(input)
    d1, d2 = _two_dims(x.ndim, dim1, dim2)
    out = tnp.diagonal(x, offset, d1, d2)
    return _view_of(_named(out, "DiagonalBackward0", (x,)), x)


def _two_dims(ndim: int, dim1, dim2) -> tuple[int, int]:
    (d1,), (d2,) = _dims(dim1, ndim), _dims(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """`torch.diag_embed`: the last dimension of `input` on diagonal `offset` of new
    (dim1, dim2) planes, zeros elsewhere.

    Built without a scatter: a row of n values followed by n zeros, repeated and cut to n*n,
    puts each value at (i, i) (the flat index i*(n+1)); padding moves it to (i, i+offset).
    Only pads, reshapes and slices, so infinities stay where they are (a product with an
    identity mask would make inf * 0 = nan off the diagonal)."""
    x = _as_tensor(input)
    d1, d2 = _two_dims(x.ndim + 1, dim1, dim2)
    n, lead = (x.shape[-1] if x.ndim else 1), x.shape[:-1]
    rows = tnp.pad(tnp.reshape(x, (*lead, n, 1)), [(0, 0)] * len(lead) + [(0, 0), (0, n)])
    flat = tnp.reshape(rows, (*lead, n * (n + 1)))[..., : n * n]
    square = tnp.reshape(flat, (*lead, n, n))
    k = abs(offset)
    rows_pad, cols_pad = ((0, k), (k, 0)) if offset >= 0 else ((k, 0), (0, k))
    out = tnp.pad(square, [(0, 0)] * len(lead) + [rows_pad, cols_pad])
    return _new(tnp.moveaxis(out, (-2, -1), (d1, d2)), x, "DiagEmbedBackward0")


def diag(input, diagonal=0):
    """`torch.diag`: a 1-D input on diagonal `diagonal` of a square matrix, or diagonal
    `diagonal` of a 2-D input (a copy, PyTorch's `DiagonalBackward0_copy`)."""
    x = _as_tensor(input)
    if x.ndim == 1:
        return diag_embed(x, diagonal)
    if x.ndim == 2:
        return _new(tnp.diagonal(x, diagonal, 0, 1), x, "DiagonalBackward0_copy")
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {x.ndim}D")


# -- rearrangements -------------------------------------------------------------------------------


def _ints(value) -> tuple[int, ...]:
    return (value,) if isinstance(value, int | np.integer) else tuple(value)


def roll(input, shifts, dims=None):
    """`torch.roll`: without `dims` the flattened tensor rolls and keeps its shape."""
    x = _as_tensor(input)
    shifts = _ints(shifts)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:0")
        return _new(tnp.roll(x, shifts[0]), x, "RollBackward0")
    dims = _ints(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(
            f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}"
        )
    axes = tuple(_dims(d, x.ndim)[0] for d in dims)
    return _new(tnp.roll(x, shifts, axes), x, "RollBackward0")


def rot90(input, k=1, dims=(0, 1)):
    """`torch.rot90`: k quarter turns from the first towards the second of `dims`."""
    x = _as_tensor(input)
    dims = tuple(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {x.ndim}")
    d0, d1 = (_dims(d, x.ndim)[0] for d in dims)
    if d0 == d1:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
        )
    return _new(tnp.rot90(x, k, (d0, d1)), x, "Rot90Backward0")


def unfold(input, dimension, size, step):
    """`Tensor.unfold`: every window of `size` elements, `step` apart, along `dimension`
    (which then counts the windows), as a new last dimension. A view in PyTorch; here a
    gather (whose derivative adds overlapping windows back) marked as a view."""
    x = _as_tensor(input)
    (d,) = _dims(dimension, x.ndim) or (0,)
    n = x.shape[d] if x.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if x.ndim == 0:  # one window (or none) of the single element
        out = tnp.take(tnp.reshape(x, (1,)), np.zeros(size, np.intp), axis=0)
        return _view_of(_named(out, "UnfoldBackward0", (x,)), x)
    starts = np.arange((n - size) // step + 1) * step
    index = starts[:, None] + np.arange(size)[None, :]
    windows = tnp.take(x, index, axis=d)  # (..., count, size, ...) at d
    out = tnp.moveaxis(windows, d + 1, -1)
    return _view_of(_named(out, "UnfoldBackward0", (x,)), x)


# -- index sets and encodings ---------------------------------------------------------------------


def _triangle_indices(name: str, numpy_indices, row, col, offset, dtype, device):
    _check_device(device)
    for what, value in (("row", row), ("col", col)):
        if value < 0:
            raise RuntimeError(f"{what} must be non-negative, got{value}")
    dtype = np.dtype(np.int64 if dtype is None else dtype)
    if dtype.kind not in "iu":
        raise NotImplementedError(f"\"{name}\" not implemented for '{dtype.name}'")
    rows, cols = numpy_indices(row, offset, col)
    return _as_tensor(np.stack([rows, cols]).astype(dtype).reshape(2, -1))


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """`torch.tril_indices`: the (row, column) pairs of the lower triangle, row by row."""
    return _triangle_indices("tril_indices", np.tril_indices, row, col, offset, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """`torch.triu_indices`: the (row, column) pairs of the upper triangle, row by row."""
    return _triangle_indices("triu_indices", np.triu_indices, row, col, offset, dtype, device)


def one_hot(tensor, num_classes=-1):
    """`nn.functional.one_hot`: int64 indices to int64 rows of zeros with a one at the
    index (`num_classes=-1`: one more than the largest index). Not differentiable."""
    x = _as_tensor(tensor)
    if x.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    values = x.detach().numpy()
    if num_classes == -1:
        if values.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        if values.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        num_classes = int(values.max()) + 1
    elif values.size:
        if values.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if values.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    out = values[..., None] == np.arange(num_classes)
    return _as_tensor(out.astype(np.int64))


__all__ = [
    "addmm",
    "addmv",
    "addbmm",
    "baddbmm",
    "diag",
    "diag_embed",
    "diagonal",
    "roll",
    "rot90",
    "tril_indices",
    "triu_indices",
]
