"""The primitive table: every primitive tracegrad knows, built explicitly from the families."""

from tracegrad.primitives import elementwise, indexing, linalg, reduction, shape

ALL = (
    elementwise.PRIMITIVES
    + reduction.PRIMITIVES
    + shape.PRIMITIVES
    + indexing.PRIMITIVES
    + linalg.PRIMITIVES
)

BY_NAME = {p.name: p for p in ALL}
assert len(BY_NAME) == len(ALL), "two primitives share a name"
