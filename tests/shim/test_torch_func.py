"""`torch.func` and `torch.autograd.functional` on tracegrad tensors, against torch's.

Each scenario is written once with the names both libraries share; `api(lib)` gives the two
namespaces (`func`, `autograd.functional`): tracegrad's modules until the lead wires them as
`tracegrad.torch.func` and `tracegrad.torch.autograd.functional`, torch's own in torch. Values
in float64 and float32, `requires_grad` of every result, second derivatives through
`create_graph=True` results and through `func.grad` of tensors that require grad, the result
structures (tuples, nested tuples, the lists of forward-mode jacobians) and the messages.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad.torch
from tests.shim.torch_oracle import Raised, attempt, run_both
from tracegrad.torch import autograd_functional, func

RNG = np.random.default_rng(23)
A = RNG.standard_normal(3)
B = RNG.standard_normal((2, 3))
V2 = RNG.standard_normal(2)
V3 = RNG.standard_normal(3)
V23 = RNG.standard_normal((2, 3))
BATCH = RNG.standard_normal((4, 2, 3))


def api(lib):
    """(func, autograd.functional) of `lib`."""
    if lib is tracegrad.torch:
        return func, autograd_functional
    return lib.func, lib.autograd.functional


def pair(lib):
    """Two inputs, two outputs (a vector and a scalar)."""

    def f(x, y):
        return (lib.sin(x) * y).sum(1), (x**3).sum()

    return f


def scalar(lib):
    def f(x, y):
        return (lib.exp(x) * y).sum() + (x * x).sum() * lib.tanh(y).sum()

    return f


def inputs(lib, dtype="float64", requires_grad=False):
    dt = getattr(lib, dtype)
    return (
        lib.tensor(A, dtype=dt, requires_grad=requires_grad),
        lib.tensor(B, dtype=dt, requires_grad=requires_grad),
    )


TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=2e-5, atol=1e-5)}
DTYPES = ["float64", "float32"]


# -- torch.autograd.functional ----------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_vjp_and_jvp_values_and_structures(dtype):
    def scenario(lib):
        _, af = api(lib)
        x, y = inputs(lib, dtype)
        dt = getattr(lib, dtype)
        v_out = (lib.tensor(V2, dtype=dt), lib.tensor(0.5, dtype=dt))
        v_in = (lib.tensor(V3, dtype=dt), lib.tensor(V23, dtype=dt))
        return (
            af.vjp(pair(lib), (x, y), v_out),
            af.jvp(pair(lib), (x, y), v_in),
            af.vjp(lambda t: lib.exp(t).sum(), x),  # v may be None for a one-element output
            af.jvp(lambda t: lib.exp(t), x, lib.tensor(V3, dtype=dt)),
            af.jvp(lambda t: t * 2.0, lib.tensor([1.5], dtype=dt)),
        )

    run_both(scenario, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
def test_hvp_and_vhp(dtype):
    def scenario(lib):
        _, af = api(lib)
        x, y = inputs(lib, dtype)
        dt = getattr(lib, dtype)
        v = (lib.tensor(V3, dtype=dt), lib.tensor(V23, dtype=dt))
        return af.hvp(scalar(lib), (x, y), v), af.vhp(scalar(lib), (x, y), v)

    run_both(scenario, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("options", [{}, {"vectorize": True}], ids=["reverse", "vectorized"])
def test_jacobian(dtype, options):
    def scenario(lib):
        _, af = api(lib)
        x, y = inputs(lib, dtype)
        return (
            af.jacobian(pair(lib), (x, y), **options),
            af.jacobian(lambda t: lib.exp(t) * t.sum(), x, **options),
            af.jacobian(lambda t: (t.sum(),), x, **options),
        )

    run_both(scenario, **TOL[dtype])


def test_forward_mode_jacobians_which_torch_returns_as_lists():
    def scenario(lib):
        _, af = api(lib)
        x, y = inputs(lib)
        jac = af.jacobian(pair(lib), (x, y), vectorize=True, strategy="forward-mode")
        hess = af.hessian(
            scalar(lib), (x, y), vectorize=True, outer_jacobian_strategy="forward-mode"
        )
        grad_x = af.jacobian(
            lambda t: t.exp(), x.requires_grad_(), vectorize=True, strategy="forward-mode"
        )
        names = type(jac).__name__, type(jac[0]).__name__, type(hess).__name__
        return names, jac, hess, grad_x

    # torch's forward mode warns that it uses the deprecated torch.jit.script internally
    run_both(scenario, **TOL["float64"], warns=False)


@pytest.mark.parametrize("dtype", DTYPES)
def test_hessian(dtype):
    def scenario(lib):
        _, af = api(lib)
        x, y = inputs(lib, dtype)
        return (
            af.hessian(scalar(lib), (x, y)),
            af.hessian(lambda t: (t**4).sum(), x),
            af.hessian(lambda t: (t**4).sum(), x, vectorize=True),
        )

    run_both(scenario, **TOL[dtype])


def test_create_graph_results_differentiate_again():
    """create_graph=True: results carry a grad_fn, and a backward through them gives the
    next derivative in the caller's tensors (torch's .grad)."""

    def scenario(lib):
        _, af = api(lib)
        x, y = inputs(lib, requires_grad=True)
        v = (lib.tensor(V3, dtype=lib.float64), lib.tensor(V23, dtype=lib.float64))
        results = [
            af.vjp(lambda t: (t**3).sum(), x, create_graph=True),
            af.jvp(pair(lib), (x, y), v, create_graph=True),
            af.jacobian(pair(lib), (x, y), create_graph=True),
            af.hessian(scalar(lib), (x, y), create_graph=True),
            af.hvp(scalar(lib), (x, y), v, create_graph=True),
            af.vhp(scalar(lib), (x, y), v, create_graph=True),
        ]
        total = sum((t * t).sum() for r in results for t in _tensors(r))
        total.backward()
        return results, x.grad, y.grad

    run_both(scenario, **TOL["float64"])


def _tensors(value):
    if isinstance(value, tuple | list):
        return [t for v in value for t in _tensors(v)]
    return [value]


def test_without_create_graph_results_are_detached_even_for_inputs_requiring_grad():
    def scenario(lib):
        _, af = api(lib)
        x, y = inputs(lib, requires_grad=True)
        return af.vjp(pair(lib), (x, y), (lib.ones(2, dtype=lib.float64), lib.tensor(1.0))), (
            af.jacobian(pair(lib), (x, y))
        )

    run_both(scenario, **TOL["float64"])


def test_independent_outputs_give_zeros_or_strict_errors():
    def scenario(lib):
        _, af = api(lib)
        x, y = inputs(lib)
        linear = lambda a, b: (a * 2.0).sum() + b.sum()  # noqa: E731
        return (
            af.jacobian(lambda a, b: a.exp(), (x, y)),
            attempt(af.jacobian, lambda a, b: a.exp(), (x, y), strict=True),
            attempt(
                af.vjp, lambda a: a.detach() * 1.0, x, lib.ones(3, dtype=lib.float64), strict=True
            ),
            af.hessian(linear, (x, y)),
            attempt(af.hessian, linear, (x, y), strict=True),
            attempt(af.vhp, linear, (x, y), (x, y), strict=True),
            attempt(af.jvp, lambda a, b: a.exp(), (x, y), (x, y), strict=True),
            attempt(af.jacobian, pair(lib), (x, y), create_graph=True, strict=True),
        )

    run_both(scenario)


def test_argument_errors():
    def scenario(lib):
        _, af = api(lib)
        x, y = inputs(lib)
        f = pair(lib)
        return (
            attempt(af.vjp, f, (x, 1.0)),
            attempt(af.vjp, f, 1.0),
            attempt(af.vjp, lambda t: (t, 3), x, (x, x)),
            attempt(af.vjp, f, (x, y)),
            attempt(af.vjp, f, (x, y), (lib.ones(3),)),
            attempt(af.vjp, f, (x, y), (lib.ones(3), lib.ones(()))),
            attempt(af.vjp, lambda t: t, x, lib.ones(2)),
            attempt(af.jvp, f, (x, y)),
            attempt(af.jvp, lambda t: t, x, (x, x)),
            attempt(af.jacobian, f, (x, y), strategy="middle"),
            attempt(af.jacobian, f, (x, y), strategy="forward-mode"),
            attempt(af.jacobian, f, (x, y), strategy="forward-mode", create_graph=True),
            attempt(af.jacobian, f, (x, y), strategy="forward-mode", vectorize=True, strict=True),
            attempt(af.jacobian, f, (x, y), vectorize=True, strict=True),
            attempt(af.hessian, f, (x, y)),
            attempt(af.hessian, lambda t: t.exp(), x),
            attempt(af.hessian, lambda t: t.sum(), x, outer_jacobian_strategy="sideways"),
            attempt(af.hvp, lambda t: t.exp(), x, x),
            attempt(af.vhp, lambda t: (t.sum(), t.sum()), x, x),
            attempt(af.hvp, lambda t: t.sum(), x),
        )

    outcome = run_both(scenario)
    assert all(isinstance(r, Raised) for r in outcome.value)


# -- torch.func -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1,)], ids=str)
def test_grad_and_jacobians_by_argnums(dtype, argnums):
    def scenario(lib):
        fn, _ = api(lib)
        x, y = inputs(lib, dtype)
        return (
            fn.grad(scalar(lib), argnums=argnums)(x, y),
            fn.grad_and_value(scalar(lib), argnums=argnums)(x, y),
            fn.jacrev(pair(lib), argnums=argnums)(x, y),
            fn.jacfwd(pair(lib), argnums=argnums)(x, y),
            fn.hessian(scalar(lib), argnums=argnums)(x, y),
        )

    run_both(scenario, **TOL[dtype])


def test_has_aux_and_pytree_arguments():
    def scenario(lib):
        fn, _ = api(lib)
        x, y = inputs(lib)

        def loss(params, data):
            out = (params["w"] * data).sum() + (params["b"][0] ** 2).sum()
            return out, {"out": out.detach() * 2}

        params = {"w": x, "b": (y,)}
        return (
            fn.grad(loss, has_aux=True)(params, x),
            fn.grad_and_value(loss, has_aux=True)(params, x),
            fn.jacrev(lambda p, d: loss(p, d)[0] * d, has_aux=False)(params, x),
            fn.jacfwd(lambda p: (p["w"].exp(), p["w"].sum()), has_aux=True)(params),
            fn.grad(lambda a: lib.zeros((), dtype=lib.float64))(x),  # unused: zeros
        )

    run_both(scenario, **TOL["float64"])


@pytest.mark.parametrize("dtype", DTYPES)
def test_vjp_and_jvp(dtype):
    def scenario(lib):
        fn, _ = api(lib)
        x, y = inputs(lib, dtype)
        dt = getattr(lib, dtype)
        out, vjp_fn = fn.vjp(pair(lib), x, y)
        ct = (lib.tensor(V2, dtype=dt), lib.tensor(0.5, dtype=dt))
        tangents = (lib.tensor(V3, dtype=dt), lib.tensor(V23, dtype=dt))
        out2, vjp_fn2, aux = fn.vjp(lambda t: (t.exp(), t.sum()), x, has_aux=True)
        return (
            out,
            vjp_fn(ct),
            vjp_fn(ct),  # callable again
            out2,
            aux,
            vjp_fn2(lib.tensor(V3, dtype=dt)),
            fn.jvp(pair(lib), (x, y), tangents),
            fn.jvp(lambda t: (t.exp(), t.sum()), (x,), (tangents[0],), has_aux=True),
        )

    run_both(scenario, **TOL[dtype])


def test_nested_transforms():
    def scenario(lib):
        fn, _ = api(lib)
        x, y = inputs(lib)
        cube = lambda t: (t**3).sum()  # noqa: E731
        with lib.no_grad():  # the transforms differentiate inside no_grad, as torch.func's
            under_no_grad = fn.grad(cube)(x)
        return (
            under_no_grad,
            fn.grad(lambda t: fn.grad(cube)(t).sum())(x),
            fn.grad(lambda a: fn.grad(lambda b: (a * b).sum())(y[0]).sin().sum())(x),
            fn.jacrev(fn.jacrev(lambda t: t.sin() * t.sum()))(x),
            fn.jacfwd(fn.grad(cube))(x),
            fn.vmap(fn.grad(lambda t: t.sin().sum()))(y),
            fn.grad(lambda t: fn.vmap(lambda r: (r * t).sum())(y).exp().sum())(x),
            fn.jacrev(fn.vmap(lambda r: r.sin()))(y),
        )

    run_both(scenario, **TOL["float64"])


def test_results_keep_the_graph_of_inputs_that_require_grad():
    """As in PyTorch, func transforms compose with .backward(): a result depending on the
    caller's tensors carries a grad_fn; one depending on nothing outside is detached."""

    def scenario(lib):
        fn, _ = api(lib)
        x, y = inputs(lib, requires_grad=True)
        plain = x.detach()
        g = fn.grad(lambda t: (t**3).sum())(x)
        w = fn.grad(lambda t: (t * y[0]).sum())(plain)  # through a closure over y
        (g.sum() + w.square().sum()).backward()
        return (
            g,
            w,
            x.grad,
            y.grad,
            fn.grad(lambda t: (t**3).sum())(plain),
            fn.jacrev(lambda t: t * 2.0)(x),
        )

    run_both(scenario, **TOL["float64"])


def test_vmap():
    def scenario(lib):
        fn, _ = api(lib)
        x, y = inputs(lib)
        batch = lib.tensor(BATCH, dtype=lib.float64)
        return (
            fn.vmap(lambda r: r.sum())(y),
            fn.vmap(lambda a, b: a * b, in_dims=(1, None))(y, x[:2]),
            fn.vmap(lambda a, b: a @ b, in_dims=(0, None))(batch, x),
            fn.vmap(lambda r: (r.exp(), r.sum()), out_dims=(1, 0))(y),
            fn.vmap(lambda d: d["a"] + d["b"], in_dims=({"a": 0, "b": None},))({"a": y, "b": x}),
            fn.vmap(fn.vmap(lambda s: s * 2.0))(batch),
            fn.vmap(lambda r: r.sum(), chunk_size=1)(y),
            fn.vmap(lambda r, k=1.0: r * k)(y, k=2.0),
        )

    run_both(scenario, **TOL["float64"])


def test_vmap_randomness_and_errors():
    def scenario(lib):
        fn, _ = api(lib)
        x, y = inputs(lib)
        lib.manual_seed(0)
        same = fn.vmap(lambda r: r * 0 + lib.rand(()), randomness="same")(y)
        different = fn.vmap(lambda r: r * 0 + lib.rand(()), randomness="different")(y)
        return (
            bool((same[0] == same[1]).all()),
            bool((different[0] == different[1]).all()),
            attempt(fn.vmap(lambda r: r + lib.rand(())), y),
            attempt(fn.vmap, lambda r: r, randomness="often"),
            attempt(fn.vmap, lambda r: r, chunk_size=0),
            attempt(fn.vmap(lambda a, b: a + b), x, y),
            attempt(fn.vmap(lambda a: a), 1.0),
            attempt(fn.vmap(lambda a: a, in_dims=(0, 0)), x),
            attempt(fn.vmap(lambda a: a, in_dims=None), x),
            attempt(fn.vmap(lambda a: a, in_dims="a"), x),
            attempt(fn.vmap(lambda a: a, in_dims=(None,)), x),
            attempt(fn.vmap(lambda a: a, in_dims=2), y),
            attempt(fn.vmap(lambda a: 1.0), x),
            attempt(fn.vmap(lambda a: a, out_dims=None), x),
        )

    run_both(scenario)


def test_errors():
    def scenario(lib):
        fn, _ = api(lib)
        x, y = inputs(lib)
        return (
            attempt(fn.grad(lambda t: t), x),
            attempt(fn.grad(lambda t: (t, t)), x),
            attempt(fn.grad(lambda t: t.sum(), has_aux=True), x),
            attempt(fn.grad(lambda t: (t.sum(), 1), has_aux=True), x),
            attempt(fn.grad(lambda t: t.sum(), argnums=1), x),
            attempt(fn.jvp, lambda t: t, x, x),
            attempt(fn.jvp, lambda t: t, (x,), (x, x)),
            attempt(fn.jvp, lambda t: t, (x,), (lib.ones(2, dtype=lib.float64),)),
            attempt(fn.vjp(lambda t: t, x)[1], lib.ones(2, dtype=lib.float64)),
            attempt(fn.grad(lambda t: (t * 2.0).sum()), lib.arange(3)),
            attempt(fn.jacrev(lambda t: (t, 1.0)), x),
            attempt(fn.vjp, lambda t: (t, 1.0), x),
        )

    outcome = run_both(scenario)
    assert all(isinstance(r, Raised) for r in outcome.value)


def test_functional_call():
    def scenario(lib):
        fn, _ = api(lib)
        x, _ = inputs(lib)
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.Tanh(), lib.nn.Linear(2, 1))
        model = model.double()
        params = {
            k: lib.tensor(RNG_PARAMS[k], dtype=lib.float64, requires_grad=True) for k in RNG_PARAMS
        }
        out = fn.functional_call(model, params, (x,))
        out.sum().backward()
        detached = {k: v.detach() for k, v in params.items()}
        loss = lambda p: fn.functional_call(model, p, x).square().sum()  # noqa: E731
        half = (
            {k: v for k, v in detached.items() if k.startswith("0")},
            {k: v for k, v in detached.items() if k.startswith("2")},
        )
        return (
            out,
            {k: v.grad for k, v in params.items()},
            fn.grad(loss)(detached),
            fn.functional_call(model, half, x),
            fn.vmap(fn.functional_call, in_dims=(None, None, 0))(
                model, detached, lib.stack([x, x * 2])
            ),
            attempt(fn.functional_call, model, {"0.weight": detached["0.weight"]}, x, strict=True),
            attempt(fn.functional_call, model, (detached, detached), x),
            bool(lib.equal(model[0].weight, model[0].weight)),  # restored, still a Parameter
            type(model[0].weight).__name__,
        )

    run_both(scenario, **TOL["float64"])


RNG_PARAMS = {
    "0.weight": RNG.standard_normal((2, 3)),
    "0.bias": RNG.standard_normal(2),
    "2.weight": RNG.standard_normal((1, 2)),
    "2.bias": RNG.standard_normal(1),
}


def test_functional_call_ties_weights():
    lib = tracegrad.torch
    model = lib.nn.Module()
    model.a = lib.nn.Linear(2, 2, bias=False)
    model.b = model.a  # the same module twice: its weight has two names
    model.forward = lambda t: model.b(model.a(t))
    w = lib.eye(2) * 3.0
    out = func.functional_call(model, {"a.weight": w}, (lib.ones(2),))
    np.testing.assert_allclose(out.numpy(), [9.0, 9.0])


def test_wired_names():
    assert tracegrad.torch.func is func
    assert tracegrad.torch.autograd.functional is autograd_functional
