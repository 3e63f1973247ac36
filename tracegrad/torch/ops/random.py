"""PyTorch's random sampling functions, each taking `generator=`.

They draw from the `torch.Generator` given, or without one from `default_generator`, the global
stream that `torch.manual_seed` seeds (`tracegrad.torch.generator`), by ATen's CPU kernels on
its Mersenne Twister: for the same seed, `rand`, `randn`, `randint`, `randperm`, `normal`,
`bernoulli` and `multinomial` (and their `_like` forms) give PyTorch's numbers, bit for bit,
as PyTorch's x86-64 builds with AVX2 compute them (`tracegrad.torch.aten_math`), and each call
moves the stream as far as PyTorch's does. `poisson` is NumPy's sampler on the same twister
(ATen's is not reproduced: same seed, same numbers, not PyTorch's), and so moves it differently.

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
from tracegrad.torch.generator import Generator, default_generator
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
def _kernels(generator, name: str) -> Generator:
    """The generator to draw from: `generator`, or the global one for None."""
    if generator is None:
        return default_generator
    if isinstance(generator, Generator):
        return generator
    raise TypeError(
        f"{name}(): argument 'generator' must be torch.Generator, not {type(generator).__name__}"
    )


def _sample(g: Generator, kind: str, shape, dtype, a=0.0, b=1.0) -> np.ndarray:
    """`uniform_(a, b)` or `normal_(a, b)` (kind "uniform" or "normal", mean a, std b) of a new
    contiguous tensor of `shape` and `dtype`. Of a complex dtype, ATen draws its real view (the
    parts interleaved), the normal's std divided by sqrt(2) so that E|z - mean|^2 = std^2."""
    n = math.prod(shape)
    complex_ = dtype.kind == "c"
    part = np.dtype(f"f{dtype.itemsize // 2}") if complex_ else dtype
    count = 2 * n if complex_ else n
    if kind == "uniform":
        values = g._uniform(count, part, a, b)
    else:
        values = g._normal(count, part, a, b / math.sqrt(2) if complex_ else b)
    if complex_:
        values = values.view(dtype)
    return values.reshape(shape)


# -- factories --------------------------------------------------------------------------------
def _float_dtype(dtype, kernel: str) -> np.dtype:
    dtype = get_default_dtype() if dtype is None else np.dtype(dtype)
    if dtype.kind not in "fc":
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{dtype.name}'")
    return dtype


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
    values = _sample(g, "uniform", _shape_args(size), dtype)
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
    values = _sample(g, "normal", _shape_args(size), dtype)
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
    values = g._randint(low, high, n)
    dtype = np.int64 if dtype is None else dtype
    return creation._factory(values.reshape(shape), dtype, kwargs.get("requires_grad", False))


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, **kwargs):
    """A random permutation of 0 ... n-1 (ATen's Fisher-Yates)."""
    check_device(device)
    g = _kernels(generator, "randperm")
    return creation._factory(g._randperm(n), dtype or np.int64, requires_grad)


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
        drawn = g._bernoulli(input.numel(), p)
        return Tensor._wrap(drawn.astype(input.dtype).reshape(input.shape))
    x = _floating_input(input, "bernoulli_tensor_cpu_p_")
    probs = x._cell.value
    if not np.all((probs >= 0) & (probs <= 1)):
        raise RuntimeError(
            "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error "
            "message be improved?  If so, please report an enhancement request to PyTorch.)"
        )
    return _sampled(g._bernoulli_tensor(probs).astype(x.dtype), "BernoulliBackward0", (x,))


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Indices drawn from each row's (unnormalised) weights: int64, without gradient."""
    g = _kernels(generator, "multinomial")
    if not isinstance(input, Tensor) or input.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if input.dtype.kind != "f":
        raise RuntimeError(
            f"multinomial only supports floating-point dtypes for input, got: {input.dtype.name}"
        )
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    weights = input._cell.value
    rows = weights.astype(np.float32 if weights.dtype == np.float16 else weights.dtype)
    rows = rows.reshape(-1, input.shape[-1])
    drawn = np.array([g._multinomial(row, num_samples, replacement) for row in rows], np.int64)
    return Tensor._wrap(drawn.reshape(*input.shape[:-1], num_samples))


def poisson(input, generator=None):
    """Counts drawn with rate `input`, in input's dtype (NumPy's sampler on the stream)."""
    g = _kernels(generator, "poisson")
    x = _floating_input(input, "poisson_cpu")
    rates = x._cell.value
    if np.any(rates < 0):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    counts = g._numpy().poisson(rates.astype(np.float64)).astype(x.dtype)
    return _sampled(counts, "PoissonBackward0", (x,))


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, **kwargs):
    """`normal(mean, std)` with a tensor for either or both (broadcast), or
    `normal(mean, std, size)` of two numbers, with ATen's steps and roundings."""
    g = _kernels(generator, "normal")
    tensors = [x for x in (mean, std) if isinstance(x, Tensor)]
    if not tensors:
        if size is None:
            raise TypeError(
                f"normal() received an invalid combination of arguments - got "
                f"({type(mean).__name__}, {type(std).__name__})"
            )
        _check_std(std)
        check_device(kwargs.get("device"))
        dtype = _float_dtype(dtype, "normal_kernel_cpu")
        values = _sample(g, "normal", _shape_args((size,)), dtype, mean, std)
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
    if isinstance(std, Tensor):  # ATen: normal_(0, 1), then mul_(std) and add_(mean)
        z = _sample(g, "normal", shape, out_dtype)
        values = z * _value(std, out_dtype) + _value(mean, out_dtype)
    else:  # normal_(0, std), then add_(mean)
        values = _sample(g, "normal", shape, out_dtype, 0.0, std) + _value(mean, out_dtype)
    name = {1: "NormalBackward1", 2: "NormalBackward2"}.get(
        isinstance(mean, Tensor) + 2 * isinstance(std, Tensor), "NormalBackward3"
    )
    return _sampled(values.astype(out_dtype), name, tuple(tensors))


def _check_std(std) -> None:
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")


def _value(x, dtype):
    return x._cell.value.astype(dtype) if isinstance(x, Tensor) else dtype.type(x)
