"""Elementwise functions with NumPy's names and signatures, over the elementwise primitives."""

from __future__ import annotations

from tracegrad.core import bind
from tracegrad.primitives import elementwise as ew

__all__ = []


def _export(name, prim, doc=None):
    if prim.impl.nin == 1:

        def f(x, /):
            return bind(prim, x)
    else:

        def f(x, y, /):
            return bind(prim, x, y)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc or f"`numpy.{prim.impl.__name__}`, traceable and differentiable."
    globals()[name] = f
    __all__.append(name)
    return f


for _p in ew.UNARY + ew.BINARY:
    _export(_p.name, _p)

# NumPy's other names for the same ufuncs (np.abs is np.absolute, and so on)
_ALIASES = {
    "abs": "absolute",
    "true_divide": "divide",
    "mod": "remainder",
    "pow": "power",
    "acos": "arccos",
    "asin": "arcsin",
    "atan": "arctan",
    "acosh": "arccosh",
    "asinh": "arcsinh",
    "atanh": "arctanh",
    "atan2": "arctan2",
    "radians": "deg2rad",
    "degrees": "rad2deg",
}
for _alias, _name in _ALIASES.items():
    globals()[_alias] = globals()[_name]
    __all__.append(_alias)


def round(a, decimals=0):  # noqa: A001 - NumPy's name
    """`np.round`; only `decimals=0` (NumPy's rint, round half to even) is supported."""
    if decimals != 0:
        raise NotImplementedError(
            f"tracegrad.numpy.round: decimals={decimals} is not supported; use "
            "rint(a * 10**d) / 10**d"
        )
    return bind(ew.rint_p, a)


around = round


def where(condition, x=None, y=None, /):
    """`np.where(condition, x, y)`; the one-argument form (`nonzero`) has no traced rule."""
    if x is None and y is None:
        raise NotImplementedError(
            "tracegrad.numpy.where: the one-argument form returns data-dependent shapes; "
            "use the three-argument form where(condition, x, y)"
        )
    if x is None or y is None:
        raise ValueError("where: either both or neither of x and y should be given")
    return ew.where(condition, x, y)


def clip(a, a_min=None, a_max=None, /, **kwargs):
    """`np.clip`; NumPy lowers a one-sided clip to maximum/minimum, and so do we (same bits)."""
    a_min = kwargs.pop("min", a_min)
    a_max = kwargs.pop("max", a_max)
    if kwargs:
        raise NotImplementedError(f"tracegrad.numpy.clip: unsupported arguments {sorted(kwargs)}")
    if a_min is None and a_max is None:
        raise ValueError("clip: at least one of a_min and a_max must be given")
    if a_min is None:
        return bind(ew.minimum_p, a, a_max)
    if a_max is None:
        return bind(ew.maximum_p, a, a_min)
    return ew.clip(a, a_min, a_max)


def astype(x, dtype, /, *, copy=True):
    return ew.astype(x, dtype)


__all__ += ["round", "around", "where", "clip", "astype"]
