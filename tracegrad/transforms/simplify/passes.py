"""The public passes: `dce`, `cse`, `fold_constants`, `identities` and `simplify`.

Each but `dce` (one backward liveness sweep) is the sweep of `rewrite` with some of its parts
switched on, and each verifies its result when `config.debug` is set. `simplify` repeats the
full sweep until it creates nothing new, since one sweep in topological order leaves only the
nodes its own rules made unsimplified (and those a later rewrite made the only reader of a
broadcast, which the hoisting rule looks for).
"""

from __future__ import annotations

from tracegrad import config
from tracegrad.ir.graph import Graph, with_consts
from tracegrad.ir.verify import verify
from tracegrad.transforms.simplify.graphs import _live, _rebuild
from tracegrad.transforms.simplify.loops import prune_outputs
from tracegrad.transforms.simplify.rewrite import SIMPLIFY, _Pass

MAX_ROUNDS = 8


# -- public passes --------------------------------------------------------------------------


def dce(graph: Graph) -> Graph:
    """`graph` without the nodes no output depends on."""
    outputs = graph.outputs
    nodes = with_consts(_live(graph.nodes, outputs), outputs)
    if nodes == graph.nodes:
        return graph
    return _debug_verify(_rebuild(graph, outputs, nodes))


def cse(graph: Graph, *, contiguous_inputs: bool = False) -> Graph:
    """Common-subexpression elimination: one node per `(prim, inputs, params)`; constants
    shared by value (scalars, bit for bit) or by identity (arrays of more than one element).
    `contiguous_inputs`: see `simplify`."""
    return _debug_verify(_Pass(graph, cse=True, c_inputs=contiguous_inputs).run())


def fold_constants(graph: Graph) -> Graph:
    """Nodes whose inputs are all constants, evaluated into constants (see the limits in the
    module docstring)."""
    return _debug_verify(_Pass(graph, fold=True).run())


def identities(graph: Graph, *, contiguous_inputs: bool = False) -> Graph:
    """Algebraic identities that keep results and dtypes bit for bit: `x*1`, `x/1`,
    `x + (-0.0)`, `x - 0.0`, `x**1`, `x**2 -> x*x`, `--x`, transpose of transpose, reshape of
    reshape, reshape/broadcast_to/astype to what the value already is, integer sums over
    size-1 axes, an elementwise operand's `broadcast_to` where the operation broadcasts to
    the same shape by itself (and, for a broadcast Python number, promotes to the same
    dtype). `contiguous_inputs`: see `simplify`."""
    return _debug_verify(_Pass(graph, rules=True, c_inputs=contiguous_inputs).run())


def simplify(
    graph: Graph, *, contiguous_inputs: bool = False, max_rounds: int = MAX_ROUNDS
) -> Graph:
    """All passes together, repeated until nothing changes (at most `max_rounds` times).

    With `contiguous_inputs=True` the result is exact only when every array argument is
    C-contiguous at run time (a caller such as `jit` can check `flags.c_contiguous` per call
    and key its cache on it); it lets the rules that need a known layout fire on values
    computed from the arguments. By default an argument may be any view.
    """
    for _ in range(max_rounds):
        sweep = _Pass(graph, cse=True, fold=True, rules=True, c_inputs=contiguous_inputs)
        graph = sweep.run()
        pruned = prune_outputs(graph)  # (a loop's dead outputs: its body is simplified again)
        # One sweep in topological order sees every node after its inputs were final, so only
        # the nodes the rules created (say x*x for x**2) were not simplified themselves, and
        # the nodes a later rewrite left the only reader of a broadcast (see `_Pass.unread`).
        if not sweep.created and not sweep.unread and pruned is graph:
            break
        graph = pruned
    return _debug_verify(graph)


def _debug_verify(graph: Graph) -> Graph:
    return verify(graph) if config.debug else graph


SIMPLIFY.append(simplify)  # sub-graphs are simplified by the same passes
