"""Complex tensors' gradients against PyTorch: `.grad`, seeds, hooks, create_graph, gradcheck.

The backward pass runs the primitives' rules, which follow JAX (transposes under
Re(sum(a * b))); the tensors give PyTorch's gradients (conjugate Wirtinger: `2z` for `|z|^2`)
by conjugating at the pass's boundary (`engine.torch_gradient`). Every test runs the same lines
in tracegrad and in torch (`run_both`, or `libraries` with a closed form) and compares values,
gradients and the first lines of messages; random complex programs drawn with hypothesis are
compared the same way, second derivatives included, and tracegrad.testing's random NumPy
programs run on tensors give the conjugates of `tg.grad`'s (JAX's) gradients and vjps. Values,
dtypes, views and printing: test_complex.py.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, reject, settings
from hypothesis import strategies as st

import tracegrad as tg
import tracegrad.torch as tt
from tests.shim.test_complex import W, X, Z, _x, _z
from tests.shim.torch_oracle import attempt, libraries, numpy_of, run_both, values
from tracegrad.testing import programs

# -- backward on real losses of complex leaves -----------------------------------------------------


_LOSSES = [
    lambda M, z: (z * z.conj()).real.sum(),
    lambda M, z: (z.abs() ** 2).sum(),
    lambda M, z: z.abs().sum(),
    lambda M, z: z.real.sum() + 3 * z.imag.sum(),
    lambda M, z: (z.real**2 - z.imag).sum(),
    lambda M, z: z.angle().sum(),
    lambda M, z: M.exp(z).real.sum(),
    lambda M, z: (M.sin(z) * M.tensor(W, dtype=z.dtype)).imag.sum(),
    lambda M, z: (M.tensor(W, dtype=z.dtype) / z).real.sum(),
    lambda M, z: (z * z).imag.sum(),
    lambda M, z: M.view_as_real(z * 2).pow(2).sum(),
    lambda M, z: M.view_as_real(z.conj_physical()).sum(),
    lambda M, z: (M.sgn(z) * M.tensor(W, dtype=z.dtype)).real.sum(),
    lambda M, z: (z.sum() * (1 + 2j)).real,
    lambda M, z: (z @ M.tensor(W, dtype=z.dtype)).real,
    lambda M, z: M.polar(z.abs(), z.angle()).imag.sum(),
    lambda M, z: M.complex(z.imag, z.real).abs().sum(),
    lambda M, z: M.view_as_complex(M.view_as_real(z) * 2).angle().sum(),
    lambda M, z: (z.conj() * M.tensor(W, dtype=z.dtype)).real.sum(),
    lambda M, z: M.log(z).imag.sum() + M.sqrt(z).real.sum(),
    lambda M, z: (z.to(M.complex64) * 2).real.sum(),
]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("loss", _LOSSES, ids=range(len(_LOSSES)))
def test_backward_of_a_real_loss_gives_torch_grad(loss, dtype):
    def scenario(M):
        z = _z(M, dtype=getattr(M, dtype))
        out = loss(M, z)
        out.backward()
        return out, z.grad

    run_both(scenario, rtol=1e-5 if dtype == "complex64" else 1e-10, atol=1e-6)


def test_grad_of_abs_squared_is_two_z():
    for M in libraries():
        z = _z(M)
        (z.abs() ** 2).sum().backward()
        np.testing.assert_allclose(values(z.grad), 2 * np.asarray(Z), rtol=1e-12)
        z = _z(M)
        (z * z.conj()).real.sum().backward()
        np.testing.assert_allclose(values(z.grad), 2 * np.asarray(Z), rtol=1e-12)


def test_complex_grads_accumulate_across_backward_calls():
    def scenario(M):
        z = _z(M)
        (z.abs() ** 2).sum().backward()
        (z * M.tensor(W, dtype=M.complex128)).imag.sum().backward()
        first = z.grad.clone()
        z.grad.zero_()
        M.exp(z).real.sum().backward()
        return first, z.grad

    run_both(scenario, rtol=1e-12)


def test_tensors_give_the_conjugate_of_tg_grad():
    """tg.grad follows JAX (df/dx - i df/dy); the tensors PyTorch (its conjugate)."""
    z0 = np.asarray(Z)
    expected = tg.grad(lambda z: np.sum(np.real(np.exp(z) * np.conj(z))))(z0)
    z = tt.tensor(z0, requires_grad=True)
    (tt.exp(z) * z.conj()).real.sum().backward()
    np.testing.assert_allclose(numpy_of(z.grad), np.conj(expected), rtol=1e-12)


# -- real -> complex -> real -----------------------------------------------------------------------


_REAL_LOSSES = [
    lambda M, x: (x * (1 + 1j)).abs().sum(),
    lambda M, x: M.exp(1j * x).real.sum(),
    lambda M, x: (M.exp(1j * x) * M.tensor(W, dtype=M.complex128)).imag.sum(),
    lambda M, x: (x.to(M.complex128) ** 2 * (1 - 2j)).imag.sum(),
    lambda M, x: M.complex(x, x * x).abs().sum(),
    lambda M, x: M.polar(x.abs() + 0.5, x).real.sum(),
    lambda M, x: M.view_as_complex(M.stack([x, -x], -1)).angle().sum(),
    lambda M, x: (x + 0j).angle().sum() + (x * 1j).imag.sum(),
    lambda M, x: M.view_as_real(x * M.tensor(W, dtype=M.complex128)).sum(),
]


@pytest.mark.parametrize("loss", _REAL_LOSSES, ids=range(len(_REAL_LOSSES)))
def test_real_to_complex_to_real_matches_torch(loss):
    def scenario(M):
        x = _x(M)
        out = loss(M, x)
        out.backward()
        return out, x.grad

    run_both(scenario, rtol=1e-10, atol=1e-12)


def test_abs_of_a_real_times_complex_is_not_zero():
    """The issue's example: grad of sum|x (1 + i)| is sqrt(2) sign(x), not 0."""
    for M in libraries():
        x = _x(M)
        (x * (1 + 1j)).abs().sum().backward()
        np.testing.assert_allclose(values(x.grad), np.sqrt(2) * np.sign(X), rtol=1e-12)


def test_polar_at_a_non_positive_abs_is_the_documented_difference():
    """docs/complex.md: the shim's `polar` gradient is the derivative of abs * exp(i angle)
    everywhere; PyTorch's uses sgn(abs), so it is 0 at abs = 0 and flips sign below."""
    torch = pytest.importorskip("torch")
    theta = 0.3
    grads = []
    for M in (tt, torch):
        r = M.tensor([0.0, -1.0, 2.0], dtype=M.float64, requires_grad=True)
        angle = M.tensor([theta] * 3, dtype=M.float64, requires_grad=True)
        M.polar(r, angle).real.sum().backward()
        grads.append((values(r.grad), values(angle.grad)))
    (ours, ours_angle), (theirs, theirs_angle) = grads
    np.testing.assert_allclose(ours, np.cos(theta), rtol=1e-15)
    np.testing.assert_allclose(theirs, [0.0, -np.cos(theta), np.cos(theta)], rtol=1e-15)
    np.testing.assert_allclose(ours_angle, theirs_angle, rtol=1e-15, atol=1e-300)


# -- seeds and grad_outputs ------------------------------------------------------------------------


_SEED_ERRORS = [
    lambda M: (_x(M) * 2).sum().backward(M.tensor(1 + 1j)),
    lambda M: M.autograd.grad((_x(M) * 2).sum(), _x(M), M.tensor(1j)),
    lambda M: (_z(M) * 2).sum().backward(),
    lambda M: M.autograd.grad((_z(M) * _z(M)).sum(), _z(M)),
    lambda M: (_x(M) * 1j).sum().backward(),
    lambda M: M.autograd.grad((_z(M) * 2).sum(), _z(M), M.tensor(1.0)),
    lambda M: M.autograd.grad((_z(M) * 2).sum(), _z(M), M.tensor(1.0, dtype=M.float64)),
    lambda M: (_z(M) * 2).backward(M.ones(3)),
    lambda M: (_z(M) * 2).backward(),
    lambda M: (_z(M) * 2).backward(M.ones(2, dtype=M.complex128)),
    lambda M: M.autograd.backward([_x(M).sum(), _z(M).sum()], [M.tensor(2.0), M.tensor(1.0)]),
    lambda M: M.tensor(1j).backward(),
]


@pytest.mark.parametrize("make", _SEED_ERRORS, ids=range(len(_SEED_ERRORS)))
def test_seed_errors_match_torch(make):
    def scenario(M):
        return attempt(make, M)

    out = run_both(scenario)
    assert out.plain.type == "RuntimeError"


def test_a_complex_gradient_for_a_real_output_is_refused():
    """Today's message, not a warning that drops the imaginary part."""
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^For complex Tensors, both grad_output and output"):
        (x * 2).sum().backward(tt.tensor(1 + 1j))
    assert x.grad is None


def test_a_complex_grad_for_a_real_leaf_is_refused():
    """Assigned to `.grad`, or returned by a hook: refused as torch refuses it (torch 2.13's
    assignment message goes on about a `grad_dtype` attribute the shim does not have)."""
    torch = pytest.importorskip("torch")
    for M in (tt, torch):
        x = _x(M)
        with pytest.raises(RuntimeError, match="^attempting to assign a gradient with dtype"):
            x.grad = M.ones(3, dtype=M.complex128)
        assert x.grad is None
    with pytest.raises(RuntimeError, match="'complex128' to a tensor with dtype 'float64'"):
        _x(tt).grad = tt.ones(3, dtype=tt.complex128)

    def scenario(M):
        x = _x(M)
        x.register_hook(lambda g: g * 1j)
        return attempt(lambda: (x * 2).sum().backward()), x.grad

    out = run_both(scenario)
    assert out.plain[0].message.startswith("hook '<lambda>' has changed the type of value")


def test_complex_grad_outputs_are_seeds_in_torch_convention():
    def scenario(M):
        z = _z(M)
        seed = M.tensor([1 + 2j, -1j, 0.5], dtype=M.complex128)
        holomorphic = M.autograd.grad(z * z, z, seed, retain_graph=True)[0]
        conj = M.autograd.grad(z.conj() * 3, z, seed)[0]
        w = _z(M, W)
        (w * w).backward(seed)
        cast = _z(M, dtype=M.complex64)
        (cast * cast).backward(seed)  # complex128 for complex64: cast, as torch does
        return holomorphic, conj, w.grad, cast.grad, M.autograd.grad(z, z, seed)[0]

    out = run_both(scenario, rtol=1e-6)
    seed = np.asarray([1 + 2j, -1j, 0.5])
    np.testing.assert_allclose(out.plain[0].value, seed * np.conj(2 * np.asarray(Z)))


def test_grads_of_several_complex_outputs_are_summed():
    def scenario(M):
        z = _z(M)
        a, b = z * 2, (z * z).real
        return M.autograd.grad(
            [a, b], z, [M.ones(3, dtype=M.complex128) * 1j, M.ones(3, dtype=M.float64)]
        )

    run_both(scenario)


def test_autograd_grad_with_complex_inputs_leaves_grad_alone():
    def scenario(M):
        z, x = _z(M), _x(M)
        out = (z * x).abs().sum()
        g = M.autograd.grad(out, [z, x])
        return g, z.grad, x.grad, M.autograd.grad((z * 2).real.sum(), z, allow_unused=True)

    run_both(scenario)


# -- hooks, retain_grad, node hooks ----------------------------------------------------------------


def test_tensor_hooks_see_torch_gradients_and_may_replace_them():
    def scenario(M):
        z = _z(M)
        seen = []
        z.register_hook(lambda g: seen.append(g.clone()))
        y = z * z
        y.register_hook(lambda g: seen.append(g.clone()))
        y.register_hook(lambda g: g * 1j)  # replaces y's gradient (torch convention)
        (y.conj() * M.tensor(W, dtype=M.complex128)).real.sum().backward()
        return tuple(seen), z.grad

    run_both(scenario)


def test_leaf_hooks_and_post_accumulate_hooks_on_complex_leaves():
    def scenario(M):
        z = _z(M)
        grads, after = [], []
        z.register_hook(lambda g: g + 1j)
        z.register_hook(lambda g: grads.append(g.clone()))
        z.register_post_accumulate_grad_hook(lambda t: after.append(t.grad.clone()))
        (z * z.conj()).real.sum().backward()
        out = M.autograd.grad((z * 3).real.sum(), z)
        return tuple(grads), tuple(after), z.grad, out

    run_both(scenario)


def test_retain_grad_and_inputs_on_complex_non_leaves():
    def scenario(M):
        z = _z(M)
        y = M.exp(z)
        y.retain_grad()
        u = y * 2
        (u * u.conj()).real.sum().backward(retain_graph=True)
        first = y.grad.clone()
        z.grad = None
        v = M.sin(z)
        (v * 1j).imag.sum().backward(inputs=[v])
        return first, v.grad, z.grad

    run_both(scenario, rtol=1e-12)


def test_node_hooks_see_and_replace_torch_gradients():
    def scenario(M):
        z = _z(M)
        y = z * z
        seen = []

        def pre(grad_outputs):
            seen.append(grad_outputs[0].clone())
            return (grad_outputs[0] * (1 - 1j),)

        def post(grad_inputs, grad_outputs):
            seen.append(grad_outputs[0].clone())
            seen.extend(g.clone() for g in grad_inputs if g is not None)
            return tuple(None if g is None else g * 2 for g in grad_inputs)

        y.grad_fn.register_prehook(pre)
        y.grad_fn.register_hook(post)
        (y * M.tensor(W, dtype=M.complex128)).real.sum().backward()
        return tuple(seen), z.grad

    run_both(scenario)


def test_hook_dtype_errors_on_complex_tensors():
    def scenario(M):
        z = _z(M)
        z.register_hook(lambda g: g.real)
        return attempt(lambda: (z * 2).real.sum().backward())

    run_both(scenario)


# -- create_graph ----------------------------------------------------------------------------------


def test_second_derivatives_through_complex_ops():
    def scenario(M):
        z, x = _z(M), _x(M)
        loss = (M.exp(z * x) * z.conj()).real.sum() + (z * z).abs().sum()
        gz, gx = M.autograd.grad(loss, [z, x], create_graph=True)
        s = (gz * M.tensor(W, dtype=M.complex128)).real.sum() + (gx**2).sum()
        return (gz, gx), M.autograd.grad(s, [z, x])

    run_both(scenario, rtol=1e-10)


def test_backward_with_create_graph_on_complex_leaves():
    def scenario(M):
        z = _z(M)
        (z.abs() ** 3).sum().backward(create_graph=True)
        g = z.grad
        z.grad = None
        g.abs().sum().backward()
        return g, z.grad

    run_both(scenario, rtol=1e-10)


def test_create_graph_with_a_complex_seed_that_requires_grad():
    def scenario(M):
        z = _z(M)
        v = _z(M, W)
        (g,) = M.autograd.grad(z * z, z, v, create_graph=True)  # v * conj(2 z)
        return g, M.autograd.grad((g * g.conj()).real.sum(), [z, v])

    run_both(scenario, rtol=1e-10)


# -- custom Functions ------------------------------------------------------------------------------


def _square(M):
    class Square(M.autograd.Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, grad):
            (z,) = ctx.saved_tensors
            return grad * (2 * z).conj()  # PyTorch's convention for a holomorphic function

    return Square


def test_a_custom_function_works_in_torch_convention():
    def scenario(M):
        z = _z(M)
        out = _square(M).apply(z)
        (out * M.tensor(W, dtype=M.complex128)).real.sum().backward()
        reference = _z(M)
        ((reference * reference) * M.tensor(W, dtype=M.complex128)).real.sum().backward()
        return z.grad, reference.grad

    out = run_both(scenario)
    np.testing.assert_allclose(out.plain[0].value, out.plain[1].value)


def test_a_custom_function_differentiates_again():
    def scenario(M):
        z = _z(M)
        (g,) = M.autograd.grad(_square(M).apply(z).abs().sum(), z, create_graph=True)
        return g, M.autograd.grad(g.real.sum() + g.imag.sum(), z)

    run_both(scenario, rtol=1e-10)


# -- gradcheck ------------------------------------------------------------------------------------


_CHECKED = [
    lambda M, z, x: M.exp(z) * x + z.conj() * z.abs(),
    lambda M, z, x: (z * z.conj()).real + x,
    lambda M, z, x: M.polar(x.abs() + 1, x) * z,
    lambda M, z, x: M.view_as_real(M.sin(z) / (z + 3)).sum(-1) * x,
    lambda M, z, x: (M.sgn(z) * x, z.angle()),
]


@pytest.mark.parametrize("f", _CHECKED, ids=range(len(_CHECKED)))
def test_gradcheck_accepts_complex_functions(f):
    def scenario(M):
        z, x = _z(M, Z[:2]), _x(M, X[:2])
        return M.autograd.gradcheck(lambda z, x: f(M, z, x), (z, x))

    assert run_both(scenario).plain is True


def test_gradcheck_refuses_a_backward_in_the_wrong_convention():
    """A custom backward returning JAX's vjp (no conjugate) fails as in torch: first on the
    imaginary parts of the outputs."""

    def scenario(M):
        class JaxStyle(M.autograd.Function):
            @staticmethod
            def forward(ctx, z):
                ctx.save_for_backward(z)
                return z * z

            @staticmethod
            def backward(ctx, grad):
                (z,) = ctx.saved_tensors
                return grad * 2 * z

        z = _z(M, Z[:2])
        return (
            attempt(M.autograd.gradcheck, JaxStyle.apply, (z,)),
            M.autograd.gradcheck(JaxStyle.apply, (z,), raise_exception=False),
        )

    out = run_both(scenario)
    assert out.plain[0].message.startswith("While considering the imaginary part")


def test_gradcheck_refuses_a_wrong_backward_of_a_real_function_of_complex_inputs():
    """A real output: no parts to consider; JAX's gradient (the conjugate) is refused."""

    def scenario(M):
        class JaxStyle(M.autograd.Function):
            @staticmethod
            def forward(ctx, z):
                ctx.save_for_backward(z)
                return (z * z.conj()).real

            @staticmethod
            def backward(ctx, grad):
                (z,) = ctx.saved_tensors
                return grad * 2 * z.conj()

        z = _z(M, Z[:2])
        return attempt(M.autograd.gradcheck, JaxStyle.apply, (z,))

    out = run_both(scenario)
    assert out.plain.message == "Jacobian mismatch for output 0 with respect to input 0,"


# -- random complex programs against torch ---------------------------------------------------------
# Values are shape-(3,) complex128 tensors; each step applies one operation to earlier values
# (inputs: two complex leaves and a real one, which enters through a real -> complex step).

_UNARY = {
    "exp": lambda M, a: M.exp(a * 0.5),
    "sin": lambda M, a: M.sin(a),
    "cos": lambda M, a: M.cos(a),
    "tanh": lambda M, a: M.tanh(a * 0.3),
    "conj": lambda M, a: a.conj() * 1,
    "conj_physical": lambda M, a: M.conj_physical(a),
    "neg": lambda M, a: -a,
    "square": lambda M, a: a * a,
    "cube": lambda M, a: a**3,
    "reciprocal": lambda M, a: 1 / (a + 3),
    "sqrt": lambda M, a: M.sqrt(a),
    "log": lambda M, a: M.log(a + 3),
    "rotate": lambda M, a: a * (0.5 - 1j),
    "flip": lambda M, a: M.flip(a, [0]),
    "gather": lambda M, a: a[[2, 0, 1]],
    "cumsum": lambda M, a: M.cumsum(a, 0),
    "centre": lambda M, a: a - a.mean(),
    "scale_by_sum": lambda M, a: a * a.sum(),
    "swap_parts": lambda M, a: M.complex(a.imag, a.real),
    "polar": lambda M, a: M.polar(a.abs() + 0.5, a.angle()),
    "view_as_real": lambda M, a: M.view_as_complex(M.view_as_real(a).flip(-1)),
    "sgn": lambda M, a: M.sgn(a) * 2,
    "times_abs": lambda M, a: a * a.abs(),
    "phase": lambda M, a: M.exp(1j * a.angle()),
    "real_part": lambda M, a: a.real * (1 + 1j),
    "imag_part": lambda M, a: a.imag * 1j + a,
    "resolve": lambda M, a: a.conj().resolve_conj(),
}
_BINARY = {
    "add": lambda M, a, b: a + b,
    "sub": lambda M, a, b: a - b * 0.5,
    "mul": lambda M, a, b: a * b,
    "div": lambda M, a, b: a / (b + 3),
    "matmul": lambda M, a, b: M.outer(a, b) @ a,
    "dot": lambda M, a, b: (a * b).sum() * a,
    "stack": lambda M, a, b: M.stack([a, b]).sum(0),
    "cat": lambda M, a, b: M.cat([a, b])[1:4],
    "with_real": lambda M, a, b: a * b.real,
}
_REAL_IN = {
    "times_complex": lambda M, x: x * (0.5 + 0.25j),
    "phase": lambda M, x: M.exp(1j * x),
    "complex": lambda M, x: M.complex(x, x * x),
    "polar": lambda M, x: M.polar(x * x + 0.5, x),
    "cast": lambda M, x: x.to(M.complex128) * 1j,
}
_LOSS = {
    "abs2": lambda M, v: (v * v.conj()).real.sum(),
    "abs": lambda M, v: v.abs().sum(),
    "weighted": lambda M, v: (v * M.tensor(W, dtype=M.complex128)).real.sum(),
    "imag": lambda M, v: v.imag.sum(),
    "angle": lambda M, v: (v + 4).angle().sum(),
    "view_as_real": lambda M, v: M.view_as_real(v).pow(2).sum(),
}


@st.composite
def _programs(draw):
    real_in = draw(st.sampled_from(sorted(_REAL_IN)), label="real input")
    steps = []
    for k in range(draw(st.integers(1, 5), label="length")):
        n = 3 + k  # values so far: z1, z2, the real input's complex value, then each step
        if draw(st.booleans()):
            steps.append((draw(st.sampled_from(sorted(_UNARY))), draw(st.integers(0, n - 1))))
        else:
            steps.append(
                (
                    draw(st.sampled_from(sorted(_BINARY))),
                    draw(st.integers(0, n - 1)),
                    draw(st.integers(0, n - 1)),
                )
            )
    loss = draw(st.sampled_from(sorted(_LOSS)), label="loss")
    # parts away from 0: abs, angle and sgn have a kink there (their second derivatives too)
    part = st.tuples(st.sampled_from([-1.0, 1.0]), st.floats(0.25, 1.5))
    parts = [s * m for s, m in draw(st.lists(part, min_size=9, max_size=9), label="inputs")]
    return real_in, steps, loss, parts


def _run_program(M, program):
    """The program's inputs, its last value (complex) and its real loss, in library M."""
    real_in, steps, loss, parts = program
    z1 = M.tensor(np.array(parts[0:3]) + 1j * np.array(parts[3:6]), requires_grad=True)
    z2 = M.tensor(np.array(parts[3:6]) - 0.5j * np.array(parts[0:3]), requires_grad=True)
    x = M.tensor(parts[6:9], dtype=M.float64, requires_grad=True)
    vals = [z1, z2, _REAL_IN[real_in](M, x)]
    for name, *args in steps:
        op = _UNARY.get(name) if len(args) == 1 else _BINARY[name]
        vals.append(op(M, *[vals[i] for i in args]))
    # every input reaches the output, so no gradient is None
    out = vals[-1] + (vals[0] + vals[1] + vals[2]) * 1e-3
    return (z1, z2, x), out, _LOSS[loss](M, out)


def _finite(*tensors) -> bool:
    return all(np.all(np.isfinite(values(t))) and np.max(np.abs(values(t))) < 1e6 for t in tensors)


def _close(ours, theirs, scale=1.0):
    np.testing.assert_allclose(
        numpy_of(ours), values(theirs), rtol=1e-8, atol=1e-10 * max(1.0, scale)
    )


@settings(max_examples=60)
@given(program=_programs())
def test_random_complex_programs_match_torch(program):
    torch = pytest.importorskip("torch")
    t_inputs, t_out, t_loss = _run_program(torch, program)
    t_grads = torch.autograd.grad(t_loss, t_inputs, create_graph=True)
    assume(_finite(t_out, t_loss, *t_grads))
    inputs, out, loss = _run_program(tt, program)
    scale = max(float(np.max(np.abs(values(g)))) for g in t_grads)
    _close(out, t_out)
    _close(loss, t_loss)
    # backward() into .grad, and autograd.grad with a complex seed on the complex output
    loss.backward(retain_graph=True)
    for t, g in zip(inputs, t_grads):
        assert t.grad.dtype == t.dtype
        _close(t.grad, g, scale)
    seed = [0.5 - 1j, 2j, -1.0]
    got = tt.autograd.grad(out, inputs, tt.tensor(seed, dtype=tt.complex128), retain_graph=True)
    want = torch.autograd.grad(
        t_out, t_inputs, torch.tensor(seed, dtype=torch.complex128), retain_graph=True
    )
    for a, b in zip(got, want):
        _close(a, b, max(1.0, float(np.max(np.abs(values(b))))))
    # second derivatives: d/d(inputs) of Re<grad, v>, through create_graph
    grads = tt.autograd.grad(loss, inputs, create_graph=True)
    v = [tt.tensor(W), tt.tensor(Z), tt.tensor(X, dtype=tt.float64)]
    tv = [torch.tensor(W), torch.tensor(Z), torch.tensor(X, dtype=torch.float64)]
    s = sum(((g * c.conj()).real.sum() for g, c in zip(grads, v)), tt.tensor(0.0))
    t_s = sum((g * c.conj()).real.sum() for g, c in zip(t_grads, tv))
    assert s.requires_grad == t_s.requires_grad
    if not t_s.requires_grad:  # gradients that do not depend on the inputs
        return
    t_second = torch.autograd.grad(t_s, t_inputs, allow_unused=True, materialize_grads=True)
    assume(_finite(*t_second))
    second = tt.autograd.grad(s, inputs, allow_unused=True, materialize_grads=True)
    scale2 = max(float(np.max(np.abs(values(h)))) for h in t_second)
    for a, b in zip(second, t_second):
        _close(a, b, scale2)


# -- tracegrad.testing's random NumPy programs, run on tensors -------------------------------------
# The programs whose `tg.grad`, `tg.vjp` and `holomorphic=True` derivatives
# tests/complex/test_programs.py compares with JAX's. NumPy functions on tensors record as any
# operation does, so the same program runs on tensors: their gradients are the conjugates
# (PyTorch's backward is conj(JAX's backward(conj(seed)))).


def _draw_program(data, **options):
    try:
        return data.draw(programs(**options), label="program")
    except OverflowError:  # the generator's bound of sin of a wide complex value (math.cosh)
        reject()


def _on_tensors(program, args):
    """The program on leaves made from `args`: (leaves, output), or None where an operator's
    PyTorch promotion gives the output another dtype than NumPy's."""
    leaves = [tt.tensor(a, requires_grad=True) for a in args]
    with warnings.catch_warnings():  # PyTorch's cast warning, where NumPy code drops a part
        warnings.filterwarnings("ignore", "Casting complex values to real", UserWarning)
        out = program.fn(*leaves)
    return leaves, out


@settings(max_examples=40)
@given(data=st.data())
def test_random_numpy_programs_with_a_real_loss_give_the_conjugate_of_tg_grad(data):
    program = _draw_program(
        data, dtype="mixed", complex_values=True, scalar_output=True, smooth=True, max_ops=8
    )
    args = program.draw_inputs(data)
    leaves, out = _on_tensors(program, args)
    assume(out.dtype == np.asarray(program.fn(*args)).dtype)
    out.backward()
    want = tg.grad(program.fn, argnums=tuple(range(len(args))))(*args)
    for leaf, w in zip(leaves, want):
        if leaf.grad is None:  # not reached (`np.imag` of a real leaf is a constant): zeros
            assert not np.any(w)
            continue
        assert leaf.grad.dtype == leaf.dtype
        np.testing.assert_allclose(numpy_of(leaf.grad), np.conj(w), **program.grad_tolerances)


@settings(max_examples=25)
@given(data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_random_holomorphic_programs_pull_seeds_back_as_torch(data, seed):
    program = _draw_program(data, dtype=np.complex128, holomorphic=True, smooth=True, max_ops=6)
    args = program.draw_inputs(data)
    leaves, out = _on_tensors(program, args)
    outs = out if isinstance(out, tuple) else (out,)
    assume(all(isinstance(o, tt.Tensor) and o.dtype == np.complex128 for o in outs))
    rng = np.random.default_rng(seed)
    vs = [rng.standard_normal(o.shape) + 1j * rng.standard_normal(o.shape) for o in outs]
    seeds = [tt.tensor(v) for v in vs]
    got = tt.autograd.grad(outs, leaves, seeds, allow_unused=True, materialize_grads=True)
    cotangents = tuple(np.conj(v) for v in vs)
    want = tg.vjp(program.fn, *args)[1](cotangents if isinstance(out, tuple) else cotangents[0])
    for g, w in zip(got, want):
        np.testing.assert_allclose(numpy_of(g), np.conj(w), **program.grad_tolerances)
