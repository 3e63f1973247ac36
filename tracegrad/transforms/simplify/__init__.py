"""Simplification: graph -> graph passes that keep every result bit for bit.

`dce` drops nodes no output reads; `cse` shares nodes equal on `(prim, inputs, params)`;
`fold_constants` evaluates nodes whose inputs are all constants; `identities` applies
algebraic identities; `simplify` runs them together to a fixed point. Each pass is one loop
over the nodes in topological order (no recursion, O(n)); unchanged nodes are reused, and a
pass that changes nothing returns its argument itself.

What "bit for bit" takes here (DESIGN.md §2: a simplified program gives exactly NumPy's bits):

- A replacement value has exactly the aval of the value it replaces (shape, dtype and weak
  type), so promotion downstream is unchanged.
- Signed zeros are values: `x + 0.0` is not `x` (`-0.0 + 0.0 == 0.0`), `x + (-0.0)` and
  `x - 0.0` are. `x * 0` is never folded (inf and nan). NumPy's `sum` turns `-0.0` into `0.0`
  even over a size-1 axis, so only integer sums over size-1 axes become reshapes.
- Memory layout is part of the result: NumPy reduces and multiplies in memory order, so
  `np.sum(x.T)` and `np.sum(np.ascontiguousarray(x.T))` differ in the last bits. A rewrite that
  swaps a fresh array for an existing one (`x * 1 -> x`) is applied only where both have the
  same strides: `x` known C-contiguous (or dense, with scalar partners), or of size <= 1. A
  static analysis tracks that from each primitive's declared `layout` (`tracegrad.ir.layout`:
  C order, dense, any); graph inputs may have any layout unless the caller promises
  C-contiguous arguments (`contiguous_inputs=True`).
  View-to-view rewrites (transpose of transpose, reshape or broadcast_to to the same shape)
  give identical views and need no condition; reshape of reshape needs a C-contiguous base.
- `x ** 2 -> x * x` only for the dtypes where NumPy's power gives the bits of `x * x`
  (checked once per dtype on special and random values), and `x ** 1 -> x` likewise.
- Two rewrites may change which NaN a NaN result carries (never whether it is NaN): CSE
  shares `a + b` with `b + a` (primitives declared `commutative`), which differ only when both
  operands are NaN with different payloads; `x * 1 -> x` keeps a quiet NaN but not a
  signalling one.
- A fresh output is never replaced by a graph input or constant (callers may write to it).
- Folding runs the primitive's own `impl` with floating-point errors raised: a node whose
  evaluation warns stays a node, so the warning still happens at run time. It does not fold
  into arrays much larger than its inputs (a broadcast of a scalar stays a `broadcast_to`).

Sub-graphs are entered only where that is known to be safe: the bodies and branches of control
flow (the primitives in `OPEN_PRIMITIVES`) are simplified, each on its own (nothing is folded
into one from outside, or shared across its boundary), and equal control-flow nodes are shared;
the forward scan that reverse mode adds, which extends a scan already in the graph, replaces it
(the loop then runs once). Any other node whose params hold a `Graph` (custom rules,
`checkpoint`) is opaque to every pass, and so is any primitive listed in `BARRIER_PRIMITIVES`
(`checkpoint_p` is): nothing is folded into it, rewritten through it or shared across it.
Nodes of effectful primitives (`debug_print`) are kept though nothing reads them, and are never
folded or shared.

Submodules, each importing only the ones listed before it:

- `graphs`: `BARRIER_PRIMITIVES` and the graph helpers every pass shares (liveness, rebuild).
- `constants`: predicates on constants, CSE keys, and the guarded evaluation for folding.
- `powers`: the once-per-dtype check that `x ** 2 -> x * x` and `x ** 1 -> x` are exact.
- `rewrite`: the sweep `_Pass` (folding, identities, CSE, layout analysis) and its rules.
- `passes`: the public passes built on the sweep, and `simplify`'s fixed-point loop.
"""

from tracegrad.transforms.simplify.graphs import BARRIER_PRIMITIVES, OPEN_PRIMITIVES
from tracegrad.transforms.simplify.passes import MAX_ROUNDS as MAX_ROUNDS
from tracegrad.transforms.simplify.passes import (
    cse,
    dce,
    fold_constants,
    identities,
    simplify,
)

__all__ = [
    "BARRIER_PRIMITIVES",
    "OPEN_PRIMITIVES",
    "cse",
    "dce",
    "fold_constants",
    "identities",
    "simplify",
]
