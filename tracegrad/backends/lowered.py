"""The NumPy names generated code calls, lowered to another array library's namespace.

The code generator writes one NumPy call per node (`np.sin(a)`, `np.add.reduce(b, axis=(0,),
keepdims=False)`). For NumPy that text runs as it is. For another library the same text runs
with `np` bound to a namespace built here (`namespace(names)`) holding exactly the names the
function calls, each resolved in this order:

1. a function of this module written for the name (`LOWERED`): what the Python array API
   standard lacks or spells differently in its arguments (`add.reduce` is `sum`, `dot`,
   `expand_dims` over several axes), and the functional forms of the writes NumPy does in
   place (`scatter`, `pad_strided`), per library where the libraries differ;
2. the standard's name for it where only the name differs (`RENAMED`: `arccos` -> `acos`);
3. the name itself in the array-API namespace `xp` (`array_api_compat`'s for the library);
4. the name in the library's own module `lib` (`dask.array.einsum`, `jax.numpy.pad`) for the
   functions the standard does not have but the library does.

A name none of these resolves has no lowering for that library: `resolve` raises KeyError and
the code generator turns it into an error naming the primitive and the library.

This module is self-contained on purpose (it imports only NumPy, for dtypes): `export(...,
xp="jax.numpy")` writes its text into the exported module, which then runs without
tracegrad. `bind(xp, lib, name)` sets the library for the functions below; the code generator
loads one copy of this text per library.
"""

import importlib
import math

import numpy

xp = None  # the array-API namespace (bound by `bind`)
lib = None  # the library's own module: dask.array, jax.numpy, cupy, array_api_strict
LIB = ""  # its name: "dask", "jax", "cupy", "array_api_strict"


def bind(xp_, lib_, name):
    global xp, lib, LIB
    xp, lib, LIB = xp_, lib_, name


# -- the standard's names for NumPy's -------------------------------------------------------

RENAMED = {
    "arccos": "acos",
    "arccosh": "acosh",
    "arcsin": "asin",
    "arcsinh": "asinh",
    "arctan": "atan",
    "arctanh": "atanh",
    "arctan2": "atan2",
    "power": "pow",
    "conjugate": "conj",
    "absolute": "abs",
    "fabs": "abs",
    "rint": "round",
    "invert": "bitwise_invert",
    "left_shift": "bitwise_left_shift",
    "right_shift": "bitwise_right_shift",
    "concatenate": "concat",
    "bool_": "bool",
}

# -- functions the standard lacks or calls with other arguments -----------------------------


def dtype(name):
    # generated code writes a dtype param as np.dtype('float64')
    return getattr(xp, name) if LIB == "array_api_strict" else numpy.dtype(name)


def _reduce(name, x, axis, keepdims):
    if LIB == "dask" and 0 in x.shape:
        # dask's reductions get the shapes of empty arrays wrong; an empty array holds no
        # values, so NumPy's result on a stand-in of its shape (no memory) is the result
        empty = numpy.zeros(x.shape, numpy.dtype(x.dtype))
        return lib.asarray(getattr(numpy, name)(empty, axis=axis, keepdims=keepdims))
    if axis == () and name in ("max", "min"):  # over no axes: x itself
        return x
    return getattr(xp, name)(x, axis=axis, keepdims=keepdims)


def add_reduce(x, axis=None, keepdims=False):
    return _reduce("sum", x, axis, keepdims)


def multiply_reduce(x, axis=None, keepdims=False):
    return _reduce("prod", x, axis, keepdims)


def maximum_reduce(x, axis=None, keepdims=False):
    return _reduce("max", x, axis, keepdims)


def minimum_reduce(x, axis=None, keepdims=False):
    return _reduce("min", x, axis, keepdims)


def asarray(x, dtype=None):
    return xp.asarray(x) if dtype is None else xp.asarray(x, dtype=dtype)


def array(x, copy=True, order="C"):
    return xp.asarray(x, copy=True) if LIB == "array_api_strict" else xp.asarray(x)


def astype(x, dtype):
    return xp.astype(xp.asarray(x), dtype)


def ascontiguousarray(x):
    return x  # memory layout is the library's business


def expand_dims(x, axis):
    if isinstance(axis, int):
        return xp.expand_dims(x, axis=axis)
    rank = x.ndim + len(axis)
    where = sorted(a % rank for a in axis)
    shape = list(x.shape)
    for a in where:
        shape.insert(a, 1)
    return xp.reshape(x, tuple(shape))


def flip(x, axis=None):
    if axis == ():  # NumPy flips over no axes: x itself
        return x
    return xp.flip(x, axis=axis)


def squeeze(x, axis=None):
    return xp.squeeze(x, axis=tuple(range(x.ndim)) if axis is None else axis)


def transpose(x, axes=None):
    axes = tuple(range(x.ndim))[::-1] if axes is None else axes
    return xp.permute_dims(x, tuple(axes))


def dot(a, b):
    if a.ndim == 0 or b.ndim == 0:
        return xp.multiply(a, b)
    if b.ndim <= 2:
        return xp.matmul(a, b)
    return xp.tensordot(a, b, axes=((a.ndim - 1,), (b.ndim - 2,)))


def reciprocal(x):
    if xp.isdtype(x.dtype, "integral"):  # NumPy's integer 1 // x: 1, -1 or 0
        return xp.where(xp.abs(x) == 1, x, xp.zeros_like(x))
    return xp.divide(1, x)


def deg2rad(x):
    return xp.multiply(x, numpy.pi / 180)


def rad2deg(x):
    return xp.multiply(x, 180 / numpy.pi)


def exp2(x):
    return xp.pow(2, x)


def _arrays(a, b):
    # a Python scalar beside an array, as an array of the array's dtype (NEP 50's weak scalar)
    if not hasattr(a, "dtype"):
        a = xp.asarray(a, dtype=b.dtype)
    if not hasattr(b, "dtype"):
        b = xp.asarray(b, dtype=a.dtype)
    return a, b


def fmax(a, b):
    # the larger, ignoring a NaN beside a number (NaN only where both are)
    a, b = _arrays(a, b)
    return xp.where(xp.isnan(b), a, xp.where(xp.isnan(a), b, xp.maximum(a, b)))


def fmin(a, b):
    a, b = _arrays(a, b)
    return xp.where(xp.isnan(b), a, xp.where(xp.isnan(a), b, xp.minimum(a, b)))


def fmod(a, b):
    # C's fmod takes the dividend's sign; the standard's remainder takes the divisor's, and
    # is exact on magnitudes
    a, b = _arrays(a, b)
    if xp.isdtype(a.dtype, "real floating"):
        return xp.copysign(xp.remainder(xp.abs(a), xp.abs(b)), a)
    # integers: |a| overflows at the most negative; the remainder moved to a's sign instead
    r = xp.remainder(a, b)
    return xp.where((r != 0) & ((a < 0) != (b < 0)), r - b, r)


def logaddexp2(a, b):
    a, b = _arrays(a, b)
    m = xp.maximum(a, b)
    tail = xp.log1p(xp.pow(2.0, -xp.abs(a - b))) / math.log(2)
    return xp.where(a == b, a + 1, m + tail)  # (equal infinities: a + 1 is a)


def sort(x, axis=-1, kind=None):
    # NumPy's default kind orders ties as it likes; the standard's unstable sort may order
    # them otherwise (the sorted values are the same)
    return xp.sort(x, axis=axis, stable=kind == "stable")


def argsort(x, axis=-1, kind=None):
    return xp.argsort(x, axis=axis, stable=kind == "stable")


def cumsum(x, axis=None):
    return xp.cumulative_sum(x, axis=axis)


def cumprod(x, axis=None):
    return xp.cumulative_prod(x, axis=axis)


def broadcast_to(x, shape):
    if LIB != "dask":
        return xp.broadcast_to(x, shape)
    # dask makes a new axis one chunk: a scalar spread over a batch of 10^7 rows would then
    # be one chunk of 10^7 elements in the next elementwise step. Axes x has keep its chunks;
    # new and stretched ones get dask's automatic sizes.
    x = lib.asarray(x)
    lead = len(shape) - x.ndim
    chunks = tuple(
        "auto" if i < lead or x.shape[i - lead] != n else x.chunks[i - lead]
        for i, n in enumerate(shape)
    )
    chunks = lib.core.normalize_chunks(chunks, tuple(shape), dtype=x.dtype)
    return lib.broadcast_to(x, tuple(shape), chunks=chunks)


def reshape(x, shape):
    if LIB != "dask":
        return xp.reshape(x, shape)
    try:
        return lib.reshape(x, shape)
    except NotImplementedError:
        raise NotImplementedError(
            f"reshape: dask cannot reshape an array of shape {x.shape} with chunks {x.chunks} "
            f"to {shape} without gathering a chunked axis into one chunk, which tracegrad "
            "does not do silently; chunk the input so that the reshape splits or merges "
            "whole chunks (or rechunk it)"
        ) from None


def split(x, indices, axis=0):
    bounds = [0, *indices, x.shape[axis]]
    where = [slice(None)] * x.ndim
    parts = []
    for start, stop in zip(bounds[:-1], bounds[1:]):
        where[axis] = slice(start, stop)
        parts.append(x[tuple(where)])
    return parts


def einsum(subscripts, *operands, optimize=False, dtype=None, casting=None):
    if dtype is not None:  # computed in `dtype`, as NumPy's einsum(dtype=, casting="unsafe")
        operands = [xp.astype(xp.asarray(o), dtype) for o in operands]
    return lib.einsum(subscripts, *operands)


# -- the writes NumPy does in place, as functions of the array written into ----------------


def getitem(x, index):
    """x[index] with NumPy's meaning. dask, JAX and CuPy index as NumPy does; the standard
    (array_api_strict) asks for a trailing ellipsis where an index covers fewer axes than x
    has, and has two advanced forms: an integer array for every axis, and (written as `take`)
    one 1-d integer array with every other axis taken whole."""
    if LIB == "dask":
        return _dask_getitem(x, index)
    if LIB != "array_api_strict":
        return x[index]
    arrays = [k for k, item in enumerate(index) if hasattr(item, "dtype")]
    if not arrays:  # (identity tests: `in` would compare arrays with ==)
        return x[index if any(i is Ellipsis for i in index) else (*index, Ellipsis)]
    if len(arrays) == len(index) == x.ndim:  # an integer array for every axis: standard
        return x[index]
    whole = all(
        isinstance(item, slice)
        and item.start in (0, None)
        and item.step in (1, None)
        and (item.stop is None or item.stop >= x.shape[k])
        for k, item in enumerate(index)
        if k not in arrays
    )
    if len(arrays) == 1 and whole and index[arrays[0]].ndim == 1:
        return xp.take(x, index[arrays[0]], axis=arrays[0])
    raise NotImplementedError(
        f"getitem: the index {index!r} is outside what the array API standard indexes (one "
        "1-d integer array with every other axis whole, integer arrays for every axis, or "
        "slices and integers); index this "
        "way on NumPy, dask, JAX or CuPy arrays"
    )


def _dask_getitem(x, index):
    # dask indexes as NumPy does, except two corners its own code gets wrong: an empty
    # integer array (the result is empty: zeros of NumPy's shape for it, from a zero-strided
    # stand-in of x) and a new axis beside an integer array (inserted into x first, then
    # taken whole by a slice)
    arrays = [i for i in index if hasattr(i, "dtype")]
    if not arrays or not all(isinstance(a, numpy.ndarray) for a in arrays):
        return x[index]  # (dask's own index arrays: a NumPy stand-in would compute them)
    shape = numpy.broadcast_to(numpy.zeros((), x.dtype), x.shape)[index].shape  # NumPy's
    if any(a.size == 0 for a in arrays):
        return lib.zeros(shape, dtype=x.dtype)
    if len(arrays) == 1 and arrays[0].ndim > 1 and all(i is not None for i in index):
        # one integer array of several axes: dask takes only 1-d ones; its axes come out in
        # the array's place, so the 1-d take's axis reshapes into them
        flat = tuple(i.reshape(-1) if hasattr(i, "dtype") else i for i in index)
        return lib.reshape(x[flat], shape)
    if all(i is not None for i in index) or any(a.dtype == bool for a in arrays):
        return x[index]
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis)
    shape, taken, axis = [], [], 0
    for item in index:
        if item is None:
            shape.append(1)
            taken.append(slice(None))
        elif item is Ellipsis:
            rest = x.ndim - consumed
            shape.extend(x.shape[axis : axis + rest])
            axis += rest
            taken.append(Ellipsis)
        else:
            shape.append(x.shape[axis])
            axis += 1
            taken.append(item)
    shape.extend(x.shape[axis:])
    return lib.reshape(x, tuple(shape))[tuple(taken)]


def pad_strided(x, shape, starts, strides):
    """zeros of `shape` with `x` in the strided window at `starts` (the vjp of a slice)."""
    x = xp.asarray(x)
    # (the stop just past the last element: the standard refuses one beyond the axis)
    where = tuple(slice(s, s + k * (n - 1) + 1, k) for s, k, n in zip(starts, strides, x.shape))
    out = xp.zeros(shape, dtype=x.dtype)
    if x.size == 0:  # (dask refuses to assign an empty value)
        return out
    if LIB == "jax":
        return out.at[where].set(x)
    out[where] = x
    return out


def scatter(mode, x, where, updates):
    """x with `updates` combined at `where` ("set", "add", "multiply", "min", "max"),
    repeated indices accumulating as NumPy's `ufunc.at` does."""
    if LIB == "jax":
        ref = x.at[where]
        return {
            "set": ref.set,
            "add": ref.add,
            "multiply": ref.multiply,
            "min": ref.min,
            "max": ref.max,
        }[mode](updates)
    if LIB == "dask":
        return _dask_scatter(mode, x, where, updates)
    if LIB == "cupy":
        cupyx = importlib.import_module("cupyx")
        out = x.copy()
        if mode == "set":
            out[where] = updates
        elif mode == "add":
            cupyx.scatter_add(out, where, updates)
        elif mode == "max":
            cupyx.scatter_max(out, where, updates)
        elif mode == "min":
            cupyx.scatter_min(out, where, updates)
        else:
            raise NotImplementedError("cupy has no scatter-multiply (np.multiply.at)")
        return out
    if mode == "add":
        return _one_hot_scatter_add(x, where, updates)
    raise NotImplementedError(f"{LIB} has no scatter ({mode} at an index)")


def _one_hot_scatter_add(x, where, updates):
    # the standard has no accumulating write: each place sums the updates whose one-hot row
    # selects it (k x n memory for k updates into n places: small arrays only), with `where`
    # rather than a product, so an inf or NaN update reaches only its own place
    n = math.prod(x.shape)
    places = getitem(xp.reshape(xp.arange(n), x.shape), where)
    updates = xp.broadcast_to(xp.asarray(updates, dtype=x.dtype), places.shape)
    hits = xp.reshape(places, (-1, 1)) == xp.arange(n)
    chosen = xp.where(hits, xp.reshape(updates, (-1, 1)), xp.zeros((), dtype=x.dtype))
    return x + xp.reshape(xp.sum(chosen, axis=0), x.shape)


def _dask_scatter(mode, x, where, updates):
    # in one chunk: an index may send any update to any place of the result, so the result
    # is built by NumPy's ufunc.at in one task (listed in the docs among the operations that
    # gather their operands into one chunk)
    arrays = [x, updates, *(w for w in where if hasattr(w, "dtype"))]
    places = [i for i, w in enumerate(where) if hasattr(w, "dtype")]
    index = list(where)

    def run(x, updates, *index_arrays):
        out = numpy.array(x, copy=True)
        full = list(index)
        for i, arr in zip(places, index_arrays):
            full[i] = arr
        if mode == "set":
            out[tuple(full)] = updates
        else:
            ufunc = {
                "add": numpy.add,
                "multiply": numpy.multiply,
                "min": numpy.minimum,
                "max": numpy.maximum,
            }
            ufunc[mode].at(out, tuple(full), updates)
        return out

    task = importlib.import_module("dask").delayed(run, pure=True)(*arrays)
    return lib.from_delayed(task, shape=tuple(x.shape), dtype=x.dtype)


def scatter_add(shape, where, updates):
    """zeros of `shape` with `updates` added at `where` (NumPy's np.add.at on zeros)."""
    updates = xp.asarray(updates)
    return scatter("add", xp.zeros(shape, dtype=updates.dtype), where, updates)


def insert(x, index, value, axis):
    # only the form the cumulative primitives write: `value` before the first element
    if index != 0:
        raise NotImplementedError("np.insert is lowered only at index 0")
    shape = list(x.shape)
    shape[axis] = 1
    return xp.concat([xp.full(tuple(shape), value, dtype=x.dtype), x], axis=axis)


def delete(x, index, axis):
    # only the form the cumulative primitives write: drop the last element
    if index != -1:
        raise NotImplementedError("np.delete is lowered only at index -1")
    where = [slice(None)] * x.ndim
    where[axis] = slice(0, x.shape[axis] - 1)
    return x[tuple(where)]


LOWERED = {
    "dtype": dtype,
    "add.reduce": add_reduce,
    "multiply.reduce": multiply_reduce,
    "maximum.reduce": maximum_reduce,
    "minimum.reduce": minimum_reduce,
    "max": maximum_reduce,
    "min": minimum_reduce,
    "asarray": asarray,
    "array": array,
    "astype": astype,
    "ascontiguousarray": ascontiguousarray,
    "expand_dims": expand_dims,
    "squeeze": squeeze,
    "flip": flip,
    "transpose": transpose,
    "dot": dot,
    "reciprocal": reciprocal,
    "deg2rad": deg2rad,
    "rad2deg": rad2deg,
    "exp2": exp2,
    "cumsum": cumsum,
    "sort": sort,
    "argsort": argsort,
    "fmax": fmax,
    "fmin": fmin,
    "fmod": fmod,
    "logaddexp2": logaddexp2,
    "cumprod": cumprod,
    "split": split,
    "reshape": reshape,
    "broadcast_to": broadcast_to,
    "einsum": einsum,
    "insert": insert,
    "delete": delete,
    "True_": True,
    "False_": False,
    # the functional writes (written by the backend emit rules, never by NumPy's)
    "tg_pad_strided": pad_strided,
    "tg_getitem": getitem,
    "tg_scatter": scatter,
    "tg_scatter_add": scatter_add,
}

# what needs the library's own function even where the standard has the name: `einsum`
# reads `lib`, and a library without einsum (array_api_strict) has no lowering for it
NEEDS_LIB = {"einsum": "einsum", "tg_scatter": None}


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """SciPy's logsumexp in the standard's functions: the largest term factored out, the
    empty and all -inf cases as SciPy gives them."""
    if return_sign:
        raise NotImplementedError("logsumexp(return_sign=True) is lowered only for JAX")
    m = xp.max(a, axis=axis, keepdims=True) if a.size else xp.zeros((1,) * a.ndim, a.dtype)
    m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
    terms = xp.exp(a - m) if b is None else b * xp.exp(a - m)
    out = xp.log(xp.sum(terms, axis=axis, keepdims=True)) + m
    return (
        out
        if keepdims
        else xp.squeeze(out, axis=axis if axis is not None else tuple(range(a.ndim)))
    )


def special(name):
    """SciPy's special function `name` for the bound library: JAX's and CuPy's own, SciPy's
    ufuncs for dask (which take dask arrays, chunk by chunk), `logsumexp` in the standard."""
    if name == "logsumexp" and LIB != "jax":
        return logsumexp
    module = {
        "jax": "jax.scipy.special",
        "cupy": "cupyx.scipy.special",
        "dask": "scipy.special",
    }.get(LIB)
    if LIB == "jax":
        name = {"psi": "digamma"}.get(name, name)
    fn = None if module is None else getattr(importlib.import_module(module), name, None)
    if fn is None or (LIB == "dask" and not isinstance(fn, numpy.ufunc)):
        raise KeyError(name)
    return fn


def resolve(name):
    """The lowering of NumPy's (dotted) `name` for the bound library; KeyError if none."""
    if name.startswith("scipy.special."):
        return special(name[len("scipy.special.") :])
    if name in NEEDS_LIB:
        needed = NEEDS_LIB[name]
        if needed is not None and not hasattr(lib, needed):
            raise KeyError(name)
        if needed is None and LIB not in ("jax", "dask", "cupy"):  # (scatter-add: any)
            raise KeyError(name)
    if name in LOWERED:
        return LOWERED[name]
    for space in (xp, lib):
        value = space
        for part in RENAMED.get(name, name).split("."):
            value = getattr(value, part, None)
            if value is None:
                break
        if value is not None:
            return value
    raise KeyError(name)


class _Names:
    """A namespace of lowered names; a name that is also a prefix (`add` beside
    `add.reduce`) is callable and holds its children as attributes."""

    def __init__(self, call=None):
        self._call = call

    def __call__(self, *args, **kwargs):
        return self._call(*args, **kwargs)


def namespace(names):
    """The object generated code reads as `np`, holding exactly `names` (dotted)."""
    root = _Names()
    for name in sorted(names, key=lambda n: n.count(".")):
        node = root
        *head, last = name.split(".")
        for part in head:
            child = getattr(node, part, None)
            if not isinstance(child, _Names):
                child = _Names(child)
                setattr(node, part, child)
            node = child
        if not isinstance(getattr(node, last, None), _Names):
            setattr(node, last, resolve(name))
        else:
            getattr(node, last)._call = resolve(name)
    return root
