"""`Primitive`: one operation with every rule and every fact tracegrad knows about it.

Rules and facts live on the primitive (as in JAX), so one block says all there is to say
about an operation: how it runs (`impl`), what it returns (`shape`), how it differentiates
(`jvp`, `vjp`), how it batches (`batch`), how the code generator writes it (`emit`), and what
the passes may assume (what its vjp reads, its output's memory layout, algebraic properties,
its PyTorch node name). Passes derive their tables from these fields; nothing is keyed by a
primitive's name elsewhere. `tracegrad.extend` exports this class: the built-in primitives
are defined exactly as a user's are.

The rule protocol (DESIGN.md §2; arrays positional, params keyword-only):

- `impl(*arrays, **params)`: the output, computed with NumPy (a tuple of outputs if
  `multiple_results`).
- `shape(*avals, **params)`: the output `Aval` (a tuple of them if `multiple_results`).
- `jvp(primals, tangents, *, out, **params)`: the output tangent, None for zero; a tangent
  in `tangents` is None for a symbolic zero.
- `vjp(cotangent, *primals, out, **params)`: a tuple with one cotangent per input, None
  for none.
- `batch(args, dims, **params)`: `(out, out_dim)`; `dims[i]` is the batch axis of `args[i]`
  or None.
- `emit(*names, **params)`: a Python expression written with NumPy's names,
  `"np.hypot(a, b)"`; without one, the code generator calls `impl`.
- `emit_array_api(*names, **params)`: the same for the other array libraries `jit` runs on
  (`tracegrad.backends`), where `emit`'s text writes into an array in place or calls a
  method the array API lacks: a functional form, still with NumPy's names, which
  `tracegrad.backends.lowered` lowers. Without one, `emit`'s text serves every library.
- `taylor(primals, series, *, out, **params)`: the output's truncated Taylor series (Taylor
  mode, `tg.jet`): `series[i]` is None for an input that does not move, else a list of its K
  Taylor coefficients x_1..x_K (x(t) = x + x_1 t + ... + x_K t^K, derivative / k!), each an
  array or None for zero; the rule returns the output's K coefficients the same way (None for
  all zero; a tuple of such lists if `multiple_results`). The shared constructors
  (`tracegrad.primitives.series`) derive it for linear, multilinear and elementwise primitives.

`vjp` may instead be a tuple with one rule per input, each `(cotangent, *primals, out,
**params) -> cotangent or None` (HIPS autograd's `defvjp`), or `per_input(rule_of)` where
`rule_of(i)` is input i's rule (autograd's `defvjp_argnum`, for primitives with any number
of inputs): the backward pass then computes only the cotangents it needs (`X @ W` with a
constant `X` never computes `X`'s). A rule that
needs the primitive itself (an elementwise batching rule binds it again) is given as
`rule_for(factory)`; `factory(primitive)` makes the rule once the primitive exists.
"""

from __future__ import annotations

import operator as _op
import weakref
from collections.abc import Callable

import attrs
import numpy as np

from tracegrad.ir.layout import Layout

#: what a vjp rule may read besides shapes and dtypes (`Primitive.vjp_reads`)
READS_NOTHING: frozenset = frozenset()
READS_INPUTS = frozenset({"inputs"})  # every input value (integer and bool ones too)
READS_INDICES = frozenset({"indices"})  # only the integer and bool inputs (indices, conditions)
READS_OUTPUT = frozenset({"output"})
READS_ALL = frozenset({"inputs", "output"})
_READ_KINDS = frozenset({"inputs", "indices", "output"})

_REGISTRY: weakref.WeakValueDictionary[str, Primitive] = weakref.WeakValueDictionary()


def lookup(name: str) -> Primitive | None:
    """The primitive named `name`, while one is defined (built-in or a user's)."""
    return _REGISTRY.get(name)


def unregister(prim: Primitive) -> None:
    """Free `prim`'s name for a new primitive (graphs holding `prim` keep working, but `loads`
    finds the new one by that name)."""
    if _REGISTRY.get(prim.name) is prim:
        del _REGISTRY[prim.name]


@attrs.frozen
class RuleFor:
    """A rule made once its primitive exists: `factory(primitive) -> rule`. The factory should
    hold the primitive weakly (`weakref.ref`): a primitive must not keep itself alive."""

    factory: Callable


def lazy_rule(rules: Callable, name: str) -> Callable:
    """The rule `name` of the module `rules()` returns, looked up at each call: the rules of
    primitives holding sub-graphs run transforms, which import the primitives (DESIGN.md §7),
    so each such family imports its rules' module in one commented function."""

    def rule(*args, **kwargs):
        return getattr(rules(), name)(*args, **kwargs)

    rule.__name__ = name
    return rule


def rule_for(factory: Callable) -> RuleFor:
    """Give a rule that needs its own primitive: `batch=rule_for(lambda p: ...)`."""
    return RuleFor(factory)


@attrs.frozen
class PerInput:
    """A vjp given input by input: `rule_of(i)` is the rule of input i (or None)."""

    rule_of: Callable


def per_input(rule_of: Callable) -> PerInput:
    """`vjp=per_input(rule_of)`: input i's cotangent is `rule_of(i)(cotangent, *primals, out,
    **params)`, computed only when input i needs one. `rule_of` should be cheap (cached)."""
    return PerInput(rule_of)


#: Python's operator for a ufunc whose result it computes bit for bit on Python floats and
#: NumPy's real scalars without ever raising (no division: 1.0 / 0.0 raises), which a
#: primitive claiming the `operator` fact gets as its `float_impl`
_FLOAT_OPERATORS = {
    np.add: _op.add,
    np.subtract: _op.sub,
    np.multiply: _op.mul,
    np.negative: _op.neg,
}

_RULES = ("jvp", "vjp", "batch", "emit", "emit_array_api", "taylor")


@attrs.frozen(eq=False, repr=False)
class Primitive:
    """An operation: a name, its rules and its facts. See the module docstring for the rules.

    Facts (each optional, with a safe default):
      multiple_results: `impl` returns a tuple and every rule takes and returns tuples.
      differentiable: False for operations whose outputs carry no derivative (comparisons,
        floor, argmax): their derivative is zero by construction, not an omission.
      vjp_reads: what the vjp rule reads besides shapes and dtypes, a subset of {"inputs"
        (every input's value), "indices" (only the integer and bool inputs: index arrays,
        conditions), "output"}. The PyTorch-style tensors save exactly that (a node reading
        nothing can run again after its graph was released, as PyTorch's AddBackward0) and
        version-stamp it, so changing a value no rule reads is harmless. Default: all.
      bilinear: linear in each input separately (multiply, matmul): the cotangent of one
        input reads only the others.
      commutative: two inputs that may be swapped (add, multiply): CSE shares `a+b`, `b+a`.
      layout: how the output sits in memory (`tracegrad.ir.layout.Layout`).
      view_of: the input a view layout refers to (default 0 for views).
      operator: the Python operator that gives the same bits on 0-d NumPy values ("+"); the
        code generator writes it there (a tenth of a ufunc call's cost), and a concrete trace
        computes real scalars (Python floats, NumPy's float64, float32 and float16 scalars)
        with it when `impl` is `np.add`, `np.subtract`, `np.multiply` or `np.negative`
        (`float_impl`).
      torch_name: PyTorch's name for this node's backward (`"MulBackward0"`), or a function
        of the input avals giving it (`PowBackward0` / `PowBackward1`); derived from the name
        by default.
      torch_scalar_inputs: inputs PyTorch takes as a Python number when they are one
        (`x ** 2`'s exponent): such an input is not among `grad_fn.next_functions`.
      registered: False for an anonymous primitive that is never looked up by name (the node
        of a custom `autograd.Function`); otherwise the name must be new.
      effect: running a node of it does something besides computing its outputs (printing:
        `debug_print`), so it runs even when no output is read: traces keep it, dead-code
        elimination and constant folding leave it alone.
    """

    name: str
    impl: Callable
    shape: Callable
    jvp: Callable | None = None
    vjp: Callable | tuple | None = None
    batch: Callable | None = None
    emit: Callable | None = None
    emit_array_api: Callable | None = None
    taylor: Callable | None = None
    multiple_results: bool = False
    differentiable: bool = True
    vjp_reads: frozenset = attrs.field(default=READS_ALL, converter=frozenset)
    bilinear: bool = False
    commutative: bool = False
    layout: Layout = Layout.UNKNOWN
    view_of: int | None = None
    operator: str | None = None
    torch_name: str | Callable | None = None
    torch_scalar_inputs: tuple[int, ...] = attrs.field(default=(), converter=tuple)
    registered: bool = True
    effect: bool = False
    #: `input_vjp(i)`: input i's own vjp rule, when `vjp` was given input by input (derived)
    input_vjp: Callable | None = attrs.field(default=None, init=False)
    #: `impl` for operands that are all Python floats, from the `operator` fact: a concrete
    #: trace computes a weak scalar with Python's operator, a tenth of a ufunc call (derived)
    float_impl: Callable | None = attrs.field(default=None, init=False, repr=False)
    #: memo tables the passes keep per primitive (shape rule results; the shape rule's
    #: signature, ...): they live and die with the primitive, so a user's can be freed
    shape_memo: dict = attrs.field(factory=dict, init=False, repr=False)
    memo: dict = attrs.field(factory=dict, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or not self.name.isprintable():
            raise ValueError(f"Primitive: the name must be a non-empty string, got {self.name!r}")
        for rule in ("impl", "shape"):
            if not callable(getattr(self, rule)):
                raise TypeError(f"Primitive {self.name!r}: {rule} must be a function")
        for rule in _RULES:
            value = getattr(self, rule)
            if isinstance(value, RuleFor):
                value = value.factory(self)
                object.__setattr__(self, rule, value)
            if rule == "vjp" and isinstance(value, tuple | list | PerInput):
                continue
            if value is not None and not callable(value):
                raise TypeError(
                    f"Primitive {self.name!r}: {rule} must be a function or None, got "
                    f"{type(value).__name__}"
                )
        if isinstance(self.vjp, tuple | list):
            parts = tuple(self.vjp)
            if not all(p is None or callable(p) for p in parts):
                raise TypeError(
                    f"Primitive {self.name!r}: a tuple vjp holds one rule (or None) per input"
                )
            object.__setattr__(self, "input_vjp", parts.__getitem__)
            object.__setattr__(self, "vjp", _joined(parts.__getitem__))
        elif isinstance(self.vjp, PerInput):
            object.__setattr__(self, "input_vjp", self.vjp.rule_of)
            object.__setattr__(self, "vjp", _joined(self.vjp.rule_of))
        elif self.vjp is not None and not callable(self.vjp):
            raise TypeError(
                f"Primitive {self.name!r}: vjp must be a function, a tuple of one function per "
                f"input, or None; got {type(self.vjp).__name__}"
            )
        unknown = self.vjp_reads - _READ_KINDS
        if unknown:
            raise ValueError(
                f"Primitive {self.name!r}: vjp_reads may hold 'inputs', 'indices' and 'output', "
                f"not {sorted(unknown)}"
            )
        if not isinstance(self.layout, Layout):
            raise TypeError(f"Primitive {self.name!r}: layout must be a tracegrad Layout")
        if self.layout.view and self.view_of is None:
            object.__setattr__(self, "view_of", 0)
        elif self.view_of is not None and not self.layout.view:
            raise ValueError(
                f"Primitive {self.name!r}: view_of={self.view_of} needs a view layout "
                f"(VIEW, PERMUTED, RESHAPED or SAME), not {self.layout.name}"
            )
        if self.operator is not None:
            try:
                object.__setattr__(self, "float_impl", _FLOAT_OPERATORS.get(self.impl))
            except TypeError:  # an unhashable impl
                pass
        if self.registered:
            taken = _REGISTRY.get(self.name)
            if taken is not None:
                raise ValueError(
                    f"Primitive: the name {self.name!r} is taken by another primitive; names "
                    "identify primitives in printed and serialized graphs, so pick a new one "
                    "(or drop every reference to the old primitive first)"
                )
            _REGISTRY[self.name] = self

    def bind(self, *args, **params):
        """Apply this primitive: on arrays it runs `impl`; inside a transformation it records
        a node (tracegrad.core.bind)."""
        # core sits above the IR (DESIGN.md §7): bind is looked up when first called
        from tracegrad.core import bind

        return bind(self, *args, **params)

    def results(self, value) -> tuple:
        """What `impl` (or `jvp`) returned, as one entry per output: the one code path for
        primitives with one output and with several."""
        return value if self.multiple_results else (value,)

    def result(self, values):
        """One entry per output, as the rules take them (`out`, a cotangent): the entry
        itself, or a tuple for a primitive with several outputs."""
        return tuple(values) if self.multiple_results else values[0]

    def __repr__(self) -> str:
        return self.name

    __str__ = __repr__


def _joined(rule_of: Callable) -> Callable:
    """The tuple-returning vjp of per-input rules: every cotangent computed."""

    def vjp(cotangent, *primals, out, **params):
        rules = [rule_of(i) for i in range(len(primals))]
        return tuple(
            None if rule is None else rule(cotangent, *primals, out=out, **params) for rule in rules
        )

    return vjp
