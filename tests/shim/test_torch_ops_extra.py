"""`tracegrad.torch.ops.shapes_extra` and `ops.products_extra` against PyTorch (the oracle).

Each case runs one call in both libraries on the same inputs (float64, float32 and, where
PyTorch accepts them, int64) and compares values (bit for bit unless the case gives a
tolerance), dtypes, and the gradients through `backward()` of a random weighting of the
result. PyTorch's errors are compared by type and first line, its warnings by category and
message.
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import (  # noqa: F401 - torch_one_thread: the `torch` fixture
    assert_same_error,
    normalize_torch_message,
    torch_one_thread,
)
from tracegrad.torch import methods


@dataclass(frozen=True)
class X:
    shape: tuple = ()
    lo: float = -2.0
    hi: float = 2.0
    value: object = None
    grad: bool = True
    kind: str = "f"  # f: the case's dtype; i: always int64 (indices, repeats)


@dataclass
class Case:
    id: str
    call: Callable  # call(M, *tensors), M the library
    inputs: tuple
    dtypes: tuple = ("float64", "float32")
    rtol: float = 0.0  # 0: bit for bit
    grad: bool = True


CASES: list[Case] = []


def case(id, call, *inputs, **opts):
    CASES.append(Case(id, call, inputs, **opts))


FI = ("float64", "float32", "int64")
A23, A34 = X((2, 3)), X((3, 4))

# aliases and comparisons
case("arctan2", lambda M, a, b: M.arctan2(a, b), A23, X((3,)), rtol=1e-6)
case("Tensor.arctan2", lambda M, a, b: a.arctan2(b), A23, A23, rtol=1e-6)
case("multiply", lambda M, a, b: M.multiply(a, b), A23, X((3,)), dtypes=FI)
case("Tensor.multiply", lambda M, a, b: a.multiply(b), A23, A23, dtypes=FI)
case("divide", lambda M, a, b: M.divide(a, b), A23, X((3,), 0.5, 2.0))
# rounding modes: values only (PyTorch's gradient is zero; the shim's `div` passes none)
_R = {"grad": False}
case(
    "divide(trunc)", lambda M, a, b: M.divide(a, b, rounding_mode="trunc"), A23, X((3,), 1, 3), **_R
)
case(
    "divide(floor)", lambda M, a, b: M.divide(a, b, rounding_mode="floor"), A23, X((3,), 1, 3), **_R
)
case("Tensor.divide", lambda M, a: a.divide(3, rounding_mode="floor"), A23, dtypes=FI, **_R)
case("subtract", lambda M, a, b: M.subtract(a, b, alpha=2), A23, X((3,)), dtypes=FI)
case("Tensor.subtract", lambda M, a, b: a.subtract(b), A23, A23)
case("true_divide", lambda M, a, b: M.true_divide(a, b), A23, X((3,), 1, 3), dtypes=FI)
case("Tensor.true_divide", lambda M, a, b: a.true_divide(b), A23, X((3,), 1, 3))
for _n in ("greater", "greater_equal", "less", "less_equal", "not_equal"):
    case(
        _n,
        lambda M, a, b, n=_n: getattr(M, n)(a, b),
        X(value=[[0, 1, 2], [2, 1, 0]]),
        X(value=[1, 1, 1]),
        dtypes=FI,
    )
    case(f"Tensor.{_n}", lambda M, a, n=_n: getattr(a, n)(1.0), X(value=[0, 1, 2]), dtypes=FI)
case("positive", lambda M, a: M.positive(a), A23, dtypes=FI)
case("Tensor.positive", lambda M, a: a.positive(), A23)

# shapes
case("moveaxis", lambda M, a: M.moveaxis(a, 0, -1), X((2, 3, 4)), dtypes=FI)
case("movedim", lambda M, a: M.movedim(a, (0, 1), (2, 0)), X((2, 3, 4)))
case("Tensor.moveaxis", lambda M, a: a.moveaxis(1, 0), A23)
case("Tensor.movedim", lambda M, a: a.movedim(-1, 0), X((2, 3, 4)))
case("ger", lambda M, a, b: M.ger(a, b), X((2,)), X((3,)), dtypes=FI)
case("Tensor.ger", lambda M, a, b: a.ger(b), X((2,)), X((3,)))
case("fliplr", lambda M, a: M.fliplr(a), X((2, 3, 2)), dtypes=FI)
case("flipud", lambda M, a: M.flipud(a), A23)
case("Tensor.fliplr", lambda M, a: a.fliplr(), A23)
case("Tensor.flipud", lambda M, a: a.flipud(), X((3,)))
case("hstack", lambda M, a, b: M.hstack([a, b]), A23, X((2, 1)), dtypes=FI)
case("hstack(1-d, 0-d)", lambda M, a, b: M.hstack((a, b)), X((3,)), X(()))
case("vstack", lambda M, a, b: M.vstack([a, b]), A23, X((3,)), dtypes=FI)
case("dstack", lambda M, a, b, c: M.dstack([a, b, c]), X((3,)), X((1, 3)), X((1, 3, 2)))
case("column_stack", lambda M, a, b, c: M.column_stack([a, b, c]), X((2,)), A23, X((2, 1)))
case("tensor_split(3)", lambda M, a: M.tensor_split(a, 3, dim=1), X((2, 7)), dtypes=FI)
case("tensor_split([1, 4])", lambda M, a: M.tensor_split(a, [1, 4]), X((6, 2)))
case("tensor_split([-2, 9])", lambda M, a: M.tensor_split(a, (-2, 9)), X((6,)))
case("Tensor.tensor_split", lambda M, a: a.tensor_split(2, -1), X((2, 5)))
case("hsplit", lambda M, a: M.hsplit(a, 2), X((3, 4)), dtypes=FI)
case("hsplit(1-d)", lambda M, a: M.hsplit(a, [1, 2]), X((4,)))
case("vsplit", lambda M, a: M.vsplit(a, [1]), X((3, 4)))
case("dsplit", lambda M, a: M.dsplit(a, 2), X((2, 1, 4)))
case("Tensor.hsplit", lambda M, a: a.hsplit(3), X((2, 3)))
case("Tensor.vsplit", lambda M, a: a.vsplit(2), X((4, 3)))
case("Tensor.dsplit", lambda M, a: a.dsplit([1]), X((2, 1, 4)))
for _f in ("atleast_1d", "atleast_2d", "atleast_3d"):
    case(f"{_f}(0-d)", lambda M, a, f=_f: getattr(M, f)(a), X(()), dtypes=FI)
    case(f"{_f}(1-d)", lambda M, a, f=_f: getattr(M, f)(a), X((3,)))
    case(f"{_f}(2-d, 4-d)", lambda M, a, b, f=_f: getattr(M, f)(a, b), A23, X((1, 2, 1, 2)))
    case(f"{_f}([...])", lambda M, a, b, f=_f: getattr(M, f)([a, b]), X(()), A23)
case("broadcast_to", lambda M, a: M.broadcast_to(a, (2, 4, 3)), X((4, 1)), dtypes=FI)
case("Tensor.broadcast_to", lambda M, a: a.broadcast_to((2, -1)), X((3,)))
case(
    "broadcast_tensors", lambda M, a, b, c: M.broadcast_tensors(a, b, c), X((2, 1)), X((3,)), X(())
)
case("ravel", lambda M, a: M.ravel(a), X((2, 3, 2)), dtypes=FI)
case("Tensor.ravel", lambda M, a: a.ravel(), X(()))
case("tile", lambda M, a: M.tile(a, (2,)), A23, dtypes=FI)
case("tile(more dims)", lambda M, a: M.tile(a, (2, 1, 3)), A23)
case("Tensor.tile", lambda M, a: a.tile((2, 2)), X((3,)))
case("unflatten", lambda M, a: M.unflatten(a, 1, (2, -1)), X((2, 6)), dtypes=FI)
case("Tensor.unflatten", lambda M, a: a.unflatten(-1, (3, 2)), X((2, 6)))
case("repeat_interleave(int)", lambda M, a: M.repeat_interleave(a, 2), A23, dtypes=FI)
case("repeat_interleave(int, dim)", lambda M, a: M.repeat_interleave(a, 3, dim=0), A23)
case(
    "repeat_interleave(tensor, dim)",
    lambda M, a, r: M.repeat_interleave(a, r, dim=1),
    A23,
    X(value=[1, 0, 3], kind="i"),
)
case(
    "repeat_interleave(output_size)",
    lambda M, a, r: M.repeat_interleave(a, r, dim=0, output_size=3),
    A23,
    X(value=[2, 1], kind="i"),
)
case(
    "repeat_interleave(repeats)", lambda M, r: M.repeat_interleave(r), X(value=[2, 0, 3], kind="i")
)
case("Tensor.repeat_interleave", lambda M, a: a.repeat_interleave(2, dim=-1), A23)
case("narrow_copy", lambda M, a: M.narrow_copy(a, 1, 1, 2), A23, dtypes=FI)
case("Tensor.narrow_copy", lambda M, a: a.narrow_copy(0, 1, 1), A23)
# values only: PyTorch's backward of narrow_copy fails on a negative start
case("narrow_copy(from the end)", lambda M, a: M.narrow_copy(a, -1, -2, 2), A23, grad=False)
case("select_scatter", lambda M, a, s: M.select_scatter(a, s, 1, -1), A23, X((2,)), dtypes=FI)
case("Tensor.select_scatter", lambda M, a, s: a.select_scatter(s, 0, 1), A23, X((3,)))
case(
    "slice_scatter",
    lambda M, a, s: M.slice_scatter(a, s, dim=1, start=0, end=5, step=2),
    X((2, 5)),
    X((2, 3)),
    dtypes=FI,
)
case("slice_scatter(defaults)", lambda M, a, s: M.slice_scatter(a, s), A23, A23)
case("Tensor.slice_scatter", lambda M, a, s: a.slice_scatter(s, 0, 1), X((3, 2)), X((2, 2)))
case("diagonal_scatter", lambda M, a, s: M.diagonal_scatter(a, s), X((3, 4)), X((3,)), dtypes=FI)
case(
    "diagonal_scatter(offset, dims)",
    lambda M, a, s: M.diagonal_scatter(a, s, -1, 2, 0),
    X((3, 2, 4)),
    X((2, 3)),
)
case("Tensor.diagonal_scatter", lambda M, a, s: a.diagonal_scatter(s, 1), A34, X((3,)))
case("diagflat", lambda M, a: M.diagflat(a), X((2, 2)), dtypes=FI)
case("diagflat(offset)", lambda M, a: M.diagflat(a, -2), X((3,)))
case("Tensor.diagflat", lambda M, a: a.diagflat(1), X((2,)))
case("block_diag", lambda M, a, b, c: M.block_diag(a, b, c), A23, X(()), X((2,)), dtypes=FI)
case("block_diag(mixed dtypes)", lambda M, a, b: M.block_diag(a, b.long()), A23, X((2, 2)))
case(
    "cartesian_prod",
    lambda M, a, b, c: M.cartesian_prod(a, b, c),
    X((2,)),
    X((3,)),
    X((2,)),
    dtypes=FI,
)
case("cartesian_prod(one)", lambda M, a: M.cartesian_prod(a), X((3,)))
case("combinations", lambda M, a: M.combinations(a), X((4,)), dtypes=FI)
case("combinations(r=3, repl)", lambda M, a: M.combinations(a, 3, True), X((3,)))
case("combinations(r > n)", lambda M, a: M.combinations(a, r=5), X((3,)))
case("meshgrid(ij)", lambda M, a, b: M.meshgrid(a, b, indexing="ij"), X((2,)), X((3,)), dtypes=FI)
case(
    "meshgrid(xy)", lambda M, a, b, c: M.meshgrid([a, b, c], indexing="xy"), X((2,)), X((3,)), X(())
)

# products, distances, factories
# vander: values only (PyTorch's own backward of vander fails: its cumprod is in place);
# float32 within rounding (PyTorch's cumprod accumulates in another order)
_V = {"grad": False, "rtol": 1e-15, "dtypes": FI}
case("vander", lambda M, a: M.vander(a), X((4,)), **_V)
case("vander(N, increasing)", lambda M, a: M.vander(a, 3, True), X((4,)), **_V)
case("vander(N=1)", lambda M, a: M.vander(a, N=1), X((2,)), **_V)
case("trace", lambda M, a: M.trace(a), A34, dtypes=FI, rtol=1e-6)
case("Tensor.trace", lambda M, a: a.trace(), X((3, 3)), rtol=1e-6)
case("kron", lambda M, a, b: M.kron(a, b), A23, X((2, 2)), dtypes=FI)
case("kron(dims)", lambda M, a, b: M.kron(a, b), X((2, 1, 2)), X((3,)))
case("Tensor.kron", lambda M, a, b: a.kron(b), X((2,)), X((2, 2)))
case("inner", lambda M, a, b: M.inner(a, b), A23, X((4, 3)), dtypes=FI, rtol=1e-6)
case("inner(0-d)", lambda M, a, b: M.inner(a, b), X(()), A23)
case("Tensor.inner", lambda M, a, b: a.inner(b), X((3,)), X((3,)), rtol=1e-6)
case("tensordot", lambda M, a, b: M.tensordot(a, b), X((2, 3, 4)), A34, dtypes=FI, rtol=1e-6)
case(
    "tensordot(lists)",
    lambda M, a, b: M.tensordot(a, b, ([0, 2], [2, 1])),
    X((2, 3, 4)),
    X((5, 4, 2)),
    rtol=1e-6,
)
case("tensordot(0)", lambda M, a, b: M.tensordot(a, b, 0), X((2,)), X((3,)))
case("vdot", lambda M, a, b: M.vdot(a, b), X((4,)), X((4,)), dtypes=FI, rtol=1e-6)
case("Tensor.vdot", lambda M, a, b: a.vdot(b), X((4,)), X((4,)), rtol=1e-6)
case("chain_matmul", lambda M, a, b, c: M.chain_matmul(a, b, c), A23, A34, X((4, 2)), rtol=1e-6)
case("addr", lambda M, c, a, b: M.addr(c, a, b), A23, X((2,)), X((3,)), dtypes=FI)
case(
    "addr(beta, alpha)",
    lambda M, c, a, b: M.addr(c, a, b, beta=0.5, alpha=2),
    X((3,)),
    X((2,)),
    X((3,)),
)
case("Tensor.addr", lambda M, c, a, b: c.addr(a, b, alpha=0), A23, X((2,)), X((3,)))
case("cross", lambda M, a, b: M.cross(a, b, dim=1), X((4, 3)), X((4, 3)), dtypes=FI, rtol=1e-6)
case("cross(bcast)", lambda M, a, b: M.cross(a, b, dim=0), X((3, 2)), X((3, 1)), rtol=1e-6)
case("Tensor.cross", lambda M, a, b: a.cross(b, -1), X((2, 3)), X((2, 3)), rtol=1e-6)
case("cdist", lambda M, a, b: M.cdist(a, b), X((3, 4)), X((2, 4)), rtol=1e-6)
case("cdist(p=1, batch)", lambda M, a, b: M.cdist(a, b, p=1), X((2, 3, 4)), X((2, 5, 4)), rtol=1e-6)
case("cdist(p=3)", lambda M, a, b: M.cdist(a, b, 3.0), X((3, 2)), X((2, 2)), rtol=1e-6)
case(  # the gradient at a zero distance is 0, as PyTorch's
    "cdist(0 apart)",
    lambda M, a, b: M.cdist(a, b),
    X(value=[[1.0, 2.0], [0.5, -1.0]]),
    X(value=[[1.0, 2.0], [3.0, 1.0]]),
    rtol=1e-6,
)
case("cdist(p=inf)", lambda M, a, b: M.cdist(a, b, float("inf")), X((3, 2)), X((2, 2)), rtol=1e-6)
case("dist", lambda M, a, b: M.dist(a, b), A23, X((3,)), rtol=1e-6)
case("dist(p)", lambda M, a, b: M.dist(a, b, 3), A23, A23, rtol=1e-6)
case("Tensor.dist", lambda M, a, b: a.dist(b, 1), A23, A23, rtol=1e-6)
case("renorm", lambda M, a: M.renorm(a, 2, 0, 2.0), X((3, 4)), rtol=1e-6)
case("renorm(p=1, dim)", lambda M, a: M.renorm(a, 1, 1, 1.5), X((3, 4, 2)), rtol=1e-6)
case("Tensor.renorm", lambda M, a: a.renorm(3, -1, 1.0), X((3, 4)), rtol=1e-6)

# the float32 relative tolerance of cases whose arithmetic order may differ
_F32 = 2e-6


def _rng(id_: str, dtype: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(f"{id_}/{dtype}".encode()))


def _input(spec: X, dtype: str, rng) -> np.ndarray:
    if spec.kind == "i":
        return np.asarray(spec.value, np.int64)
    if spec.value is not None:
        return np.asarray(spec.value, dtype)
    if dtype == "int64":
        return rng.integers(-3, 4, spec.shape).astype(np.int64)
    return rng.uniform(spec.lo, spec.hi, spec.shape).astype(dtype)


def _flat(out) -> list:
    return list(out) if isinstance(out, tuple | list) else [out]


def _run(lib, c: Case, arrays, dtype: str):
    tensors = []
    for spec, a in zip(c.inputs, arrays, strict=True):
        grad = spec.grad and spec.kind == "f" and dtype != "int64" and c.grad
        tensors.append(lib.tensor(a.copy(), requires_grad=grad))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = _flat(c.call(lib, *tensors))
    return tensors, out


def _numpy(t) -> np.ndarray:
    return t.detach().numpy()


def _close(ours, theirs, rtol) -> None:
    assert ours.dtype == theirs.dtype
    assert ours.shape == theirs.shape
    if rtol == 0 or ours.dtype.kind not in "fc":
        np.testing.assert_array_equal(ours, theirs)
    else:
        scale = np.max(np.abs(theirs)) if theirs.size else 0
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize(
    ("c", "dtype"),
    [(c, d) for c in CASES for d in c.dtypes],
    ids=[f"{d}-{c.id}" for c in CASES for d in c.dtypes],
)
def test_case(c: Case, dtype: str, torch):
    rng = _rng(c.id, dtype)
    arrays = [_input(spec, dtype, rng) for spec in c.inputs]
    ours_in, ours = _run(tt, c, arrays, dtype)
    theirs_in, theirs = _run(torch, c, arrays, dtype)
    assert len(ours) == len(theirs)
    rtol = c.rtol if dtype == "float64" or c.rtol == 0 else max(c.rtol, _F32)
    for o, t in zip(ours, theirs, strict=True):
        _close(_numpy(o), _numpy(t), rtol)
        assert o.requires_grad == t.requires_grad
    live = [(o, t) for o, t in zip(ours, theirs, strict=True) if t.requires_grad]
    if not live:
        return
    total_o, total_t = 0, 0
    for o, t in live:
        w = rng.uniform(-1, 1, t.shape).astype(dtype)
        total_o = total_o + (o * tt.tensor(w)).sum()
        total_t = total_t + (t * torch.tensor(w)).sum()
    total_o.backward()
    total_t.backward()
    grtol = max(rtol, 1e-12) if dtype == "float64" else max(rtol, 1e-5)
    for a, b in zip(ours_in, theirs_in, strict=True):
        if b.requires_grad:
            assert (a.grad is None) == (b.grad is None)
            if b.grad is not None:
                _close(_numpy(a.grad), _numpy(b.grad), grtol)


# -- errors and warnings --------------------------------------------------------------------------


def _e(lib, *shape, dtype="float32"):
    return lib.ones(*shape, dtype=getattr(lib, dtype))


ERRORS = {
    "positive(bool)": lambda M: M.positive(M.tensor([True])),
    "movedim(lengths)": lambda M: M.movedim(_e(M, 2, 3), (0, 0), (1,)),
    "movedim(repeated)": lambda M: M.movedim(_e(M, 2, 3), (0, 0), (1, 0)),
    "movedim(range)": lambda M: M.movedim(_e(M, 2, 3), 0, 5),
    "fliplr(1-d)": lambda M: M.fliplr(_e(M, 3)),
    "flipud(0-d)": lambda M: M.flipud(M.tensor(1.0)),
    "hsplit(indivisible)": lambda M: M.hsplit(_e(M, 2, 4), 3),
    "vsplit(1-d)": lambda M: M.vsplit(_e(M, 4), 2),
    "dsplit(2-d)": lambda M: M.dsplit(_e(M, 2, 4), 2),
    "hsplit(0-d)": lambda M: M.hsplit(M.tensor(1.0), 2),
    "tensor_split(0)": lambda M: M.tensor_split(_e(M, 4), 0),
    "broadcast_shapes": lambda M: M.broadcast_shapes((2, 3), (4,)),
    "broadcast_tensors": lambda M: M.broadcast_tensors(_e(M, 2, 3), _e(M, 4)),
    "broadcast_to": lambda M: M.broadcast_to(_e(M, 2, 3), (4,)),
    "unflatten(sizes)": lambda M: M.unflatten(_e(M, 2, 6), 1, (4, -1)),
    "unflatten(empty)": lambda M: M.unflatten(_e(M, 2, 6), 1, ()),
    "repeat_interleave(size)": lambda M: M.repeat_interleave(_e(M, 2, 3), M.tensor([1, 2]), dim=1),
    "repeat_interleave(negative)": lambda M: M.repeat_interleave(_e(M, 3), M.tensor([1, -2, 1])),
    "repeat_interleave(float repeats)": lambda M: M.repeat_interleave(M.tensor([1.0, 2.0])),
    "select_scatter(size)": lambda M: M.select_scatter(_e(M, 2, 3), _e(M, 3), 1, 0),
    "slice_scatter(size)": lambda M: M.slice_scatter(_e(M, 2, 3), _e(M, 2, 1), 1, 0, 3, 2),
    "diagonal_scatter(size)": lambda M: M.diagonal_scatter(_e(M, 2, 3), _e(M, 3)),
    "block_diag(3-d)": lambda M: M.block_diag(_e(M, 2, 2, 2)),
    "cartesian_prod(2-d)": lambda M: M.cartesian_prod(_e(M, 2, 3)),
    "combinations(2-d)": lambda M: M.combinations(_e(M, 2, 3)),
    "meshgrid(indexing)": lambda M: M.meshgrid(_e(M, 2), _e(M, 3), indexing="foo"),
    "vander(2-d)": lambda M: M.vander(_e(M, 2, 3)),
    "trace(1-d)": lambda M: M.trace(_e(M, 3)),
    "inner(shapes)": lambda M: M.inner(_e(M, 2, 3), _e(M, 4)),
    "tensordot(sizes)": lambda M: M.tensordot(_e(M, 2, 3), _e(M, 4, 3), 1),
    "tensordot(dtypes)": lambda M: M.tensordot(_e(M, 2, 3), _e(M, 3, 2, dtype="float64"), 1),
    "vdot(dtypes)": lambda M: M.vdot(_e(M, 3), _e(M, 3, dtype="float64")),
    "vdot(sizes)": lambda M: M.vdot(_e(M, 3), _e(M, 2)),
    "vdot(2-d)": lambda M: M.vdot(_e(M, 2, 3), _e(M, 2)),
    "addr(2-d)": lambda M: M.addr(_e(M, 2, 3), _e(M, 2, 2), _e(M, 3)),
    "cross(length)": lambda M: M.cross(_e(M, 2, 2), _e(M, 2, 2), dim=1),
    "cross(dtypes)": lambda M: M.cross(_e(M, 2, 3), _e(M, 2, 3, dtype="float64"), dim=1),
    "cdist(columns)": lambda M: M.cdist(_e(M, 2, 3), _e(M, 2, 4)),
    "cdist(1-d)": lambda M: M.cdist(_e(M, 3), _e(M, 2, 3)),
    "cdist(p<0)": lambda M: M.cdist(_e(M, 2, 3), _e(M, 4, 3), p=-1),
    "renorm(p)": lambda M: M.renorm(_e(M, 2, 3), -1, 0, 1),
    "renorm(1-d)": lambda M: M.renorm(_e(M, 3, dtype="int64"), 2, 0, 1),
    "range(step 0)": lambda M: M.range(0, 2, 0),
    "tensordot(dims > ndim)": lambda M: M.tensordot(_e(M, 2, 3), _e(M, 2, 3), 3),
    "renorm(int)": lambda M: M.renorm(_e(M, 2, 2, dtype="int64"), 2, 0, 1),
    "trace(bool)": lambda M: M.trace(_e(M, 2, 2, dtype="bool")),
    "cdist(int)": lambda M: M.cdist(_e(M, 2, 2, dtype="int64"), _e(M, 2, 2, dtype="int64")),
    "dist(int)": lambda M: M.dist(_e(M, 2, dtype="int64"), _e(M, 2, dtype="int64")),
    "meshgrid(dtypes)": lambda M: M.meshgrid(_e(M, 2), _e(M, 2, dtype="int64"), indexing="ij"),
    "cartesian_prod(dtypes)": lambda M: M.cartesian_prod(_e(M, 2), _e(M, 2, dtype="int64")),
    "hstack([])": lambda M: M.hstack([]),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_error(name, torch):
    call = ERRORS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_same_error(lambda: call(tt), lambda: call(torch), scalar_names=name in _SCALAR)


# PyTorch names the dtypes by their scalar types (`Float`) in these messages
_SCALAR = {"repeat_interleave(float repeats)", "vdot(dtypes)", "cross(dtypes)", "renorm(int)"}
_SCALAR |= {"trace(bool)", "cdist(int)", "dist(int)"}


def _warned(fn) -> list[tuple[type, str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [(w.category, normalize_torch_message(w.message)) for w in caught]


def test_meshgrid_default_warns_and_is_ij(torch):
    ours, ours_w = _warned(lambda: tt.meshgrid(tt.arange(2), tt.arange(3)))
    theirs, theirs_w = _warned(lambda: torch.meshgrid(torch.arange(2), torch.arange(3)))
    assert ours_w == theirs_w
    for o, t in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(o.numpy(), t.numpy())


def test_cross_without_dim_warns(torch):
    a = np.random.default_rng(0).uniform(-1, 1, (3, 2))
    ours, ours_w = _warned(lambda: tt.cross(tt.tensor(a), tt.tensor(a[::-1].copy())))
    theirs, theirs_w = _warned(lambda: torch.cross(torch.tensor(a), torch.tensor(a[::-1].copy())))
    assert ours_w == theirs_w
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


@pytest.mark.parametrize(
    "args",
    [(0, 2), (1, 4, 0.5), (4, 1, -1), (0.1, 1.0, 0.3), (2, -1, -0.5)],
)
@pytest.mark.parametrize("dtype", [None, "float64", "int64"])
def test_range(args, dtype, torch):
    if dtype == "int64" and any(isinstance(a, float) for a in args):
        pytest.skip("torch.range crashes (SIGFPE) on a fractional step with an integer dtype")
    ours, ours_w = _warned(lambda: tt.range(*args, dtype=dtype and getattr(tt, dtype)))
    theirs, theirs_w = _warned(lambda: torch.range(*args, dtype=dtype and getattr(torch, dtype)))
    assert ours_w == theirs_w
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert ours.numpy().dtype == theirs.numpy().dtype


@pytest.mark.parametrize("args", [(0, 2, 5), (-1, 1, 4, 2.0), (1, 0, 3, 3), (2, 2, 1), (0, 1, 0)])
@pytest.mark.parametrize("dtype", [None, "float64"])
def test_logspace(args, dtype, torch):
    ours = tt.logspace(*args, dtype=dtype and getattr(tt, dtype))
    theirs = torch.logspace(*args, dtype=dtype and getattr(torch, dtype))
    assert ours.numpy().dtype == theirs.numpy().dtype
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6 if dtype is None else 1e-14)


def test_broadcast_shapes(torch):
    for shapes in [((2, 1), (3,)), ((), (4, 1, 2), (3, 1)), (5, (1, 5)), ((0, 1), (3,))]:
        assert tuple(tt.broadcast_shapes(*shapes)) == tuple(torch.broadcast_shapes(*shapes))


def test_chain_matmul_warns_once():
    """PyTorch's deprecation warning is TORCH_WARN_ONCE: at most once per process."""
    a = tt.ones(2, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tt.chain_matmul(a, a)
        tt.chain_matmul(a, a)
    assert len(caught) <= 1
    assert all("torch.chain_matmul is deprecated" in str(w.message) for w in caught)


def test_wired():
    """Every function is a top-level name, every method is in `METHODS` and on `Tensor`."""
    from tracegrad.torch.ops import products_extra, shapes_extra

    for name in [*shapes_extra.__all__, *products_extra.__all__]:
        assert hasattr(tt, name), name
    for name in METHOD_NAMES:
        assert name in methods.METHODS, name
        assert callable(getattr(tt.ones(2), name)), name


METHOD_NAMES = {
    "arctan2", "greater", "greater_equal", "less", "less_equal", "not_equal", "positive",
    "moveaxis", "movedim", "ger", "fliplr", "flipud", "hsplit", "vsplit", "dsplit",
    "tensor_split", "broadcast_to", "ravel", "tile", "unflatten", "repeat_interleave",
    "narrow_copy", "select_scatter", "slice_scatter", "diagonal_scatter", "diagflat", "trace",
    "kron", "inner", "vdot", "addr", "cross", "dist", "renorm",
}  # fmt: skip
