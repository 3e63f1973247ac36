"""`jit`: trace once per signature, simplify, generate NumPy code, and cache it; `make_graph`,
the abstract trace alone.

The signature of a call is the pytree structure of its positional and keyword arguments,
each leaf's shape, dtype and weak type (a Python scalar is weak), and the values of the
static arguments. The first call with a new signature traces `f` abstractly (shapes and
dtypes only: Python control flow on values raises `tg.ConcretizationError`), simplifies the
graph and compiles it; later calls with that signature run the compiled code directly.

Arrays that `f` closes over are constants captured at trace time (as in JAX): changing such
an array in place later does not change what a cached entry computes. Called on tracers (in
`grad(jit(f))`, `vmap(jit(f))`), a jitted function inlines its cached graph into the
enclosing trace instead of running it.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import warnings
import weakref
from collections import namedtuple
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from pathlib import Path

import numpy as np

from tracegrad import config, tree
from tracegrad.api.common import merge_static, name_of, split_static, trace_flat, trace_function
from tracegrad.backends.libraries import (
    BackendError,
    backend_for_namespace,
    backend_of,
    library_of,
)
from tracegrad.codegen import compile_graph, source
from tracegrad.core import Tracer
from tracegrad.interpret import eval_graph
from tracegrad.ir.analysis import peak_bytes
from tracegrad.ir.graph import Graph
from tracegrad.ir.types import Aval, aval_of
from tracegrad.numpy._at import ndarray as tnp_ndarray
from tracegrad.transforms.simplify import simplify

logger = logging.getLogger("tracegrad.jit")

CacheInfo = namedtuple("CacheInfo", ["hits", "misses", "maxsize", "currsize"])

RETRACE_WARNING_AFTER = 10
_BACKENDS = ("codegen", "interpret")


# `disable_jit()`: jitted functions (and the control-flow constructs) run their Python eagerly
_jit_disabled: ContextVar[bool] = ContextVar("tracegrad_disable_jit", default=False)


@contextlib.contextmanager
def disable_jit(disable: bool = True):
    """A context manager under which `jit`-compiled functions run their Python directly, on
    concrete values, as `jax.disable_jit`: prints and breakpoints inside them work, and
    control flow (`cond`, `while_loop`, `fori_loop`, `scan`) runs as the plain Python it
    means. For debugging; `disable_jit(False)` re-enables jit inside such a block."""
    token = _jit_disabled.set(bool(disable))
    try:
        yield
    finally:
        _jit_disabled.reset(token)


def jit_disabled() -> bool:
    """Whether code runs under `disable_jit()`."""
    return _jit_disabled.get()


class RetraceWarning(UserWarning):
    """A jitted function keeps meeting new signatures (each one costs a trace and a compile)."""


# marks the signature of a trace made in debug mode (tracegrad.diagnostics), cached apart
_CHECKED = "(debug_nans/debug_infs: traced with provenance)"


def _leaf_key(x):
    # cheap and hashable: arrays by (shape, dtype), Python scalars by type (weak)
    t = type(x)
    if t is np.ndarray:
        return (x.shape, x.dtype)
    if t is float or t is int or t is bool or t is complex:
        return t
    if isinstance(x, Tracer):
        a = x.aval
        return (a.shape, a.dtype, a.weak_type)
    if isinstance(x, np.generic):
        return ((), x.dtype)
    if t is tnp_ndarray:  # tracegrad.numpy's arrays: NumPy arrays that only add `.at`
        return (x.shape, x.dtype)
    library = library_of(x)
    if library is not None:  # another array library's (tracegrad.backends)
        return (library, tuple(x.shape), str(x.dtype))
    if t is Aval:
        raise TypeError(
            "jit: a tg.Aval stands for an argument in .lower() and make_graph; call the "
            "jitted function with arrays"
        )
    raise TypeError(
        f"jit: arguments must be arrays, Python scalars or pytrees of them; got a "
        f"{t.__name__}. Pass non-array values with static_argnums."
    )


def _leaf_aval(x) -> Aval:
    if type(x) is Aval:  # lower(tg.Aval(...))
        return x
    return x.aval if isinstance(x, Tracer) else aval_of(x)


_WEAK_TYPES = {"b": bool, "i": int, "u": int, "f": float, "c": complex}


def _lower_key(x):
    """`_leaf_key`, and for a `tg.Aval` the key of the arrays (or Python scalars, if weak)
    it stands for, so a later call with them finds the entry `lower` made."""
    if type(x) is Aval:
        return _WEAK_TYPES[x.dtype.kind] if x.weak_type and not x.shape else (x.shape, x.dtype)
    return _leaf_key(x)


# Donated arrays a call has consumed, by id (weakly: an id is dropped when its array dies, so
# a new array at the same address is not mistaken for one). As JAX deletes a donated buffer,
# passing one to a jitted function again raises, and the old object is made read-only; the
# call returns new array objects (views where an output lives in a donated buffer).
_CONSUMED: dict[int, weakref.ref] = {}


def _give_up(outs, donated):
    """Mark the `donated` arrays consumed; outputs that are one of them become fresh views."""
    for x in donated:
        key = id(x)
        _CONSUMED[key] = weakref.ref(x, lambda _, key=key: _CONSUMED.pop(key, None))
    given = {id(x) for x in donated}
    outs = tuple(o.view() if id(o) in given else o for o in outs)
    for x in donated:
        x.flags.writeable = False
    return outs


class _Entry:
    """One cached signature: the simplified graph and how to run it."""

    __slots__ = ("graph", "run", "out_tree", "compiled", "captured", "donated")

    def __init__(self, graph: Graph, run, out_tree, compiled, captured=(), donated=()):
        self.graph = graph
        self.run = run
        self.out_tree = out_tree
        self.compiled = compiled
        self.donated = donated  # flat positions of donated arrays (checked on every call)
        # outer tracers the graph reads (f closed over them): such an entry is not cached
        self.captured = captured


class Lowered:
    """What `jit(f).lower(*args)` returns: the simplified IR and the generated Python."""

    def __init__(self, entry: _Entry):
        self.graph = entry.graph
        self._compiled = entry.compiled
        self._out_tree = entry.out_tree

    @property
    def source(self) -> str:
        if self._compiled is None:
            return source(self.graph)
        return self._compiled.source

    @property
    def memory(self) -> int:
        """Predicted peak bytes of live intermediates while the generated code runs."""
        return self._compiled.memory if self._compiled is not None else peak_bytes(self.graph)

    def export(self, path, xp: str = "numpy") -> Path:
        """Write a standalone module (NumPy only; array constants in an .npz beside it) whose
        function takes the flat array arguments, in order, and returns `f`'s outputs in `f`'s
        structure (tuples, lists, dicts). Returns the module's path.

        `xp` names the array namespace the module runs on: "numpy", or "jax.numpy" (its
        function calls only jax.numpy, so `jax.jit` compiles it for GPU and TPU), "dask.array",
        "cupy", "array_api_strict" (see docs/backends.md); the module needs that library and
        NumPy, not tracegrad."""
        backend = backend_for_namespace(xp)
        if backend is None:
            compiled = self._compiled
            if compiled is None or compiled.backend is not None:
                compiled = compile_graph(self.graph)
        else:
            compiled = compile_graph(self.graph, backend=backend)
        return compiled.export(path, self._out_tree)

    def __repr__(self) -> str:
        return f"<Lowered {self.graph.name}: {len(self.graph.nodes)} nodes>"


class Jitted:
    """A function compiled per signature. Call it like `f`; see `jit`."""

    def __init__(
        self,
        f: Callable,
        static_argnums: Sequence[int],
        backend: str,
        donate_argnums: Sequence[int],
        static_argnames: Sequence[str] = (),
    ):
        self.f = f
        static_argnums, static_argnames, by_name = _static_names_and_nums(
            f, static_argnums, static_argnames
        )
        self.static_argnums = tuple(sorted(set(static_argnums)))
        self.static_argnames = frozenset(static_argnames)
        self._named_positions = by_name  # static positions that may also come by name
        self.backend = backend
        self.donate_argnums = tuple(donate_argnums)
        self.name = name_of(f)
        self._cache: dict = {}
        self._hits = 0
        self._misses = 0
        self._last_key = None
        functools.update_wrapper(self, f, updated=())  # f.__dict__ would overwrite ours

    # -- the call path: keep it lean (at small sizes it is the whole cost) ---------------------
    def __call__(self, *args, **kwargs):
        if _jit_disabled.get():
            return self.f(*args, **kwargs)
        if self.static_argnums:
            statics, args = self._split_static(args)
        else:
            statics = ()
        if self.static_argnames and kwargs:
            statics, kwargs = self._split_static_kwargs(statics, kwargs)
        flat, treedef = tree.flatten((args, kwargs))
        try:
            checked = config.debug_nans or config.debug_infs
            if checked:  # tracegrad.diagnostics: traced with provenance, run node by node
                key = (treedef, (*statics, _CHECKED), tuple(map(_leaf_key, flat)))
            else:
                key = (treedef, statics, tuple(map(_leaf_key, flat)))
            entry = self._cache.get(key)
        except TypeError as err:
            raise TypeError(f"jit({self.name}): {err}") from None
        if entry is None:
            entry = self._compile(key, args, kwargs, flat, treedef, statics)
        else:
            self._hits += 1
        if _CONSUMED:
            self._check_not_consumed(flat)
        if entry.run is None or checked or any(isinstance(x, Tracer) for x in flat):
            outs = self._inline(entry, args, kwargs, statics, flat)
        elif entry.donated:
            self._check_donated(flat, entry.donated)
            outs = _give_up(entry.run(*flat), [flat[p] for p in entry.donated])
        else:
            outs = entry.run(*flat)
        return tree.unflatten(entry.out_tree, outs)

    def _check_donated(self, flat, positions) -> None:
        for p in positions:
            x = flat[p]
            if type(x) not in (np.ndarray, tnp_ndarray) or not x.flags.writeable:
                raise ValueError(
                    f"jit({self.name}): a donated argument (leaf {p}) must be a writeable NumPy "
                    f"array, got {type(x).__name__}"
                    + (" (read-only)" if isinstance(x, np.ndarray) else "")
                    + "; pass a fresh array or drop donate_argnums"
                )

    def _check_not_consumed(self, flat) -> None:
        for i, x in enumerate(flat):
            if id(x) in _CONSUMED and _CONSUMED[id(x)]() is x:
                raise RuntimeError(
                    f"jit({self.name}): argument leaf {i} (shape {x.shape}, {x.dtype}) was "
                    "donated to an earlier call (donate_argnums), which may have written its "
                    "output into that buffer; pass the array that call returned instead"
                )

    def _donated_positions(self, args, statics) -> tuple[int, ...]:
        """Flat input positions of the leaves of the donated positional arguments."""
        if not self.donate_argnums:
            return ()
        static_idx = {i for i, _ in statics}
        n = len(args) + len(static_idx)
        wanted = {i % n for i in self.donate_argnums if -n <= i < n}
        positions, offset, dyn = [], 0, 0
        for i in range(n):
            if i in static_idx:
                continue
            count = len(tree.leaves(args[dyn]))
            if i in wanted:
                positions.extend(range(offset, offset + count))
            offset += count
            dyn += 1
        return tuple(positions)

    def _split_static(self, args):
        """((index, value) pairs of the static arguments, the other arguments)."""
        nums = self.static_argnums
        if len(args) < len(nums) or (nums and max(nums) >= len(args)):
            # a static parameter passed by name is static through static_argnames
            nums = tuple(i for i in nums if i < len(args) or i not in self._named_positions)
        pairs, dyn, _ = split_static(args, nums, f"jit({self.name})")
        for i, v in pairs:
            try:
                hash(v)
            except TypeError:
                raise TypeError(
                    f"jit({self.name}): static argument {i} has the unhashable type "
                    f"{type(v).__name__}; static arguments are part of the cache key, so pass "
                    "a hashable value (a tuple instead of a list), or make it a traced argument"
                ) from None
        return pairs, dyn

    def _split_static_kwargs(self, statics, kwargs):
        """Keyword arguments named in static_argnames join the static pairs, keyed by name
        (sorted, so the order they were passed in does not matter)."""
        named = sorted((k, v) for k, v in kwargs.items() if k in self.static_argnames)
        for k, v in named:
            try:
                hash(v)
            except TypeError:
                raise TypeError(
                    f"jit({self.name}): static argument {k!r} has the unhashable type "
                    f"{type(v).__name__}; static arguments are part of the cache key, so pass "
                    "a hashable value (a tuple instead of a list), or make it a traced argument"
                ) from None
        rest = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return tuple(statics) + tuple(named), rest

    def _compile(self, key, args, kwargs, flat, treedef, statics) -> _Entry:
        self._misses += 1
        self._log_retrace(key)
        where = f"jit({self.name})"
        backend = backend_of(flat, where)
        if backend is None:
            avals = [_leaf_aval(x) for x in flat]
        else:
            if self.backend != "codegen":
                raise BackendError(
                    f"{where}: backend={self.backend!r} runs NumPy arrays only; {backend.name} "
                    "arrays run through the generated code (the default backend='codegen')"
                )
            avals = [backend.aval(x, where) if library_of(x) else _leaf_aval(x) for x in flat]
        positional = tuple(p for p in statics if isinstance(p[0], int))
        named = dict(p for p in statics if isinstance(p[0], str))

        def flat_fn(*tracers):
            a, k = tree.unflatten(treedef, tracers)
            return self.f(*merge_static(positional, a), **k, **named)

        traced, out_tree = trace_flat(
            flat_fn, avals, concrete=False, name=self.name, in_tree=treedef
        )
        if traced.captured:
            # `f` closes over tracers of an enclosing transformation: the graph is valid for
            # this call only, so it is inlined and not cached.
            return _Entry(traced.graph, None, out_tree, None, traced.captured)
        graph = traced.graph
        del traced  # (a large graph's traced form goes while the simplified one compiles)
        graph = simplify(graph)
        donated = self._donated_positions(args, statics)
        if backend is not None:
            if donated:
                raise BackendError(
                    f"{where}: donate_argnums gives NumPy buffers to the generated code; "
                    f"on {backend.name} arrays drop it (the library manages its own memory)"
                )
            compiled = compile_graph(graph, backend=backend)
            run = _foreign_runner(backend, compiled.fn, graph.out_avals, where)
        elif self.backend == "codegen":
            compiled = compile_graph(graph, donated=frozenset(donated))
            run = compiled.fn
        else:
            compiled = None

            def run(*flat_args, _graph=graph):
                return eval_graph(_graph, flat_args)

        entry = _Entry(graph, run, out_tree, compiled, donated=donated)
        self._cache[key] = entry
        return entry

    def _inline(self, entry, args, kwargs, statics, flat):
        # on tracers, running the graph records it into the enclosing trace
        return eval_graph(entry.graph, list(flat) + list(entry.captured))

    def _log_retrace(self, key) -> None:
        if self._last_key is None:
            logger.info("jit(%s): tracing for the first signature", self.name)
        else:
            old_tree, old_static, old_leaves = self._last_key
            new_tree, new_static, new_leaves = key
            if new_tree != old_tree:
                why = f"the argument structure changed ({old_tree} -> {new_tree})"
            elif new_static != old_static:
                why = f"static arguments changed ({old_static} -> {new_static})"
            else:
                diffs = [
                    f"leaf {i}: {a} -> {b}"
                    for i, (a, b) in enumerate(zip(old_leaves, new_leaves))
                    if a != b
                ]
                why = "shapes/dtypes changed (" + "; ".join(diffs[:3]) + ")"
            logger.info("jit(%s): re-tracing because %s", self.name, why)
        self._last_key = key
        if self._misses == RETRACE_WARNING_AFTER:
            warnings.warn(
                f"jit({self.name}) has traced {self._misses} times for different signatures; "
                "each trace costs a compile. Keep shapes and dtypes stable, or mark "
                "arguments that vary as static only when they take few values.",
                RetraceWarning,
                stacklevel=3,
            )

    # -- inspection ------------------------------------------------------------------------
    def lower(self, *args, **kwargs) -> Lowered:
        """The simplified graph and generated source for these arguments' signature; each
        array argument may be given as a `tg.Aval(shape, dtype)`, as to `make_graph`."""
        statics, dyn = self._split_static(args) if self.static_argnums else ((), args)
        if self.static_argnames and kwargs:
            statics, kwargs = self._split_static_kwargs(statics, kwargs)
        flat, treedef = tree.flatten((dyn, kwargs))
        key = (treedef, statics, tuple(map(_lower_key, flat)))
        entry = self._cache.get(key) or self._compile(key, dyn, kwargs, flat, treedef, statics)
        return Lowered(entry)

    def cache_info(self) -> CacheInfo:
        """Hits, misses and size of the signature cache (the shape of `lru_cache`'s)."""
        return CacheInfo(self._hits, self._misses, None, len(self._cache))

    def cache_clear(self) -> None:
        self._cache.clear()
        self._hits = self._misses = 0
        self._last_key = None

    def __repr__(self) -> str:
        return f"<jit({self.name}) backend={self.backend!r}>"


def _foreign_runner(backend, fn, out_avals, where):
    """The compiled function of another library's call: NumPy leaves (parameters beside a big
    dask batch) taken into the library first; under JAX, compiled by `jax.jit` as a whole.
    Each output's dtype is checked against NumPy's (the graph's): a library promoting by
    rules of its own (JAX without x64 computes float32) is refused, not returned."""
    fn = backend.compile(fn)
    take = backend.take
    check = backend.check_dtypes

    def run(*flat):
        return check(fn(*map(take, flat)), out_avals, where)

    return run


def _static_names_and_nums(f, static_argnums, static_argnames):
    """(static positions, static names, positions that are static by name), by JAX's rule:
    each of static_argnums and static_argnames also covers the other's parameters, through
    `f`'s signature (positional-or-keyword parameters by position). Names `f` does not take, or
    takes only by position, raise ValueError as in JAX."""
    static_argnames = (static_argnames,) if isinstance(static_argnames, str) else static_argnames
    nums, names = set(static_argnums), set(static_argnames)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"jit: static_argnames must be strings, got {name!r}")
    try:
        params = list(inspect.signature(f).parameters.values())
    except (TypeError, ValueError):  # a builtin or a callable without a signature
        return tuple(nums), tuple(names), frozenset()
    kinds = {p.name: p.kind for p in params}
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    unknown = {n for n in names if n not in kinds} if not takes_any else set()
    if unknown:
        raise ValueError(
            f"jit: static_argnames {sorted(unknown)} are not parameters of {name_of(f)}"
        )
    positional_only = {n for n in names if kinds.get(n) is inspect.Parameter.POSITIONAL_ONLY}
    if positional_only:
        raise ValueError(
            f"jit: static_argnames {sorted(positional_only)} are positional-only parameters of "
            f"{name_of(f)}; name them in static_argnums"
        )
    by_name = set()
    for i, p in enumerate(params):
        if p.kind is not p.POSITIONAL_OR_KEYWORD:
            continue
        if p.name in names:
            nums.add(i)
            by_name.add(i)
        elif i in nums:
            names.add(p.name)
            by_name.add(i)
    return tuple(nums), tuple(names), frozenset(by_name)


def jit(
    f: Callable | None = None,
    static_argnums: int | Sequence[int] = (),
    backend: str = "codegen",
    donate_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
):
    """Compile `f` per signature: trace abstractly, simplify, generate NumPy code, cache.

    Args:
      f: the function (or use `@jit(static_argnums=...)` as a decorator factory).
      static_argnums: positional arguments that are Python values (hashable), part of the
        cache key; the rest must be arrays or Python scalars (pytrees of them).
      static_argnames: the same for arguments by name (as in JAX, a parameter named here is
        static when passed by position too, and one numbered in static_argnums when passed
        by name).
      backend: "codegen" (generated NumPy source) or "interpret" (the IR interpreter on the
        same simplified graph).
      donate_argnums: arguments whose buffers the caller gives up (as in JAX): the generated
        code may write outputs into them (a training step's `w - lr * g` then updates its
        parameters in place, and the returned array is a new object over the same memory).
        Donated arrays must be writeable NumPy arrays. After the call they are spent: NumPy
        refuses writes to them (read-only), and passing one to a jitted function raises, as
        JAX raises on a deleted buffer; use the arrays the call returned.
    """
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    donate = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
    if backend not in _BACKENDS:
        raise ValueError(f"jit: backend must be one of {_BACKENDS}, got {backend!r}")
    overlap = set(static) & set(donate)
    if overlap:
        raise ValueError(
            f"jit: argument(s) {sorted(overlap)} are both static and donated; a static argument "
            "is a Python value with no buffer to donate"
        )
    if f is None:
        return lambda g: Jitted(g, static, backend, donate, static_argnames)
    if not callable(f):
        raise TypeError(f"jit: expected a function, got {type(f).__name__}")
    return Jitted(f, static, backend, donate, static_argnames)


def make_graph(f: Callable, static_argnums: int | Sequence[int] = ()) -> Callable[..., Graph]:
    """`make_graph(f)(*args)` traces `f` abstractly and returns its `Graph`.

    Arguments may be arrays, Python scalars or `tg.Aval(shape, dtype)`; only their shapes and
    dtypes matter. Arguments named in `static_argnums` are baked into the graph.
    """
    static_argnums = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
    name = getattr(f, "__name__", "f")

    @functools.wraps(f, updated=())  # not f.__dict__: a Jitted keeps its state there
    def graph_of(*args, **kwargs) -> Graph:
        _, dyn, merge = split_static(args, static_argnums, "make_graph")
        traced = trace_function(
            lambda *d, **k: f(*merge(d), **k), dyn, kwargs, concrete=False, name=name
        )
        if traced.captured:
            raise TypeError(
                f"make_graph({name}): the function closes over values traced by an enclosing "
                "transformation; pass them as arguments instead"
            )
        return traced.graph

    return graph_of
