"""How NumPy calls on tracers reach tracegrad: the ufunc and function tables.

`np.sin(t)` arrives through `Tracer.__array_ufunc__`, `np.sum(t)` through
`__array_function__`; each looks the function up here by NumPy's own object. The tables are
built from `tracegrad.numpy`'s names, so adding a function there is all it takes to make
NumPy code reach it. (`t.sum()` is a method of the class: tracegrad.numpy._methods.)
"""

from __future__ import annotations

import dis
import functools
import inspect
import sys

import numpy as np

import tracegrad.numpy as namespace

UFUNCS: dict[np.ufunc, object] = {}
FUNCTIONS: dict[object, object] = {}

for _name in namespace.__all__:
    _ours = getattr(namespace, _name)
    _theirs = getattr(np, _name, None)
    if isinstance(_theirs, np.ufunc):
        UFUNCS[_theirs] = _ours
    elif _theirs is not None and callable(_theirs):
        FUNCTIONS[_theirs] = _ours

# np.linalg.* and np.fft.*: NumPy's functions of the submodules, by the same names
for _sub in ("linalg", "fft"):
    for _name in getattr(namespace, _sub).__all__:
        _theirs = getattr(getattr(np, _sub), _name, None)
        if callable(_theirs) and not isinstance(_theirs, type):
            FUNCTIONS[_theirs] = getattr(getattr(namespace, _sub), _name)

# ufunc methods that are reductions under another name
_REDUCE = {
    np.add: "sum",
    np.multiply: "prod",
    np.maximum: "max",
    np.minimum: "min",
    np.logical_and: "all",
    np.logical_or: "any",
}
_ACCUMULATE = {np.add: "cumsum", np.multiply: "cumprod"}


def _unsupported(what: str):
    instead = _SCIPY_INSTEAD.get(what)
    use = f"Use {instead}, or write" if instead else "Write"
    return NotImplementedError(
        f"tracegrad: {what} has no tracegrad rule, so it cannot be traced or differentiated. "
        f"{use} it with supported tracegrad.numpy functions, or compute it outside the "
        "differentiated function and pass the result in (it is then a constant)."
    )


# NumPy functions without a rule of their own whose SciPy twin tracegrad.scipy has
_SCIPY_INSTEAD = {"np.i0": "tracegrad.scipy.special.i0 (SciPy's modified Bessel function)"}


def _ufunc_name(ufunc) -> str:
    """How the user spells `ufunc`: np.sin, or scipy.special.erf for SciPy's."""
    if getattr(np, ufunc.__name__, None) is ufunc:
        return f"np.{ufunc.__name__}"
    special = sys.modules.get("scipy.special")
    if special is not None and getattr(special, ufunc.__name__, None) is ufunc:
        return f"scipy.special.{ufunc.__name__}"
    return f"the ufunc {ufunc.__name__}"


def _tsp():
    # tracegrad.scipy sits above tracegrad.numpy (it builds on it): imported at call time, and
    # only by callers that found SciPy already imported, so NumPy-only programs never load it
    from tracegrad import scipy

    return scipy


def _scipy_ufunc(ufunc):
    """tracegrad.scipy.special's function for a scipy.special ufunc (`scipy.special.erf(t)`),
    or None."""
    if "scipy.special" not in sys.modules:
        return None
    return _tsp().special.UFUNCS.get(ufunc)


def scipy_replacement() -> str:
    """A sentence naming the tracegrad.scipy function to use, when the caller is a SciPy
    function converting a traced value to a NumPy array (scipy.special.logsumexp(t),
    scipy.stats.norm.logpdf(t), norm(0, 1).pdf(t): Python code, which no NumPy protocol
    reaches); '' otherwise. For the conversion error: the outermost SciPy function on the
    stack that tracegrad.scipy has is the one the user called."""
    if "scipy" not in sys.modules:
        return ""
    found = ""
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module.startswith("scipy."):
            found = _replacement(module, frame) or found
        frame = frame.f_back
    if not found:
        return ""
    return f"SciPy's function cannot trace it: call {found} instead (same arguments)."


def _replacement(module: str, frame) -> str:
    tsp, name = _tsp(), frame.f_code.co_name
    if module == "scipy._lib._util" and name == "wrapper":  # SciPy's stacks-of-matrices decorator
        wrapped = frame.f_locals.get("f")  # (a closure variable: the function it decorates)
        module = getattr(wrapped, "__module__", None) or ""
        name = getattr(wrapped, "__name__", "")
    if module.startswith("scipy.special") and hasattr(tsp.special, name):
        return f"tracegrad.scipy.special.{name}"
    for sub in ("linalg", "signal", "integrate"):  # the functions of the same names
        if module.startswith(f"scipy.{sub}") and name in getattr(tsp, sub).__all__:
            return f"tracegrad.scipy.{sub}.{name}"
    if not module.startswith("scipy.stats"):
        return ""
    dist = frame.f_locals.get("self")
    # a frozen distribution's (`norm(0, 1)`: .dist; `multivariate_normal(m)`: ._dist)
    dist = getattr(dist, "dist", None) or getattr(dist, "_dist", None) or dist
    dname = getattr(dist, "name", None) or type(dist).__name__.removesuffix("_gen")
    if hasattr(getattr(tsp.stats, str(dname), None), name):
        return f"tracegrad.scipy.stats.{dname}.{name}"
    return ""


_MIXIN_FILE = np.lib.mixins.__file__


def _augmented_assignment() -> bool:
    """Whether the ufunc call comes from an augmented assignment (`acc += x`, `x *= 2`) rather
    than from an explicit `out=`. NumPy calls `__array_ufunc__` the same way for both; only the
    caller's instruction tells them apart. An augmented assignment rebinds its name to what
    the ufunc returns, so a traced result is right there (as in JAX); an explicit call would
    lose it and leave `out` unchanged."""
    frame = sys._getframe(4)  # the caller of Boxed.__array_ufunc__ (via _augmented_target)
    if frame.f_code.co_filename == _MIXIN_FILE:  # x += 1 on a tracer: NumPy's operator mixin
        frame = frame.f_back
    return _is_augmented(frame.f_code, frame.f_lasti)


@functools.lru_cache(maxsize=4096)
def _is_augmented(code, offset: int) -> bool:
    for ins in dis.get_instructions(code):
        if ins.offset == offset:
            return ins.opname.startswith("INPLACE_") or (
                ins.opname == "BINARY_OP" and ins.argrepr.endswith("=")
            )
    return False


def array_ufunc(ufunc, method, inputs, kwargs):
    target = None
    if kwargs:  # the common call has none: its path stays short
        target = _augmented_target(ufunc, kwargs.pop("out", None))
    if method == "__call__":
        fn = UFUNCS.get(ufunc) or _scipy_ufunc(ufunc)
        if fn is None:
            raise _unsupported(_ufunc_name(ufunc))
        if not kwargs:
            result = fn(*inputs)
        else:
            unsupported = sorted(set(kwargs) - _keywords(fn))
            if unsupported:
                raise NotImplementedError(
                    f"tracegrad: {_ufunc_name(ufunc)} with the arguments {unsupported} is not "
                    "supported"
                )
            result = fn(*inputs, **kwargs)
        return result if target is None else _written_into(ufunc, target, result)
    if method == "reduce" and ufunc in _REDUCE:
        fn = getattr(namespace, _REDUCE[ufunc], None)
        if kwargs.get("dtype", 0) is None:  # np.max(x, where=...) reaches maximum.reduce so
            del kwargs["dtype"]
        if fn is not None:
            kwargs.setdefault("axis", 0)
            return fn(*inputs, **kwargs)
    if method == "accumulate" and ufunc in _ACCUMULATE:
        fn = getattr(namespace, _ACCUMULATE[ufunc], None)
        if fn is not None:
            kwargs.setdefault("axis", 0)
            return fn(*inputs, **kwargs)
    raise _unsupported(f"{_ufunc_name(ufunc)}.{method}")


def _augmented_target(ufunc, out):
    """The array an augmented assignment (`acc += x`) writes into, or None without `out=`.
    Any other `out=` cannot hold a traced result (it would be left unchanged and the result
    lost): refused. An augmented assignment rebinds its name to what the ufunc returns."""
    outs = out if isinstance(out, tuple) else (out,)
    if all(o is None for o in outs):
        return None
    if not _augmented_assignment():
        name = _ufunc_name(ufunc)
        raise TypeError(
            f"tracegrad: {name}(..., out=...) would write a traced result into "
            "`out`, which cannot hold one: `out` would be left unchanged and the result lost. "
            f"Drop `out=` and use the returned value (y = {name}(...)); an "
            "augmented assignment (acc += x) rebinds its name and works as it is."
        )
    return outs[0]


def _written_into(ufunc, target, result):
    """`result` as NumPy's in-place operation leaves it in `target`: the target's shape (the
    result may not broadcast beyond it) and dtype (cast as casting='same_kind' allows), so
    `x += y` keeps x's float32 and `acc += x` acc's dtype, bit for bit."""
    shape, dtype = tuple(np.shape(target)), np.dtype(target.dtype)
    if tuple(np.shape(result)) != shape:
        raise ValueError(
            f"non-broadcastable output operand with shape {shape} doesn't match the broadcast "
            f"shape {tuple(np.shape(result))}"
        )
    got = np.dtype(result.dtype)
    if got == dtype:
        return result
    if not np.can_cast(got, dtype, "same_kind"):
        raise TypeError(
            f"Cannot cast ufunc '{ufunc.__name__}' output from dtype('{got}') to "
            f"dtype('{dtype}') with casting rule 'same_kind'"
        )
    return namespace.astype(result, dtype)


@functools.cache
def _keywords(fn) -> frozenset[str]:
    """The keyword arguments `fn` takes (a gufunc's `axis`, `axes`, `keepdims`, ...)."""
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return frozenset(n for n, p in inspect.signature(fn).parameters.items() if p.kind in kinds)


def array_function(func, args, kwargs):
    fn = FUNCTIONS.get(func)
    if fn is None:
        mod = getattr(func, "__module__", "numpy") or "numpy"
        if mod.startswith("numpy"):  # np.sum, np.linalg.solve (not numpy._core.fromnumeric)
            public = [p for p in mod.split(".")[1:] if not p.startswith("_")]
            mod = ".".join(["np", *public])
        raise _unsupported(f"{mod}.{getattr(func, '__name__', func)}")
    return fn(*args, **kwargs)
