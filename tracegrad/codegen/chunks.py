"""Large graphs as a sequence of functions: the code generator's form above `CHUNK_NODES`.

Python compiles one function at roughly 10-15 us per line, but the compiler's memory grows
with the whole function (its AST, symbol table and code object are built at once): one
function of 10^5 lines takes ~1 GB and 30 us a line, 10^6 lines more than this machine's
memory. So a large graph is written as segment functions of about `SEGMENT_NODES` nodes each,
compiled one at a time, and a driver that calls them in order:

    def _seg0(_s):
        a = _s[0]                     # values from earlier segments, read from slots
        b = np.sin(a)
        ...
        _s[2] = d                     # values later segments (or the outputs) read
    def f(x):
        _s = [x, None, None]
        _seg0(_s)
        _seg1(_s)
        return (_s[2],)

Inside a segment the values are locals freed at their last use by `del`, as in one function;
a value crossing segments lives in one slot of the list `_s`, which the last segment to read
it clears when it loads it, so every value is still freed at its last use and the peak of live
bytes is the one-function form's. Constants (and the impls and params passed in) are globals
of the segments' namespace rather than default arguments. The cost at run time is one call per
segment and a list access per crossing value: under 1 us per segment, nothing beside the
work of 1,000 nodes, which is why graphs smaller than `CHUNK_NODES` keep the one-function
form, whose small-graph call path is the one `jit` tunes.
"""

from __future__ import annotations

from tracegrad.ir.analysis import free_schedule
from tracegrad.ir.graph import Graph, Node, arg_p, const_p

CHUNK_NODES = 5000  # graphs with more nodes than this are written in segments
SEGMENT_NODES = 1000  # nodes per segment (sub-graphs count their nodes)


def _size(node: Node) -> int:
    n = 1
    for v in node.params.values():
        if isinstance(v, Graph):
            n += len(v.nodes)
        elif type(v) is tuple and v and all(isinstance(u, Graph) for u in v):
            n += sum(len(u.nodes) for u in v)
    return n


def wants_segments(graph: Graph, segment_nodes: int | None) -> bool:
    """Whether `graph` is written in segments: by its size when `segment_nodes` is None,
    never when it is 0, always (segments of that many nodes) when it is positive."""
    if segment_nodes is None:
        return len(graph.nodes) > CHUNK_NODES
    return segment_nodes > 0


def segments(graph: Graph, size: int) -> list[list[int]]:
    """Positions of the computing nodes of `graph`, cut into runs of about `size` nodes."""
    runs: list[list[int]] = [[]]
    count = 0
    for i, node in enumerate(graph.nodes):
        if node.prim is const_p or node.prim is arg_p:
            continue
        if count >= size:
            runs.append([])
            count = 0
        runs[-1].append(i)
        count += _size(node)
    return [r for r in runs if r]


def segmented_body(gen, size: int) -> tuple[list[tuple[str, str]], list[str]]:
    """([(segment name, source text)], driver body lines) for `gen`'s graph (a root
    `_Generator`): see the module docstring."""
    graph = gen.graph
    runs = segments(graph, size)
    seg_of: dict[Node, int] = {}
    for k, run in enumerate(runs):
        for i in run:
            seg_of[graph.nodes[i]] = k
    driver = len(runs)
    inputs = gen.inputs

    def home(node: Node) -> int | None:
        # the segment defining a value; -1 for the driver's inputs; None for constants
        if node in inputs:
            return -1
        if node.prim is const_p:
            return None
        return seg_of[node]

    # every value read outside its home segment gets a slot; last[name]: its last reader
    slot: dict[str, int] = {}
    last: dict[str, int] = {}
    reads: list[dict[str, None]] = [{} for _ in runs]  # per segment, in order of first read
    for e in graph.inputs:
        slot.setdefault(gen.names[e.node][0], len(slot))
    for k, run in enumerate(runs):
        for i in run:
            for e in graph.nodes[i].inputs:
                h = home(e.node)
                if h is None or h == k:
                    continue
                name = gen.ref(e)
                reads[k][name] = None
                slot.setdefault(name, len(slot))
                last[name] = k
    for e in graph.outputs:
        if home(e.node) is not None and e.node not in inputs:
            name = gen.ref(e)
            slot.setdefault(name, len(slot))
            last[name] = driver
    # a buffer taken with out= must be a local of the taker's segment
    local = [set(r) for r in reads]
    for k, run in enumerate(runs):
        for i in run:
            local[k].update(gen.names.get(graph.nodes[i], ()))
    for node, buf in list(gen.plan.items()):
        if gen.names[buf][0] not in local[seg_of[node]]:
            del gen.plan[node]

    frees = free_schedule(graph)
    reused = set(gen.plan.values())
    input_names = {gen.names[e.node][0] for e in graph.inputs}
    stores: list[list[str]] = [[] for _ in runs]
    parts = []
    for k, run in enumerate(runs):
        body: list[str] = []
        loaded = list(reads[k])
        if loaded:
            rhs = ", ".join(f"_s[{slot[n]}]" for n in loaded)
            body.append(f"    {', '.join(loaded)} = {rhs}")
            done = [f"_s[{slot[n]}]" for n in loaded if last[n] == k and n not in input_names]
            if done:
                body.append(f"    {' = '.join(done)} = None")
        for i in run:
            node = graph.nodes[i]
            body.extend(gen.node_lines(node))
            gone = [n for n in gen.dead_names(node, frees[i], reused) if n in local[k]]
            if gone:
                body.append(f"    del {', '.join(gone)}")
            for name in gen.names.get(node, ()):
                if name in slot:
                    stores[k].append(name)
        for name in stores[k]:
            body.append(f"    _s[{slot[name]}] = {name}")
        name = f"_seg{k}"
        parts.append((name, "\n".join([f"def {name}(_s):", *body]) + "\n"))

    first = [gen.names[e.node][0] for e in graph.inputs]
    rest = len(slot) - len(first)
    head = f"[{', '.join(first)}]" if first else "[]"
    lines = [f"    _s = {head}" + (f" + [None] * {rest}" if rest else "")]
    lines += [f"    {name}(_s)" for name, _ in parts]
    outs = []
    for e in graph.outputs:
        text = gen.ref(e)
        outs.append(f"_s[{slot[text]}]" if text in slot and e.node not in inputs else text)
    lines.append(f"    return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
    return parts, lines
