"""Large graphs written as segment functions (`tracegrad.codegen.chunks`), forced at small
sizes: the same bits, layouts and Python scalar kinds as the one-function form and the
interpreter on random programs and their gradients, control flow inside segments, values
still freed at their last use, tracebacks through segment lines, export, and the switch
above `CHUNK_NODES`."""

from __future__ import annotations

import gc
import linecache
import re
import subprocess
import sys
import traceback

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tracegrad as tg
from tests.test_codegen import _RUNNER, _mlp, _mlp_args, _same_kinds, _same_layouts
from tracegrad.codegen import chunks, compile_graph
from tracegrad.interpret import eval_graph
from tracegrad.ir.analysis import peak_bytes
from tracegrad.testing import assert_bitwise_equal, programs, run_numpy
from tracegrad.transforms.simplify import simplify

FLOATS = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
SIZES = st.integers(1, 4)


def _segmented(graph, size):
    compiled = compile_graph(graph, segment_nodes=size)
    computing = [n for n in graph.nodes if n.prim.name not in ("const", "arg")]
    assert compiled.source.count("def _seg") >= (2 if len(computing) > size else 1)
    return compiled


@FLOATS
@given(data=st.data())
def test_random_programs_in_segments_equal_one_function_interpreter_and_numpy(dtype, data):
    program = data.draw(programs(dtype=dtype), label="program")
    args = program.draw_inputs(data)
    graph = tg.make_graph(program.fn)(*args)
    size = data.draw(SIZES, label="segment_nodes")
    got = list(_segmented(graph, size).fn(*args))
    one = list(compile_graph(graph).fn(*args))
    assert_bitwise_equal(got, one)
    assert_bitwise_equal(got, eval_graph(graph, list(args)))
    assert_bitwise_equal(tg.tree.unflatten(graph.out_tree, got), run_numpy(program, args))
    _same_layouts(got, one)
    _same_kinds(got, one)


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")
@FLOATS
@given(data=st.data())
def test_simplified_gradient_graphs_in_segments(dtype, data):
    # what jit compiles for a gradient: forward values cross into the backward segments
    program = data.draw(programs(dtype=dtype, scalar_output=True), label="program")
    args = program.draw_inputs(data)
    argnums = tuple(range(len(args)))
    graph = simplify(tg.make_graph(tg.value_and_grad(program.fn, argnums=argnums))(*args))
    size = data.draw(SIZES, label="segment_nodes")
    got = list(_segmented(graph, size).fn(*args))
    expected = eval_graph(graph, list(args))
    assert_bitwise_equal(got, expected, nan_payloads=False)
    assert_bitwise_equal(got, list(compile_graph(graph).fn(*args)), nan_payloads=False)
    _same_kinds(got, expected)


@pytest.mark.filterwarnings("ignore:.*encountered in:RuntimeWarning")
@given(data=st.data())
def test_mixed_dtype_value_and_grad_in_segments(data):
    program = data.draw(programs(dtype="mixed", scalar_output=True), label="program")
    args = program.draw_inputs(data)
    graph = tg.make_graph(tg.value_and_grad(program.fn))(*args)
    got = list(_segmented(graph, data.draw(SIZES, label="segment_nodes")).fn(*args))
    assert_bitwise_equal(got, eval_graph(graph, list(args)), nan_payloads=False)


def test_control_flow_sub_graphs_are_nested_inside_their_segment():
    w = np.linspace(0.5, 1.5, 3)

    def f(x, xs):
        def body(i, v):
            return tg.cond(np.sum(v) > 0, lambda v: np.sin(v) * w, lambda v: v * i, v)

        c, ys = tg.scan(lambda c, x: (c * 0.5 + np.sin(x), c * x), x, xs)
        return np.sum(tg.fori_loop(0, 3, body, c)) + np.sum(ys)

    x, xs = np.ones(3), np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    graph = simplify(tg.make_graph(tg.value_and_grad(f, argnums=(0, 1)))(x, xs))
    for size in (1, 2, 5):
        compiled = _segmented(graph, size)
        assert "    def _sub" in compiled.source  # a nested function inside a segment
        got = list(compiled.fn(x, xs))
        assert_bitwise_equal(got, eval_graph(graph, [x, xs]))
    value, grads = tg.value_and_grad(f, argnums=(0, 1))(x, xs)
    assert_bitwise_equal(got, [value, *grads])


def test_segments_free_values_at_their_last_use():
    import tracemalloc

    args = _mlp_args(hidden=512)
    graph = tg.make_graph(tg.value_and_grad(_mlp, argnums=(0, 1, 2, 3)))(*args)
    peaks = []
    for size in (None, 1, 3):
        compiled = compile_graph(graph) if size is None else _segmented(graph, size)
        compiled.fn(*args)
        tracemalloc.start()
        compiled.fn(*args)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert max(peaks) <= peak_bytes(graph) + 4096, peaks  # (tracemalloc sees NumPy's arrays)
    assert peaks[1] <= peaks[0] + 4096 and peaks[2] <= peaks[0] + 4096


def test_a_slot_is_cleared_by_the_last_segment_that_reads_it():
    graph = tg.make_graph(tg.value_and_grad(lambda x: np.sum(np.sin(x) * np.exp(x))))(np.ones(3))
    lines = compile_graph(graph, segment_nodes=1).source.splitlines()
    stored = {m for line in lines if not line.endswith("= None") for m in _stores(line)}
    cleared = {m for line in lines if line.endswith("= None") for m in _slots(line)}
    returned = set(_slots(lines[-1]))
    assert lines[-1].startswith("    return (") and returned
    assert stored and stored == cleared | returned  # each slot filled is emptied or returned
    assert not cleared & returned


def _slots(line: str) -> list[str]:
    return re.findall(r"_s\[\d+\]", line)


def _stores(line: str) -> list[str]:
    return _slots(line.split(" = ")[0]) if re.match(r"\s+_s\[\d+\] = \w+$", line) else []


def test_traceback_names_the_segment_and_its_line():
    graph = tg.make_graph(lambda x, i: np.cos(np.sin(x)[i]) + 1.0)(np.ones(3), np.array([0, 2]))
    compiled = compile_graph(graph, segment_nodes=1)
    with pytest.raises(IndexError) as info:
        compiled.fn(np.ones(3), np.array([0, 7]))
    text = "".join(traceback.format_exception(info.value))
    assert f"{compiled.filename[:-1]} _seg1>" in text
    assert "d = c[b]" in text or "d = c[b,]" in text


def test_segment_files_leave_linecache_with_the_function():
    graph = tg.make_graph(lambda x: np.exp(np.sin(x)) * 2.0)(np.ones(2))
    compiled = compile_graph(graph, segment_nodes=1)
    names = [compiled.filename] + [f"{compiled.filename[:-1]} _seg{k}>" for k in range(3)]
    assert all(n in linecache.cache for n in names)
    gc.disable()  # no cycle keeps a segment alive: reference counting frees them all
    try:
        del compiled
        assert not [n for n in names if n in linecache.cache]
    finally:
        gc.enable()


def test_constants_and_donation_inside_segments():
    args = _mlp_args(hidden=16)
    step = tg.value_and_grad(_mlp, argnums=(0, 1, 2, 3))

    def sgd(w1, b1, w2, b2, x, y):
        loss, grads = step(w1, b1, w2, b2, x, y)
        return loss, [p - 0.1 * g for p, g in zip((w1, b1, w2, b2), grads)]

    graph = simplify(tg.make_graph(sgd)(*args))
    expected = eval_graph(graph, list(args))
    fresh = [a.copy() for a in args]
    compiled = compile_graph(graph, donated=frozenset(range(4)), segment_nodes=2)
    assert "out=" in compiled.source
    got = list(compiled.fn(*fresh))
    assert_bitwise_equal(got, expected)
    donated_into = [np.shares_memory(o, a) for o, a in zip(got[1:], fresh[:4])]
    assert any(donated_into)  # the update ran in the donated buffer, as without segments


def test_graphs_above_the_threshold_are_written_in_segments_automatically():
    n = chunks.CHUNK_NODES + 10

    def chain(x):
        for _ in range(n):
            x = np.sin(x)
        return x * 2.0

    x = np.array([0.5, -1.0])
    graph = tg.make_graph(chain)(x)
    compiled = compile_graph(graph)
    assert compiled.source.count("def _seg") == -(-len(graph.nodes) // chunks.SEGMENT_NODES)
    assert compile_graph(tg.make_graph(np.sin)(x)).source.count("def _seg") == 0
    assert_bitwise_equal(list(compiled.fn(x)), [chain(x)])
    jf = tg.jit(chain)
    assert "def _seg" in jf.lower(x).source
    assert_bitwise_equal(jf(x), chain(x))


def test_export_of_a_segmented_function_runs_without_tracegrad(tmp_path):
    w = np.linspace(-1.0, 1.0, 12).reshape(3, 4)

    def f(x):
        h = np.tanh(x @ w + 0.25)
        return np.sum(h * h), {"h": h, "w": w}

    x = np.linspace(0.0, 1.0, 6).reshape(2, 3)
    jf = tg.jit(f)
    graph = jf.lower(x).graph
    compiled = compile_graph(graph, segment_nodes=1)
    module = compiled.export(tmp_path / "model.py")
    np.savez(tmp_path / "in.npz", x)
    runner = tmp_path / "runner.py"
    runner.write_text(_RUNNER)
    subprocess.run(
        [sys.executable, "-I", str(runner), str(module), str(tmp_path / "in.npz"),
         str(tmp_path / "out.npz")],
        check=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"}, capture_output=True,
    )  # fmt: skip
    with np.load(tmp_path / "out.npz") as z:
        got = [z[f"arr_{k}"] for k in range(len(z.files))]
    assert_bitwise_equal(got, [np.asarray(v) for v in compiled.fn(x)])
    assert_bitwise_equal(got, [np.asarray(v) for v in eval_graph(graph, [x])])
