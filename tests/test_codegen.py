"""The NumPy code generator against the interpreter and against plain NumPy, bit for bit.

Random programs (`tracegrad.testing.programs`, whose `fn` calls NumPy directly) and their
gradient graphs run through `compile_graph`; every primitive's emit rule runs from its
SAMPLES row. The generated text itself is checked: the printer's names, `del` at last use,
user strings only in comments, params validated, `linecache` lines in tracebacks, and a
standalone export that runs without tracegrad.
"""

from __future__ import annotations

import gc
import linecache
import math
import struct
import subprocess
import sys
import textwrap
import traceback

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
from tests.primitives.samples import SAMPLES
from tracegrad.codegen import compile_graph, source
from tracegrad.core import bind
from tracegrad.interpret import eval_graph
from tracegrad.ir.analysis import peak_bytes
from tracegrad.ir.graph import Edge, Graph, Node, Params, arg_node
from tracegrad.ir.printing import value_names
from tracegrad.ir.types import Aval
from tracegrad.primitives import ALL, elementwise, products
from tracegrad.primitives import broadcasting as bc
from tracegrad.primitives import einsum as es
from tracegrad.primitives import indexing as ix
from tracegrad.primitives import shape as sp
from tracegrad.testing import assert_bitwise_equal, programs, run_numpy

FLOATS = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])


def _run_both(graph, args):
    """(codegen outputs, interpreter outputs) of a graph on flat arguments."""
    return list(compile_graph(graph).fn(*args)), eval_graph(graph, list(args))


def _same_layouts(a, b):
    # buffer reuse must leave every result with the strides NumPy gives it: a later
    # reduction or matmul reads memory in layout order (size-1 axes and empty arrays have
    # no order to keep)
    for x, y in zip(tg.tree.flatten(a)[0], tg.tree.flatten(b)[0]):
        x, y = np.asarray(x), np.asarray(y)
        if x.size and y.size:
            kept = [k for k, d in enumerate(x.shape) if d > 1]
            assert [x.strides[k] for k in kept] == [y.strides[k] for k in kept]


def _same_kinds(a, b):
    # weak results are Python scalars in both executors; assert_bitwise_equal compares values
    for x, y in zip(a, b):
        assert type(x) is type(y), (type(x), type(y))


# -- random programs: codegen == interpreter == NumPy ----------------------------------------


@FLOATS
@given(data=st.data())
def test_random_programs_codegen_equals_interpreter_and_numpy(dtype, data):
    zero = data.draw(st.booleans(), label="size-0 axes")
    program = data.draw(programs(dtype=dtype, allow_size_zero=zero), label="program")
    args = program.draw_inputs(data)
    graph = tg.make_graph(program.fn)(*args)
    compiled = compile_graph(graph)
    got = tg.tree.unflatten(graph.out_tree, list(compiled.fn(*args)))
    expected = run_numpy(program, args)
    assert_bitwise_equal(got, expected)
    interpreted = graph(*args)
    assert_bitwise_equal(got, interpreted)
    _same_layouts(got, interpreted)  # the same NumPy calls: the same strides


def _relayout(x: np.ndarray, how: str) -> np.ndarray:
    """The same values in another memory layout (the graph was traced for C order)."""
    if x.ndim < 2:
        how = "reversed" if how in ("fortran", "transposed") else how
    if how == "fortran":
        return np.asfortranarray(x)
    if how == "reversed" and x.ndim:
        return np.ascontiguousarray(x[::-1])[::-1]
    if how == "strided" and x.ndim:
        big = np.zeros((2 * x.shape[0],) + x.shape[1:], x.dtype)
        big[::2] = x
        return big[::2]
    if how == "transposed":
        return np.ascontiguousarray(x.T).T
    return x


@FLOATS
@given(data=st.data())
def test_buffer_reuse_keeps_numpy_layouts_for_inputs_in_any_layout(dtype, data):
    program = data.draw(programs(dtype=dtype, min_ops=3), label="program")
    args = program.draw_inputs(data)
    hows = st.sampled_from(["C", "fortran", "reversed", "strided", "transposed"])
    args = [_relayout(a, data.draw(hows, label="layout")) for a in args]
    graph = tg.make_graph(program.fn)(*args)
    got = tg.tree.unflatten(graph.out_tree, list(compile_graph(graph).fn(*args)))
    assert_bitwise_equal(got, run_numpy(program, args))
    interpreted = graph(*args)
    assert_bitwise_equal(got, interpreted)
    _same_layouts(got, interpreted)


# Derivatives at kinks (std of a constant) are inf/NaN on both sides: compared bitwise, except
# which NaN survives where two NaNs meet (NumPy's scalar path, which the code generator uses
# for 0-d arithmetic, and its ufunc path keep different ones: see assert_bitwise_equal).
@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")
@FLOATS
@given(data=st.data())
def test_gradient_graphs_codegen_equals_interpreter(dtype, data):
    program = data.draw(programs(dtype=dtype, scalar_output=True), label="program")
    args = program.draw_inputs(data)
    argnums = tuple(range(len(args)))
    graph = tg.make_graph(tg.grad(program.fn, argnums=argnums))(*args)
    got, expected = _run_both(graph, args)
    assert_bitwise_equal(got, expected, nan_payloads=False)
    _same_kinds(got, expected)


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")
@given(data=st.data())
def test_value_and_grad_graphs_codegen_equals_interpreter(data):
    program = data.draw(programs(dtype="mixed", scalar_output=True), label="program")
    args = program.draw_inputs(data)
    graph = tg.make_graph(tg.value_and_grad(program.fn))(*args)
    got, expected = _run_both(graph, args)
    assert_bitwise_equal(got, expected, nan_payloads=False)


# (see test_gradient_graphs_codegen_equals_interpreter on NaNs)
@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")
@FLOATS
@given(data=st.data())
def test_simplified_graphs_codegen_equals_interpreter_and_numpy(dtype, data):
    # what jit compiles: the simplified graph (folded constants, CSE, rewritten identities)
    from tracegrad.transforms.simplify import simplify

    program = data.draw(programs(dtype=dtype, scalar_output=True), label="program")
    args = program.draw_inputs(data)
    graph = simplify(tg.make_graph(program.fn)(*args))
    got, expected = _run_both(graph, args)
    assert_bitwise_equal(got, expected)
    assert_bitwise_equal(got, [run_numpy(program, args)])
    grads = simplify(tg.make_graph(tg.grad(program.fn, argnums=tuple(range(len(args)))))(*args))
    got, expected = _run_both(grads, args)
    assert_bitwise_equal(got, expected, nan_payloads=False)
    _same_layouts(got, expected)


# -- every primitive's emit rule -------------------------------------------------------------


@pytest.mark.parametrize("prim", ALL, ids=str)
@given(data=st.data(), dtype=st.sampled_from([np.float32, np.float64]))
def test_every_primitive_emit_equals_interpreter(prim, data, dtype):
    args, params = SAMPLES[prim].draw(data, dtype)
    graph = tg.make_graph(lambda *a: bind(prim, *a, **params))(*args)
    got, expected = _run_both(graph, args)
    assert_bitwise_equal(got, expected)
    _same_kinds(got, expected)
    eager = bind(prim, *args, **params)
    eager = list(eager) if prim.multiple_results else [eager]
    assert_bitwise_equal(got, eager)


def test_every_primitive_has_an_emit_rule():
    assert [p.name for p in ALL if p.emit is None] == []


# -- the generated text ----------------------------------------------------------------------


def _small(x, y):
    return np.sum(np.sin(x) * 2.0 + y, axis=0)


def test_golden_source_uses_the_printer_names_and_frees_at_last_use():
    graph = tg.make_graph(_small)(np.ones((2, 3)), np.ones(3))
    assert source(graph, reuse_buffers=False) == textwrap.dedent(
        """\
        # graph '_small'
        def f_small(a, b):
            c = np.sin(a)
            d = np.multiply(c, 2.0)
            del c
            e = np.add(d, b)
            del d
            f = np.add.reduce(e, axis=(0,), keepdims=False)
            del e
            return (f,)
        """
    )
    printed = str(graph)
    for name in value_names(graph).values():
        assert f"  {name}: " in printed or f"({name}: " in printed or f", {name}: " in printed


def test_golden_source_with_buffer_reuse():
    # sin(a) has a's layout whatever it is, and so do the ufuncs that read it: in place
    graph = tg.make_graph(_small)(np.ones((2, 3)), np.ones(3))
    assert source(graph) == textwrap.dedent(
        """\
        # graph '_small'
        def f_small(a, b):
            c = np.sin(a)
            d = np.multiply(c, 2.0, out=c)
            del c
            e = np.add(d, b, out=d)
            del d
            f = np.add.reduce(e, axis=(0,), keepdims=False)
            del e
            return (f,)
        """
    )


def test_names_match_the_printer_on_a_bigger_graph():
    def f(x, w):
        h = np.tanh(x @ w)
        return np.sum(h * h), h.T

    graph = tg.make_graph(f)(np.ones((4, 3)), np.ones((3, 5)))
    text = source(graph)
    for line in str(graph).splitlines()[2:-1]:
        name = line.split(":")[0].strip()
        assert f"    {name} = " in text
    assert text.count("del ") >= 1


def test_multiple_results_unpack_and_dead_values_are_deleted():
    def f(x):
        a, b, c = np.split(x, [1, 3])
        return a * 2.0, c

    x = np.arange(5.0)
    graph = tg.make_graph(f)(x)
    text = source(graph)
    assert "b, c, d = tuple(np.split(a, [1, 3], axis=0))" in text
    got, expected = _run_both(graph, [x])
    assert_bitwise_equal(got, expected)
    assert_bitwise_equal(got, list(f(x)))


def test_a_value_nobody_reads_is_deleted_right_after_it_is_computed():
    a = arg_node(Aval((3,), np.float64))
    dead = Node(elementwise.sin_p, (a.outputs[0],), Params(), (Aval((3,), np.float64),))
    out = Node(elementwise.cos_p, (a.outputs[0],), Params(), (Aval((3,), np.float64),))
    graph = Graph((a.outputs[0],), (out.outputs[0],), (dead, out), name="g")
    text = source(graph, reuse_buffers=False)
    assert "    b = np.sin(a)\n    del b\n" in text
    # with reuse, the dead value's array takes the next result of its shape instead
    assert "    c = np.cos(a, out=b)\n    del b\n" in source(graph)
    assert compile_graph(graph).fn(np.ones(3))[0].tolist() == np.cos(np.ones(3)).tolist()


def test_hostile_graph_name_appears_only_in_a_comment():
    def f(x):
        return np.sin(x)

    f.__name__ = "x\nimport os"
    graph = tg.make_graph(f)(np.ones(2))
    text = source(graph)
    lines = text.splitlines()
    assert "import os" not in [line.strip() for line in lines]
    hits = [line for line in lines if "import os" in line]
    assert hits == ["# graph 'x\\nimport os'"]
    assert lines[1].startswith("def f_x_import_os(")
    compiled = compile_graph(graph)
    assert_bitwise_equal(list(compiled.fn(np.ones(2))), [np.sin(np.ones(2))])
    for raw in ["'; import os; '", "\u2028import os", "class", "1x", ""]:
        f.__name__ = raw
        text = source(tg.make_graph(f)(np.ones(2)))
        head, defline = text.splitlines()[:2]
        assert head.startswith("# graph ") and head.isascii()
        name = defline[len("def ") : defline.index("(")]
        assert name.isidentifier() and name.startswith("f_")


def test_array_constants_are_arguments_and_scalars_are_exact_literals():
    w = np.arange(6.0).reshape(2, 3)

    def f(x):
        y = x @ w + np.float32(0.5)
        return y * -0.0, y + float("inf"), y - float("-inf"), y * float("nan")

    x = np.ones((4, 2))
    graph = tg.make_graph(f)(x)
    compiled = compile_graph(graph)
    text = compiled.source
    for lit in ["-0.0", "float('inf')", "float('-inf')", "float('nan')"]:
        assert lit in text
    assert "arange" not in text and "0.5" not in text
    # the matrix keeps the printer's name; the NumPy scalar gets a `_c` name
    assert compiled.const_names[0] == next(
        line.split(":")[0].strip() for line in str(graph).splitlines() if "= const" in line
    )
    assert compiled.const_names[1:] == ("_c0",)
    assert np.array_equal(compiled.const_values[0], w)
    got, expected = _run_both(graph, [x])
    assert_bitwise_equal(got, expected)
    assert_bitwise_equal(got, list(f(x)))


_NAN_PAYLOAD = struct.unpack("<d", bytes.fromhex("0100000000f8ff7f"))[0]


def test_a_nan_with_a_payload_is_passed_in_as_a_python_float():
    def f(x):
        return x + _NAN_PAYLOAD

    x = np.ones(3, np.float32)
    graph = tg.make_graph(f)(x)
    compiled = compile_graph(graph)
    assert compiled.const_names == ("_c0",) and type(compiled.const_values[0]) is float
    assert "nan" not in compiled.source
    (got,) = compiled.fn(x)
    assert got.dtype == np.float32  # still weak: a Python float
    assert_bitwise_equal(got, f(x))


def test_nan_constants_with_different_payloads_stay_apart():
    def f(x):
        return x * float("nan"), x + _NAN_PAYLOAD

    x = np.ones(3)
    graph = tg.make_graph(f)(x)
    assert_bitwise_equal(list(compile_graph(graph).fn(x)), list(f(x)))


def test_weak_scalar_results_stay_python_scalars():
    def f(x, n):
        return x * 2.0 + 1.0, n * 3, x * -0.0

    graph = tg.make_graph(f)(1.5, 2)
    text = source(graph)
    assert "float(np.multiply(a, 2.0))" in text and "int(np.multiply(b, 3))" in text
    got, expected = _run_both(graph, [1.5, 2])
    assert [type(v) for v in got] == [float, int, float]
    _same_kinds(got, expected)
    assert_bitwise_equal(got, list(f(1.5, 2)))
    assert_bitwise_equal(got, expected)
    assert math.copysign(1.0, got[2]) == -1.0


def test_a_weak_result_promotes_like_a_python_scalar():
    # NEP 50: a Python float does not widen a float32 array, a NumPy float64 would
    def f(s, v):
        return v * (s * 2.0)

    v = np.ones(3, np.float32)
    graph = tg.make_graph(f)(1.5, v)
    (out,) = compile_graph(graph).fn(1.5, v)
    assert out.dtype == graph.out_avals[0].dtype == np.float32
    assert_bitwise_equal(out, f(1.5, v))


def test_interpreter_agrees_on_weak_results():
    v = np.ones(3, np.float32)
    graph = tg.make_graph(lambda s, v: v * (s * 2.0))(1.5, v)
    assert_bitwise_equal(eval_graph(graph, [1.5, v]), list(compile_graph(graph).fn(1.5, v)))


def test_einsum_and_gather_params_are_written_after_validation():
    def f(x, i):
        return np.einsum("ij,jk->ik", x, x.T), x[i, 1:3], x[..., None, 0]

    x, i = np.arange(12.0).reshape(3, 4), np.array([2, 0, 2])
    graph = tg.make_graph(f)(x, i)
    text = source(graph)
    assert "np.einsum('ij,jk->ik'," in text
    got, expected = _run_both(graph, [x, i])
    assert_bitwise_equal(got, expected)
    assert_bitwise_equal(got, list(f(x, i)))


# -- rejected params -------------------------------------------------------------------------


def _with_params(graph: Graph, prim, **params) -> Graph:
    """`graph` with the params of its (first) `prim` node replaced."""
    old = next(n for n in graph.nodes if n.prim is prim)
    new = attrs.evolve(old, params=Params({**old.params, **params}))
    swap = {old: new}
    nodes, edges = [], {}
    for n in graph.nodes:
        inputs = tuple(Edge(edges.get(e.node, e.node), e.index) for e in n.inputs)
        m = swap.get(n, n)
        if inputs != n.inputs or m is not n:
            m = attrs.evolve(m, inputs=inputs)
        edges[n] = m
        nodes.append(m)
    outs = tuple(Edge(edges.get(e.node, e.node), e.index) for e in graph.outputs)
    return Graph(graph.inputs, outs, tuple(nodes), name=graph.name)


BAD_PARAMS = [
    (es.einsum_p, {"subscripts": "ij->ji'); import os; ('"}, "subscripts"),
    (es.einsum_p, {"subscripts": "i_j->ji"}, "subscripts"),
    (ix.gather_p, {"index": ("__import__('os')",)}, "index"),
    (ix.gather_p, {"index": (True,)}, "index"),
    (ix.gather_p, {"index": (("slice", 0, "1", 1),)}, "index"),
    (bc.sum_p, {"axis": "0"}, "axis"),
    (bc.sum_p, {"axis": (0,), "keepdims": [False]}, "keepdims"),
    (bc.sum_p, {"axis": (print,)}, "axis"),
    (elementwise.astype_p, {"dtype": np.dtype("datetime64[s]")}, "dtype"),
    (elementwise.astype_p, {"dtype": np.dtype(">f8")}, "dtype"),
    (elementwise.astype_p, {"dtype": "float32"}, "dtype"),
]


@pytest.mark.parametrize("prim, params, key", BAD_PARAMS, ids=lambda v: getattr(v, "name", None))
def test_unsupported_param_values_raise_value_error_naming_the_node(prim, params, key):
    x = np.arange(6.0).reshape(2, 3)
    base = {
        es.einsum_p: lambda x: np.einsum("ij->ji", x),
        ix.gather_p: lambda x: x[np.array([1, 0])],
        bc.sum_p: lambda x: np.sum(x, axis=0),
        elementwise.astype_p: lambda x: x.astype(np.float32),
    }[prim]
    graph = _with_params(tg.make_graph(base)(x), prim, **params)
    name = next(ns[0] for n, ns in _names(graph).items() if n.prim is prim)
    with pytest.raises(ValueError, match=rf"param {key}=.* of node '{name}' \({prim.name}\)"):
        source(graph)
    with pytest.raises(ValueError, match=prim.name):
        compile_graph(graph)


def _names(graph):
    from tracegrad.ir.printing import node_names

    return node_names(graph)


def test_nan_with_a_payload_in_a_param_is_rejected_but_standard_nan_is_written():
    x = np.ones((2, 2))
    graph = tg.make_graph(lambda x: np.pad(x, 1, constant_values=np.nan))(x)
    text = source(graph)
    assert "constant_values=float('nan')" in text
    got, expected = _run_both(graph, [x])
    assert_bitwise_equal(got, expected)
    payload = struct.unpack("<d", bytes.fromhex("0100000000f8ff7f"))[0]

    bad = _with_params(graph, sp.pad_p, constant_values=payload)
    with pytest.raises(ValueError, match="payload"):
        source(bad)


def test_a_primitive_without_an_emit_rule_runs_its_impl_and_cannot_be_exported(tmp_path):
    from tracegrad.ir.primitive import Primitive

    def scaled_sin(x, *, scale, dtype):
        return (np.sin(x) * scale).astype(dtype)

    prim = Primitive("mystery", impl=scaled_sin, shape=lambda x, *, scale, dtype: x)
    x = np.linspace(0.0, 1.0, 5)
    graph = tg.make_graph(lambda x: bind(prim, x, scale=(2.0,), dtype=np.dtype("float64")))(x)
    text = source(graph)
    assert "b = _impl0(a, scale=(2.0, ), dtype=np.dtype('float64'))" in text
    got, expected = _run_both(graph, [x])
    assert_bitwise_equal(got, expected)
    assert_bitwise_equal(got, [scaled_sin(x, scale=(2.0,), dtype=np.float64)])
    with pytest.raises(ValueError, match=r"export: the graph calls _impl0 = .*scaled_sin"):
        compile_graph(graph).export(tmp_path / "m.py")


def test_an_emit_rule_must_return_one_line_of_valid_python():
    from tracegrad.ir.primitive import Primitive

    before = set(linecache.cache)
    two_lines = Primitive("two", impl=np.sin, shape=lambda x: x, emit=lambda x: f"{x}\nimport os")
    graph = tg.make_graph(lambda x: bind(two_lines, x))(np.ones(2))
    with pytest.raises(ValueError, match="two: .*one-line expression|emit rule of two"):
        compile_graph(graph)
    broken = Primitive("broken", impl=np.sin, shape=lambda x: x, emit=lambda x: f"np.sin({x}")
    graph = tg.make_graph(lambda x: bind(broken, x))(np.ones(2))
    with pytest.raises(SyntaxError):
        compile_graph(graph)
    assert set(linecache.cache) - before == set()


# -- compiling: linecache, tracebacks, calls -------------------------------------------------


def test_traceback_through_a_failing_generated_line_shows_the_source():
    graph = tg.make_graph(lambda x, i: np.sin(x[i]))(np.ones(3), np.array([0, 2]))
    compiled = compile_graph(graph)
    assert compiled.filename in linecache.cache
    with pytest.raises(IndexError) as info:
        compiled.fn(np.ones(3), np.array([0, 7]))
    text = "".join(traceback.format_exception(info.value))
    assert compiled.filename in text
    assert "    c = a[b]" in text or "c = a[b,]" in text
    frame = info.traceback[-1]
    assert frame.path == compiled.filename or str(frame.path) == compiled.filename


def test_each_compile_gets_a_unique_filename_and_frees_it_with_the_function():
    graph = tg.make_graph(np.sin)(np.ones(2))
    a, b = compile_graph(graph), compile_graph(graph)
    assert a.filename != b.filename and a.source == b.source
    name = a.filename
    assert linecache.getline(name, 2).startswith("def f_sin(")
    del a
    gc.collect()
    assert name not in linecache.cache


def test_fn_binds_constants_and_takes_only_the_inputs():
    w = np.arange(4.0)
    graph = tg.make_graph(lambda x: x * w)(np.ones(4))
    compiled = compile_graph(graph)
    assert compiled.fn.__code__.co_argcount == 2
    assert compiled.fn.__defaults__ == compiled.const_values
    assert_bitwise_equal(list(compiled.fn(np.ones(4))), [np.ones(4) * w])
    assert compiled.memory == peak_bytes(graph)


def test_graph_with_no_nodes_and_constant_outputs():
    graph = tg.make_graph(lambda x: (x, 2.5, np.float32(1)))(np.ones(2))
    got, expected = _run_both(graph, [np.ones(2)])
    assert_bitwise_equal(got, expected)
    _same_kinds(got, expected)


# -- export ----------------------------------------------------------------------------------

_RUNNER = """
import sys
sys.modules["tracegrad"] = None  # any import of tracegrad fails
import importlib.util
import numpy as np
spec = importlib.util.spec_from_file_location("exported", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
fn = getattr(mod, mod.__all__[0])
with np.load(sys.argv[2]) as z:
    args = [z[f"arr_{i}"] for i in range(len(z.files))]
outs = fn(*args)
np.savez(sys.argv[3], *outs)
assert not [m for m, v in sys.modules.items() if m.startswith("tracegrad") and v is not None]
"""


def test_export_round_trip_runs_without_tracegrad(tmp_path):
    w = np.linspace(-1.0, 1.0, 12).reshape(3, 4).astype(np.float32)
    i = np.array([1, 0, 0])

    def f(x):
        h = np.tanh(x @ w + np.float32(0.25))
        return np.sum(h[i] * 3.0, axis=1), h * float("nan"), np.float64(2.0) * x

    x = np.linspace(0.0, 1.0, 6).reshape(2, 3).astype(np.float32)
    graph = tg.make_graph(f)(x)
    compiled = compile_graph(graph)
    module = compiled.export(tmp_path / "model.py")
    assert (tmp_path / "model.npz").exists()
    text = module.read_text()
    assert "tracegrad" not in text.replace("tracegrad.codegen", "")
    assert "import numpy as np" in text
    np.savez(tmp_path / "in.npz", x)
    runner = tmp_path / "runner.py"
    runner.write_text(_RUNNER)
    subprocess.run(
        [
            sys.executable,
            "-I",
            str(runner),
            str(module),
            str(tmp_path / "in.npz"),
            str(tmp_path / "out.npz"),
        ],
        check=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
    )
    with np.load(tmp_path / "out.npz") as z:
        got = [z[f"arr_{k}"] for k in range(len(z.files))]
    expected = list(compiled.fn(x))
    assert_bitwise_equal(got, [np.asarray(e) for e in expected])
    assert_bitwise_equal(got, [np.asarray(e) for e in f(x)])


def test_export_without_constants_writes_no_npz_and_needs_a_py_path(tmp_path):
    graph = tg.make_graph(lambda x: np.exp(x) - 1.0)(np.ones(3))
    compiled = compile_graph(graph)
    module = compiled.export(tmp_path / "plain.py")
    assert not (tmp_path / "plain.npz").exists()
    namespace: dict = {}
    exec(compile(module.read_text(), str(module), "exec"), namespace)
    fn = namespace[namespace["__all__"][0]]
    assert_bitwise_equal(list(fn(np.ones(3))), [np.exp(np.ones(3)) - 1.0])
    with pytest.raises(ValueError, match=r"must end in \.py"):
        compiled.export(tmp_path / "plain.txt")


# -- buffer reuse ----------------------------------------------------------------------------


def _mlp(w1, b1, w2, b2, x, y):
    h = np.tanh(x @ w1 + b1)
    out = h @ w2 + b2
    return np.mean((out - y) ** 2)


def _mlp_args(hidden=32, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(64, hidden), (hidden,), (hidden, 10), (10,), (64, 64), (64, 10)]
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


@FLOATS
def test_training_step_reuses_buffers_and_keeps_bits(dtype):
    args = _mlp_args(dtype=dtype)
    graph = tg.make_graph(tg.value_and_grad(_mlp, argnums=(0, 1, 2, 3)))(*args)
    compiled = compile_graph(graph)
    assert compiled.reused >= 5 and compiled.source.count(", out=") == compiled.reused
    got, expected = _run_both(graph, args)
    assert_bitwise_equal(got, expected)
    _same_layouts(got, expected)
    plain = list(compile_graph(graph, reuse_buffers=False).fn(*args))
    assert_bitwise_equal(got, plain)


def test_buffer_reuse_does_not_raise_the_measured_peak():
    import tracemalloc

    args = _mlp_args(hidden=512)
    graph = tg.make_graph(tg.value_and_grad(_mlp, argnums=(0, 1, 2, 3)))(*args)
    peaks = []
    for reuse in (False, True):
        fn = compile_graph(graph, reuse_buffers=reuse).fn
        fn(*args)
        tracemalloc.start()
        fn(*args)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] <= peaks[0]
    assert peaks[1] <= peak_bytes(graph) + 4096  # NumPy reports its arrays to tracemalloc


def test_a_buffer_still_seen_through_a_view_is_not_overwritten():
    def f(x):
        t = np.exp(x @ x)  # a fresh C-order array
        v = t.T  # a live view of it
        u = np.sin(t)  # t dies here, but v still reads its memory
        return u + v

    x = np.linspace(-1.0, 1.0, 9).reshape(3, 3)
    graph = tg.make_graph(f)(x)
    text = source(graph)
    exp_name = next(line.split(" = ")[0].strip() for line in text.splitlines() if "np.exp(" in line)
    assert f"out={exp_name})" not in text
    assert_bitwise_equal(list(compile_graph(graph).fn(x)), [f(x)])


def test_no_in_place_update_of_a_single_element():
    # NumPy runs `np.add(u, y, out=u)` on one element as a reduction: NaN signs can differ
    def f(a, b):
        u = a * 2.0
        return u + b

    a, b = np.array([-np.nan]), np.array([np.nan])
    graph = tg.make_graph(f)(a, b)
    assert "out=" not in source(graph)
    assert_bitwise_equal(list(compile_graph(graph).fn(a, b)), [f(a, b)])
    a2, b2 = np.full(4, -np.nan), np.full(4, np.nan)
    graph2 = tg.make_graph(f)(a2, b2)
    assert "out=" in source(graph2)
    assert_bitwise_equal(list(compile_graph(graph2).fn(a2, b2)), [f(a2, b2)])


def test_unknown_layouts_are_not_mixed():
    # x's layout is the caller's: x * 2.0 may be C or F order, so it may not take the
    # C-order array that exp(y @ y) leaves dead right before it; y @ y * 2.0 may

    f64 = np.dtype(np.float64)
    x, y = arg_node(Aval((3, 3), f64)), arg_node(Aval((3, 3), f64))
    two = tg.ir.const_node(2.0)

    def node(prim, *inputs):
        return Node(prim, tuple(i.outputs[0] for i in inputs), Params(), (Aval((3, 3), f64),))

    m = node(products.matmul_p, y, y)
    c = node(elementwise.exp_p, m)  # read by nobody: dead at once
    for other, reused in [(x, False), (m, True)]:
        e = node(elementwise.multiply_p, other, two)
        graph = Graph((x.outputs[0], y.outputs[0]), (e.outputs[0], m.outputs[0]), (two, m, c, e))
        text = source(graph)
        assert ("out=d)" in text) is reused, text  # d: the dead exp
        xv = np.asfortranarray(np.arange(9.0).reshape(3, 3))
        yv = np.eye(3) / 3
        got = list(compile_graph(graph).fn(xv, yv))
        expected = [(xv if other is x else yv @ yv) * 2.0, yv @ yv]
        assert_bitwise_equal(got, expected)
        _same_layouts(got, expected)


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scalar_arithmetic_written_as_operators_keeps_the_bits(dtype):
    # 0-d arithmetic is emitted as Python operators (NumPy's scalar fast path): every pair of
    # special values must give the ufunc's bits, with a weak Python scalar on either side too
    specials = [0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-45, 3.0e38]

    def f(x, y):
        return (x + y, x - y, x * y, x / y, -x, x * 2.5, 2.5 / x, x - 0.0, 0.0 - x)

    for a in specials:
        for b in specials:
            x, y = dtype(a), dtype(b)
            graph = tg.make_graph(f)(x, y)
            assert "(a + b)" in source(graph)  # the operator form is what runs
            compiled = compile_graph(graph)
            got = compiled.fn(x, y)
            assert_bitwise_equal(list(got), list(f(x, y)))
            assert_bitwise_equal(list(got), list(graph(x, y)))


def test_which_nan_survives_is_the_only_freedom():
    # two NaNs of opposite sign meet: the scalar operator and the ufunc keep different ones
    with np.errstate(invalid="ignore"):
        k = np.float32(np.inf) * np.float32(0.0)
    graph = tg.make_graph(lambda k: k + (-k))(k)
    got, expected = _run_both(graph, [k])
    assert np.isnan(got[0]) and np.isnan(expected[0])
    assert_bitwise_equal(got, expected, nan_payloads=False)
    with pytest.raises(AssertionError):  # the strict form still sees the payload
        assert_bitwise_equal([np.float32(np.nan)], [-np.float32(np.nan)])
