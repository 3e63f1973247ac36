"""PyTorch's random sampling functions, each taking `generator=`.

Without a generator they draw from the shim's global stream (NumPy's PCG64, seeded by
`torch.manual_seed`): the same seed gives the same numbers, but not PyTorch's numbers. With a
`torch.Generator` they run ATen's CPU kernels on its Mersenne Twister, so `rand`, `randint`,
`randperm`, `bernoulli` and `multinomial` give PyTorch's numbers for the same seed, and so do
`randn` and `normal` in float64 (float32 within an ulp; see `_one_normal` for the one case that
differs); `poisson` is NumPy's sampler on that twister (same seed, same numbers, not PyTorch's).

Sampling is not reparameterised: like PyTorch, `normal`, `bernoulli` and `poisson` of tensors
that require grad return a node (`NormalBackward3`, ...) whose gradient is zero, and
`multinomial`'s integer output has none.
"""

from __future__ import annotations

import math

import numpy as np

from tracegrad import numpy as tnp
from tracegrad.torch.device import check_device
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.grad_mode import is_grad_enabled
from tracegrad.torch.ops import creation
from tracegrad.torch.ops.conventions import _named, _shape_args
from tracegrad.torch.ops.promotion import _mismatch
from tracegrad.torch.tensor import Tensor

__all__ = [
    "bernoulli",
    "multinomial",
    "normal",
    "poisson",
    "rand",
    "rand_like",
    "randint",
    "randint_like",
    "randn",
    "randn_like",
    "randperm",
]


# -- the streams ------------------------------------------------------------------------------
def _kernels(generator, name: str):
    """The `torch.Generator` whose ATen kernels draw (it owns a twister, `_bits`), or None for
    the shim's global stream (None, or `default_generator`, which draws from `creation._rng`).
    Recognised by what they hold: `tracegrad.torch.generator` builds on this package."""
    if generator is None:
        return None
    if hasattr(generator, "_bits"):
        return generator
    if hasattr(generator, "_random32"):  # default_generator
        return None
    raise TypeError(
        f"{name}(): argument 'generator' must be torch.Generator, not {type(generator).__name__}"
    )


def _default_generator():
    # generator.py builds on this package (its global stream is `creation._rng`), so the
    # ATen kernels that `multinomial` runs on the global stream are looked up at call time
    from tracegrad.torch.generator import default_generator

    return default_generator


def _uniform(g, n: int, dtype) -> np.ndarray:
    """`n` uniforms in [0, 1) of a real `dtype`: ATen's are the low 53 bits of `random64()`
    for doubles and the low 24 bits of `random()` for the other types."""
    dtype = np.dtype(dtype)
    if g is None:
        return creation._rng.random(n).astype(dtype)
    if dtype == np.float64:
        return g._uniform(n)
    bits = g._random32(n) & np.uint64((1 << 24) - 1)
    return (bits.astype(np.float64) * 2.0**-24).astype(np.float32).astype(dtype)


def _box_muller_16(data: np.ndarray, start: int) -> None:
    """ATen's `normal_fill_16`: 8 pairs from 16 uniforms, in place."""
    u1 = 1 - data[start : start + 8]
    u2 = data[start + 8 : start + 16]
    radius = np.sqrt(-2 * np.log(u1))
    theta = data.dtype.type(2.0 * math.pi) * u2
    data[start : start + 8] = radius * np.cos(theta)
    data[start + 8 : start + 16] = radius * np.sin(theta)


def _standard_normal(g, n: int, dtype) -> np.ndarray:
    """`n` standard normals of a real `dtype`, by ATen's `normal_kernel` for a Generator: 16
    or more at a time by `normal_fill` (the tail redrawn as a last block of 16), fewer one by
    one by `normal_distribution<double>`, which keeps the second of each pair for the next."""
    dtype = np.dtype(dtype)
    if g is None:
        return creation._rng.standard_normal(n).astype(dtype)
    work = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)
    if n < 16:
        return np.array([_one_normal(g) for _ in range(n)], np.float64).astype(dtype)
    data = _uniform(g, n, work).copy()
    for start in range(0, n - 15, 16):
        _box_muller_16(data, start)
    if n % 16:
        data[n - 16 :] = _uniform(g, 16, work)
        _box_muller_16(data, n - 16)
    return data.astype(dtype)


def _one_normal(g) -> float:
    # The kept second sample is used only while the twister is where it was left: a reseed
    # or set_state in between discards it, as PyTorch's does, and so (unlike PyTorch, which
    # keeps it until a reseed) do other draws in between.
    cached = g.__dict__.pop("_next_normal", None)
    if cached is not None and cached[0] == _position(g):
        return cached[1]
    u1, u2 = g._uniform(2)
    radius = math.sqrt(-2.0 * math.log1p(-u2))
    theta = 2.0 * math.pi * u1
    g.__dict__["_next_normal"] = (_position(g), radius * math.sin(theta))
    return radius * math.cos(theta)


def _position(g) -> tuple:
    state = g._bits.state["state"]
    return state["pos"], int(state["key"][state["pos"] - 1]), g._seed


def _numpy_stream(g) -> np.random.Generator:
    """NumPy's samplers over the stream (for what ATen's kernels are not reproduced for)."""
    return creation._rng if g is None else np.random.Generator(g._bits)


# -- factories --------------------------------------------------------------------------------
def _float_dtype(dtype, kernel: str) -> np.dtype:
    dtype = get_default_dtype() if dtype is None else np.dtype(dtype)
    if dtype.kind not in "fc":
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype.name}'")
    return dtype


def _real_and_complex(draw, g, shape, dtype) -> np.ndarray:
    """`draw` of a real dtype, or, for a complex one, of its two parts (PyTorch's complex
    normal has parts of variance 1/2, so that E|z|^2 = 1)."""
    n = math.prod(shape)
    if dtype.kind != "c":
        return draw(g, n, dtype).reshape(shape)
    part = np.dtype(f"f{dtype.itemsize // 2}")
    pairs = draw(g, 2 * n, part).reshape(*shape, 2)
    if draw is _standard_normal:
        pairs = pairs * part.type(math.sqrt(0.5))
    return (pairs[..., 0] + 1j * pairs[..., 1]).astype(dtype)


def rand(
    *size,
    generator=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
):
    """Uniform numbers in [0, 1)."""
    check_device(device)
    g, dtype = _kernels(generator, "rand"), _float_dtype(dtype, "check_uniform_bounds")
    values = _real_and_complex(_uniform, g, _shape_args(size), dtype)
    return creation._factory(values, None, requires_grad)


def randn(
    *size,
    generator=None,
    dtype=None,
    layout=None,
    device=None,
    requires_grad=False,
    pin_memory=False,
):
    """Standard normal numbers."""
    check_device(device)
    g, dtype = _kernels(generator, "randn"), _float_dtype(dtype, "normal_kernel_cpu")
    values = _real_and_complex(_standard_normal, g, _shape_args(size), dtype)
    return creation._factory(values, None, requires_grad)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None, **kwargs):
    """Integers in [low, high): `randint(high, size)` or `randint(low, high, size)`."""
    if size is None:
        if high is None:
            raise TypeError("randint() missing required argument 'size'")
        low, high, size = 0, low, high
    check_device(device)
    g = _kernels(generator, "randint")
    if not low < high:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    shape = tuple(size)
    n = math.prod(shape)
    values = creation._rng.integers(low, high, n) if g is None else g._randint(low, high, n)
    dtype = np.int64 if dtype is None else dtype
    return creation._factory(values.reshape(shape), dtype, kwargs.get("requires_grad", False))


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, **kwargs):
    """A random permutation of 0 ... n-1 (ATen's Fisher-Yates with a Generator)."""
    check_device(device)
    g = _kernels(generator, "randperm")
    values = creation._rng.permutation(n) if g is None else np.array(g._randperm(n), np.int64)
    return creation._factory(values, dtype or np.int64, requires_grad)


def rand_like(input, *, generator=None, dtype=None, device=None, requires_grad=False, **kwargs):
    dtype = input.dtype if dtype is None else dtype
    return rand(input.shape, generator=generator, dtype=dtype, requires_grad=requires_grad)


def randn_like(input, *, generator=None, dtype=None, device=None, requires_grad=False, **kwargs):
    dtype = input.dtype if dtype is None else dtype
    return randn(input.shape, generator=generator, dtype=dtype, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, device=None, **kwargs):
    """`randint_like(input, high)` or `randint_like(input, low, high)`, of input's dtype."""
    if high is None:
        low, high = 0, low
    dtype = input.dtype if dtype is None else dtype
    return randint(low, high, input.shape, generator=generator, dtype=dtype, **kwargs)


# -- sampling from tensors of parameters ------------------------------------------------------
def _sampled(values: np.ndarray, name: str, params) -> Tensor:
    """The tensor of `values`, with (as PyTorch) a node named `name` whose gradient with
    respect to each parameter tensor is zero: `where(False, param, out)` selects the sample
    and sends exactly nothing back (no `0 * grad`, which would be NaN for infinite grads)."""
    out = Tensor._wrap(values)
    live = [p for p in params if isinstance(p, Tensor) and p.requires_grad]
    if not live or not is_grad_enabled():
        return out
    never = np.zeros(values.shape, bool)
    for p in live:
        out = tnp.where(never, p, out)
    return _named(out, name, params)


def _floating_input(x, kernel: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{kernel}(): argument 'input' (position 1) must be Tensor")
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{x.dtype.name}'")
    return x


def bernoulli(input, p=None, *, generator=None):
    """0 or 1, drawn with probability `input` (or the number `p`) of 1, in input's dtype: a
    uniform below the probability (ATen's `bernoulli_distribution`, in float for float32)."""
    g = _kernels(generator, "bernoulli")
    if p is not None:  # torch.bernoulli(input, p): input's shape, one probability
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
        u = _uniform(g, input.numel(), np.float64)
        return Tensor._wrap((u < p).astype(input.dtype).reshape(input.shape))
    x = _floating_input(input, "bernoulli_tensor_cpu_p_")
    probs = x._cell.value
    if not np.all((probs >= 0) & (probs <= 1)):
        raise RuntimeError(
            "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
            "message be improved?  If so, please report an enhancement request to PyTorch.)"
        )
    precision = np.float64 if x.dtype == np.float64 else np.float32
    u = _uniform(g, x.numel(), precision).reshape(x.shape)
    return _sampled((u < probs).astype(x.dtype), "BernoulliBackward0", (x,))


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Indices drawn from each row's (unnormalised) weights: int64, without gradient."""
    g = _kernels(generator, "multinomial") or _default_generator()
    if not isinstance(input, Tensor) or input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if input.dtype.kind != "f":
        raise RuntimeError(
            f"multinomial only supports floating-point dtypes for input, got: {input.dtype.name}"
        )
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    rows = np.asarray(input._cell.value, np.float64).reshape(-1, input.shape[-1])
    drawn = np.array([g._multinomial(row, num_samples, replacement) for row in rows], np.int64)
    return Tensor._wrap(drawn.reshape(*input.shape[:-1], num_samples))


def poisson(input, generator=None):
    """Counts drawn with rate `input`, in input's dtype (NumPy's sampler on the stream)."""
    g = _kernels(generator, "poisson")
    x = _floating_input(input, "poisson_cpu")
    rates = x._cell.value
    if np.any(rates < 0):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    counts = _numpy_stream(g).poisson(rates.astype(np.float64)).astype(x.dtype)
    return _sampled(counts, "PoissonBackward0", (x,))


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, **kwargs):
    """`normal(mean, std)` with a tensor for either or both (broadcast), or
    `normal(mean, std, size)` of two numbers: `mean + std * randn` (PyTorch's order)."""
    g = _kernels(generator, "normal")
    tensors = [x for x in (mean, std) if isinstance(x, Tensor)]
    if not tensors:
        if size is None:
            raise TypeError(
                f"normal() received an invalid combination of arguments - got "
                f"({type(mean).__name__}, {type(std).__name__})"
            )
        _check_std(std)
        out = randn(size, generator=generator, dtype=dtype, **kwargs)
        values = out._cell.value * out.dtype.type(std) + out.dtype.type(mean)
        return creation._factory(values, None, kwargs.get("requires_grad", False))
    if size is not None:
        names = ", ".join(type(v).__name__ for v in (mean, std, size))
        raise TypeError(f"normal() received an invalid combination of arguments - got ({names})")
    out_dtype = (mean if isinstance(mean, Tensor) else std).dtype  # PyTorch's: mean's first
    if out_dtype.kind not in "fc":
        raise NotImplementedError(f"\"normal_kernel_cpu\" not implemented for '{out_dtype.name}'")
    if isinstance(std, Tensor):
        if np.any(std._cell.value < 0):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    else:
        _check_std(std)
    message = _mismatch(mean, std)
    if message is not None:
        raise RuntimeError(message)
    shape = np.broadcast_shapes(np.shape(mean), np.shape(std))
    z = _real_and_complex(_standard_normal, g, shape, out_dtype)
    values = z * _value(std, out_dtype) + _value(mean, out_dtype)
    name = {1: "NormalBackward1", 2: "NormalBackward2"}.get(
        isinstance(mean, Tensor) + 2 * isinstance(std, Tensor), "NormalBackward3"
    )
    return _sampled(values.astype(out_dtype), name, tuple(tensors))


def _check_std(std) -> None:
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")


def _value(x, dtype):
    return x._cell.value.astype(dtype) if isinstance(x, Tensor) else dtype.type(x)
