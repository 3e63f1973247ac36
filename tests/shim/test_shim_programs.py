"""Random NumPy programs run on tensors: the shim against the functional transforms.

`tracegrad.testing.programs` draws programs that call NumPy directly. Run on tensors that
require grad, they record through the shim; their forward values must equal NumPy's bit for
bit, `backward()` must give the gradients `tg.grad` gives, and `autograd.grad(...,
create_graph=True)` differentiated again must give the Hessian-vector products that nested
`tg.grad` gives (two routes through the same rules: recorded graph vs traced graph).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import tracegrad as tg
import tracegrad.torch as tt
from tracegrad.testing import assert_bitwise_equal, available_ops, programs, run_numpy

DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
# Tensor operators promote as PyTorch does: a NumPy integer scalar or an integer array meeting
# a float32 tensor through `+ - * /` stays float32, where NumPy gives float64 (NumPy functions
# on tensors follow NumPy, and stay in). Those operator forms are left out here.
_TORCH_PROMOTION = {
    f"int_{form}"
    for form in ("add", "radd", "subtract", "rsubtract", "multiply", "rmultiply")
    + ("divide", "rdivide")
}
OPS = [name for name in available_ops() if name not in _TORCH_PROMOTION]
SMOOTH_OPS = [name for name in available_ops(smooth=True) if name not in _TORCH_PROMOTION]
ORDER2_OPS = [name for name in SMOOTH_OPS if name != "prod"]


def _close(actual, expected, dtype, scale=1.0):
    rtol = 2e-4 if dtype == np.float32 else 1e-9
    np.testing.assert_allclose(
        np.asarray(actual, np.float64),
        np.asarray(expected, np.float64),
        rtol=rtol,
        atol=rtol * max(1.0, scale),
    )


def _mixes_0d_and_dimensioned_dtypes(program, args) -> bool:
    """Whether an operator meets a 0-d operand and a dimensioned one of different dtypes
    (`float32[3] + float64[]`): a tensor operator keeps the dimensioned operand's dtype, as
    PyTorch does, where NumPy promotes (float64)."""
    graph = tg.make_graph(program.fn)(*args)
    for node in graph.nodes:
        if node.prim.operator and len(node.inputs) == 2:
            a, b = (e.aval for e in node.inputs)
            weak = a.weak_type or b.weak_type  # (a Python number promotes as in NumPy)
            if a.dtype != b.dtype and (a.ndim == 0) != (b.ndim == 0) and not weak:
                return True
    return False


@DTYPES
@given(data=st.data())
def test_tensor_forward_equals_numpy_bitwise(dtype, data):
    program = data.draw(programs(dtype=dtype, ops=OPS), label="program")
    args = program.draw_inputs(data)
    assume(not _mixes_0d_and_dimensioned_dtypes(program, args))
    tensors = [tt.tensor(a, requires_grad=True) for a in args]
    out = program.fn(*tensors)
    outs = out if isinstance(out, tuple) else (out,)
    expected = run_numpy(program, args)
    expected = expected if isinstance(expected, tuple) else (expected,)
    for o, e in zip(outs, expected):
        assert isinstance(o, tt.Tensor)
        assert_bitwise_equal(o.detach().numpy(), np.asarray(e))


@DTYPES
@given(data=st.data())
def test_backward_equals_functional_grad(dtype, data):
    program = data.draw(
        programs(dtype=dtype, scalar_output=True, smooth=True, ops=SMOOTH_OPS), label="program"
    )
    args = program.draw_inputs(data)
    tensors = [tt.tensor(a, requires_grad=True) for a in args]
    out = program.fn(*tensors)
    argnums = tuple(range(len(args)))
    expected = tg.grad(program.fn, argnums=argnums)(*args)
    if out.requires_grad:
        out.backward()
    scale = max(float(np.max(np.abs(e), initial=0.0)) for e in expected) if expected else 1.0
    for t, e in zip(tensors, expected):
        got = np.zeros(t.shape, t.dtype) if t.grad is None else t.grad.numpy()
        assert got.dtype == t.dtype and got.shape == t.shape
        _close(got, e, dtype, scale)


@DTYPES
@given(data=st.data())
def test_create_graph_second_derivatives_equal_nested_grad(dtype, data):
    program = data.draw(
        programs(dtype=dtype, scalar_output=True, smooth=True, max_ops=6, ops=ORDER2_OPS),
        label="program",
    )
    args = program.draw_inputs(data)
    rng = np.random.default_rng(0)
    vs = [(rng.integers(-8, 9, a.shape) / 8.0).astype(a.dtype) for a in args]
    argnums = tuple(range(len(args)))

    def directional(*xs):
        gs = tg.grad(program.fn, argnums=argnums)(*xs)
        return sum(np.sum(g * v) for g, v in zip(gs, vs))

    expected = tg.grad(directional, argnums=argnums)(*args)
    tensors = [tt.tensor(a, requires_grad=True) for a in args]
    out = program.fn(*tensors)
    if not out.requires_grad:
        return
    gs = tt.autograd.grad(out, tensors, create_graph=True, allow_unused=True)
    s = sum((g * tt.tensor(v)).sum() for g, v in zip(gs, vs) if g is not None)
    if not isinstance(s, tt.Tensor) or not s.requires_grad:
        got = [np.zeros(a.shape, a.dtype) for a in args]
    else:
        hs = tt.autograd.grad(s, tensors, allow_unused=True, materialize_grads=True)
        got = [h.numpy() for h in hs]
    scale = max(float(np.max(np.abs(e), initial=0.0)) for e in expected) if expected else 1.0
    for g, e in zip(got, expected):
        _close(g, e, dtype, scale)
