"""One row of the op table (`Op`) and the values rows act on (`_Var`), with the bounds
on a value and on its derivative that most rows share. The bounds keep random programs
finite and their derivatives within reach of finite differences.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np


@attrs.frozen
class _Var:
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    bound: float  # |value| <= bound for every input in the domain
    slope: float = 1.0  # |derivative along any direction with entries in [-1, 1]| <= slope

    @property
    def ndim(self) -> int:
        return len(self.shape)


#: the programs an `Op` row may appear in: real ones, both kinds, or complex ones only
VALUES = ("real", "both", "complex")


def _same_bound(xs, p):
    return max(x.bound for x in xs)


def _const_bound(c):
    return lambda xs, p: c


def _same_slope(xs, p):
    return max(x.slope for x in xs)


def _sum_slope(xs, p):
    return sum(x.slope for x in xs)


def _product_slope(xs, p):
    return xs[1].bound * xs[0].slope + xs[0].bound * xs[1].slope


def _quotient_slope(xs, p):
    # x / (1 + y*y) and arctan2(x, 1 + y*y): |d/dx| <= 1, |d/dy| <= 0.65 |x|
    return xs[0].slope + 0.65 * xs[0].bound * xs[1].slope


def _chain(deriv):
    """Slope of f(x) for a unary f with |f'| <= deriv(bound of x)."""
    return lambda xs, p: deriv(xs[0].bound) * xs[0].slope


@attrs.frozen(eq=False, repr=False)
class Op:
    """One row of the op table.

    `call(*operands, **params)` runs the operation on values (NumPy, called directly) and
    `text` writes it: a format string over the operand names (`{0}`, `{1}`) and params, or
    a callable `(names, params) -> str`. `draw(builder, x)` picks the other operands and the
    params for a first operand `x` (or returns None when the row does not apply to `x`);
    `bound(operands, params)` bounds the output's magnitude and `slope(operands, params)`
    its derivative's (along directions with entries in [-1, 1]); `linear` rows (sums, shapes,
    indexing) may take operands of any slope, the others only up to the program's
    `max_slope`, so finite differences resolve smooth programs. `needs` lists the
    `tracegrad.numpy` names the row uses: a row is offered only when all are exported.
    `smooth=False` marks rows with kinks, excluded from programs meant for differentiation.
    `values` says which programs may draw the row: "real" ones only (the default: a row with a
    branch cut or a pole a complex value could reach, or one jax.numpy refuses on complex),
    "both", or "complex" ones only (rows that make or take apart complex values: `conj`,
    `real`, `exp(1j * x)`); on complex operands, `bound` and `slope` bound magnitudes.
    `holomorphic` rows are complex-differentiable (programs with `holomorphic=True` draw only
    those).
    """

    name: str
    needs: tuple[str, ...]
    text: object
    call: Callable
    draw: Callable = None
    bound: Callable = _same_bound
    smooth: bool = True
    slope: Callable = _same_slope
    linear: bool = False
    values: str = attrs.field(default="real", validator=attrs.validators.in_(VALUES))
    holomorphic: bool = False

    def __repr__(self) -> str:
        return f"Op({self.name})"

    def render(self, names, params) -> str:
        if callable(self.text):
            return self.text(names, params)
        return self.text.format(*names, **params)

    def available(self, namespace) -> bool:
        return all(hasattr(namespace, n) for n in self.needs)
