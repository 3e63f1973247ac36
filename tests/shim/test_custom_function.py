"""`autograd.Function` against PyTorch's, scenario by scenario.

Each scenario is written once against a namespace `M` (torch or tracegrad) and run in both;
values, gradients, second derivatives and error messages must agree. Without torch the
closed forms below each scenario still check tracegrad.
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import tracegrad.torch as tt

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _functions(M):
    class Exp(M.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class ScaledMul(M.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, k):
            ctx.save_for_backward(x, w)
            ctx.k = k
            return x * w * k

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return g * w * ctx.k, g * x * ctx.k, None

    class SinCos(M.autograd.Function):
        @staticmethod
        def forward(x):
            return x.sin(), x.cos()

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, gs, gc):
            (x,) = ctx.saved_tensors
            return gs * x.cos() - gc * x.sin()

    return Exp, ScaledMul, SinCos


def _both(scenario):
    out_tg = scenario(tt)
    out_torch = scenario(torch)
    for a, b in zip(out_tg, out_torch):
        np.testing.assert_allclose(_np(a), _np(b), rtol=1e-12, atol=1e-14)
    return out_tg


def test_values_gradients_and_second_derivatives_match_torch():
    def scenario(M):
        Exp, ScaledMul, SinCos = _functions(M)
        x = M.tensor([0.5, -1.0, 2.0], dtype=M.float64, requires_grad=True)
        w = M.tensor([1.5, 2.0, -0.5], dtype=M.float64, requires_grad=True)
        s, c = SinCos.apply(x)
        y = (Exp.apply(x) * ScaledMul.apply(x, w, 3.0) + s * c).sum()
        gx, gw = M.autograd.grad(y, (x, w), create_graph=True)
        (hx,) = M.autograd.grad(gx.sum() + gw.sum(), x)
        return y, gx, gw, hx

    y, gx, gw, hx = _both(scenario)
    x = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(_np(gw), np.exp(x) * x * 3.0)  # closed form, without torch too


def test_grad_fn_name_needs_input_grad_and_non_differentiable_outputs():
    def scenario(M):
        class Split(M.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.flags = ctx.needs_input_grad
                big = x > 0
                ctx.mark_non_differentiable(big)
                return x * 2, big

            @staticmethod
            def backward(ctx, g, g_big):
                assert g_big is not None  # materialized: zeros
                return g * 2, None

        x = M.tensor([1.0, -2.0], requires_grad=True)
        y = M.tensor([1.0, 1.0])
        a, big = Split.apply(x, y)
        a.sum().backward()
        return a.grad_fn.name(), big.requires_grad, x.grad, Split.apply(x, y)[0].grad_fn is not None

    assert scenario(tt)[0] == scenario(torch)[0] == "SplitBackward"
    got, want = scenario(tt), scenario(torch)
    assert got[1] is want[1] is False
    np.testing.assert_array_equal(_np(got[2]), _np(want[2]))


def test_a_freed_context_raises_pytorchs_message_on_a_second_backward():
    messages = []
    for M in (tt, torch):
        Exp, _, _ = _functions(M)
        x = M.tensor([1.0, 2.0], requires_grad=True)
        y = Exp.apply(x).sum()
        y.backward()
        with pytest.raises(RuntimeError) as e:
            y.backward()
        messages.append(str(e.value).splitlines()[0])
    assert messages[0] == messages[1]
    assert messages[0].startswith("Trying to backward through the graph a second time")


@pytest.mark.parametrize("case", ["count", "shape", "broadcast"])
def test_backward_results_are_checked_as_in_torch(case):
    def run(M):
        class F(M.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x * y

            @staticmethod
            def backward(ctx, g):
                if case == "count":
                    return (g,)
                if case == "shape":
                    return M.ones(5, dtype=g.dtype), None
                return g.sum(0, keepdim=True).expand(3, 2), None  # (3, 2) sums to (1, 2)

        x = M.ones(1, 2, dtype=M.float64, requires_grad=True)
        y = M.ones(3, 2, dtype=M.float64)
        F.apply(x, y).sum().backward()
        return x.grad

    if case == "broadcast":
        np.testing.assert_array_equal(_np(run(tt)), _np(run(torch)))
        return
    errors = []
    for M in (tt, torch):
        with pytest.raises(RuntimeError) as e:
            run(M)
        errors.append(str(e.value).splitlines()[0])
    assert errors[0] == errors[1].replace("torch.Size", "")


def test_once_differentiable_and_materialize_grads():
    def scenario(M):
        class Square(M.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(False)
                ctx.save_for_backward(x)
                return x * x, x + 1

            @staticmethod
            @M.autograd.function.once_differentiable
            def backward(ctx, g, g2):
                (x,) = ctx.saved_tensors
                assert g2 is None  # not materialized: the second output was not used
                return 2 * x * g

        x = M.tensor([3.0], dtype=M.float64, requires_grad=True)
        (g,) = M.autograd.grad(Square.apply(x)[0].sum(), x, create_graph=True)
        return g, g.requires_grad

    got, want = scenario(tt), scenario(torch)
    np.testing.assert_array_equal(_np(got[0]), _np(want[0]))
    assert got[1] == want[1]


def test_the_graph_of_a_custom_function_is_freed_without_the_cycle_collector():
    Exp, _, _ = _functions(tt)
    gc.collect()
    gc.disable()
    try:
        x = tt.tensor([1.0, 2.0], requires_grad=True)
        y = Exp.apply(x)
        fn = weakref.ref(y.grad_fn)
        del y
        assert fn() is None
    finally:
        gc.enable()


def test_gradcheck_passes_a_correct_function_and_names_the_mismatch_like_torch():
    for M in (tt, torch):
        Exp, _, _ = _functions(M)
        x = M.tensor([0.3, -0.7], dtype=M.float64, requires_grad=True)
        assert M.autograd.gradcheck(Exp.apply, (x,))

    def wrong(M):
        class Wrong(M.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * x

            @staticmethod
            def backward(ctx, g):
                return g  # should be 2 x g

        return Wrong

    firsts = []
    for M in (tt, torch):
        x = M.tensor([0.3, -0.7], dtype=M.float64, requires_grad=True)
        with pytest.raises(RuntimeError) as e:
            M.autograd.gradcheck(wrong(M).apply, (x,))
        firsts.append(str(e.value).splitlines()[0])
    assert firsts[0] == firsts[1] == "Jacobian mismatch for output 0 with respect to input 0,"


def test_gradcheck_warns_about_single_precision_like_torch():
    for M in (tt, torch):
        x = M.tensor([0.3, -0.7], requires_grad=True)
        with pytest.warns(UserWarning, match="Input #0 requires gradient and is not a double"):
            try:
                M.autograd.gradcheck(lambda t: t * 2, (x,), raise_exception=False)
            except RuntimeError:
                pass
