"""`tracegrad.torch.ops.scatter` against PyTorch: scatter, index updates, take, take_along_dim.

Each scenario runs in both libraries (`run_both`): values, dtypes, `grad_fn` names and the
gradients of a weighted sum through `backward()` with respect to the input and the source, in
float32 and float64. `scatter` and `index_copy` are tested without repeated positions (PyTorch
leaves the winner unspecified); the accumulating functions with repeats. Errors compare the
first line of PyTorch's message. The functions are called from the module until the lead
wires them into `tracegrad.torch` (the module is found by name: once wired, the package's
attribute `scatter` is the function).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad.torch as tt
from tests.shim.torch_oracle import assert_same_error, attempt, run_both
from tracegrad.torch.ops.inplace import rebind

scatter_ops = importlib.import_module("tracegrad.torch.ops.scatter")

RNG = np.random.default_rng(23)
X = RNG.permutation(12).reshape(3, 4) * 0.43 - 2.0  # distinct values: no ties unless built
SRC = RNG.permutation(8).reshape(2, 4) * 0.31 - 1.0
ROWS = np.array([[0, 1, 2, 0], [1, 2, 0, 2]])  # no position written twice along dim 0
REPEATS = np.array([[0, 1, 2, 0], [0, 1, 0, 0]])  # some positions written twice
DTYPES = ["float32", "float64"]


def fn(lib, name):
    """`lib.name`, taken from the scatter module for tracegrad until it is wired."""
    return getattr(lib, name) if lib is not tt else getattr(scatter_ops, name)


def through(name, arrays, *args, dtype="float64", **kwargs):
    """A scenario: `name(*args, **kwargs)` where an argument `"@k"` is the tensor made from
    `arrays[k]` (requiring grad if it is floating), its grad_fn name, and each float tensor's
    gradient of sum(w * result) with fixed weights w."""

    def scenario(lib):
        tensors = []
        for a in map(np.asarray, arrays):
            floating = a.dtype.kind == "f"
            kind = getattr(lib, dtype) if floating else None
            tensors.append(lib.tensor(a, dtype=kind, requires_grad=floating))
        pick = {f"@{k}": t for k, t in enumerate(tensors)}

        def resolve(a):
            if isinstance(a, tuple):
                return tuple(resolve(b) for b in a)
            return pick.get(a, a) if isinstance(a, str) else a

        out = fn(lib, name)(*map(resolve, args), **{k: resolve(v) for k, v in kwargs.items()})
        w = np.linspace(-1.0, 2.0, out.numel()).reshape(tuple(out.shape))
        if out.requires_grad:
            (out * lib.tensor(w, dtype=out.dtype)).sum().backward()
        grads = tuple(t.grad for t in tensors if t.requires_grad)
        return out, out.grad_fn.name() if out.grad_fn is not None else None, grads

    return scenario


def idx(a):
    return np.asarray(a, dtype=np.int64)


CASES = [
    ("scatter", [X, idx(ROWS), SRC], ("@0", 0, "@1", "@2"), {}),
    ("scatter", [X, idx(ROWS[:, :3]), SRC[:, :3].copy()], ("@0", 0, "@1", "@2"), {}),
    ("scatter", [X, idx([[2, 0, 1], [0, 3, 2]])], ("@0", 1, "@1", 2.5), {}),
    ("scatter", [X, idx([[2, 0, 1], [0, 3, 2]])], ("@0", -1, "@1"), {"value": -1.0}),
    ("scatter_add", [X, idx(REPEATS), SRC], ("@0", 0, "@1", "@2"), {}),
    ("scatter_add", [X, idx([[3, 3, 0]]), SRC[:1, :3].copy()], ("@0", 1, "@1", "@2"), {}),
    ("index_add", [X, idx([2, 0, 2]), X[::-1].copy()], ("@0", 0, "@1", "@2"), {}),
    ("index_add", [X, idx([3, 3, 1]), X[:, :3].copy()], ("@0", 1, "@1", "@2"), {"alpha": 0.5}),
    ("index_add", [np.array(0.25), idx([0]), np.array(0.5)], ("@0", 0, "@1", "@2"), {}),  # 0-d
    ("index_copy", [X, idx([2, 0]), SRC], ("@0", 0, "@1", "@2"), {}),
    ("index_copy", [X, idx([3, 0, 1]), X[:, :3].copy()], ("@0", 1, "@1", "@2"), {}),
    ("index_fill", [X, idx([3, -1, 0])], ("@0", 1, "@1", 2.0), {}),
    ("index_fill", [X, idx([2, 0, 2]), np.array(1.5)], ("@0", 0, "@1", "@2"), {}),
    ("index_put", [X, idx([2, 0]), SRC], ("@0", ("@1",), "@2"), {}),
    ("index_put", [X, idx([2, -3]), SRC[0]], ("@0", ("@1",), "@2"), {}),
    ("index_put", [X, idx([2, 0, 1]), idx([1]), SRC[0, :3]], ("@0", ("@1", "@2"), "@3"), {}),
    ("index_put", [X, idx([2, 0, 2]), SRC[0, :1]], ("@0", ("@1",), "@2"), {"accumulate": True}),
    ("index_put", [X, X > 0, np.array(3.0)], ("@0", ("@1",), "@2"), {}),
    ("index_put", [X, np.array([True, False, True]), SRC[0]], ("@0", ("@1",), "@2"), {}),
    ("masked_scatter", [X, np.array([True, False, True, True]), X], ("@0", "@1", "@2"), {}),
    ("masked_scatter", [X[0], np.array([[True], [False]]), SRC], ("@0", "@1", "@2"), {}),
    ("take", [X, idx([[2, -1, 2], [11, 0, 5]])], ("@0", "@1"), {}),
    ("take", [X, idx(7)], ("@0", "@1"), {}),
    ("take_along_dim", [X, idx([[2, 0, 2, 1]])], ("@0", "@1", 0), {}),
    ("take_along_dim", [X, idx([[3], [0], [3]])], ("@0", "@1"), {"dim": -1}),
    ("take_along_dim", [X[:1], idx([[3, 1], [0, 0]])], ("@0", "@1", 1), {}),  # broadcasts
    ("take_along_dim", [X, idx([2, 11, 2])], ("@0", "@1"), {}),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("name", "arrays", "args", "kwargs"), CASES, ids=lambda v: None)
def test_values_and_gradients(name, arrays, args, kwargs, dtype):
    rtol = 1e-6 if dtype == "float32" else 1e-12
    run_both(through(name, arrays, *args, dtype=dtype, **kwargs), rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_with_repeats(reduce, include_self, dtype):
    rtol = 1e-6 if dtype == "float32" else 1e-12
    scenario = through(
        "scatter_reduce",
        [X, idx(REPEATS), SRC],
        *("@0", 0, "@1", "@2", reduce),
        include_self=include_self,
        dtype=dtype,
    )
    run_both(scenario, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_with_zeros(include_self):
    """One zero among a position's factors, two, or a zero in the input: the exact
    derivative, as PyTorch's (which treats these cases apart)."""
    x = np.array([[2.0, 0.0, 3.0, 1.5], [1.0, 2.0, 0.5, 4.0]])
    src = np.array([[0.0, 2.0, 0.0, 3.0], [1.5, 0.0, 0.0, 2.0], [0.5, 3.0, 2.0, -1.0]])
    index = idx([[0, 0, 1, 1], [0, 1, 1, 1], [1, 0, 1, 0]])
    args = ("@0", 0, "@1", "@2", "prod")
    run_both(through("scatter_reduce", [x, index, src], *args, include_self=include_self))


def test_scatter_reduce_amax_splits_ties_evenly():
    """Ties between the input and the sources, and among the sources, share the gradient."""
    x = np.array([[1.0, 5.0, 2.0]])
    src = np.array([[1.0, 5.0, 0.0], [1.0, 3.0, 2.0]])
    index = idx([[0, 0, 0], [0, 0, 0]])
    for reduce in ("amax", "amin"):
        run_both(through("scatter_reduce", [x, index, src], "@0", 0, "@1", "@2", reduce))


def test_scatter_reduce_on_integers():
    def scenario(lib):
        x = lib.tensor([[5, -3, 0]])
        src = lib.tensor([[-1, 2, 7], [-2, 4, 1]])
        index = lib.tensor([[0, 0, 0], [0, 0, 0]])
        f = fn(lib, "scatter_reduce")
        return tuple(
            f(x, 0, index, src, r, include_self=s)
            for r in ("sum", "prod", "mean", "amax", "amin")
            for s in (True, False)
        )

    run_both(scenario)


def test_scatter_reduce_max_and_min_spellings_have_no_derivative():
    def scenario(lib):
        x = lib.tensor(X, requires_grad=True)
        src = lib.tensor(SRC, requires_grad=True)
        f = fn(lib, "scatter_reduce")
        big = f(x, 0, lib.tensor(REPEATS), src, "max")
        small = f(x, 0, lib.tensor(REPEATS), src, "min", include_self=False)
        return big, small, big.grad_fn.name(), attempt(big.sum().backward)

    run_both(scenario)


@given(data=st.data())
def test_accumulating_writes_with_random_repeats(data):
    """Random shapes, dims and index values (repeats likely) for the accumulating functions:
    values and both gradients against PyTorch, float64."""
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    rows, cols = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    dim = data.draw(st.integers(0, 1))
    size = (rows, cols)[dim]
    x = rng.standard_normal((rows, cols))
    k = data.draw(st.integers(1, 5))
    positions = idx(data.draw(st.lists(st.integers(0, size - 1), min_size=k, max_size=k)))
    source = rng.standard_normal((k, cols) if dim == 0 else (rows, k))
    index = np.broadcast_to(positions[:, None] if dim == 0 else positions[None], source.shape)
    reduce = data.draw(st.sampled_from(["sum", "prod", "mean", "amax", "amin"]))
    include_self = data.draw(st.booleans())
    cases = [
        through("index_add", [x, positions, source], "@0", dim, "@1", "@2", alpha=1.5),
        through("scatter_add", [x, idx(index), source], "@0", dim, "@1", "@2"),
        through(
            "scatter_reduce",
            [x, idx(index), source],
            *("@0", dim, "@1", "@2", reduce),
            include_self=include_self,
        ),
    ]
    for scenario in cases:
        run_both(scenario, rtol=1e-12, atol=1e-12)


def test_index_put_with_a_uint8_mask_warns():
    def scenario(lib):
        x = lib.tensor(X, requires_grad=True)
        mask = lib.tensor([1, 0, 1], dtype=lib.uint8)
        out = fn(lib, "index_put")(x, (mask,), lib.tensor(SRC[0]))
        out.sum().backward()
        return out, x.grad

    # PyTorch warns again when its backward pass indexes with the mask; the shim warns once
    out = run_both(scenario, warns=False)
    assert out.warnings == [("UserWarning", scatter_ops._UINT8_INDEX)]


def test_scatter_gradient_of_a_larger_src_is_padded_with_zeros():
    """PyTorch's backward fails here (its gradient has the index's shape, not src's); the
    shim gives the gradient itself: the index's block of the cotangent, zeros elsewhere."""
    run_both(lambda lib: fn(lib, "scatter")(lib.tensor(X), 0, lib.tensor(ROWS[:1]), lib.tensor(X)))
    x = tt.tensor(X, requires_grad=True)
    src = tt.tensor(SRC, requires_grad=True)
    scatter_ops.scatter(x, 0, tt.tensor(ROWS[:1, :3]), src).sum().backward()
    np.testing.assert_array_equal(src.grad.numpy(), [[1, 1, 1, 0], [0, 0, 0, 0]])
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 1, 1], [1, 0, 1, 1], [1, 1, 0, 1]])


def test_edge_cases():
    def scenario(lib):
        x = lib.tensor(X)
        empty = lib.zeros(0, dtype=lib.int64)
        zero_d = lib.tensor(0.5, requires_grad=True)
        s = fn(lib, "scatter")(zero_d, 0, lib.tensor(0), lib.tensor(4.0))
        return (
            fn(lib, "scatter")(x, 0, empty, x),  # an empty index changes nothing
            fn(lib, "scatter")(lib.zeros(2, 3, dtype=lib.int64), 1, lib.tensor([[2]]), 2.7),
            fn(lib, "scatter")(x, 0, lib.tensor([[1, 0]], dtype=lib.int32), value=lib.tensor(3.0)),
            s,
            fn(lib, "index_add")(
                lib.zeros(3, dtype=lib.int64), 0, lib.tensor([0, 0]), lib.tensor([2, 3]), alpha=2.5
            ),  # fmt: skip
            fn(lib, "index_fill")(
                lib.zeros(3, dtype=lib.int64), 0, lib.tensor([1]), lib.tensor(2.7)
            ),  # fmt: skip
            fn(lib, "index_copy")(lib.zeros(3), 0, lib.tensor(1), lib.tensor(1.0)),
            fn(lib, "take")(x, lib.zeros(0, dtype=lib.int64)),
        )

    run_both(scenario)


def test_deprecated_scatter_reduce_argument():
    """`scatter(..., reduce="add" | "multiply")`: values as PyTorch; no derivative, refused
    when a backward pass reaches it, with PyTorch's message (PyTorch warns once per process
    about the tensor form, so warnings are checked on the shim alone)."""

    def scenario(lib):
        x = lib.tensor(X, requires_grad=True)
        src = lib.tensor(SRC, requires_grad=True)
        index = lib.tensor(REPEATS)
        f = fn(lib, "scatter")
        added = f(x, 0, index, src, reduce="add")
        multiplied = f(x, 0, index, 2.0, reduce="multiply")
        plain = f(x.detach(), 0, index, src.detach(), reduce="multiply")
        return added, multiplied, plain, added.grad_fn.name(), attempt(added.sum().backward)

    run_both(scenario, warns=False)
    with pytest.warns(UserWarning, match="The reduce argument of torch.scatter with Tensor src"):
        scatter_ops.scatter(tt.tensor(X), 0, tt.tensor(ROWS), tt.tensor(SRC), reduce="add")


def test_inplace_variants_bump_the_version():
    """`x.scatter_(...)` and the others, as tracegrad/torch/ops/inplace.py makes them: the
    value rebinds, the version counter grows, and the gradient flows through the update."""
    calls = [
        ("scatter", (0, "ROWS", "SRC")),
        ("scatter_add", (0, "REPEATS", "SRC")),
        ("scatter_reduce", (0, "REPEATS", "SRC", "amax")),
        ("index_add", (0, "I", "SRC")),
        ("index_copy", (0, "I", "SRC")),
        ("index_fill", (0, "I", -1.0)),
        ("index_put", (("I",), "SRC")),
        ("masked_scatter", ("MASK", "SRC")),
    ]

    def scenario(lib):
        results = []
        for name, args in calls:
            leaf = lib.tensor(X, requires_grad=True)
            src = lib.tensor(SRC, requires_grad=True)
            table = {"ROWS": lib.tensor(ROWS), "REPEATS": lib.tensor(REPEATS), "SRC": src}
            table |= {"I": lib.tensor([2, 0]), "MASK": lib.tensor([True, False, False, True])}
            y = leaf * 1.0
            before = y._version
            out = inplace(y, name, *(resolve(table, a) for a in args))
            (y * lib.tensor(X)).sum().backward()
            results.append((out is y, y._version - before, y, leaf.grad, src.grad))
        refused = attempt(inplace, lib.tensor(X, requires_grad=True), "index_fill", 0,
                          lib.tensor([0]), 1.0)  # fmt: skip
        return tuple(results), refused

    run_both(scenario)


def resolve(table, a):
    if isinstance(a, tuple):
        return tuple(resolve(table, b) for b in a)
    return table.get(a, a) if isinstance(a, str) else a


def inplace(x, name, *args):
    """`x.name_(*args)`; until the lead wires the method, made as ops/inplace.py makes it."""
    method = getattr(type(x), name + "_", None)
    if method is not None:
        return method(x, *args)
    x._check_inplace()
    return rebind(x, getattr(scatter_ops, name)(x._snapshot(), *args))


# -- errors ------------------------------------------------------------------------------------

ERRORS = {
    # out-of-range indices
    "scatter index": lambda lib, f: f("scatter")(X_(lib), 0, lib.tensor([[5, 0]]), X_(lib)),
    "scatter negative": lambda lib, f: f("scatter")(X_(lib), 1, lib.tensor([[-1]]), 1.0),
    "scatter_add index": lambda lib, f: f("scatter_add")(X_(lib), 1, lib.tensor([[4]]), X_(lib)),
    "scatter_reduce index": lambda lib, f: f("scatter_reduce")(
        X_(lib), 0, lib.tensor([[3]]), X_(lib), "sum"
    ),
    "index_add index": lambda lib, f: f("index_add")(X_(lib), 0, lib.tensor([3]), X_(lib)[:1]),
    "index_add negative": lambda lib, f: f("index_add")(X_(lib), 0, lib.tensor([-1]), X_(lib)[:1]),
    "index_copy index": lambda lib, f: f("index_copy")(X_(lib), 1, lib.tensor([4]), X_(lib)[:, :1]),
    "index_fill index": lambda lib, f: f("index_fill")(X_(lib), 0, lib.tensor([-4]), 1.0),
    "index_put index": lambda lib, f: f("index_put")(
        X_(lib), (lib.tensor([0]), lib.tensor([4])), lib.tensor(1.0)
    ),
    "take index": lambda lib, f: f("take")(X_(lib), lib.tensor([12])),
    "take negative": lambda lib, f: f("take")(X_(lib), lib.tensor([-13])),
    "take_along_dim index": lambda lib, f: f("take_along_dim")(X_(lib), lib.tensor([0, 12])),
    # shapes
    "scatter ndim": lambda lib, f: f("scatter")(X_(lib), 0, lib.tensor([0, 1]), X_(lib)),
    "scatter src ndim": lambda lib, f: f("scatter")(X_(lib), 0, lib.tensor([[0]]), X_(lib)[0]),
    "scatter size": lambda lib, f: f("scatter_add")(X_(lib), 0, lib.tensor([[0] * 5]), X_(lib)),
    "scatter size value": lambda lib, f: f("scatter")(X_(lib), 0, lib.tensor([[0] * 5]), 1.0),
    "scatter dim": lambda lib, f: f("scatter")(X_(lib), 2, lib.tensor([[0]]), 1.0),
    "index_add count": lambda lib, f: f("index_add")(X_(lib), 0, lib.tensor([0, 1]), X_(lib)[:1]),
    "index_add slice": lambda lib, f: f("index_add")(X_(lib), 0, lib.tensor([0]), X_(lib)[:1, :3]),
    "index_add vector": lambda lib, f: f("index_add")(X_(lib), 0, lib.tensor([[0]]), X_(lib)[:1]),
    "index_copy count": lambda lib, f: f("index_copy")(X_(lib), 0, lib.tensor([0, 1]), X_(lib)[:1]),
    "index_copy slice": lambda lib, f: f("index_copy")(
        lib.zeros(2, 3, 4), 1, lib.tensor([0]), lib.zeros(3, 1, 4)
    ),
    "index_copy ndim": lambda lib, f: f("index_copy")(
        lib.zeros(2, 3, 4), 1, lib.tensor([0]), lib.zeros(2, 1)
    ),
    "index_fill value": lambda lib, f: f("index_fill")(
        X_(lib), 0, lib.tensor([0]), lib.tensor([1.0])
    ),
    "index_fill vector": lambda lib, f: f("index_fill")(X_(lib), 0, lib.tensor([[0]]), 1.0),
    "index_put values": lambda lib, f: f("index_put")(
        X_(lib), (lib.tensor([0]),), lib.tensor([1.0, 2.0])
    ),
    "index_put broadcast": lambda lib, f: f("index_put")(
        X_(lib), (lib.tensor([0, 1]), lib.tensor([0, 1, 2])), lib.tensor(1.0)
    ),
    "index_put mask": lambda lib, f: f("index_put")(
        X_(lib), (lib.tensor([True, False]),), lib.tensor(1.0)
    ),
    "index_put too many": lambda lib, f: f("index_put")(
        X_(lib), (lib.tensor([0]),) * 3, lib.tensor(1.0)
    ),
    "masked_scatter count": lambda lib, f: f("masked_scatter")(
        X_(lib), lib.tensor([True, False, True, False]), lib.ones(5)
    ),
    "masked_scatter broadcast": lambda lib, f: f("masked_scatter")(
        X_(lib), lib.ones(5, dtype=lib.bool), X_(lib)
    ),
    "take_along_dim ndim": lambda lib, f: f("take_along_dim")(X_(lib), lib.tensor([0, 1]), 0),
    "take_along_dim broadcast": lambda lib, f: f("take_along_dim")(
        X_(lib), lib.tensor([[0], [1]]), 1
    ),
    # dtypes and arguments
    "scatter index dtype": lambda lib, f: f("scatter")(X_(lib), 0, lib.tensor([[0.0]]), 1.0),
    "scatter src dtype": lambda lib, f: f("scatter")(
        X_(lib), 0, lib.tensor([[0]]), X_(lib).double()
    ),
    "scatter reduce": lambda lib, f: f("scatter")(
        X_(lib), 0, lib.tensor([[0]]), X_(lib), reduce="mean"
    ),
    "scatter_add number": lambda lib, f: f("scatter_add")(X_(lib), 0, lib.tensor([[0]]), 2.0),
    "scatter_reduce reduce": lambda lib, f: f("scatter_reduce")(
        X_(lib), 0, lib.tensor([[0]]), X_(lib), "add"
    ),
    "scatter src size": lambda lib, f: f("scatter")(X_(lib), 0, lib.tensor([[0]]), lib.zeros(4)),
    "index_add dtype": lambda lib, f: f("index_add")(
        X_(lib), 0, lib.tensor([0]), X_(lib)[:1].double()
    ),
    "index_add index dtype": lambda lib, f: f("index_add")(
        X_(lib), 0, lib.tensor([0.0]), X_(lib)[:1]
    ),
    "index_copy index dtype": lambda lib, f: f("index_copy")(
        X_(lib), 0, lib.tensor([0], dtype=lib.int32), X_(lib)[:1]
    ),
    "index_copy dtype": lambda lib, f: f("index_copy")(
        X_(lib), 0, lib.tensor([0]), X_(lib)[:1].double()
    ),
    "index_fill index dtype": lambda lib, f: f("index_fill")(
        X_(lib), 0, lib.tensor([0], dtype=lib.int32), 1.0
    ),
    "index_put dtype": lambda lib, f: f("index_put")(
        X_(lib), (lib.tensor([0]),), lib.tensor(1.0, dtype=lib.float64)
    ),
    "index_put index dtype": lambda lib, f: f("index_put")(
        X_(lib), (lib.tensor([0.0]),), lib.tensor(1.0)
    ),
    "index_put number": lambda lib, f: f("index_put")(X_(lib), (lib.tensor([0]),), 1.0),
    "masked_scatter mask dtype": lambda lib, f: f("masked_scatter")(
        X_(lib), lib.tensor([1.0, 0.0, 0.0, 0.0]), X_(lib)
    ),
    "take index dtype": lambda lib, f: f("take")(X_(lib), lib.tensor([0], dtype=lib.int32)),
    "take_along_dim index dtype": lambda lib, f: f("take_along_dim")(
        X_(lib), lib.tensor([[0.0]]), 1
    ),
}


def X_(lib):
    return lib.tensor(X, dtype=lib.float32)


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_match_torch(case):
    torch = pytest.importorskip("torch")

    def ours():
        return ERRORS[case](tt, lambda name: getattr(scatter_ops, name))

    def theirs():
        return ERRORS[case](torch, lambda name: getattr(torch, name))

    assert_same_error(ours, theirs, scalar_names=True)


def test_masked_scatter_dtype_error():
    """PyTorch's message lacks a space after "got" (kept); its dtype names become NumPy's."""
    with pytest.raises(RuntimeError) as e:
        scatter_ops.masked_scatter(tt.tensor(X), tt.tensor([True]), tt.tensor(X, dtype=tt.float32))
    assert str(e.value) == (
        "masked_scatter: expected self and source to have same dtypes but gotfloat64 and float32"
    )


def test_take_along_dim_wraps_positions_along_a_dim():
    """PyTorch 2.13 reads positions modulo the axis length along a `dim` (out of range ones
    too), though not flattened (an error case above)."""
    out = run_both(
        lambda lib: fn(lib, "take_along_dim")(lib.tensor(X), lib.tensor([[5, -1, 7, -4]]), 0)
    )
    np.testing.assert_array_equal(out.value.numpy(), X[[2, 2, 1, 2], [0, 1, 2, 3]][None])


def test_wired_names():
    x = tt.tensor(X, requires_grad=True)
    y = x * 1.0
    out = y.scatter(0, tt.tensor(ROWS), tt.tensor(SRC)).index_add(0, tt.tensor([0]), y[:1])
    assert out.grad_fn.name() == "IndexAddBackward0"
    for name in scatter_ops.__all__:
        function = getattr(tt, name)  # perhaps wrapped to take out= (ops/out_argument.py)
        assert getattr(function, "__wrapped__", function) is getattr(scatter_ops, name)
        assert hasattr(tt.Tensor, name)
    y.scatter_(0, tt.tensor(ROWS), tt.tensor(SRC)).index_put_(
        (tt.tensor([1]),), tt.tensor(0.0, dtype=tt.float64)
    )
    assert y._version == 2
