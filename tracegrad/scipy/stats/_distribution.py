"""The machinery of every univariate distribution: SciPy's `rv_continuous` and `rv_discrete`
methods (`logpdf`, `cdf`, `ppf`, ...) written with tracegrad's operations, step for step.

SciPy standardizes `x` to `z = (x - loc) / scale`, checks the shape parameters
(`_argcheck`) and the support, computes the distribution's own formula (`_logpdf`, `_cdf`,
...) on the valid points and fills the others (NaN for invalid parameters, -inf / 0 / 1
outside the support). Here the formula runs on every point and `where` picks, which gives
SciPy's values (every step is elementwise); and where a point is not valid, the formula's
inputs are replaced by a valid stand-in first (`_inside`, `_safe`), so the derivative there is
exactly zero, never NaN. The distributions (one small module per family) write their standard
forms as SciPy does, with `tracegrad.numpy` and `tracegrad.scipy.special`.
"""

from __future__ import annotations

import inspect
import math

import numpy as np

import tracegrad.numpy as tnp
from tracegrad.ir.types import dtype_of
from tracegrad.numpy._common import as_array
from tracegrad.primitives.elementwise import stop_gradient

inf, nan = math.inf, math.nan


def _scalar(out):
    """SciPy's `output[()]`: a 0-d NumPy result becomes a NumPy scalar (traced ones stay)."""
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


def _astype(x, dtype):
    return x if dtype_of(x) == np.dtype(dtype) else tnp.astype(x, dtype)


class _Distribution:
    """What continuous and discrete distributions share: parameter parsing, the shape checks
    with their stand-ins, and freezing (`norm(0, 2).logpdf(x)`)."""

    name = ""
    shapes: tuple[str, ...] = ()
    a, b = -inf, inf  # the support of the standard form
    #: shape values that always pass `_argcheck`, put in place of invalid ones (per shape)
    safe: tuple[float, ...] = ()
    _defaults = {"loc": 0, "scale": 1}

    def __init__(self):
        kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
        params = [inspect.Parameter(s, kind) for s in self.shapes]
        params += [inspect.Parameter(k, kind, default=v) for k, v in self._defaults.items()]
        self._signature = inspect.Signature(params)

    def __repr__(self):
        return f"<tracegrad.scipy.stats.{self.name}>"

    def _parse(self, method, args, kwds):
        try:
            bound = self._signature.bind(*args, **kwds)
        except TypeError as err:
            raise TypeError(f"{self.name}.{method}(): {err}") from None
        bound.apply_defaults()
        values = bound.arguments
        shapes = tuple(as_array(values[s]) for s in self.shapes)
        return shapes, {k: as_array(values[k]) for k in self._defaults}

    # -- the shape parameters -----------------------------------------------------------------

    def _argcheck(self, *shapes):
        """SciPy's default: every shape parameter > 0 (`cond = 1` without any)."""
        cond = True
        for s in shapes:
            cond = tnp.logical_and(cond, s > 0)
        return cond

    def _checked(self, shapes):
        """(SciPy's `_argcheck`, the shapes with `safe` values where it fails)."""
        ok = self._argcheck(*shapes)
        if not shapes:
            return ok, ()
        return ok, tuple(tnp.where(ok, s, v) for s, v in zip(shapes, self.safe))

    def _get_support(self, *shapes):
        return self.a, self.b

    def _inside(self, *shapes):
        """A point inside the support of the standard form, for valid shapes."""
        a, b = self._get_support(*shapes)
        if isinstance(a, float | int) and isinstance(b, float | int):
            if math.isfinite(a) and math.isfinite(b):
                return (a + b) / 2
            return a + 1.0 if math.isfinite(a) else (b - 1.0 if math.isfinite(b) else 0.0)
        return (a + b) / 2

    def __call__(self, *args, **kwds):
        return Frozen(self, args, kwds)

    def freeze(self, *args, **kwds):
        return Frozen(self, args, kwds)


class Frozen:
    """A distribution with its parameters fixed, as SciPy's `rv_frozen`."""

    def __init__(self, dist, args, kwds):
        self.dist, self.args, self.kwds = dist, args, kwds
        dist._parse("freeze", args, kwds)  # SciPy checks the parameters when freezing

    def __getattr__(self, method):
        if method.startswith("_") or not hasattr(self.dist, method):
            raise AttributeError(f"frozen {self.dist.name} has no attribute {method!r}")
        fn = getattr(self.dist, method)

        def call(x):
            return fn(x, *self.args, **self.kwds)

        call.__name__ = method
        return call

    def __repr__(self):
        return f"<frozen tracegrad.scipy.stats.{self.dist.name}{self.args}{self.kwds}>"


# -- continuous -------------------------------------------------------------------------------


class rv_continuous(_Distribution):  # noqa: N801 - SciPy's name
    """SciPy's rv_continuous: public methods on (x, *shapes, loc=0, scale=1)."""

    #: the support is the whole line for every valid shape (only NaN is outside)
    open_everywhere = False

    # SciPy's generic standard forms, used where a distribution gives no formula of its own
    def _logpdf(self, x, *shapes):
        return tnp.log(self._pdf(x, *shapes))

    def _pdf(self, x, *shapes):
        return tnp.exp(self._logpdf(x, *shapes))

    def _logcdf(self, x, *shapes):
        # SciPy's: log(cdf) below the median, log1p(-sf) above (each branch fed the median
        # where it is not taken, so neither puts a NaN into the other's derivative)
        median = self._median(shapes)
        below = x < median
        lo, hi = tnp.where(below, x, median), tnp.where(below, median, x)
        return tnp.where(below, tnp.log(self._cdf(lo, *shapes)), tnp.log1p(-self._sf(hi, *shapes)))

    def _median(self, shapes):
        # it only decides a branch: a constant to differentiation (so a ppf with no derivative
        # in a shape, as gamma's, is never asked for one)
        return self._ppf(0.5, *(stop_gradient(s) for s in shapes))

    def _sf(self, x, *shapes):
        return 1.0 - self._cdf(x, *shapes)

    def _logsf(self, x, *shapes):
        median = self._median(shapes)
        above = x > median
        hi, lo = tnp.where(above, x, median), tnp.where(above, median, x)
        return tnp.where(above, tnp.log(self._sf(hi, *shapes)), tnp.log1p(-self._cdf(lo, *shapes)))

    def _support_mask(self, x, *shapes):
        a, b = self._get_support(*shapes)
        return tnp.logical_and(a <= x, x <= b)

    def _open_support_mask(self, x, *shapes):
        a, b = self._get_support(*shapes)
        return tnp.logical_and(a < x, x < b)

    def _standard(self, method, x, args, kwds):
        """SciPy's first steps: (z, dtype, shapes, safe shapes, cond0, scale, safe scale).
        z = (x - loc) / scale is computed with scale 1 where scale <= 0: those points are
        invalid whatever z is (SciPy's values), and their derivatives stay finite (zero)."""
        shapes, p = self._parse(method, args, kwds)
        x, loc, scale = as_array(x), p["loc"], p["scale"]
        dtyp = np.promote_types(dtype_of(x), np.float64)
        positive = scale > 0
        scale_s = tnp.where(positive, scale, 1.0)
        z = _astype((x - loc) / scale_s, dtyp)
        ok, safe = self._checked(shapes)
        cond0 = tnp.logical_and(ok, positive)
        return z, dtyp, shapes, safe, cond0, scale, scale_s

    def _at(self, z, cond, safe):
        """`z` where `cond`, a point of the support elsewhere."""
        if self.open_everywhere:
            return z
        return tnp.where(cond, z, self._inside(*safe))

    def _density(self, method, x, args, kwds, log: bool):
        z, dtyp, shapes, safe, cond0, scale, scale_s = self._standard(method, x, args, kwds)
        cond1 = tnp.logical_and(self._support_mask(z, *shapes), scale > 0)
        cond = tnp.logical_and(cond0, cond1)
        zs = self._at(z, cond, safe)
        bad = tnp.logical_or(tnp.logical_not(cond0), tnp.isnan(z))
        if log:
            good = self._logpdf(zs, *safe) - tnp.log(scale_s)
            out = tnp.where(cond, good, tnp.where(bad, nan, -inf))
        else:
            good = self._pdf(zs, *safe) / scale_s
            out = tnp.where(cond, good, tnp.where(bad, nan, 0.0))
        return _scalar(_astype(out, dtyp))

    def pdf(self, x, *args, **kwds):
        """Probability density at x (SciPy's `pdf`)."""
        return self._density("pdf", x, args, kwds, log=False)

    def logpdf(self, x, *args, **kwds):
        """Log of the probability density at x (SciPy's `logpdf`)."""
        return self._density("logpdf", x, args, kwds, log=True)

    def _tail(self, method, x, args, kwds, formula, at_end, fill):
        """cdf, logcdf, sf, logsf: `formula` inside the open support, `at_end` (1 or 0)
        beyond its far end (the upper one for cdfs, the lower for sfs), `fill` before."""
        z, dtyp, shapes, safe, cond0, scale, _ = self._standard(method, x, args, kwds)
        a, b = self._get_support(*shapes)
        cond1 = tnp.logical_and(self._open_support_mask(z, *shapes), scale > 0)
        beyond = z >= b if method in ("cdf", "logcdf") else z <= a
        cond2 = tnp.logical_and(beyond, cond0)
        cond = tnp.logical_and(cond0, cond1)
        bad = tnp.logical_or(tnp.logical_not(cond0), tnp.isnan(z))
        good = formula(self._at(z, cond, safe), *safe)
        out = tnp.where(cond, good, tnp.where(cond2, at_end, tnp.where(bad, nan, fill)))
        return _scalar(_astype(out, dtyp))

    def cdf(self, x, *args, **kwds):
        """Cumulative distribution function (SciPy's `cdf`)."""
        return self._tail("cdf", x, args, kwds, self._cdf, 1.0, 0.0)

    def logcdf(self, x, *args, **kwds):
        """Log of the cumulative distribution function (SciPy's `logcdf`)."""
        return self._tail("logcdf", x, args, kwds, self._logcdf, 0.0, -inf)

    def sf(self, x, *args, **kwds):
        """Survival function, 1 - cdf (SciPy's `sf`)."""
        return self._tail("sf", x, args, kwds, self._sf, 1.0, 0.0)

    def logsf(self, x, *args, **kwds):
        """Log of the survival function (SciPy's `logsf`)."""
        return self._tail("logsf", x, args, kwds, self._logsf, 0.0, -inf)

    def ppf(self, q, *args, **kwds):
        """Percent point function, the inverse of cdf (SciPy's `ppf`)."""
        shapes, p = self._parse("ppf", args, kwds)
        q, loc, scale = as_array(q), p["loc"], p["scale"]
        a, b = self._get_support(*shapes)
        ok, safe = self._checked(shapes)
        positive = scale > 0
        cond0 = tnp.logical_and(tnp.logical_and(ok, positive), loc == loc)
        cond1 = tnp.logical_and(0 < q, q < 1)
        cond2 = tnp.logical_and(cond0, q == 0)
        cond3 = tnp.logical_and(cond0, q == 1)
        cond = tnp.logical_and(cond0, cond1)
        scale_s = tnp.where(positive, scale, 1.0)
        loc_s = tnp.where(loc == loc, loc, 0.0)
        good = self._ppf(tnp.where(cond, q, 0.5), *safe) * scale_s + loc_s
        ends = tnp.where(cond3, _bound(b, scale_s, loc_s), _bound(a, scale_s, loc_s))
        out = tnp.where(cond, good, tnp.where(tnp.logical_or(cond2, cond3), ends, nan))
        return _scalar(_astype(out, np.float64))


def _bound(end, scale, loc):
    """SciPy's `end * scale + loc`, constant where `end` is infinite (so no inf * 0 reaches a
    derivative)."""
    if isinstance(end, float | int):
        return end if math.isinf(end) else end * scale + loc
    finite = tnp.isfinite(end)
    return tnp.where(finite, tnp.where(finite, end, 0.0) * scale + loc, end)


# -- discrete ---------------------------------------------------------------------------------


class rv_discrete(_Distribution):  # noqa: N801 - SciPy's name
    """SciPy's rv_discrete: public methods on (k, *shapes, loc=0); values are float64."""

    a, b = 0, inf
    _defaults = {"loc": 0}

    def _pmf(self, k, *shapes):
        return tnp.exp(self._logpmf(k, *shapes))

    def _logpmf(self, k, *shapes):
        return tnp.log(self._pmf(k, *shapes))

    def _logcdf(self, k, *shapes):
        return tnp.log(self._cdf(k, *shapes))

    def _sf(self, k, *shapes):
        return 1.0 - self._cdf(k, *shapes)

    def _logsf(self, k, *shapes):
        return tnp.log(self._sf(k, *shapes))

    def _inside(self, *shapes):
        a, _ = self._get_support(*shapes)
        return a

    def _standard(self, method, k, args, kwds):
        shapes, p = self._parse(method, args, kwds)
        k = as_array(as_array(k) - p["loc"])
        ok, safe = self._checked(shapes)
        return k, shapes, safe, ok, p["loc"]

    def _mass(self, method, k, args, kwds, log: bool):
        k, shapes, safe, cond0, _ = self._standard(method, k, args, kwds)
        a, b = self._get_support(*shapes)
        cond1 = tnp.logical_and(tnp.logical_and(k >= a, k <= b), tnp.floor(k) == k)
        cond = tnp.logical_and(cond0, cond1)
        ks = tnp.where(cond, k, self._inside(*safe))
        bad = tnp.logical_or(tnp.logical_not(cond0), tnp.isnan(k))
        if log:
            out = tnp.where(cond, self._logpmf(ks, *safe), tnp.where(bad, nan, -inf))
        else:
            good = tnp.clip(self._pmf(ks, *safe), 0, 1)
            out = tnp.where(cond, good, tnp.where(bad, nan, 0.0))
        return _scalar(_astype(out, np.float64))

    def pmf(self, k, *args, **kwds):
        """Probability mass at k (SciPy's `pmf`)."""
        return self._mass("pmf", k, args, kwds, log=False)

    def logpmf(self, k, *args, **kwds):
        """Log of the probability mass at k (SciPy's `logpmf`)."""
        return self._mass("logpmf", k, args, kwds, log=True)

    def _cumulative(self, method, k, args, kwds):
        k, shapes, safe, cond0, _ = self._standard(method, k, args, kwds)
        a, b = self._get_support(*shapes)
        cond1 = tnp.logical_and(k >= a, k < b)
        bad = tnp.logical_or(tnp.logical_not(cond0), tnp.isnan(k))
        if method in ("cdf", "sf"):
            cond = tnp.logical_and(tnp.logical_and(cond0, cond1), tnp.isfinite(k))
        else:
            cond = tnp.logical_and(cond0, cond1)
        ks = tnp.where(cond, k, self._inside(*safe))
        if method == "cdf":
            good = tnp.clip(self._cdf(ks, *safe), 0, 1)
            rest = tnp.where(bad, nan, tnp.where(tnp.isneginf(k), 0.0, tnp.where(k >= b, 1.0, 0.0)))
        elif method == "logcdf":
            good = self._logcdf(ks, *safe)
            rest = tnp.where(k >= b, 0.0, tnp.where(bad, nan, -inf))
        elif method == "sf":
            good = tnp.clip(self._sf(ks, *safe), 0, 1)
            below = tnp.logical_and(tnp.logical_or(k < a, tnp.isneginf(k)), cond0)
            rest = tnp.where(below, 1.0, tnp.where(bad, nan, 0.0))
        else:
            good = self._logsf(ks, *safe)
            rest = tnp.where(tnp.logical_and(k < a, cond0), 0.0, tnp.where(bad, nan, -inf))
        return _scalar(_astype(tnp.where(cond, good, rest), np.float64))

    def cdf(self, k, *args, **kwds):
        """Cumulative distribution function (SciPy's `cdf`)."""
        return self._cumulative("cdf", k, args, kwds)

    def logcdf(self, k, *args, **kwds):
        """Log of the cumulative distribution function (SciPy's `logcdf`)."""
        return self._cumulative("logcdf", k, args, kwds)

    def sf(self, k, *args, **kwds):
        """Survival function, 1 - cdf (SciPy's `sf`)."""
        return self._cumulative("sf", k, args, kwds)

    def logsf(self, k, *args, **kwds):
        """Log of the survival function (SciPy's `logsf`)."""
        return self._cumulative("logsf", k, args, kwds)

    def ppf(self, q, *args, **kwds):
        """Percent point function: the smallest k with cdf(k) >= q (SciPy's `ppf`); integer
        valued, so its derivative is zero."""
        shapes, p = self._parse("ppf", args, kwds)
        q, loc = as_array(q), p["loc"]
        a, b = self._get_support(*shapes)
        ok, safe = self._checked(shapes)
        cond0 = tnp.logical_and(ok, loc == loc)
        cond1 = tnp.logical_and(q > 0, q < 1)
        cond2 = tnp.logical_and(q == 0, cond0)
        cond3 = tnp.logical_and(q == 1, cond0)
        cond = tnp.logical_and(cond0, cond1)
        good = self._ppf(tnp.where(cond, q, 0.5), *safe) + loc
        out = tnp.where(cond, good, tnp.where(cond3, b + loc, tnp.where(cond2, a - 1 + loc, nan)))
        return _scalar(_astype(out, np.float64))
