"""`tracegrad.torch.linalg`: PyTorch's `torch.linalg` on tensors, over `tracegrad.numpy.linalg`.

Each function checks its arguments as PyTorch does (a floating point or complex input, at least
two dimensions, square matrices, `UPLO`, `mode`, `ord` and `dim`), with PyTorch's messages, and
calls the `tracegrad.numpy.linalg` function of the same meaning on the tensor, which records the
primitive's node (tracegrad.torch.recording): the values are NumPy's LAPACK calls, the gradients
the primitives' rules, conjugated at the boundary for complex tensors as every shim operation
is. What differs from NumPy is translated here: `solve`'s batch-of-vectors rule, `qr(mode='r')`
returning an empty Q, `pinv`'s default `rtol`, `norm`'s `dim`/`ord` dispatch and `dtype=`.
NumPy's `LinAlgError` (a singular matrix, a matrix that is not positive-definite) becomes
PyTorch's `torch.linalg.LinAlgError`, a `RuntimeError` that is also NumPy's class.

Where the shim differs from PyTorch: `solve(left=False)`, `pinv(atol=)`, `driver=` and `out=`
are refused; `qr(mode='r')` is differentiable (PyTorch refuses, as its Q is not computed; the
primitive computes it); a LAPACK failure's message lacks PyTorch's pivot or minor index.
"""

from __future__ import annotations

import numbers
from collections import namedtuple

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.torch.ops.conventions import _alias, _as_tensor, _named
from tracegrad.torch.tensor import Tensor

__all__ = [
    "LinAlgError",
    "inv",
    "solve",
    "det",
    "slogdet",
    "cholesky",
    "eigh",
    "eigvalsh",
    "eig",
    "eigvals",
    "svd",
    "svdvals",
    "qr",
    "norm",
    "vector_norm",
    "matrix_norm",
    "pinv",
    "matrix_power",
    "multi_dot",
    "cond",
    "matrix_rank",
]


class LinAlgError(RuntimeError, np.linalg.LinAlgError):
    """PyTorch's `torch.linalg.LinAlgError` (a `RuntimeError`); also NumPy's class, so code
    written against either library's error catches it."""


# PyTorch's `torch.return_types`: named tuples, indexable and unpackable like NumPy's
slogdet_result = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
eigh_result = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
eig_result = namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])
svd_result = namedtuple("linalg_svd", ["U", "S", "Vh"])
qr_result = namedtuple("linalg_qr", ["Q", "R"])

#: PyTorch's scalar type names, as its messages print them
SCALAR_TYPES = {
    "float16": "Half",
    "float32": "Float",
    "float64": "Double",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
}


def scalar_type(dtype) -> str:
    return SCALAR_TYPES.get(np.dtype(dtype).name, np.dtype(dtype).name)


# -- argument checks, PyTorch's messages -------------------------------------------------------


def _refuse_out(name: str, out) -> None:
    if out is not None:
        raise NotImplementedError(
            f"tracegrad.torch.{name}: out= is not supported (the shim's tensors are immutable "
            "arrays); assign the result instead"
        )


def _floating(name: str, a, *, low_precision: bool = False) -> Tensor:
    """`a` as a tensor, refused unless floating point or complex (and, for LAPACK's functions,
    at least single precision), as PyTorch refuses it."""
    a = _as_tensor(a)
    if a.dtype.kind not in "fc":
        raise RuntimeError(
            f"{name}: Expected a floating point or complex tensor as input. Got "
            f"{scalar_type(a.dtype)}"
        )
    if a.dtype == np.float16 and not low_precision:
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got Half")
    return a


def _matrices(name: str, a, *, square: bool = True, arg: str = "A") -> Tensor:
    return _shape_check(name, _floating(name, a), square=square, arg=arg)


def _shape_check(name: str, a: Tensor, *, square: bool = True, arg: str = "A") -> Tensor:
    if a.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor {arg} must have at least 2 dimensions.")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(
            f"{name}: A must be batches of square matrices, but they are {a.shape[-2]} by "
            f"{a.shape[-1]} matrices"
        )
    return a


def _lapack(name: str, fn, *args, **kwargs):
    """`fn(*args)`, with NumPy's LinAlgError raised as PyTorch's, in PyTorch's words (less the
    index of the failing pivot or minor, which NumPy does not report)."""
    try:
        return fn(*args, **kwargs)
    except np.linalg.LinAlgError as e:
        if isinstance(e, LinAlgError):
            raise
        message = _LAPACK_MESSAGES.get((name, str(e)), f"{name}: {e}")
        raise LinAlgError(f"{message} (NumPy: {e})") from None


_LAPACK_MESSAGES = {
    ("linalg.inv", "Singular matrix"): (
        "linalg.inv: The inversion could not be completed because the input matrix is singular."
    ),
    ("linalg.solve", "Singular matrix"): (
        "torch.linalg.solve: The solver failed because the input matrix is singular."
    ),
    ("linalg.cholesky", "Matrix is not positive definite"): (
        "linalg.cholesky: The factorization could not be completed because the input is not "
        "positive-definite."
    ),
}


def _uplo(uplo) -> str:
    if uplo not in ("L", "U", "l", "u"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {uplo}")
    return uplo.upper()


# -- inverses and determinants -----------------------------------------------------------------


def inv(A, *, out=None):
    """The inverse of each square matrix of a stack."""
    _refuse_out("linalg.inv", out)
    A = _matrices("linalg.inv", A)
    return _lapack("linalg.inv", tnp.linalg.inv, A)


def inverse(input, *, out=None):
    """`torch.inverse`, an alias of `torch.linalg.inv`."""
    return inv(input, out=out)


def _is_vector_rhs(A: Tensor, B: Tensor) -> bool:
    """PyTorch's rule: B is a (batch of) vector(s) when it is 1-D, or has one dimension less
    than A and A's shape without its last dimension (NumPy 2 only takes a 1-D B as a vector)."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])


def solve(A, B, *, left=True, out=None):
    """X with A X = B, for square A and B a matrix or, by PyTorch's rule, a batch of vectors
    (`_is_vector_rhs`); batch dimensions broadcast. `left=False` (X A = B) is refused."""
    _refuse_out("linalg.solve", out)
    if not left:
        raise NotImplementedError(
            "tracegrad.torch.linalg.solve: left=False (X A = B) is not supported; solve the "
            "transposed system instead: torch.linalg.solve(A.mT, B.mT).mT"
        )
    A = _matrices("linalg.solve", A)
    B = _floating("linalg.solve", B)
    if A.dtype != B.dtype:
        raise RuntimeError(
            "linalg.solve: Expected A and B to have the same dtype, but found A of type "
            f"{scalar_type(A.dtype)} and B of type {scalar_type(B.dtype)} instead"
        )
    if B.ndim == 0:
        raise RuntimeError("linalg.solve: The input tensor B must have at least 2 dimensions.")
    vector = _is_vector_rhs(A, B)
    rows, cols = (B.shape[-1], 1) if vector else B.shape[-2:]
    if rows != A.shape[-1]:
        raise RuntimeError(
            "linalg.solve: Incompatible shapes of A and B for the equation AX = B "
            f"({A.shape[-2]}x{A.shape[-1]} and {rows}x{cols})"
        )
    batch_b = B.shape[:-1] if vector else B.shape[:-2]
    _broadcast_batches(batch_b, A.shape[:-2])
    if B.ndim == 1:  # NumPy 2's vector case, broadcast against A's batch
        out = _lapack("linalg.solve", tnp.linalg.solve, A, B)
    elif vector:
        column = tnp.expand_dims(B, -1)
        out = tnp.squeeze(_lapack("linalg.solve", tnp.linalg.solve, A, column), -1)
    else:
        out = _lapack("linalg.solve", tnp.linalg.solve, A, B)
    return _named(out, "LinalgSolveExBackward0", (A, B))


def _broadcast_batches(a: tuple, b: tuple) -> None:
    """PyTorch's broadcasting message for batch shapes that do not broadcast (B's first)."""
    for i in range(1, min(len(a), len(b)) + 1):
        if a[-i] != b[-i] and a[-i] != 1 and b[-i] != 1:
            raise RuntimeError(
                f"The size of tensor a ({a[-i]}) must match the size of tensor b ({b[-i]}) at "
                f"non-singleton dimension {max(len(a), len(b)) - i}"
            )


def det(A, *, out=None):
    """The determinant of each square matrix; its gradient is finite at singular matrices."""
    _refuse_out("linalg.det", out)
    return tnp.linalg.det(_matrices("linalg.det", A))


def slogdet(A, *, out=None):
    """`(sign, logabsdet)` of each square matrix (sign 0 and -inf for a singular one)."""
    _refuse_out("linalg.slogdet", out)
    sign, logabsdet = tnp.linalg.slogdet(_matrices("linalg.slogdet", A))
    return slogdet_result(sign, logabsdet)


# -- factorizations ----------------------------------------------------------------------------


def cholesky(A, *, upper=False, out=None):
    """The lower (or, with `upper=True`, upper) Cholesky factor of Hermitian positive-definite
    matrices; `LinAlgError` when one is not positive-definite."""
    _refuse_out("linalg.cholesky", out)
    A = _matrices("linalg.cholesky", A)
    return _lapack("linalg.cholesky", tnp.linalg.cholesky, A, upper=bool(upper))


def eigh(A, UPLO="L", *, out=None):  # noqa: N803 - PyTorch's name
    """`(eigenvalues, eigenvectors)` of Hermitian matrices (the `UPLO` triangle is read),
    eigenvalues ascending."""
    _refuse_out("linalg.eigh", out)
    A = _matrices("linalg.eigh", A)
    w, v = _lapack("linalg.eigh", tnp.linalg.eigh, A, _uplo(UPLO))
    return eigh_result(w, v)


def eigvalsh(A, UPLO="L", *, out=None):  # noqa: N803 - PyTorch's name
    _refuse_out("linalg.eigvalsh", out)
    A = _matrices("linalg.eigvalsh", A)
    return _lapack("linalg.eigvalsh", tnp.linalg.eigvalsh, A, _uplo(UPLO))


def eig(A, *, out=None):
    """`(eigenvalues, eigenvectors)` of general square matrices, complex even for real input
    (as PyTorch); the eigenvectors have norm 1, and a loss of them must not depend on their
    phases for its gradient to be defined (PyTorch's condition too)."""
    _refuse_out("linalg.eig", out)
    A = _matrices("linalg.eig", A)
    w, v = _lapack("linalg.eig", tnp.linalg.eig, A)
    return eig_result(w, v)


def eigvals(A, *, out=None):
    _refuse_out("linalg.eigvals", out)
    return _lapack("linalg.eigvals", tnp.linalg.eigvals, _matrices("linalg.eigvals", A))


def _refuse_driver(name: str, driver) -> None:
    if driver is not None:  # PyTorch's own message on CPU tensors
        raise RuntimeError(
            f"torch.linalg.{name}: keyword argument `driver=` is only supported on CUDA inputs "
            "with cuSOLVER backend."
        )


def svd(A, full_matrices=True, *, driver=None, out=None):
    """`(U, S, Vh)` with `A = U diag(S) Vh`; `full_matrices=True` (PyTorch's default) makes U
    and Vh square. The gradient reads the first min(m, n) columns, as PyTorch's."""
    _refuse_out("linalg.svd", out)
    _refuse_driver("svd", driver)
    A = _matrices("linalg.svd", A, square=False)
    u, s, vh = _lapack("linalg.svd", tnp.linalg.svd, A, full_matrices=bool(full_matrices))
    return svd_result(u, s, vh)


def svdvals(A, *, driver=None, out=None):
    """The singular values, descending."""
    _refuse_out("linalg.svdvals", out)
    _refuse_driver("svdvals", driver)
    A = _matrices("linalg.svdvals", A, square=False)
    return _lapack("linalg.svdvals", tnp.linalg.svd, A, compute_uv=False)


_QR_MODES = ("reduced", "complete", "r")


def qr(A, mode="reduced", *, out=None):
    """`(Q, R)`; mode 'r' returns an empty Q, as PyTorch does (NumPy returns R alone)."""
    _refuse_out("linalg.qr", out)
    if mode not in _QR_MODES:
        raise RuntimeError(
            f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), "
            "'r', or 'complete'"
        )
    A = _matrices("linalg.qr", A, square=False)
    if mode == "r":
        r = tnp.linalg.qr(A, mode="r")
        return qr_result(Tensor._wrap(np.zeros((0,), A.dtype)), r)
    q, r = tnp.linalg.qr(A, mode=mode)
    return qr_result(q, r)


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The pseudo-inverse, singular values at most `rtol` times the largest dropped (default
    `max(m, n) * eps`, PyTorch's and NumPy's); `atol` is not supported."""
    _refuse_out("linalg.pinv", out)
    if atol is not None:
        raise NotImplementedError(
            "tracegrad.torch.linalg.pinv: atol= is not supported (NumPy's pinv has only a "
            "relative tolerance); pass rtol= instead"
        )
    A = _as_tensor(A)
    if A.ndim < 2 or A.dtype.kind not in "fc" or A.dtype == np.float16:
        raise RuntimeError(
            f"linalg.pinv({scalar_type(A.dtype)}{{{list(A.shape)}}}): expected a tensor with 2 "
            "or more dimensions of float, double, cfloat or cdouble types"
        )
    if isinstance(rtol, Tensor):
        rtol = rtol.item()
    if rtol is not None and not isinstance(rtol, numbers.Real):
        raise TypeError(f"linalg.pinv: rtol must be a real number, got {type(rtol).__name__}")
    return tnp.linalg.pinv(A, rtol=rtol, hermitian=bool(hermitian))


# -- norms -------------------------------------------------------------------------------------


def _norm_input(name: str, x, dtype) -> Tensor:
    """`x` cast to `dtype` as PyTorch's norms do: a real dtype for a real input, a complex one
    for a complex input (the result is then its real counterpart)."""
    x = _floating(name, x, low_precision=True)
    if dtype is None:
        return x
    dtype = np.dtype(dtype)
    if (x.dtype.kind == "c") != (dtype.kind == "c"):
        kind = "complex for complex" if x.dtype.kind == "c" else "real for real"
        raise RuntimeError(f"{name}: dtype should be {kind} inputs, but got {scalar_type(dtype)}")
    return x if x.dtype == dtype else x._astype(dtype)


def _dim_list(dim, ndim: int) -> tuple[int, ...]:
    """`dim` (an int or a sequence) as non-negative dims in the given order, with PyTorch's
    errors for an out-of-range or a repeated one."""
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
    bound = max(ndim, 1)
    out = []
    for d in dims:
        if not -bound <= d < bound:
            raise IndexError(
                f"Dimension out of range (expected to be in range of [{-bound}, {bound - 1}], "
                f"but got {d})"
            )
        d = int(d) % bound
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return tuple(out)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """The `ord`-norm of the elements over `dim` (all of them by default) as one vector, for any
    number `ord` (inf, -inf, 0 too); its gradient at zero is 0, as PyTorch's."""
    _refuse_out("linalg.vector_norm", out)
    if isinstance(ord, Tensor):
        ord = ord.item()
    if not isinstance(ord, numbers.Real):
        raise TypeError(
            f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}"
        )
    x = _norm_input("linalg.vector_norm", x, dtype)
    axis = None if dim is None else _dim_list(dim, x.ndim)
    if x.ndim == 0:
        x, axis = tnp.reshape(x, (1,)), None
        keepdim = False
    if axis is not None and len(axis) == 0:  # PyTorch reduces over everything for dim=()
        axis = None
    out = tnp.linalg.vector_norm(x, axis=axis, keepdims=bool(keepdim), ord=ord)
    return _named(_as_tensor(out), "LinalgVectorNormBackward0", (x,))


_MATRIX_ORDS = ("fro", "nuc", np.inf, -np.inf, 1, -1, 2, -2)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """The matrix norm over the two dims `dim`: 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2."""
    _refuse_out("linalg.matrix_norm", out)
    A = _norm_input("linalg.matrix_norm", A, dtype)
    if A.ndim < 2:
        raise RuntimeError(
            "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."
        )
    if isinstance(dim, numbers.Integral) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {_shown(dim)}")
    dims = tuple(_dim_list(d, A.ndim)[0] for d in dim)
    if dims[0] == dims[1]:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got {tuple(dim)}")
    if isinstance(ord, str):
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    elif ord not in _MATRIX_ORDS:
        raise RuntimeError(f"linalg.matrix_norm: Order {_shown(ord)} not supported.")
    out = _as_tensor(tnp.linalg.norm(A, ord=ord, axis=dims, keepdims=bool(keepdim)))
    return _named(out, "LinalgVectorNormBackward0", (A,)) if ord == "fro" else out


def _shown(value) -> str:
    """A number or dims as PyTorch prints them in messages (`3`, not `3.0`; `0 1`)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, tuple | list):
        return " ".join(str(v) for v in value)
    return str(value)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A002
    """PyTorch's dispatch: without `ord` and `dim` the 2-norm of all elements; a 1-element `dim`
    (or a 1-D input with `ord`) is a vector norm, a 2-element `dim` (or a 2-D input with `ord`)
    a matrix norm."""
    _refuse_out("linalg.norm", out)
    A = _floating("linalg.norm", A, low_precision=True)
    if dim is not None:
        dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(
                f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}"
            )
    elif ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    elif A.ndim not in (1, 2):
        raise RuntimeError(
            "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
            f"{A.ndim}D."
        )
    else:
        dims = tuple(range(A.ndim))
    if len(dims) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
    if isinstance(ord, str):
        # PyTorch's message for a string order on a vector is matrix_norm's dimension check
        raise RuntimeError(
            "linalg.matrix_norm: The input tensor A must have at least 2 dimensions."
        )
    return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)


# -- composites ---------------------------------------------------------------------------------


def matrix_power(A, n, *, out=None):
    """`A` to the integer power `n` (through `inv` for n < 0), by NumPy's products. For n = 0
    the identities are a constant here (PyTorch's result requires grad, with zero gradient)."""
    _refuse_out("linalg.matrix_power", out)
    A = _as_tensor(A)
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(
            f"linalg_matrix_power(): argument 'n' (position 2) must be int, not {type(n).__name__}"
        )
    _shape_check("linalg.matrix_power", A)  # (integer matrices are fine for n >= 0)
    if n < 0:
        _floating("linalg.inv", A)
    out = _as_tensor(_lapack("linalg.inv", tnp.linalg.matrix_power, A, int(n)))
    return _alias(A, "CloneBackward0") if out is A else out  # a new tensor, as PyTorch's


def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices (a vector first or last) in the order with the fewest
    multiplications, as NumPy chooses it."""
    _refuse_out("linalg.multi_dot", out)
    tensors = [_as_tensor(t) for t in tensors]
    n = len(tensors)
    if n < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {n}")
    for i, t in enumerate(tensors):
        allowed = (1, 2) if i in (0, n - 1) else (2,)
        if t.ndim not in allowed:
            which = {0: "the first tensor", n - 1: "the last tensor"}.get(i, f"tensor {i}")
            shape = "1D or 2D" if len(allowed) == 2 else "2D"
            raise RuntimeError(f"multi_dot(): {which} must be {shape} but got {t.ndim}D")
        if t.dtype != tensors[0].dtype:
            raise RuntimeError(
                "multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                f"{_c_type(tensors[0].dtype)} and tensor {i} {_c_type(t.dtype)}"
            )
    for i in range(n - 1):
        a, b = tensors[i], tensors[i + 1]
        if a.shape[-1] != b.shape[0]:
            raise RuntimeError(
                f"multi_dot(): tensors {i} and {i + 1} with shapes {list(a.shape)} and "
                f"{list(b.shape)} cannot be multiplied"
            )
    return _as_tensor(tnp.linalg.multi_dot(tensors))


def _c_type(dtype) -> str:
    """PyTorch's C++ name of a dtype, as multi_dot's message prints it."""
    names = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long"}
    names.update({"complex64": "c10::complex<float>", "complex128": "c10::complex<double>"})
    return names.get(np.dtype(dtype).name, np.dtype(dtype).name)


def cond(A, p=None, *, out=None):
    """The condition number in the norm `p` (None: the 2-norm, through the singular values);
    for p other than None, 2 and -2, `norm(A, p) * norm(inv(A), p)` of square matrices."""
    _refuse_out("linalg.cond", out)
    A = _floating("linalg.cond", A)
    if p in (None, 2, -2):
        A = _matrices("linalg.cond", A, square=False)
    else:
        A = _matrices(f"linalg.cond(ord={p})", A)
    return _as_tensor(_lapack("linalg.cond", tnp.linalg.cond, A, p))


def matrix_rank(A, tol=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """The number of singular values above the tolerance, as int64 (no gradient): `atol` (or
    the older `tol`) absolute, or `rtol` relative to the largest (default `max(m, n) * eps`);
    PyTorch's `max(atol, rtol * largest)` with both given is not supported."""
    _refuse_out("linalg.matrix_rank", out)
    A = _as_tensor(A)
    if A.ndim < 2:
        raise RuntimeError(
            "torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions."
        )
    atol = tol if atol is None else atol
    if atol is not None and rtol is not None:
        raise NotImplementedError(
            "tracegrad.torch.linalg.matrix_rank: atol= and rtol= together are not supported "
            "(NumPy's matrix_rank takes one tolerance); pass one of them"
        )
    rank = tnp.linalg.matrix_rank(A.detach(), atol, bool(hermitian), rtol=rtol)
    return _as_tensor(rank)._astype(np.int64)
