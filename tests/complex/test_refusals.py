"""What NumPy refuses on complex values tracegrad refuses with NumPy's own words; what NumPy
accepts and JAX refuses (`clip`, `median`, `partition`: NumPy orders complex values
lexicographically) tracegrad computes with NumPy's bits and the derivative of NumPy's function;
`check_grads` sees a wrong complex rule (the conjugated cotangent of PyTorch's convention), and
forward mode refuses a rule that gives a real value a complex tangent.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
from tracegrad import extend
from tracegrad.testing import assert_bitwise_equal, check_grads

Z = np.array([0.3 + 0.7j, -1.2 + 0.4j, 0.8 - 0.5j])

# NumPy's ufuncs with no complex loop
UNARY = ["floor", "ceil", "trunc", "cbrt", "fabs", "deg2rad", "rad2deg", "signbit", "invert"]
BINARY = [
    "arctan2", "hypot", "logaddexp", "logaddexp2", "remainder", "fmod", "copysign",
    "floor_divide", "heaviside", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift",
    "right_shift", "gcd", "lcm",
]  # fmt: skip


def _numpy_message(call) -> str:
    with pytest.raises(TypeError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("name", UNARY + BINARY + ["ldexp"])
def test_numpy_refusals_stay_refusals_with_numpys_message(name):
    fn = getattr(np, name)
    args = (Z,) if name in UNARY else (Z, 2) if name == "ldexp" else (Z, Z[::-1])
    numpy_says = _numpy_message(lambda: fn(*args))
    # traced abstractly, and under grad of a real input made complex
    with pytest.raises(TypeError, match=f"^{name}: NumPy has no loop for inputs of dtype") as info:
        tg.make_graph(lambda *a: fn(*a))(*args)
    assert numpy_says in str(info.value)
    x = np.array([0.5, 1.5, -2.0])
    with pytest.raises(TypeError) as info:
        tg.grad(lambda x: np.real(np.sum(fn(x * (1 + 1j), *args[1:]))))(x)
    assert numpy_says in str(info.value)


def test_complex_clip_follows_numpy():
    """NumPy 2 clips complex values in lexicographic order (JAX refuses complex clip): the
    bits are NumPy's, the derivative selects as NumPy's minimum(maximum(x, lo), hi) does."""
    lo, hi = -0.7 + 0.2j, 0.5 + 0.0j

    def f(z):
        return np.clip(z, lo, hi)

    assert_bitwise_equal(tg.make_graph(f)(Z)(Z), f(Z))
    ct = np.array([1.0 - 2j, 0.5 + 1j, -1.5 + 0.5j])
    _, vjp_fn = tg.vjp(f, Z)
    # Z[0] is inside, Z[1] below lo (lexicographically), Z[2] above hi: only Z[0] moves
    np.testing.assert_array_equal(vjp_fn(ct)[0], [ct[0], 0, 0])
    check_grads(f, (Z,), order=2)


def test_check_grads_catches_a_conjugated_complex_rule():
    """A multiply-by-constant primitive whose vjp conjugates (PyTorch's convention, not JAX's):
    reverse mode fails, naming the mode and the argument; its right jvp passes."""
    c = 0.6 + 0.8j

    def bad_vjp(bar, x, *, out):
        return (bar * np.conj(c),)

    prim = extend.Primitive(
        "times_c_conjugated_vjp",
        impl=lambda x: x * c,
        shape=lambda x: extend.Aval(x.shape, np.result_type(x.dtype, 1j)),
        jvp=lambda primals, tangents, *, out: tangents[0] * c,
        vjp=bad_vjp,
    )
    try:
        with pytest.raises(AssertionError, match=r"order 1, mode 'rev'.*argument 0"):
            check_grads(lambda z: prim.bind(z), (Z,), order=1)
        check_grads(lambda z: prim.bind(z), (Z,), order=1, modes="fwd")  # the jvp is right
    finally:
        extend.unregister(prim)


@pytest.mark.parametrize("tangent", ["array", "python"])
def test_a_rule_giving_a_real_value_a_complex_tangent_is_refused(tangent):
    """A cast would hide the wrong rule's imaginary part: forward mode names the primitive."""

    def bad_jvp(primals, tangents, *, out):
        return tangents[0] * (1j if tangent == "python" else np.complex128(1j))

    prim = extend.Primitive(
        f"doubles_with_a_complex_tangent_{tangent}",
        impl=lambda x: x * 2.0,
        shape=lambda x: x,
        jvp=bad_jvp if tangent == "array" else lambda primals, tangents, *, out: 1j,
        vjp=lambda bar, x, *, out: (bar * 2.0,),
    )
    x = np.array([0.5, 1.5]) if tangent == "array" else np.float64(0.5)  # (1j is 0-d)
    try:
        with pytest.raises(
            ValueError,
            match=f"internal error: the jvp of {prim.name} produced a complex tangent for a "
            "value of dtype float64",
        ):
            tg.jvp(lambda x: prim.bind(x), (x,), (np.ones_like(x),))
    finally:
        extend.unregister(prim)


def test_complex_parts_without_a_complex_dtype_are_refused():
    """`complex(re, im)` (the shim's torch.complex) of float16 parts: NumPy has no complex32."""
    from tracegrad.primitives.complex_parts import complex_

    half = np.ones(2, np.float16)
    with pytest.raises(TypeError, match="complex: NumPy has no complex dtype with float16 parts"):
        tg.make_graph(complex_)(half, half)


@pytest.mark.parametrize(
    "f",
    [
        lambda z: np.median(z),  # jax.numpy refuses complex quantiles
        lambda z: np.partition(z, 2)[2:],  # jax.numpy has no complex partition
        lambda z: np.unique(z) * np.arange(4.0),  # JAX's unique passes no gradient at all
    ],
    ids=["median", "partition", "unique"],
)
def test_what_jax_refuses_or_stops_follows_numpy_and_finite_differences(f):
    """NumPy orders complex values lexicographically; the derivative follows its choice."""
    z = np.array([0.3 + 0.7j, -1.2 + 0.4j, 0.8 - 0.5j, 0.1 + 0.2j])
    assert_bitwise_equal(tg.vjp(f, z)[0], f(z))  # (concrete: unique's shape is the values')
    check_grads(f, (z,), order=2)
