"""Hypothesis-drawn calls of NumPy's fourteen transforms: an input and NumPy's keywords.

`draw_call(data, name, dtypes)` picks a shape, an axis or axes (negative ones too), `n` or
`s` (cropping, padding or None), `norm` (None and the three names) and a dtype among those
the name accepts, so a test can run `np.fft.<name>(a, **kwargs)` and ours on the same call.
Values come from a drawn seed (normal, so well away from anything special: the transforms
are linear and have no kinks).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
N_D = ("fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2")
NAMES = ONE_D + N_D
#: names whose input must be real (NumPy's real transforms have no complex loop)
REAL_IN = ("rfft", "ihfft", "rfftn", "rfft2")
#: names whose default length along the (last) axis is 2 * (m - 1): m must be at least 2
HALF_IN = ("irfft", "hfft", "irfftn", "irfft2")
NORMS = (None, "backward", "ortho", "forward")
FLOATS = (np.float32, np.float64)
COMPLEX = (np.complex64, np.complex128)
INTS = (np.int32, np.int64, np.bool_)


def dtypes_for(name: str, *, ints: bool = False) -> tuple:
    """The float (and complex, where NumPy takes them) dtypes of `name`'s input."""
    out = FLOATS + (() if name in REAL_IN else COMPLEX)
    return out + (INTS if ints else ())


def values(seed: int, shape, dtype) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        return rng.integers(-4, 5, shape).astype(dtype)
    x = rng.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _length(data, label: str):
    return data.draw(st.one_of(st.none(), st.integers(1, 7)), label=label)


def _shape(data, min_dims: int):
    return tuple(
        data.draw(st.lists(st.integers(1, 5), min_size=min_dims, max_size=3), label="shape")
    )


def _one_d(data, name: str):
    shape = _shape(data, 1)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1), label="axis")
    n = _length(data, "n")
    if n is None and name in HALF_IN and shape[axis] < 2:
        shape = _with_side(shape, axis, 2)
    return shape, dict(n=n, axis=axis)


def _with_side(shape, axis: int, side: int) -> tuple:
    out = list(shape)
    out[axis] = side
    return tuple(out)


def _n_d(data, name: str):
    two = name.endswith("2")
    shape = _shape(data, 2 if two else 1)
    ndim = len(shape)
    k = (2, 2) if two else (1, ndim)
    axes = data.draw(
        st.one_of(
            st.none(),
            st.permutations(range(ndim)).flatmap(
                lambda p: st.integers(*k).map(lambda m: tuple(p[:m]))
            ),
        ),
        label="axes",
    )
    kwargs = {} if axes is None else dict(axes=axes)
    used = axes if axes is not None else (ndim - 2, ndim - 1) if two else tuple(range(ndim))
    if axes is not None and data.draw(st.booleans(), label="negative axes"):
        kwargs["axes"] = tuple(a - ndim for a in axes)
    if axes is not None or two:
        s = data.draw(st.one_of(st.none(), st.just(len(used))), label="with s")
        if s is not None:
            kwargs["s"] = tuple(data.draw(st.integers(1, 6), label="s entry") for _ in used)
    if "s" not in kwargs and name in HALF_IN and shape[used[-1]] < 2:
        shape = _with_side(shape, used[-1], 2)
    return shape, kwargs


def draw_call(data, name: str, dtypes) -> tuple[np.ndarray, dict]:
    """(input, keywords) of one call of `np.fft.<name>`."""
    shape, kwargs = (_one_d if name in ONE_D else _n_d)(data, name)
    kwargs["norm"] = data.draw(st.sampled_from(NORMS), label="norm")
    dtype = data.draw(st.sampled_from(dtypes), label="dtype")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    return values(seed, shape, dtype), kwargs


def cotangent_like(out, seed: int) -> np.ndarray:
    """A random array with `out`'s shape and dtype (the weights of a real loss)."""
    return values(seed, np.shape(out), np.asarray(out).dtype)
