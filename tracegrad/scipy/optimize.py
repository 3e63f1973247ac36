"""`tracegrad.scipy.optimize.minimize`: SciPy's `minimize`, with derivatives from tracegrad.

The everyday use of an autodiff library from SciPy: the objective's gradient (and, for the
methods that take them, its Hessian or Hessian-vector products, and the Jacobians of
constraint functions) come from tracegrad, each jit-compiled once; parameters may be any pytree
(a dict of arrays, a tuple, ...), flattened to SciPy's one float64 vector and rebuilt for the
objective and the result.
"""

from __future__ import annotations

import inspect

import numpy as np
import scipy.optimize as _opt

import tracegrad.numpy as tnp
from tracegrad import tree
from tracegrad.api import grad, hessian, jacrev, jit, jvp, value_and_grad

__all__ = ["OptimizeResult", "minimize"]

OptimizeResult = _opt.OptimizeResult

# SciPy's methods that use a Hessian: those that take Hessian-vector products get them (a
# forward-over-reverse product costs two gradients, not n), the others the full Hessian
_HESSP = {"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"}
_HESS = {"dogleg", "trust-exact"}
# and those that use no derivative at all
_NO_JAC = {"nelder-mead", "powell", "cobyla", "cobyqa"}


class _Flat:
    """A pytree of arrays as SciPy's float64 vector, and back (leaves keep their dtypes)."""

    def __init__(self, x0):
        leaves, self.treedef = tree.flatten(x0)
        arrays = [np.asarray(v) for v in leaves]
        for a in arrays:
            if a.dtype.kind not in "fiub":
                raise TypeError(
                    "tracegrad.scipy.optimize.minimize: the parameters must be real numbers, "
                    f"got a leaf of dtype {a.dtype}"
                )
        self.shapes = [a.shape for a in arrays]
        self.dtypes = [a.dtype if a.dtype.kind == "f" else np.dtype(np.float64) for a in arrays]
        self.sizes = [a.size for a in arrays]
        self.x0 = np.concatenate([a.ravel().astype(np.float64) for a in arrays] or [np.zeros(0)])

    def unravel(self, flat):
        """The pytree of a flat vector (traced or not)."""
        leaves, start = [], 0
        for shape, dtype, size in zip(self.shapes, self.dtypes, self.sizes):
            piece = tnp.reshape(flat[start : start + size], shape)
            leaves.append(piece if np.dtype(dtype) == np.float64 else tnp.astype(piece, dtype))
            start += size
        return tree.unflatten(self.treedef, leaves)


def _float64(x):
    return np.asarray(x, dtype=np.float64)


def minimize(
    fun,
    x0,
    args=(),
    method=None,
    jac=None,
    hess=None,
    hessp=None,
    bounds=None,
    constraints=(),
    tol=None,
    callback=None,
    options=None,
):
    """`scipy.optimize.minimize(fun, x0, ...)` with SciPy's arguments and result, where
    tracegrad supplies what SciPy would otherwise approximate or ask for:

    - `jac`: the gradient of `fun`, for the methods that use one (unless `jac` is given: a
      function is used as it is, and `jac=False` or a finite-difference scheme ("2-point",
      ...) keeps SciPy's own);
    - `hess` / `hessp`: for methods that use them and when neither is given, Hessian-vector
      products (Newton-CG, trust-ncg, trust-krylov, trust-constr) or the Hessian (dogleg,
      trust-exact);
    - the `jac` of constraint dicts ({"type": "ineq", "fun": g}) that give none.

    `fun(params, *args)` returns a scalar; `x0` may be a pytree of arrays, and the result's
    `x` (and `jac`) have its structure. The objective and every derivative are jit-compiled,
    once per call of `minimize`.
    """
    flat = _Flat(x0)
    name = method.lower() if isinstance(method, str) else method

    def objective(v, *a):
        return fun(flat.unravel(v), *a)

    kwargs = dict(args=tuple(args), method=method, bounds=bounds, tol=tol, options=options)
    if (jac is None and name not in _NO_JAC) or jac is True:
        value_grad = jit(value_and_grad(objective))

        def fun_and_jac(v, *a):
            value, g = value_grad(v, *a)
            return float(value), _float64(g)

        kwargs.update(fun=fun_and_jac, jac=True)
    else:
        kwargs.update(fun=lambda v, *a: float(objective(v, *a)), jac=jac)
    if hess is None and hessp is None:
        if name in _HESSP:
            kwargs["hessp"] = _hessp(objective)
        elif name in _HESS:
            h = jit(hessian(objective))
            kwargs["hess"] = lambda v, *a: _float64(h(v, *a))
    else:
        kwargs.update(hess=hess, hessp=hessp)
    kwargs["constraints"] = _constraints(constraints, flat)
    kwargs["callback"] = _callback(callback, flat)
    result = _opt.minimize(x0=flat.x0, **{k: v for k, v in kwargs.items() if v is not None})
    return _rebuilt(result, flat)


def _hessp(objective):
    gradient = grad(objective)
    product = jit(lambda v, p, *a: jvp(lambda w: gradient(w, *a), (v,), (p,))[1])
    return lambda v, p, *a: _float64(product(_float64(v), _float64(p), *a))


def _constraints(constraints, flat):
    """Constraint dicts with tracegrad's Jacobian where they give none (others as given)."""
    if isinstance(constraints, dict):
        constraints = [constraints]
    out = []
    for c in constraints:
        if isinstance(c, dict) and "jac" not in c and callable(c.get("fun")):
            c = dict(c)
            g = c["fun"]

            def on_flat(v, *a, _g=g):
                return _g(flat.unravel(v), *a)

            c["fun"] = lambda v, *a, _f=on_flat: _float64(_f(v, *a))
            jacobian = jit(jacrev(on_flat))
            c["jac"] = lambda v, *a, _j=jacobian: _float64(_j(v, *a))
        out.append(c)
    return out if out else ()


def _callback(callback, flat):
    """The user's callback, given the parameters with their pytree structure: SciPy passes
    `intermediate_result` (an OptimizeResult) when the callback names that parameter, else the
    flat vector."""
    if callback is None:
        return None
    params = inspect.signature(callback).parameters
    if "intermediate_result" in params:

        def with_result(intermediate_result):
            return callback(intermediate_result=_rebuilt(intermediate_result, flat))

        return with_result
    return lambda xk, *rest: callback(_concrete(flat.unravel(xk)), *rest)


def _concrete(params):
    return tree.map(np.asarray, params)


def _rebuilt(result, flat):
    """SciPy's result with `x` (and `jac`, when it is the objective's) in x0's structure."""
    result = OptimizeResult(result)
    if "x" in result:
        result["x"] = _concrete(flat.unravel(np.asarray(result["x"])))
    jac = result.get("jac")
    if jac is not None and np.shape(jac) == flat.x0.shape:
        result["jac"] = _concrete(flat.unravel(np.asarray(jac)))
    return result
