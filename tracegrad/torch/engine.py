"""`backward` and `grad`: the recorded graph's backward pass, with PyTorch's semantics.

Both collect the `GradFn`s reachable from the outputs (their nodes, in topological order) and
walk them in reverse, applying `tracegrad.transforms.vjp.vjp_step` (the same step the
functional backward pass takes) to each node's saved values, around it the PyTorch parts:
tensor and node hooks in PyTorch's order, `retain_grad` tensors, released saved values,
anomaly checks. Without `create_graph` the pass runs on arrays; with it, on tensors in grad
mode, so it records a graph of its own that can be differentiated again.

Complex numbers: the rules follow JAX (transposes under Re(sum(a * b))), and PyTorch's gradient
is the conjugate of that cotangent on every edge. So the pass conjugates at its boundary and
nowhere else (`torch_gradient`): seeds and `grad_outputs` on the way in, and every gradient a
user sees on the way out (`.grad`, `autograd.grad`'s results, retained grads, tensor and node
hooks, and a custom Function's backward), with a recorded conjugation under `create_graph`.
"""

from __future__ import annotations

import warnings
from operator import attrgetter

import numpy as np

from tracegrad import config
from tracegrad.core import bind
from tracegrad.diagnostics import provenance, tensor_causes
from tracegrad.ir.graph import Node
from tracegrad.primitives.elementwise import conjugate_p, positive_p
from tracegrad.torch.grad_mode import (
    _enabled,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
)
from tracegrad.torch.graph import _FREED, _SAVED, AccumulateGrad, GradFn, accumulator, edge_and_fn
from tracegrad.torch.tensor import Tensor, _readonly
from tracegrad.transforms.vjp import Cotangents, vjp_step

_CYCLE_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter "
    "and its gradient which can cause a memory leak. We recommend using autograd.grad when "
    "creating the graph to avoid this. If you have to use this function, make sure to reset the "
    ".grad fields of your parameters to None after use to break the cycle and avoid the leak."
)


def backward(
    tensors,
    grad_tensors=None,
    retain_graph=None,
    create_graph=False,
    grad_variables=None,
    inputs=None,
) -> None:
    """Accumulate the gradients of `tensors` into the `.grad` of the leaves (or `inputs`)."""
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError(
                "`grad_tensors` and `grad_variables` (deprecated) arguments both passed to "
                "`backward()`. Please only use `grad_tensors`."
            )
        warnings.warn(
            "`grad_variables` is deprecated. Use `grad_tensors` instead.", FutureWarning, 2
        )
        grad_tensors = grad_variables
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if len(inputs) == 0:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        for t in inputs:
            if not t._requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    roots = _as_tuple(tensors)
    seeds = _seeds(roots, grad_tensors, "backward", create_graph)
    _run(roots, seeds, inputs, retain_graph, create_graph, accumulate=True)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    only_inputs=True,
    allow_unused=None,
    is_grads_batched=False,
    materialize_grads=False,
) -> tuple:
    """The gradients of `outputs` with respect to `inputs`, returned, not accumulated."""
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but "
            "got: allow_unused=False."
        )
    if is_grads_batched:
        raise NotImplementedError(
            "autograd.grad: is_grads_batched=True is not supported; use tg.vmap over tg.vjp"
        )
    allow_unused = bool(allow_unused) or materialize_grads
    roots = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    for t in inputs:
        if not isinstance(t, Tensor):
            raise TypeError(f"autograd.grad: inputs must be tensors, got {type(t).__name__}")
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    seeds = _seeds(roots, grad_outputs, "grad", create_graph)
    results, reached = _run(roots, seeds, inputs, retain_graph, create_graph, accumulate=False)
    out = []
    for i, (t, g) in enumerate(zip(inputs, results)):
        if g is None:
            if reached[i]:
                g = _zeros_like(t)
            elif materialize_grads:
                g = _zeros_like(t)
            elif not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in "
                    "the graph. Set allow_unused=True if this is the desired behavior."
                )
        out.append(g)
    return tuple(out)


# -- arguments --------------------------------------------------------------------------------


def _as_tuple(x) -> tuple:
    if isinstance(x, Tensor):
        return (x,)
    if x is None:
        return ()
    return tuple(x)


def _seeds(roots, grads, api: str, create: bool) -> list:
    """One cotangent per root: the given ones checked, implicit ones for one-element roots."""
    if grads is None:
        grads = (None,) * len(roots)
    else:
        grads = _as_tuple(grads)
    if len(grads) != len(roots):
        raise RuntimeError(f"got {len(roots)} tensors and {len(grads)} gradients")
    seeds = []
    for i, (out, g) in enumerate(zip(roots, grads)):
        if not isinstance(out, Tensor):
            raise TypeError(
                f"{api}: expected tensors to differentiate, got {type(out).__name__} at index {i}"
            )
        if g is None:
            if out._requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if out.dtype.kind != "f":
                    raise RuntimeError(
                        "grad can be implicitly created only for real scalar outputs but got "
                        f"{out.dtype.name}"
                    )
            g = np.ones(out.shape, out.dtype)
        elif isinstance(g, Tensor):
            if g.shape != out.shape:
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and "
                    f"output[{i}] has a shape of {out.shape}."
                )
            if (g.dtype.kind == "c") != (out.dtype.kind == "c"):
                raise RuntimeError(
                    "For complex Tensors, both grad_output and output are required to have the "
                    f"same dtype. Mismatch in dtype: grad_output[{i}] has a dtype of "
                    f"{g.dtype.name} and output[{i}] has a dtype of {out.dtype.name}."
                )
            if g.dtype != out.dtype:
                g = g._astype(out.dtype) if create else g._cell.value.astype(out.dtype)
            elif not create:
                g = g._cell.value
            g = torch_gradient(g)  # the pass runs on the conjugate of a complex seed
        else:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        if not out._requires_grad:
            raise RuntimeError(
                f"element {i} of tensors does not require grad and does not have a grad_fn"
                + tensor_causes.no_grad_fn(out)
            )
        if create and not isinstance(g, Tensor):
            g = Tensor._wrap(g)
        seeds.append(g)
    return seeds


def torch_gradient(g):
    """PyTorch's gradient for the pass's cotangent `g`, and the pass's cotangent for PyTorch's
    gradient: the conjugate of a complex value (the same map both ways), a real one as it is.

    The rules transpose under Re(sum(a * b)) as JAX's do, so their cotangent is the conjugate
    of PyTorch's (conjugate Wirtinger) gradient on every edge: for a real loss of z = x + iy,
    df/dx - i df/dy where PyTorch has df/dx + i df/dy. A tensor is conjugated by a recorded
    operation, so that a `create_graph` gradient differentiates again."""
    if g is None:
        return None
    if isinstance(g, Tensor):  # only under create_graph: recorded even inside no_grad()
        if g.dtype.kind != "c":
            return g
        token = _enabled.set(True)
        try:
            out = bind(conjugate_p, g)
        finally:
            _enabled.reset(token)
        if g._grad_fn is not None and out._grad_fn is not None:
            out._grad_fn._name = g._grad_fn.name()  # shown as the operation it conjugates
        return out
    return np.conj(g) if np.iscomplexobj(g) else g


def _zeros_like(t: Tensor) -> Tensor:
    return Tensor._wrap(np.zeros(t.shape, t.dtype))


# -- the pass ---------------------------------------------------------------------------------


_SEQ = attrgetter("_seq")


def _run(roots, seeds, inputs, retain_graph, create: bool, accumulate: bool):
    """One backward pass from `roots`: gradients accumulated into leaves (`accumulate`) or
    returned for `inputs` (with, per input, whether the graph reaches it)."""
    retain = create if retain_graph is None else bool(retain_graph)
    root_edges, root_fns = [], []
    for r in roots:
        edge, (fn, _) = edge_and_fn(r)
        root_edges.append(edge)
        root_fns.append(fn)
    state = _Pass(create, retain, accumulate, inputs)
    order, leaves = state.survey(root_fns)
    targets, captures, reached = _targets(inputs, leaves, state.fn_of)
    sources = {acc.node for acc in targets} | set(captures)
    if inputs is not None:  # (without, every node runs: `survey`)
        state.stop_where(order, sources, captures)
    token = _enabled.set(create)
    # tracegrad.diagnostics: the nodes this call releases remember its line
    freeing = tensor_causes.FREEING[0]
    tensor_causes.FREEING[0] = None if retain else provenance.user_site()
    try:
        # as PyTorch, no floating-point warnings from derivatives (sqrt's at 0 is inf)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            leaf_bars = state.run(order, root_edges, seeds, sources | state.runs, targets)
        results = [None] * len(inputs) if inputs is not None else []
        for pos, g in state.captured.items():
            results[pos] = g
        _deliver(targets, leaf_bars, results, create, accumulate)
    finally:
        _enabled.reset(token)
        tensor_causes.FREEING[0] = freeing
    return results, reached


def _targets(inputs, leaves, fn_of):
    """What to differentiate with respect to: leaves (AccumulateGrad, each once, with the
    positions in `inputs` that name it) and non-leaf outputs (node -> output index ->
    positions), plus whether the graph reaches each input."""
    if inputs is None:
        return {acc: [] for acc in leaves.values()}, {}, []
    targets: dict[AccumulateGrad, list[int]] = {}
    captures: dict[Node, dict[int, list[int]]] = {}
    reached = []
    for pos, t in enumerate(inputs):
        if t._grad_fn is None:
            acc = accumulator(t)
            targets.setdefault(acc, []).append(pos)
            reached.append(acc.node in leaves)
        else:
            captures.setdefault(t._grad_fn.node, {}).setdefault(t._index, []).append(pos)
            reached.append(t._grad_fn.node in fn_of)
    return targets, captures, reached


def _deliver(targets, leaf_bars, results, create: bool, accumulate: bool) -> None:
    """Leaves' gradients after their hooks: into `.grad` (then post-accumulate hooks), or
    into `results` at each position that asked for them."""
    warned = False
    for (acc, positions), bar in zip(targets.items(), leaf_bars):
        if bar is None:
            continue
        g = _leaf(acc, bar, create)
        if accumulate:
            if create and not warned:
                warnings.warn(_CYCLE_WARNING, UserWarning, stacklevel=5)
                warned = True
            _accumulate(acc.variable, g, create)
            for hook in acc.variable._post_acc_hooks or ():
                hook(acc.variable)
        else:
            for pos in positions:
                results[pos] = _as_tensor(g)


def _as_tensor(g) -> Tensor:
    return g if isinstance(g, Tensor) else Tensor._wrap(g)


def _apply_hooks(hooks, g, create: bool):
    """Tensor hooks in registration order; each may replace the gradient (checked)."""
    for hook in list(hooks):
        t = _as_tensor(g)
        new = hook(t)
        if new is None:
            continue
        if not isinstance(new, Tensor):
            raise TypeError(
                f"hook '{_hook_name(hook)}' returned a {type(new).__name__}; a tensor hook must "
                "return a Tensor or None"
            )
        if new.shape != t.shape:
            raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
        if new.dtype != t.dtype:
            raise RuntimeError(
                f"hook '{_hook_name(hook)}' has changed the type of value (was {t.dtype.name} "
                f"got {new.dtype.name})"
            )
        g = new if create else new._cell.value
    return g


def _hook_name(hook) -> str:
    return getattr(hook, "__name__", type(hook).__name__)


def _leaf(acc: AccumulateGrad, bar, create: bool):
    """A leaf's gradient (PyTorch's) after its tensor hooks and its node's pre-hooks."""
    bar = torch_gradient(bar)
    var = acc.variable
    if var._hooks:
        bar = _apply_hooks(var._hooks, bar, create)
    if acc._pre_hooks:
        (bar,) = _run_prehooks(acc._pre_hooks, (bar,), create)
    return _as_tensor(bar) if create else bar


def _run_prehooks(hooks, bars, create: bool) -> list:
    """Node pre-hooks: `hook(grad_outputs) -> replacement or None`, in registration order."""
    grads = tuple(None if b is None else _as_tensor(b) for b in bars)
    for hook in list(hooks):
        new = hook(grads)
        if new is not None:
            grads = tuple(new)
    return [g if create or g is None else g._cell.value for g in grads]


def _accumulate(var: Tensor, g, create: bool) -> None:
    old = var._grad
    if not create:
        value = np.asarray(g)
        if old is None:
            var._grad = Tensor._wrap(value if value.flags.c_contiguous else value.copy())
        else:  # in place, as PyTorch: the same .grad object (a graph it has is kept)
            old._cell.value = _readonly(old._cell.value + value)
            old._cell.version += 1
        return
    if old is None:
        if g._grad_fn is not None:
            source = edge_and_fn(g)[1]
            g = bind(positive_p, g)  # a copy node, as PyTorch's first write
            g._grad_fn._name = "torch::autograd::CopyBackwards"
            g._grad_fn._shown = ((None, 0), source)
        var._grad = g
    else:
        var._grad = old + g


class _Pass:
    """One backward pass over recorded nodes: the loop, and the shim's part at each node
    (saved values, hooks, retained and captured grads)."""

    def __init__(self, create: bool, retain: bool, accumulate: bool, inputs):
        self.create = create
        self.retain = retain
        self.accumulate = accumulate
        self.inputs = inputs
        # a custom Function's ctx is released after its backward has read it; in anomaly
        # mode every node's results are checked for NaN
        self.anomaly = is_anomaly_enabled() and is_anomaly_check_nan_enabled()
        self.captures: dict = {}
        self.captured: dict[int, object] = {}

    def survey(self, root_fns) -> tuple[list[GradFn], dict[Node, AccumulateGrad]]:
        """One search of the recorded graph from `root_fns`. Returns the GradFns it reaches,
        producers first, and the leaves, in the order a producers-first walk meets them (a
        root may be a leaf itself); keeps `fn_of` (node -> GradFn), the nodes that run (all
        of them, for a pass to every leaf), `special` (before(): nodes with tensor hooks,
        retained grads or pre-hooks) and `post` (after(): post-hooks, a custom Function's
        ctx to release, anomaly checks).

        Recording numbers GradFns in creation order, which is topological: a search and a
        sort by that number give the order (cheaper than a post-order). Every node reached
        runs: a node is recorded only when an input requires grad, whose producer (a node,
        or a leaf's AccumulateGrad) is among its `next_functions`, so by induction in
        creation order every node reaches a leaf. (`stop_where` narrows them to `inputs=`.)"""
        fn_of: dict[Node, GradFn] = {}
        special: set[Node] = set()
        post: set[Node] = set()
        leafy = []  # the GradFns with a leaf among their inputs
        released = not self.retain
        anomaly = self.anomaly
        stack = [fn for fn in root_fns if isinstance(fn, GradFn)]
        while stack:
            fn = stack.pop()
            node = fn.node
            if node in fn_of:
                continue
            fn_of[node] = fn
            to_leaf = False
            for nxt, _ in fn._next:
                if isinstance(nxt, GradFn):
                    if nxt.node not in fn_of:
                        stack.append(nxt)
                elif nxt is not None:
                    to_leaf = True
            if to_leaf:
                leafy.append(fn)
            if fn._tensor_hooks or fn._retained or fn._pre_hooks:
                special.add(node)
            if fn._post_hooks or (released and fn._on_release is not None) or anomaly:
                post.add(node)
        order = sorted(fn_of.values(), key=_SEQ)
        leaves: dict[Node, AccumulateGrad] = {}
        for fn in sorted(leafy, key=_SEQ):
            for nxt, _ in fn._next:
                if isinstance(nxt, AccumulateGrad):
                    leaves[nxt.node] = nxt
        for fn in root_fns:
            if isinstance(fn, AccumulateGrad):
                leaves[fn.node] = fn
        self.fn_of, self.runs, self.special, self.post = fn_of, set(fn_of), special, post
        return order, leaves

    def stop_where(self, order, sources: set[Node], captures) -> None:
        """The nodes that run when the pass goes to `sources` (`inputs=`) only: those
        between the outputs and the sources. (`backward(inputs=[a non-leaf])` also runs
        the non-leaf's own node, as PyTorch does.)"""
        self.captures = captures
        runs = set(captures) if self.accumulate else set()
        for fn in order:
            for nxt, _ in fn._next:
                if nxt is not None and (nxt.node in sources or nxt.node in runs):
                    runs.add(fn.node)
                    break
        # `survey`'s hooked nodes, and now the captured ones and those that must not run
        self.special |= {node for node in self.fn_of if node not in runs} | set(captures)
        self.runs = runs

    def run(self, order, root_edges, seeds, active: set[Node], targets) -> list:
        """The leaves' cotangents (one per target, None where none arrived)."""
        bars = Cotangents()
        for e, b in zip(root_edges, seeds):
            if e.node in active:
                bars.add(e, b)
        special, post, create, retain = self.special, self.post, self.create, self.retain
        release, freeing_site = not retain, tensor_causes.FREEING[0]
        diagnosing = config.provenance or config.debug_nans or config.debug_infs
        pending = bars.bars
        for fn in reversed(order):
            node = fn.node
            if node not in active:
                continue
            prim = node.prim
            if prim.multiple_results:
                bar = bars.pop(node)
            else:  # the common case, written out
                bar = pending.pop((node, 0), None)
            if bar is not None and node in special:
                bar = self.before(node, bar)
            if bar is None:
                continue
            primals, out = fn.saved(create)
            # the rule has what it reads; the node keeps nothing, as PyTorch (`GradFn.release`
            # written out; a custom Function's node is released by `after`)
            if release and fn._state == _SAVED and fn._on_release is None:
                fn._state = _FREED
                fn._values = fn._outs = None
                fn._versions = freeing_site  # the freeing backward call's line, for the message
            rule_of = None if diagnosing or node in post else prim.input_vjp
            if rule_of is not None and prim.registered:  # `vjp_step` of per-input rules, inline
                params = node.params
                for i, e in enumerate(node.inputs):
                    if e[0] in active:  # (constants take no cotangent)
                        rule = rule_of(i)
                        b = None if rule is None else rule(bar, *primals, out=out, **params)
                        bars.add(e, self.zero(e) if b is None else b)  # (None: see below)
                continue
            in_bars = vjp_step(node, bar, primals, out, active)
            if node in post:
                in_bars = self.after(node, bar, in_bars)
            custom = not prim.registered  # a custom Function's node (see below)
            for e, b in zip(node.inputs, in_bars):
                if e[0] not in active:  # constants take no cotangent
                    continue
                if b is None and not custom:
                    # A rule's None is a zero derivative (floor, sign, round, a where's other
                    # branch); PyTorch's formula returns zeros there, so a leaf reached only
                    # through it gets a zero .grad, not None. A custom Function's None is
                    # PyTorch's undefined gradient: nothing reaches that input.
                    b = self.zero(e)
                if b is not None:
                    bars.add(e, b)
        return [bars.pop(acc.node) for acc in targets]

    def zero(self, e):
        aval = e.aval
        z = np.zeros(aval.shape, aval.strengthen().dtype)
        return Tensor._wrap(z) if self.create else z

    def before(self, node: Node, bar):
        """`node`'s output cotangent after tensor hooks, retained and captured grads and
        node pre-hooks; None where the pass must stop at this node."""
        fn = self.fn_of[node]
        prim = node.prim
        if fn._tensor_hooks or fn._retained or node in self.captures:
            bars = list(prim.results(bar))
            for i, b in enumerate(bars):
                if b is None:
                    continue
                g = torch_gradient(b)  # what hooks, retained and captured grads see
                hooks = fn._tensor_hooks.get(i) if fn._tensor_hooks else None
                if hooks:
                    g = _apply_hooks(hooks, g, self.create)
                    bars[i] = torch_gradient(g)
                for ref in (fn._retained or {}).get(i, ()):
                    t = ref()
                    if t is not None:
                        _accumulate_retained(t, g, self.create)
                positions = self.captures.get(node, {}).get(i, ())
                if positions and self.accumulate:
                    _accumulate_retained(self.inputs[positions[0]], g, self.create)
                for pos in () if self.accumulate else positions:
                    self.captured[pos] = _as_tensor(g)
            bar = prim.result(bars)
        if node not in self.runs:
            return None
        if fn._pre_hooks:
            grads = [torch_gradient(b) for b in prim.results(bar)]
            grads = _run_prehooks(fn._pre_hooks, grads, self.create)
            bar = prim.result([torch_gradient(g) for g in grads])
        return bar

    def after(self, node: Node, bar, in_bars):
        """The cotangents `node`'s rule returned, after its post-hooks (which may replace
        them); releases a custom Function's ctx and checks for NaN in anomaly mode."""
        fn = self.fn_of[node]
        if fn._post_hooks:
            grad_inputs = tuple(_torch_tensor(b) for b in in_bars)
            grad_outputs = tuple(_torch_tensor(b) for b in node.prim.results(bar))
            for hook in list(fn._post_hooks):
                new = hook(grad_inputs, grad_outputs)
                if new is not None:
                    grad_inputs = tuple(new)
            in_bars = [
                torch_gradient(g if self.create or g is None else g._cell.value)
                for g in grad_inputs
            ]
        if fn._on_release is not None and not self.retain:
            fn.release()
        if self.anomaly:
            _check_nan(fn, in_bars)
        return in_bars


def _torch_tensor(b):
    """A cotangent of the pass as the tensor a node hook receives (PyTorch's gradient)."""
    return None if b is None else _as_tensor(torch_gradient(b))


def _check_nan(fn, in_bars) -> None:
    """Anomaly mode: name the node whose backward produced NaN, with its forward's stack."""
    for i, b in enumerate(in_bars):
        if b is None:
            continue
        value = b._cell.value if isinstance(b, Tensor) else np.asarray(b)
        if value.dtype.kind in "fc" and np.isnan(value).any():
            stack = "".join(fn.metadata.get("traceback_", ["  (not recorded)\n"]))
            warnings.warn(
                f"Error detected in {fn.name()}. Traceback of forward call that caused the "
                f"error:\n{stack}",
                UserWarning,
                stacklevel=6,
            )
            raise RuntimeError(f"Function '{fn.name()}' returned nan values in its {i}th output.")


def _accumulate_retained(t: Tensor, g, create: bool) -> None:
    g = _as_tensor(g)
    if t._grad is None:
        t._grad = g if create else Tensor._wrap(np.array(g._cell.value))
    else:
        t._grad = t._grad + g if create else Tensor._wrap(t._grad._cell.value + g._cell.value)


__all__ = ["backward", "grad"]
