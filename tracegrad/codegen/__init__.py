"""The NumPy code generator: a graph as one readable Python function of NumPy calls.

`source(graph)` writes one line per node from its primitive's `emit` rule, with the printer's
value names, a `del` of each intermediate right after its last use, array constants as extra
arguments and only validated plain params as literals; user strings (the graph's name) appear
only in an escaped comment. `compile_graph` compiles the text once under a unique filename
registered in `linecache`, so tracebacks and debuggers show the generated lines. A ufunc whose
result has the shape, dtype and memory layout of a dead intermediate writes into it (`out=`),
so large temporaries are not freed and allocated again (see `buffers._plan_buffers`). A graph
of more than `chunks.CHUNK_NODES` nodes is written as segment functions compiled one at a time
and a driver that calls them, since Python's compiler holds a whole function at once (one
function of 10^5 lines takes about 1 GB to compile).

Submodules, each importing only the ones listed before it:

- `literals`: checking params and writing them (and Python scalar constants) as literals.
- `buffers`: planning the `out=` writes into dead intermediates and donated inputs.
- `chunks`: cutting a large graph into segments, and the slots values cross them in.
- `generate`: the generator of the function's lines, and `source`.
- `compiled`: `compile_graph` and `Compiled` (linecache registration, `export`).
"""

from tracegrad.codegen import chunks as chunks
from tracegrad.codegen.buffers import is_float_aval as is_float_aval
from tracegrad.codegen.buffers import takes_out as takes_out
from tracegrad.codegen.compiled import Compiled, compile_graph
from tracegrad.codegen.generate import source

__all__ = ["Compiled", "compile_graph", "source"]
