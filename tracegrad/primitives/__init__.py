"""The built-in primitives, one family per module, and `ALL`, the explicit table of them.

The families import each other in one direction (views -> broadcasting -> slicing,
batching -> elementwise -> reduction, shape, indexing -> products -> einsum, masked; indexing ->
sorting, scatter; products, sorting -> calculus), so every rule can be written with the
operations of the families below its own.
"""

from tracegrad.primitives import (
    broadcasting,
    calculus,
    einsum,
    elementwise,
    indexing,
    masked,
    products,
    reduction,
    scatter,
    shape,
    slicing,
    sorting,
    views,
)

ALL = (
    elementwise.PRIMITIVES
    + views.PRIMITIVES
    + broadcasting.PRIMITIVES
    + slicing.PRIMITIVES
    + reduction.PRIMITIVES
    + shape.PRIMITIVES
    + indexing.PRIMITIVES
    + products.PRIMITIVES
    + einsum.PRIMITIVES
    + sorting.PRIMITIVES
    + scatter.PRIMITIVES
    + calculus.PRIMITIVES
    + masked.PRIMITIVES
)
