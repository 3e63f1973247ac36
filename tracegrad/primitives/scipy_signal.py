"""SciPy's convolutions as primitives: convolve, correlate, fftconvolve, convolve2d and
correlate2d, each value SciPy's own call (method and boundary passed through as given).

Every one is `crop(C(a', k(b)))`: the full n-d convolution C of `a` (conjugated where SciPy
conjugates it) with a kernel made of `b` (itself for the convolutions; flipped and conjugated for
the correlations), cut to the mode's window (all of it, `a`'s size, or the entries that see no
padding) at the centre SciPy puts it (correlate2d's 'same' rounds the other way). Each is
bilinear over the reals, so jvp = op(da, b) + op(a, db) with the same primitive, and the vjp
embeds the cotangent in the full output's zeros and convolves it in 'valid' mode with the
flipped other operand (JAX's convention: the transpose, conjugates only where an operand
enters conjugated). The rules call the family's own convolution, so they differentiate again.
convolve2d's boundaries other than zeros convolve `a` extended by np.pad's rule (see there).
vmap: fftconvolve batches with one more broadcast axis (no loop); the others take a leading
stack of `batch_dims` axes, which is one fftconvolve where the method is (or 'auto' picks)
'fft', else one SciPy call per example, as a loop makes it (no batched SciPy call has a
loop's bits there). Both give exactly a loop's bits. SciPy is imported on first use, never by
`import tracegrad`.
"""

from __future__ import annotations

import functools
import importlib
import weakref

import attrs
import numpy as np

from tracegrad.core import bind
from tracegrad.ir.primitive import READS_INPUTS, Primitive, rule_for
from tracegrad.ir.types import Aval, carries_derivative, dtype_of, shape_of
from tracegrad.primitives import series
from tracegrad.primitives.batching import batch_size, materialize
from tracegrad.primitives.elementwise import astype
from tracegrad.primitives.linalg._common import fit, mT
from tracegrad.primitives.products import conj, matmul
from tracegrad.primitives.slicing import pad_strided
from tracegrad.primitives.views import expand_dims, flip

#: the params `mode`, `method` and `boundary` are codes, indices into these (`mode` by NumPy's
#: own codes, as np.correlate's primitive): the code generator writes ints, never strings
MODES = ("valid", "same", "full")
METHODS = ("auto", "direct", "fft")
BOUNDARIES = ("fill", "wrap", "symm")
_CHOICES = {"mode": MODES, "method": METHODS, "boundary": BOUNDARIES}


def _code(name: str, key: str, value) -> int:
    """The code of a `mode` / `method` / `boundary` name, or SciPy's error for another value."""
    choices = _CHOICES[key]
    if isinstance(value, str) and value in choices:
        return choices.index(value)
    listed = ", ".join(repr(c) for c in choices)
    raise ValueError(f"scipy.signal.{name}: acceptable {key} flags are {listed}; got {value!r}")


def _named(params) -> dict:
    """`params` with the codes as SciPy's names."""
    return {k: _CHOICES[k][v] if k in _CHOICES else v for k, v in params.items()}


def _check_codes(name: str, params) -> None:
    for key, choices in _CHOICES.items():
        v = params.get(key, 0)
        if type(v) is not int or not 0 <= v < len(choices):
            raise ValueError(
                f"scipy.signal.{name}: the param {key} must be an index into {choices}, got {v!r}"
            )


@functools.cache
def _ss():
    """scipy.signal, imported on first use."""
    return importlib.import_module("scipy.signal")


# -- geometry: the window of the full convolution each mode keeps ------------------------------


def _valid_ok(name: str, s1, s2) -> None:
    """SciPy's rule for 'valid': one input at least as large as the other in every axis
    convolved (it then swaps them)."""
    if not (all(i >= j for i, j in zip(s1, s2)) or all(j >= i for i, j in zip(s1, s2))):
        raise ValueError(
            f"scipy.signal.{name}: for 'valid' mode, one must be at least as large as the other "
            f"in every dimension; got shapes {tuple(s1)} and {tuple(s2)}"
        )


def _swapped(mode: str, s1, s2) -> bool:
    return mode == "valid" and not all(i >= j for i, j in zip(s1, s2))


def _window(mode: str, n1: int, n2: int, ceil: bool) -> tuple[int, int, int]:
    """(full length, start, length) of one convolved axis: the mode's part of the full output,
    centred as SciPy's `_centered` (or rounding the other way: correlate2d's 'same')."""
    full = n1 + n2 - 1
    length = {"full": full, "same": n1, "valid": abs(n1 - n2) + 1}[mode]
    gap = full - length
    return full, (gap + 1) // 2 if ceil else gap // 2, length


@attrs.frozen
class _Kind:
    """How one function reads its operands: `flipped` (a correlation: the kernel is `b`
    flipped and conjugated), `ceil` (its 'same' window rounds up)."""

    name: str
    flipped: bool
    ceil: bool = False


def _conv_axes(a_shape, params) -> tuple[int, ...]:
    if "axes" in params:  # fftconvolve
        return params["axes"]
    return tuple(range(params["batch_dims"], len(a_shape)))


def _axis_window(mode: str, i: int, axes, n1: int, n2: int, ceil: bool):
    """(full length, start, length) of axis i: a convolved axis's window, or a broadcast one
    (fftconvolve's other axes), which 'same' also cuts to `a`'s size, centred, as SciPy's."""
    if i in axes:
        return _window(mode, n1, n2, ceil)
    full = max(n1, n2)
    return (full, (full - n1) // 2, n1) if mode == "same" else (full, 0, full)


def _out_shape(kind: _Kind, a: Aval, b: Aval, params) -> tuple[int, ...]:
    axes, mode = _conv_axes(a.shape, params), MODES[params["mode"]]
    return tuple(
        _axis_window(mode, i, axes, n1, n2, kind.ceil)[2]
        for i, (n1, n2) in enumerate(zip(a.shape, b.shape))
    )


# -- the derivative rules, shared by the five ---------------------------------------------------


def _entering_conjugated(kind: _Kind, a, b, params) -> bool:
    """correlate2d swaps the operands of a 'valid' correlation whose first is smaller and
    reverses the result without conjugating it: for complex values that is the conjugate of
    the correlation, i.e. `a` enters conjugated and the kernel is `b` flipped, unconjugated."""
    if kind.name != "correlate2d" or (dtype_of(a).kind != "c" and dtype_of(b).kind != "c"):
        return False
    return _swapped(MODES[params["mode"]], shape_of(a), shape_of(b))


def _flip_axes(x, axes):
    return flip(x, axes) if axes else x


def _kernel(kind: _Kind, b, axes, conj_a: bool):
    if not kind.flipped:
        return b
    return _flip_axes(b if conj_a else conj(b), axes)


def _kernel_transpose(kind: _Kind, k_bar, axes, conj_a: bool):
    if not kind.flipped:
        return k_bar
    k_bar = _flip_axes(k_bar, axes)
    return k_bar if conj_a else conj(k_bar)


def _embed(kind: _Kind, bar, a, b, params, axes):
    """The cotangent in the zeros of the full convolution's shape, where the mode cut it."""
    mode = MODES[params["mode"]]
    if mode == "full":
        return bar
    windows = [
        _axis_window(mode, i, axes, n1, n2, kind.ceil)
        for i, (n1, n2) in enumerate(zip(shape_of(a), shape_of(b)))
    ]
    full, starts = [w[0] for w in windows], [w[1] for w in windows]
    if tuple(full) == shape_of(bar):
        return bar
    return pad_strided(bar, full, starts, (1,) * len(full))


def _like(x, ref):
    """`x` in `ref`'s dtype (an integer operand joins the rules' convolutions as a float)."""
    return x if dtype_of(x) == dtype_of(ref) else astype(x, dtype_of(ref))


# -- convolve2d's boundaries: `a` extended, then a 'valid' convolution ---------------------------
# With boundary 'wrap' or 'symm', or 'fill' with a fill value c, SciPy's full output is exactly
# convolve2d(P, k, 'valid') of P = np.pad(a, kernel size - 1 on each side, 'wrap' / 'symmetric'
# / constant c) (bit for bit; 'same' is its window as before, 'valid' reads no padding). P is
# linear in `a` (R0 a R1^T, R one-hot rows of np.pad's index map) plus c on the padding, so the
# output stays bilinear in (a, b) but for c, which only `b`'s derivative sees.


def _extended(params) -> bool:
    """The output reads a boundary other than zeros (only 'full' and 'same' read one)."""
    return MODES[params["mode"]] != "valid" and (
        params.get("boundary", 0) != 0 or params.get("fillvalue", 0) != 0
    )


@functools.lru_cache(maxsize=64)
def _rows(n: int, width: int, boundary: str, dtype: np.dtype) -> np.ndarray:
    """R with R @ x = np.pad(x, width, mode) along one axis (zeros for 'fill')."""
    mode = {"fill": "constant", "wrap": "wrap", "symm": "symmetric"}[boundary]
    r = np.pad(np.eye(n, dtype=dtype), ((width, width), (0, 0)), mode=mode)
    r.flags.writeable = False
    return r


def _padded(a, b, params, dtype):
    """P, the extension of `a` by `b`'s size less one on each side of its last two axes."""
    boundary, fill = BOUNDARIES[params["boundary"]], params["fillvalue"]
    (n0, n1), (w0, w1) = shape_of(a)[-2:], (d - 1 for d in shape_of(b)[-2:])
    r0, r1 = _rows(n0, w0, boundary, dtype), _rows(n1, w1, boundary, dtype)
    p = matmul(matmul(r0, _like_dtype(a, dtype)), mT(r1))
    if boundary == "fill" and fill != 0:  # c on the padding: 1 - (rows kept) x (columns kept)
        pad = 1 - np.outer(r0.sum(axis=1), r1.sum(axis=1))
        p = p + np.asarray(pad * fill, dtype)
    return p, (r0, r1)


def _like_dtype(x, dtype):
    return x if dtype_of(x) == dtype else astype(x, dtype)


def _extended_vjp(kind: _Kind, g, a, b, params):
    """The vjp through P: out_full = convolve2d(P, k, 'valid'), k the kernel of `b`."""
    axes = _conv_axes(shape_of(a), params)
    dtype, n = dtype_of(g), params["batch_dims"]
    k = _like_dtype(_kernel(kind, b, axes, False), dtype)
    a_bar = b_bar = None
    if carries_derivative(a):  # P_bar = the full convolution of G with the flipped kernel
        p_bar = convolve2d(g, _flip_axes(k, axes), "full", batch_dims=n)
        _, (r0, r1) = _padded(a, b, params, dtype)
        a_bar = fit(matmul(matmul(mT(r0), p_bar), r1), a)
    if carries_derivative(b):
        p, _ = _padded(a, b, params, dtype)
        k_bar = _flip_axes(convolve2d(p, _flip_axes(g, axes), "valid", batch_dims=n), axes)
        b_bar = fit(_kernel_transpose(kind, k_bar, axes, False), b)
    return a_bar, b_bar


def _rules(kind: _Kind, valid):
    """jvp and vjp of `kind`'s primitive; `valid(x, k, params)` is the family's own
    convolution of `x` with `k` in 'valid' mode."""

    def jvp(primals, tangents, *, out, **params):
        (a, b), (a_dot, b_dot) = primals, tangents
        prim = _PRIMS[kind.name]
        terms = []
        if a_dot is not None and carries_derivative(a):
            # the fill value is a constant: `a`'s tangent is padded with zeros
            linear = {**params, "fillvalue": 0} if "fillvalue" in params else params
            terms.append(bind(prim, a_dot, b, **linear))
        if b_dot is not None and carries_derivative(b):
            terms.append(bind(prim, a, b_dot, **params))
        if not terms:
            return None
        return terms[0] if len(terms) == 1 else terms[0] + terms[1]

    def vjp(bar, a, b, *, out, **params):
        axes = _conv_axes(shape_of(a), params)
        conj_a = _entering_conjugated(kind, a, b, params)
        g = _embed(kind, bar, a, b, params, axes)
        if _extended(params):
            return _extended_vjp(kind, g, a, b, params)
        a_bar = b_bar = None
        if carries_derivative(a):  # transpose of x -> C(x, k(b)), then the conjugate if any
            x = valid(g, _flip_axes(_like(_kernel(kind, b, axes, conj_a), g), axes), params)
            a_bar = fit(conj(x) if conj_a else x, a)
        if carries_derivative(b):  # transpose of k -> C(a', k), then of b -> k(b)
            a_in = _like(conj(a) if conj_a else a, g)
            k_bar = valid(g, _flip_axes(a_in, axes), params)
            b_bar = fit(_kernel_transpose(kind, k_bar, axes, conj_a), b)
        return a_bar, b_bar

    return jvp, vjp


def _taylor_2d(prim):
    """y_k = sum_{i+j=k} C(a_i, b_j), bilinear but for the fill value: kept with a's primal."""

    def rule(primals, series_in, *, out, **params):
        k_max, linear = series.order_of(series_in), {**params, "fillvalue": 0}
        a, b = (series.full(x, s, k_max) for x, s in zip(primals, series_in))
        terms = [
            series.total(
                bind(prim, a[i], b[k - i], **(linear if i else params))
                for i in range(k + 1)
                if a[i] is not None and b[k - i] is not None
            )
            for k in range(1, k_max + 1)
        ]
        return None if all(t is None for t in terms) else terms

    return rule


# -- convolve, correlate, convolve2d, correlate2d: SciPy's call per example --------------------


def _impl_of(kind: _Kind):
    def call(a, b, params):
        f = getattr(_ss(), kind.name)  # params by name
        if kind.name in ("convolve", "correlate"):
            return f(a, b, mode=params["mode"], method=params["method"])
        return f(a, b, params["mode"], params["boundary"], params["fillvalue"])

    def impl(a, b, **params):
        a, b, params = np.asarray(a), np.asarray(b), _named(params)
        n = params["batch_dims"]
        if n == 0:
            return call(a, b, params)
        if kind.name in ("convolve", "correlate") and a.size and a.ndim > n:
            out = _stack_by_fft(kind, a, b, n, params["mode"], params["method"])
            if out is not None:
                return out
        # one call per example, each on a contiguous example as a loop over the stack passes it
        stack = a.shape[:n]
        outs = [
            np.asarray(call(np.ascontiguousarray(a[i]), np.ascontiguousarray(b[i]), params))
            for i in np.ndindex(stack)
        ]
        if not outs:  # an empty stack: one example's shape and dtype from zeros
            one = call(np.zeros(a.shape[n:], a.dtype), np.zeros(b.shape[n:], b.dtype), params)
            return np.zeros(stack + np.shape(one), np.asarray(one).dtype)
        return np.stack(outs).reshape(stack + outs[0].shape)

    return impl


def _unbroadcast_stack(x, n: int):
    """`x` with a stack that vmap broadcast (zero strides) cut to length 1: fftconvolve
    broadcasts it back, and transforms the example once instead of once per copy."""
    if all(x.strides[i] == 0 for i in range(n)):
        return x[(slice(0, 1),) * n]
    return x


def _stack_by_fft(kind: _Kind, a, b, n: int, mode: str, method: str):
    """A stack of convolve / correlate calls whose method is (or SciPy's 'auto' picks) 'fft',
    as one fftconvolve over the example axes, the stack axes broadcast: SciPy's own path for
    each example (convolve's swap for 'valid', correlate's flipped conjugate kernel, the
    rounding and cast to the result dtype), whose FFTs give each example the bits of its own
    call (checked against a loop by the tests). None when the method is 'direct'."""
    dtype = np.result_type(a.dtype, b.dtype)
    one = (0,) * n
    if kind.flipped:  # correlate is convolve(in1, _reverse_and_conj(in2)), as in SciPy
        b = b[(slice(None),) * n + (slice(None, None, -1),) * (b.ndim - n)].conj()
    if _swapped(mode, a.shape[n:], b.shape[n:]):
        a, b = b, a
    if method == "auto":
        if dtype.kind not in "fc":  # SciPy's choice for integers reads the values
            return None
        method = _ss().choose_conv_method(a[one], b[one], mode=mode)
    if method != "fft":
        return None
    cut = _unbroadcast_stack(b, n)
    if cut is b and mode != "same":  # one operand cut at most: the other keeps the stack's size
        a = _unbroadcast_stack(a, n)
    out = _ss().fftconvolve(a, cut, mode, axes=list(range(n, a.ndim)))
    if dtype.kind in "iub":
        out = np.round(out)
    return out.astype(dtype)


def _check(kind: _Kind, a: Aval, b: Aval, params) -> Aval:
    """The shape rule: SciPy's checks, then the mode's window of each axis."""
    name, n = kind.name, params["batch_dims"]
    _check_codes(name, params)
    if type(n) is not int or not 0 <= n <= min(a.ndim, b.ndim):
        raise ValueError(f"scipy.signal.{name}: batch_dims must be an int in [0, ndim], got {n!r}")
    if a.ndim != b.ndim or a.shape[:n] != b.shape[:n]:
        raise ValueError(
            f"scipy.signal.{name}: in1 and in2 should have the same dimensionality; got "
            f"shapes {a.shape[n:]} and {b.shape[n:]}"
        )
    if name.endswith("2d") and a.ndim - n != 2:
        raise ValueError(
            f"scipy.signal.{name}: inputs must both be 2-D arrays; got shapes {a.shape[n:]} "
            f"and {b.shape[n:]}"
        )
    if a.size == 0 or b.size == 0:
        raise ValueError(
            f"scipy.signal.{name}: inputs cannot be empty; got shapes {a.shape[n:]} and "
            f"{b.shape[n:]}"
        )
    if MODES[params["mode"]] == "valid":
        _valid_ok(name, a.shape[n:], b.shape[n:])
    return Aval(_out_shape(kind, a, b, params), np.result_type(a.dtype, b.dtype))


def _shape_of_kind(kind: _Kind):
    if kind.name.endswith("2d"):

        def shape_2d(a: Aval, b: Aval, *, mode, boundary, fillvalue, batch_dims):
            if type(fillvalue) not in (int, float, bool, complex):
                raise ValueError(
                    f"scipy.signal.{kind.name}: fillvalue must be a Python number, got "
                    f"{fillvalue!r}"
                )
            params = dict(mode=mode, boundary=boundary, fillvalue=fillvalue)
            return _check(kind, a, b, dict(params, batch_dims=batch_dims))

        return shape_2d

    def shape_nd(a: Aval, b: Aval, *, mode, method, batch_dims):
        return _check(kind, a, b, dict(mode=mode, method=method, batch_dims=batch_dims))

    return shape_nd


def _stacked_batch(prim: Primitive):
    """vmap: the batch axis in front of both operands (an unbatched one broadcast, a view) and
    one more stack axis, which the impl runs as one fftconvolve or one SciPy call per example."""
    ref = weakref.ref(prim)

    def batch(args, dims, **params):
        size = batch_size(args, dims)
        a, b = (materialize(x, d, size) for x, d in zip(args, dims))
        return bind(ref(), a, b, **{**params, "batch_dims": params["batch_dims"] + 1}), 0

    return batch


def _emit_of(kind: _Kind):
    def emit(a, b, **params):
        if params["batch_dims"]:
            kw = "".join(f", {k}={v!r}" for k, v in params.items())
            return [
                "import tracegrad.primitives.scipy_signal as _tracegrad_scipy_signal",
                f"_tracegrad_scipy_signal.{kind.name}_p.impl({a}, {b}{kw})",
            ]
        # SciPy's call as a user writes it: the names of the codes (from the tuples above)
        named = _named(params)
        kw = "".join(f", {k}={v!r}" for k, v in named.items() if k != "batch_dims")
        return ["import scipy.signal as _scipy_signal", f"_scipy_signal.{kind.name}({a}, {b}{kw})"]

    return emit


def _valid_nd(x, k, params):
    return convolve(x, k, "valid", METHODS[params["method"]], params["batch_dims"])


def _valid_2d(x, k, params):
    return convolve2d(x, k, "valid", batch_dims=params["batch_dims"])


def _primitive(kind: _Kind, valid) -> Primitive:
    jvp, vjp = _rules(kind, valid)
    return Primitive(
        f"scipy.signal.{kind.name}",
        impl=_impl_of(kind),
        shape=_shape_of_kind(kind),
        jvp=jvp,
        vjp=vjp,
        batch=rule_for(_stacked_batch),
        emit=_emit_of(kind),
        vjp_reads=READS_INPUTS,
        bilinear=True,
        taylor=rule_for(_taylor_2d) if kind.name.endswith("2d") else series.MULTILINEAR,
    )


def _bind_nd(prim, a, b, mode, method, batch_dims):
    name = prim.name.rsplit(".", 1)[1]
    mode, method = _code(name, "mode", mode), _code(name, "method", method)
    return bind(prim, a, b, mode=mode, method=method, batch_dims=int(batch_dims))


def _bind_2d(prim, a, b, mode, boundary, fillvalue, batch_dims):
    name = prim.name.rsplit(".", 1)[1]
    params = dict(mode=_code(name, "mode", mode), boundary=_code(name, "boundary", boundary))
    return bind(prim, a, b, **params, fillvalue=fillvalue, batch_dims=int(batch_dims))


def convolve(a, b, mode="full", method="auto", batch_dims=0):
    """`scipy.signal.convolve(a, b, mode, method)` over every axis after `batch_dims`."""
    return _bind_nd(convolve_p, a, b, mode, method, batch_dims)


def correlate(a, b, mode="full", method="auto", batch_dims=0):
    """`scipy.signal.correlate(a, b, mode, method)` over every axis after `batch_dims`."""
    return _bind_nd(correlate_p, a, b, mode, method, batch_dims)


def convolve2d(a, b, mode="full", boundary="fill", fillvalue=0, batch_dims=0):
    """`scipy.signal.convolve2d(a, b, mode, boundary, fillvalue)` of the last two axes."""
    return _bind_2d(convolve2d_p, a, b, mode, boundary, fillvalue, batch_dims)


def correlate2d(a, b, mode="full", boundary="fill", fillvalue=0, batch_dims=0):
    """`scipy.signal.correlate2d(a, b, mode, boundary, fillvalue)` of the last two axes."""
    return _bind_2d(correlate2d_p, a, b, mode, boundary, fillvalue, batch_dims)


_CONVOLVE = _Kind("convolve", flipped=False)
_CORRELATE = _Kind("correlate", flipped=True)
_CONVOLVE2D = _Kind("convolve2d", flipped=False)
_CORRELATE2D = _Kind("correlate2d", flipped=True, ceil=True)
_FFTCONVOLVE = _Kind("fftconvolve", flipped=False)

convolve_p = _primitive(_CONVOLVE, _valid_nd)
correlate_p = _primitive(_CORRELATE, _valid_nd)
convolve2d_p = _primitive(_CONVOLVE2D, _valid_2d)
correlate2d_p = _primitive(_CORRELATE2D, _valid_2d)

# -- fftconvolve: the axes it convolves, the others broadcast ------------------------------------


def fftconvolve(a, b, mode="full", axes=()):
    """`scipy.signal.fftconvolve(a, b, mode, axes)`, `axes` normalized (non-negative, SciPy's
    order; every axis for `axes=None`, which is `()` for 0-d operands)."""
    mode = _code("fftconvolve", "mode", mode)
    return bind(fftconvolve_p, a, b, mode=mode, axes=tuple(int(i) for i in axes))


def _fftconvolve_impl(a, b, *, mode, axes):
    a, b, mode = np.asarray(a), np.asarray(b), MODES[mode]
    if not axes:  # SciPy's 0-d case (a product); with vmap, a product per example
        return _ss().fftconvolve(a, b, mode) if a.ndim == 0 else a * b
    return _ss().fftconvolve(a, b, mode, axes=list(axes))


def _fftconvolve_shape(a: Aval, b: Aval, *, mode, axes):
    _check_codes("fftconvolve", dict(mode=mode))
    if a.ndim != b.ndim:
        raise ValueError(
            "scipy.signal.fftconvolve: in1 and in2 should have the same dimensionality; got "
            f"shapes {a.shape} and {b.shape}"
        )
    if a.size == 0 or b.size == 0:
        raise ValueError(
            f"scipy.signal.fftconvolve: inputs cannot be empty; got shapes {a.shape} and {b.shape}"
        )
    if len(set(axes)) != len(axes) or not all(0 <= i < a.ndim for i in axes):
        raise ValueError(f"scipy.signal.fftconvolve: axes {axes} are not distinct axes of {a}")
    others = [i for i in range(a.ndim) if i not in axes]
    if not all(a.shape[i] == b.shape[i] or 1 in (a.shape[i], b.shape[i]) for i in others):
        raise ValueError(
            f"scipy.signal.fftconvolve: incompatible shapes for in1 and in2: {a.shape} and "
            f"{b.shape} (the axes not convolved must be equal or 1)"
        )
    if MODES[mode] == "valid":
        # SciPy leaves out the axes where either input has length 1 (they broadcast)
        kept = [i for i in axes if 1 not in (a.shape[i], b.shape[i])]
        _valid_ok("fftconvolve", [a.shape[i] for i in kept], [b.shape[i] for i in kept])
    dtype = _fft_dtype(a.dtype, b.dtype)
    return Aval(_out_shape(_FFTCONVOLVE, a, b, dict(mode=mode, axes=axes)), dtype)


@functools.cache
def _fft_dtype(d1: np.dtype, d2: np.dtype) -> np.dtype:
    """fftconvolve's output dtype (float64 for integers: SciPy's own choice, asked once)."""
    one = (np.ones(1, d1), np.ones(1, d2))
    return _ss().fftconvolve(*one).dtype


def _fftconvolve_batch(args, dims, *, mode, axes):
    size = batch_size(args, dims)
    # a batch axis in front, which fftconvolve broadcasts (no FFT over it): in2 unbatched gets
    # one of size 1; in1 is broadcast to the batch (a view), as 'same' keeps in1's shape there
    (a, b), (da, db) = args, dims
    a = materialize(a, da, size)
    b = expand_dims(b, (0,)) if db is None else materialize(b, db, size)
    return fftconvolve(a, b, MODES[mode], tuple(i + 1 for i in axes)), 0


def _valid_fft(x, k, params):
    return fftconvolve(x, k, "valid", params["axes"])


_fft_jvp, _fft_vjp = _rules(_FFTCONVOLVE, _valid_fft)

fftconvolve_p = Primitive(
    "scipy.signal.fftconvolve",
    impl=_fftconvolve_impl,
    shape=_fftconvolve_shape,
    jvp=_fft_jvp,
    vjp=_fft_vjp,
    batch=_fftconvolve_batch,
    emit=lambda a, b, *, mode, axes: [
        "import tracegrad.primitives.scipy_signal as _tracegrad_scipy_signal",
        f"_tracegrad_scipy_signal.fftconvolve_p.impl({a}, {b}, mode={mode!r}, axes={axes!r})",
    ],
    vjp_reads=READS_INPUTS,
    bilinear=True,
    taylor=series.MULTILINEAR,
)

_PRIMS = {
    "convolve": convolve_p,
    "correlate": correlate_p,
    "convolve2d": convolve2d_p,
    "correlate2d": correlate2d_p,
    "fftconvolve": fftconvolve_p,
}

__all__ = ["convolve", "convolve2d", "correlate", "correlate2d", "fftconvolve"]
PRIMITIVES = (convolve_p, correlate_p, fftconvolve_p, convolve2d_p, correlate2d_p)
