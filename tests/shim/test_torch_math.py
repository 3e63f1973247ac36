"""`tracegrad.torch.ops.special_math` and `ops.matrices` against PyTorch (the oracle).

Each case runs one call in both libraries on the same float64 and float32 inputs and compares
values, dtypes, `grad_fn` names, gradients through `backward()` and, for the smooth functions,
second derivatives through `autograd.grad(create_graph=True)`. PyTorch's errors (shapes, dims,
dtypes) are compared by type and first line. The functions are taken from their modules until
the lead wires them into `tracegrad.torch`; `test_wired_names` then checks the wiring.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import assert_same_error
from tracegrad.torch.ops import matrices, special_math

torch = pytest.importorskip("torch")


class Ours:
    """The module the cases call as `M.name(...)` on tracegrad's side: the new functions
    (`unfold` is a method in PyTorch; it is called as `M.unfold(x, ...)` on both sides)."""

    def __getattr__(self, name):
        for module in (special_math, matrices):
            if hasattr(module, name):
                return getattr(module, name)
        return getattr(tt, name)


class Theirs:
    def __getattr__(self, name):
        if name == "unfold":
            return lambda x, *args: x.unfold(*args)
        if name == "one_hot":
            return torch.nn.functional.one_hot
        return getattr(torch, name)


OURS, THEIRS = Ours(), Theirs()


@pytest.fixture(autouse=True)
def _torch_one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@dataclass(frozen=True)
class X:
    """A random float input of `shape` in [lo, hi], or fixed `value`s; `grad` if it requires
    grad."""

    shape: tuple = ()
    lo: float = -2.0
    hi: float = 2.0
    value: object = None
    grad: bool = True


@dataclass
class Case:
    id: str
    call: Callable  # call(M, *tensors)
    inputs: tuple
    name: str | None  # the grad_fn name (None: the result has none)
    second: bool = True  # compare second derivatives
    rtol64: float = 1e-12  # float64 values
    grad_rtol64: float = 1e-10  # float64 derivatives


CASES: list[Case] = []


def case(id, call, *inputs, name, **opts):
    CASES.append(Case(id, call, inputs, name, **opts))


def unary(fn, *inputs, **opts):
    case(fn, lambda M, x: getattr(M, fn)(x), *inputs, **opts)


# special functions: values and derivatives (SciPy's closed forms, so order two too)
unary("erf", X((2, 3)), name="ErfBackward0")
unary("erfc", X((2, 3)), name="ErfcBackward0")
unary("erfinv", X((2, 3), -0.9, 0.9), name="ErfinvBackward0")
unary("lgamma", X((2, 3), 0.2, 4.0), name="LgammaBackward0", grad_rtol64=1e-8)
unary("lgamma", X(value=[-2.5, -0.5, 0.5, 3.5]), name="LgammaBackward0", grad_rtol64=1e-8)
# PyTorch's trigamma (digamma's derivative) is good to ~1e-9 relative, SciPy's to 1e-15
unary("digamma", X((2, 3), 0.2, 4.0), name="DigammaBackward0", grad_rtol64=1e-8)
unary("i0", X((2, 3), -3.0, 3.0), name="I0Backward0")
unary("sinc", X((2, 3)), name="SincBackward0")
unary("sinc", X(value=[0.0, 1.0, -2.0, 0.5]), name="SincBackward0", second=False)
for _n in (0, 1, 2, 3):
    case(
        f"polygamma({_n})",
        lambda M, x, n=_n: M.polygamma(n, x),
        X((2, 3), 0.3, 4.0),
        name="PolygammaBackward0",
        rtol64=1e-8,
        grad_rtol64=1e-8,
    )
case("xlogy", lambda M, x, y: M.xlogy(x, y), X((2, 3)), X((3,), 0.2, 3.0), name="XlogyBackward0")
case("xlogy(x, 2.5)", lambda M, x: M.xlogy(x, 2.5), X((3,)), name="XlogyBackward2")
case("xlogy(2.5, y)", lambda M, y: M.xlogy(2.5, y), X((3,), 0.2, 3.0), name="XlogyBackward1")
case(  # at x == 0 and y <= 0 the derivative in x is 0, as PyTorch's (log(y): -inf, nan)
    "xlogy(0, y)",
    lambda M, x, y: M.xlogy(x, y),
    X(value=[0.0, 0.0, 0.0, 2.0, 1.0, 0.0]),
    X(value=[0.0, 3.0, -1.0, 0.5, np.nan, np.nan], grad=False),
    name="XlogyBackward0",
    second=False,
)
case("hypot", lambda M, x, y: M.hypot(x, y), X((2, 3)), X((3,)), name="HypotBackward0")
case(  # the derivative at the origin is nan, as PyTorch's
    "hypot(0, 0)",
    lambda M, x, y: M.hypot(x, y),
    X(value=[0.0, 3.0]),
    X(value=[0.0, -4.0]),
    name="HypotBackward0",
    second=False,
)

# the fused products
case(
    "addmm",
    lambda M, c, a, b: M.addmm(c, a, b),
    X((2, 4)),
    X((2, 3)),
    X((3, 4)),
    name="AddmmBackward0",
)
case(
    "addmm(beta, alpha, bcast)",
    lambda M, c, a, b: M.addmm(c, a, b, beta=0.5, alpha=-2),
    X((4,)),
    X((2, 3)),
    X((3, 4)),
    name="AddmmBackward0",
)
case(
    "addmm(beta=0: nan ignored)",
    lambda M, c, a, b: M.addmm(c, a, b, beta=0),
    X(value=[[np.nan, 1.0]]),
    X((3, 2)),
    X((2, 2)),
    name="AddmmBackward0",
)
case(
    "addmm(alpha=0: inf ignored)",
    lambda M, c, a, b: M.addmm(c, a, b, alpha=0, beta=3),
    X((3, 2)),
    X(value=[[np.inf, 1.0]] * 3),
    X((2, 2)),
    name="AddmmBackward0",
)
case(
    "addmv", lambda M, c, a, v: M.addmv(c, a, v), X((2,)), X((2, 3)), X((3,)), name="AddmvBackward0"
)
case(
    "addmv(beta, alpha, 0-d)",
    lambda M, c, a, v: M.addmv(c, a, v, beta=2, alpha=0.5),
    X(()),
    X((2, 3)),
    X((3,)),
    name="AddmvBackward0",
)
case(
    "addbmm",
    lambda M, c, a, b: M.addbmm(c, a, b, alpha=3),
    X((2, 4)),
    X((5, 2, 3)),
    X((5, 3, 4)),
    name="AddbmmBackward0",
)
case(
    "baddbmm",
    lambda M, c, a, b: M.baddbmm(c, a, b, beta=-1),
    X((2, 4)),
    X((5, 2, 3)),
    X((5, 3, 4)),
    name="BaddbmmBackward0",
)
case(
    "baddbmm(no bcast)",
    lambda M, c, a, b: M.baddbmm(c, a, b),
    X((5, 2, 4)),
    X((5, 2, 3)),
    X((5, 3, 4)),
    name="BaddbmmBackward0",
)

# diagonals
for _k in (0, 1, -2):
    case(f"diag(1-D, {_k})", lambda M, x, k=_k: M.diag(x, k), X((3,)), name="DiagEmbedBackward0")
    case(
        f"diag(2-D, {_k})",
        lambda M, x, k=_k: M.diag(x, k),
        X((3, 4)),
        name="DiagonalBackward0_copy",
    )
case("diag(far)", lambda M, x: M.diag(x, 5), X((3, 4)), name="DiagonalBackward0_copy")
case("diag_embed", lambda M, x: M.diag_embed(x), X((2, 3)), name="DiagEmbedBackward0")
case(
    "diag_embed(-1, 0, 2)",
    lambda M, x: M.diag_embed(x, -1, 0, 2),
    X((2, 3)),
    name="DiagEmbedBackward0",
)
case(
    "diag_embed(2, dim1=2, dim2=0)",
    lambda M, x: M.diag_embed(x, 2, dim1=2, dim2=0),
    X((2, 3, 4)),
    name="DiagEmbedBackward0",
)
case(
    "diag_embed(inf stays)",
    lambda M, x: M.diag_embed(x),
    X(value=[np.inf, -1.0, np.nan], grad=False),
    name=None,
)
case("diagonal", lambda M, x: M.diagonal(x), X((3, 4)), name="DiagonalBackward0")
case(
    "diagonal(1, -1, 0)",
    lambda M, x: M.diagonal(x, 1, -1, 0),
    X((2, 3, 4)),
    name="DiagonalBackward0",
)
case(
    "diagonal(offset=-2, dim1=1, dim2=0)",
    lambda M, x: M.diagonal(x, offset=-2, dim1=1, dim2=0),
    X((3, 4)),
    name="DiagonalBackward0",
)

# rearrangements
case("roll(flat)", lambda M, x: M.roll(x, 5), X((3, 4)), name="RollBackward0")
case("roll(dim)", lambda M, x: M.roll(x, -1, 0), X((3, 4)), name="RollBackward0")
case("roll(dims)", lambda M, x: M.roll(x, (1, -2), (0, 1)), X((3, 4)), name="RollBackward0")
case("roll(lists)", lambda M, x: M.roll(x, [7], [-1]), X((3, 4)), name="RollBackward0")
case("roll(0)", lambda M, x: M.roll(x, 0, 0), X((3, 4)), name="RollBackward0")
case("roll(numel)", lambda M, x: M.roll(x, 12), X((3, 4)), name="RollBackward0")
for _k in (1, 2, 3, -1, 4):
    case(f"rot90({_k})", lambda M, x, k=_k: M.rot90(x, k), X((3, 4)), name="Rot90Backward0")
case("rot90(dims)", lambda M, x: M.rot90(x, 1, (2, 0)), X((2, 3, 4)), name="Rot90Backward0")
case("rot90(-1 dims)", lambda M, x: M.rot90(x, 3, [1, -1]), X((2, 3, 4)), name="Rot90Backward0")
case("unfold(1, 2, 1)", lambda M, x: M.unfold(x, 1, 2, 1), X((3, 5)), name="UnfoldBackward0")
case("unfold(-1, 3, 2)", lambda M, x: M.unfold(x, -1, 3, 2), X((3, 7)), name="UnfoldBackward0")
case("unfold(0, 2, 3)", lambda M, x: M.unfold(x, 0, 2, 3), X((8, 2)), name="UnfoldBackward0")
case("unfold(size 0)", lambda M, x: M.unfold(x, 1, 0, 1), X((3, 4)), name="UnfoldBackward0")
case("unfold(0-d)", lambda M, x: M.unfold(x, 0, 1, 5), X(()), name="UnfoldBackward0")
case("unfold(0-d, size 0)", lambda M, x: M.unfold(x, -1, 0, 1), X(()), name="UnfoldBackward0")

# linear in their one input: the first derivative is a constant (PyTorch's has no grad_fn), so
# order two has nothing to compare
for _c in CASES:
    if _c.id.startswith(("diag", "roll", "rot90", "unfold")):
        _c.second = False


def _seed(text: str) -> int:
    return zlib.crc32(text.encode())


def _arrays(c: Case, dtype) -> list[np.ndarray]:
    rng = np.random.default_rng(_seed(c.id))
    return [
        np.array(s.value, dtype)
        if s.value is not None
        else rng.uniform(s.lo, s.hi, s.shape).astype(dtype)
        for s in c.inputs
    ]


def _run(c: Case, arrays, M, make):
    ts = [make(a, requires_grad=s.grad) for a, s in zip(arrays, c.inputs)]
    return ts, c.call(M, *ts)


def _tols(c: Case, dtype, grad: bool) -> dict:
    if dtype == np.float64:
        return {"rtol": c.grad_rtol64 if grad else c.rtol64, "atol": 1e-12 if grad else 1e-14}
    return {"rtol": 1e-4, "atol": 1e-5} if grad else {"rtol": 1e-5, "atol": 1e-6}


def _close(ours, theirs, what, **tols) -> None:
    np.testing.assert_allclose(ours, theirs, err_msg=what, equal_nan=True, **tols)


PARAMS = [
    pytest.param(c, np.dtype(dt), id=f"{c.id}-{np.dtype(dt).name}")
    for c in CASES
    for dt in (np.float64, np.float32)
]


@pytest.mark.parametrize(("c", "dtype"), PARAMS)
def test_values_and_gradients(c: Case, dtype):
    arrays = _arrays(c, dtype)
    t_in, t_out = _run(c, arrays, THEIRS, torch.tensor)
    g_in, g_out = _run(c, arrays, OURS, tt.tensor)
    assert g_out.dtype.name == str(t_out.dtype).removeprefix("torch.")
    assert g_out.shape == tuple(t_out.shape)
    _close(g_out.detach().numpy(), t_out.detach().numpy(), "values", **_tols(c, dtype, False))
    t_name = t_out.grad_fn.name() if t_out.grad_fn is not None else None
    assert t_name == c.name
    assert (g_out.grad_fn.name() if g_out.grad_fn is not None else None) == c.name
    if c.name is None:
        return
    ct = np.random.default_rng(_seed(c.id) + 1).uniform(-1, 1, g_out.shape).astype(dtype)
    t_out.backward(torch.tensor(ct))
    g_out.backward(tt.tensor(ct))
    for i, (t, g) in enumerate(zip(t_in, g_in)):
        if t.requires_grad:
            expected = t.grad.numpy() if t.grad is not None else np.zeros(t.shape, dtype)
            _close(g.grad.numpy(), expected, f"d/d input {i}", **_tols(c, dtype, True))


def _hvp(c: Case, arrays, lib, M, ct, vs):
    """<v, d/dx <ct, f'(x)>>, through autograd.grad(create_graph=True); zeros for an input
    the first derivative does not depend on (`input` of addmm, say)."""
    ts, out = _run(c, arrays, M, lib.tensor)
    wrt = [t for t in ts if t.requires_grad]
    grads = lib.autograd.grad(out, wrt, lib.tensor(ct), create_graph=True)
    terms = [(g * lib.tensor(v)).sum() for g, v in zip(grads, vs) if g.requires_grad]
    if not terms:  # a first derivative constant in every input (xlogy(x, 2.5))
        return [np.zeros(t.shape, ct.dtype) for t in wrt]
    second = lib.autograd.grad(sum(terms), wrt, allow_unused=True)
    return [
        np.zeros(t.shape, ct.dtype) if g is None else g.detach().numpy()
        for g, t in zip(second, wrt)
    ]


@pytest.mark.parametrize(
    ("c", "dtype"), [p for p in PARAMS if p.values[0].second and p.values[0].name is not None]
)
def test_second_derivatives(c: Case, dtype):
    arrays = _arrays(c, dtype)
    rng = np.random.default_rng(_seed(c.id) + 2)
    _, out = _run(c, arrays, OURS, tt.tensor)
    ct = rng.uniform(-1, 1, out.shape).astype(dtype)
    vs = [rng.uniform(-1, 1, a.shape).astype(dtype) for a, s in zip(arrays, c.inputs) if s.grad]
    expected = _hvp(c, arrays, torch, THEIRS, ct, vs)
    got = _hvp(c, arrays, tt, OURS, ct, vs)
    tols = _tols(c, dtype, True)
    if dtype == np.float64:
        tols["rtol"] = max(tols["rtol"], 1e-8)  # PyTorch's polygamma(n >= 1) is good to ~1e-9
    for i, (g, e) in enumerate(zip(got, expected)):
        _close(g, e, f"d2/d input {i}", **tols)


# -- integer inputs, index sets, one_hot -----------------------------------------------------------


@pytest.mark.parametrize("name", ["erf", "erfc", "erfinv", "lgamma", "digamma", "i0", "sinc"])
def test_integers_become_the_default_float(name):
    ours = getattr(OURS, name)(tt.tensor([0, 1, 2]))
    theirs = getattr(torch, name)(torch.tensor([0, 1, 2]))
    assert ours.dtype == np.float32 and theirs.dtype == torch.float32
    _close(ours.numpy(), theirs.numpy(), name, rtol=1e-6)


def test_integer_and_mixed_dtypes_of_the_binary_functions():
    ints = tt.tensor([1, 2]), torch.tensor([1, 2])
    assert OURS.xlogy(ints[0], ints[0]).dtype == np.float32
    assert torch.xlogy(ints[1], ints[1]).dtype == torch.float32
    mixed = OURS.hypot(tt.tensor([1.0]), tt.tensor([1.0], dtype=tt.float64))
    assert mixed.dtype == np.float64
    assert torch.hypot(torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64)).dtype == (
        torch.float64
    )


@pytest.mark.parametrize(("beta", "alpha"), [(2, -1), (0.5, 1), (-1.5, 0.6), (1, 2.9)])
def test_integer_fused_products_stay_integer(beta, alpha):
    """Integer tensors: PyTorch truncates a float `beta` or `alpha` to an integer."""
    rng = np.random.default_rng(3)
    c, a, b = (rng.integers(-3, 4, s) for s in ((2, 4), (2, 3), (3, 4)))
    ours = OURS.addmm(tt.tensor(c), tt.tensor(a), tt.tensor(b), beta=beta, alpha=alpha)
    theirs = torch.addmm(torch.tensor(c), torch.tensor(a), torch.tensor(b), beta=beta, alpha=alpha)
    assert ours.dtype == np.int64
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize(
    "args", [(3, 3), (3, 4, 1), (4, 3, -1), (0, 3), (3, 3, 10), (3, 3, -10), (1, 5, 2)]
)
@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
def test_triangle_indices(name, args):
    ours = getattr(OURS, name)(*args)
    theirs = getattr(torch, name)(*args)
    assert ours.dtype == np.int64
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    small = getattr(OURS, name)(*args, dtype=tt.int32)
    assert small.dtype == np.int32


@pytest.mark.parametrize(
    ("values", "num_classes"),
    [([0, 2, 1], -1), ([0, 2, 1], 5), ([[0, 2], [1, 0]], -1), ([], 3), (2, 4)],
)
def test_one_hot(values, num_classes):
    ours = OURS.one_hot(tt.tensor(values, dtype=tt.int64), num_classes)
    theirs = torch.nn.functional.one_hot(torch.tensor(values, dtype=torch.long), num_classes)
    assert ours.dtype == np.int64 and not ours.requires_grad
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_views_refuse_in_place_updates():
    """diagonal and unfold are views in PyTorch: the shim refuses to update them in place
    (it would not reach the base) rather than silently diverging."""
    x = tt.tensor(np.ones((3, 4)))
    for view in (OURS.diagonal(x), OURS.unfold(x, 1, 2, 1)):
        assert view._base is x
        with pytest.raises(NotImplementedError, match="in-place on a view"):
            view.mul_(2.0)


def test_copies_allow_in_place_updates():
    """roll, rot90, diag_embed and diag make new tensors in PyTorch (tracegrad builds some
    from views): in-place updates of them work, and never touch the input."""
    for lib, M in ((tt, OURS), (torch, THEIRS)):
        x = lib.tensor(np.arange(12.0).reshape(3, 4))
        v = lib.tensor(np.arange(3.0))
        outs = [M.roll(x, 0, 0), M.rot90(x), M.rot90(x, 4), M.diag_embed(v), M.diag(v)]
        outs += [M.diag(x), M.roll(x, 12)]
        for out in outs:
            assert out.mul_(2) is out
        np.testing.assert_array_equal(x.numpy(), np.arange(12.0).reshape(3, 4))
        np.testing.assert_array_equal(outs[0].numpy(), 2 * x.numpy())


# -- PyTorch's errors ------------------------------------------------------------------------------


def _f(*shape, dtype=np.float32):
    return np.zeros(shape, dtype)


_DOUBLE = np.float64


def _addmm(M, c, a, b):
    return M.addmm(c, a, b)


def _addmv(M, c, a, v):
    return M.addmv(c, a, v)


def _addbmm(M, c, a, b):
    return M.addbmm(c, a, b)


def _baddbmm(M, c, a, b):
    return M.baddbmm(c, a, b)


ERRORS = {
    # (call(M, *tensors), arrays)
    "addmm mat2 shape": (_addmm, (_f(2, 4), _f(2, 3), _f(4, 4))),
    "addmm mat1 1-D": (_addmm, (_f(2, 4), _f(3), _f(3, 4))),
    "addmm mat2 3-D": (_addmm, (_f(2, 4), _f(2, 3), _f(3, 4, 1))),
    "addmm input shape": (_addmm, (_f(3, 4), _f(2, 3), _f(3, 4))),
    "addmm input bcast": (_addmm, (_f(3), _f(2, 3), _f(3, 4))),
    "addmm input 3-D": (_addmm, (_f(2, 1, 4), _f(2, 3), _f(3, 4))),
    "addmm self dtype": (_addmm, (_f(2, 4, dtype=_DOUBLE), _f(2, 3), _f(3, 4))),
    "addmm mat1 dtype": (_addmm, (_f(2, 4), _f(2, 3, dtype=_DOUBLE), _f(3, 4))),
    "addmm complex beta": (
        lambda M, c, a, b: M.addmm(c, a, b, beta=1j),
        (_f(2, 4), _f(2, 3), _f(3, 4)),
    ),
    "addmv vec size": (_addmv, (_f(2), _f(2, 3), _f(4))),
    "addmv input size": (_addmv, (_f(3), _f(2, 3), _f(3))),
    "addmv ranks": (_addmv, (_f(2, 2), _f(2, 3), _f(3))),
    "addmv dtype": (_addmv, (_f(2), _f(2, 3, dtype=_DOUBLE), _f(3, dtype=_DOUBLE))),
    "addbmm batches": (_addbmm, (_f(2, 4), _f(5, 2, 3), _f(4, 3, 4))),
    "addbmm sizes": (_addbmm, (_f(2, 4), _f(5, 2, 3), _f(5, 4, 4))),
    "addbmm input": (_addbmm, (_f(3, 4), _f(5, 2, 3), _f(5, 3, 4))),
    "addbmm dtype": (_addbmm, (_f(2, 4), _f(5, 2, 3), _f(5, 3, 4, dtype=_DOUBLE))),
    "baddbmm 4-D batch1": (_baddbmm, (_f(2, 4), _f(5, 2, 3, 1), _f(5, 3, 4))),
    "baddbmm batches": (_baddbmm, (_f(5, 2, 4), _f(5, 2, 3), _f(4, 3, 4))),
    "baddbmm sizes": (_baddbmm, (_f(5, 2, 4), _f(5, 2, 3), _f(5, 4, 4))),
    "baddbmm input": (_baddbmm, (_f(3, 2, 4), _f(5, 2, 3), _f(5, 3, 4))),
    "baddbmm batch2 dtype": (_baddbmm, (_f(2, 4), _f(5, 2, 3), _f(5, 3, 4, dtype=_DOUBLE))),
    "diag 3-D": (lambda M, x: M.diag(x), (_f(2, 3, 4),)),
    "diag 0-D": (lambda M, x: M.diag(x), (_f(),)),
    "diag_embed same dims": (lambda M, x: M.diag_embed(x, 0, 0, 0), (_f(3, 4),)),
    "diag_embed bad dim": (lambda M, x: M.diag_embed(x, 0, 0, 3), (_f(3, 4),)),
    "diagonal same dims": (lambda M, x: M.diagonal(x, 0, 0, 0), (_f(3, 4),)),
    "diagonal bad dim": (lambda M, x: M.diagonal(x, 0, 0, 2), (_f(3, 4),)),
    "diagonal 1-D": (lambda M, x: M.diagonal(x), (_f(3),)),
    "roll misaligned": (lambda M, x: M.roll(x, (1, 2), (0,)), (_f(3, 4),)),
    "roll flat pair": (lambda M, x: M.roll(x, (1, 2)), (_f(3, 4),)),
    "roll no shifts": (lambda M, x: M.roll(x, (), ()), (_f(3, 4),)),
    "roll bad dim": (lambda M, x: M.roll(x, 1, 2), (_f(3, 4),)),
    "rot90 same dims": (lambda M, x: M.rot90(x, 1, (0, 0)), (_f(3, 4),)),
    "rot90 one dim": (lambda M, x: M.rot90(x, 1, (0,)), (_f(3, 4),)),
    "rot90 bad dim": (lambda M, x: M.rot90(x, 1, (0, 2)), (_f(3, 4),)),
    "rot90 1-D": (lambda M, x: M.rot90(x), (_f(3),)),
    "unfold too big": (lambda M, x: M.unfold(x, 1, 5, 1), (_f(3, 4),)),
    "unfold step 0": (lambda M, x: M.unfold(x, 1, 2, 0), (_f(3, 4),)),
    "unfold bad dim": (lambda M, x: M.unfold(x, 2, 2, 1), (_f(3, 4),)),
    "unfold negative size": (lambda M, x: M.unfold(x, 1, -1, 1), (_f(3, 4),)),
    "unfold 0-d too big": (lambda M, x: M.unfold(x, 0, 2, 1), (_f(),)),
    "polygamma negative n": (lambda M, x: M.polygamma(-1, x), (_f(3),)),
    "polygamma float n": (lambda M, x: M.polygamma(1.5, x), (_f(3),)),
    "hypot integers": (lambda M, x: M.hypot(x, x), (np.array([1, 2]),)),
    "hypot number": (lambda M, x: M.hypot(x, 2.0), (_f(3),)),
    "hypot number input": (lambda M, x: M.hypot(2.0, x), (_f(3),)),
    "xlogy numbers": (lambda M: M.xlogy(2, 3), ()),
    "one_hot too small": (lambda M, x: M.one_hot(x, 2), (np.array([0, 2, 1]),)),
    "one_hot negative": (lambda M, x: M.one_hot(x), (np.array([0, -1]),)),
    "one_hot negative, n": (lambda M, x: M.one_hot(x, 3), (np.array([0, -1]),)),
    "one_hot int32": (lambda M, x: M.one_hot(x), (np.array([0, 1], np.int32),)),
    "one_hot float": (lambda M, x: M.one_hot(x), (np.array([0.0, 1.0]),)),
    "one_hot empty": (lambda M, x: M.one_hot(x), (np.zeros(0, np.int64),)),
}
for _name in ("erf", "erfc", "erfinv", "lgamma", "digamma", "i0"):
    ERRORS[f"{_name} complex"] = (
        lambda M, x, name=_name: getattr(M, name)(x),
        (np.array([1 + 1j], np.complex64),),
    )
for _n in (0, 1):
    ERRORS[f"polygamma({_n}) complex"] = (
        lambda M, x, n=_n: M.polygamma(n, x),
        (np.array([1 + 1j], np.complex64),),
    )
ERRORS["xlogy complex"] = (lambda M, x: M.xlogy(x, x), (np.array([1 + 1j], np.complex64),))
ERRORS["hypot complex"] = (lambda M, x: M.hypot(x, x), (np.array([1 + 1j], np.complex64),))
ERRORS["tril_indices negative row"] = (lambda M: M.tril_indices(-1, 3), ())
ERRORS["triu_indices negative col"] = (lambda M: M.triu_indices(3, -1), ())
ERRORS["tril_indices float"] = (lambda M: M.tril_indices(3, 3, dtype=M.float32), ())


def _lower_c_names(message: str) -> str:
    """baddbmm's message names dtypes as C types (`input double`); NumPy's names here."""
    for c_name, name in (("double", "float64"), ("float", "float32")):
        message = message.replace(f" {c_name},", f" {name},").replace(f": {c_name}", f": {name}")
        message = message.replace(f"input {c_name}", f"input {name}")
    return message


@pytest.mark.parametrize("id", list(ERRORS))
def test_errors(id):
    call, arrays = ERRORS[id]

    def ours():
        return call(OURS, *[tt.tensor(a) for a in arrays])

    def theirs():
        try:
            return call(THEIRS, *[torch.tensor(a) for a in arrays])
        except Exception as e:  # noqa: BLE001 - re-raised with the C type names rewritten
            raise type(e)(_lower_c_names(str(e))) from None

    assert_same_error(ours, theirs, scalar_names=True)


# -- once wired by the lead ------------------------------------------------------------------------

FUNCTIONS = [*special_math.__all__, *matrices.__all__]
METHODS = [n for n in FUNCTIONS if n not in ("tril_indices", "triu_indices")] + ["unfold"]
INPLACE = ["erf", "erfc", "erfinv", "lgamma", "digamma", "polygamma", "i0", "sinc", "xlogy"]
INPLACE += ["hypot"]


def test_wired_names():
    for name in FUNCTIONS:
        fn = getattr(tt, name)
        assert getattr(fn, "__wrapped__", fn) is getattr(OURS, name), name  # out= wraps some
    assert tt.nn.functional.one_hot is matrices.one_hot
    x = tt.tensor(np.linspace(0.2, 0.9, 12).reshape(3, 4))
    for name in METHODS:
        assert hasattr(tt.Tensor, name), name
    np.testing.assert_array_equal(x.polygamma(1).numpy(), OURS.polygamma(1, x).numpy())
    np.testing.assert_array_equal(x.unfold(1, 2, 1).numpy(), OURS.unfold(x, 1, 2, 1).numpy())
    np.testing.assert_array_equal(x.erf().numpy(), OURS.erf(x).numpy())
    for name in INPLACE:
        y = x + 0.0
        args = (x,) if name in ("xlogy", "hypot") else (1,) if name == "polygamma" else ()
        assert getattr(y, name + "_")(*args) is y, name
        np.testing.assert_array_equal(y.numpy(), getattr(x, name)(*args).numpy())
    q = tt.tensor(np.linspace(-1.0, 1.0, 9).reshape(3, 3))
    y = q + 0.0
    assert y.addmm_(q, q, beta=0.5) is y
    np.testing.assert_array_equal(y.numpy(), OURS.addmm(q, q, q, beta=0.5).numpy())
