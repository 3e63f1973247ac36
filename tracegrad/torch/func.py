"""PyTorch's `torch.func` for tracegrad tensors: grad, grad_and_value, vjp, jvp, jacrev, jacfwd,
hessian, vmap and functional_call, on the shim's recorded graph.

The functional transforms of `tracegrad` take arrays and treat a tensor inside a trace as a
constant, so these run on the engine instead, as functorch's levels do: each call differentiates
with respect to fresh views of its inputs (`_lift`) with `create_graph=True`, so an enclosing
transform, or `.backward()` through the caller's tensors, differentiates the result again. A
result that depends on nothing outside the call is detached (`_lower`), so `func.grad(f)(x)`
of a plain `x` has no `grad_fn`, as in PyTorch. Forward mode (`jvp`, `jacfwd`) uses the
double-backward trick; `vmap` runs `func` once per slice and stacks the results.
"""

from __future__ import annotations

import functools

import numpy as np
import optree

from tracegrad import tree
from tracegrad.torch import engine
from tracegrad.torch.autograd_functional import _basis, _stacked
from tracegrad.torch.generator import default_generator
from tracegrad.torch.grad_mode import enable_grad
from tracegrad.torch.ops.creation import zeros_like
from tracegrad.torch.ops.shapes import permute, stack
from tracegrad.torch.tensor import Tensor

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev"]
__all__ += ["jvp", "vjp", "vmap"]


# -- levels: fresh inputs in, results out -------------------------------------------------------


def _lift(x, private: list):
    """A tensor to differentiate with respect to: a view keeping the caller's graph when `x`
    requires grad (an enclosing level differentiates through it), else a new leaf, which is
    remembered in `private` (a result reaching only those depends on nothing outside)."""
    if not isinstance(x, Tensor):
        raise RuntimeError(f"Expected tensors, got unsupported type {type(x)}")
    if x.requires_grad:
        return x.view_as(x)
    leaf = x.detach().requires_grad_()  # PyTorch's error for an integer tensor
    private.append(leaf)
    return leaf


def _reaches_outside(t: Tensor, private: list) -> bool:
    """Whether `t`'s recorded graph reaches a leaf that requires grad other than `private`."""
    own = {id(p) for p in private}
    if t.grad_fn is None:  # a leaf itself (an aux output that is a parameter)
        return id(t) not in own
    seen = set()
    stack_ = [t.grad_fn]
    while stack_:
        fn = stack_.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        variable = getattr(fn, "variable", None)
        if variable is not None and id(variable) not in own:
            return True
        stack_.extend(nxt for nxt, _ in getattr(fn, "_next", ()))
    return False


def _lower(value, private: list):
    """A result handed back to the caller: detached unless it depends on the caller's graph."""

    def one(t):
        if isinstance(t, Tensor) and t.requires_grad and not _reaches_outside(t, private):
            return t.detach()
        return t

    return tree.map(one, value)


def _zeros_for_unused(grads, refs) -> list:
    return [zeros_like(r) if g is None else g for g, r in zip(grads, refs)]


def _argnums(argnums, nargs: int) -> tuple[int, ...]:
    nums = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not nums and not isinstance(argnums, int):
        raise RuntimeError("argnums must be non-empty")
    for i in nums:
        if not -nargs <= i < nargs:
            raise RuntimeError(f"Got argnum={i}, but only {nargs} positional inputs")
    return tuple(i % nargs for i in nums)


def _lift_args(args, argnums, private):
    """(args with the differentiated ones lifted, their flat leaves, their tree)."""
    nums = _argnums(argnums, len(args))
    diff = tuple(tree.map(lambda x: _lift(x, private), args[i]) for i in nums)
    leaves, spec = tree.flatten(diff)
    new = list(args)
    for i, d in zip(nums, diff):
        new[i] = d
    return new, leaves, spec


def _per_argnums(argnums, value_tuple):
    return value_tuple[0] if isinstance(argnums, int) else value_tuple


def _split_aux(out, has_aux: bool, api: str):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(
            f"{api}(f)(*args): output of function f should be a tuple: (output, aux) if "
            "has_aux is True"
        )
    for leaf in tree.leaves(out[1]):
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")
    return out


_ONLY_TENSORS = (
    "vjp(f, *primals): expected f(*primals) to return only tensors, got unsupported type {}"
)

# -- reverse mode -------------------------------------------------------------------------------


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning `(gradient, value)` of a scalar-tensor `func` with respect to
    `args[argnums]` (`((gradient, (value, aux))` with `has_aux`), as `torch.func`."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        private: list = []
        with enable_grad():
            new, leaves, spec = _lift_args(args, argnums, private)
            output, aux = _split_aux(func(*new, **kwargs), has_aux, "grad_and_value")
            if not isinstance(output, Tensor):
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                    f"{type(output)}"
                )
            if output.dim() != 0:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                    f"tensor with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev "
                    "APIs instead?"
                )
            if output.requires_grad:
                grads = engine.grad(output, leaves, create_graph=True, allow_unused=True)
            else:
                grads = (None,) * len(leaves)
            grads = _zeros_for_unused(grads, leaves)
        g = _per_argnums(argnums, tree.unflatten(spec, grads))
        value = (output, aux) if has_aux else output
        return _lower(g, private), _lower(value, private)

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of a scalar-tensor `func` with respect to
    `args[argnums]` (`(gradient, aux)` with `has_aux`), as `torch.func.grad`."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def vjp(func, *primals, has_aux=False):
    """`(func(*primals), vjp_fn)` (and `aux` with `has_aux`); `vjp_fn(cotangents)` returns a
    tuple with one cotangent per primal and can be called many times."""
    private: list = []
    with enable_grad():
        lifted = [tree.map(lambda x: _lift(x, private), p) for p in primals]
        leaves, spec = tree.flatten(tuple(lifted))
        output, aux = _split_aux(func(*lifted), has_aux, "vjp")
    out_leaves, out_spec = tree.flatten(output)
    for leaf in out_leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(_ONLY_TENSORS.format(type(leaf)))

    def vjp_fn(cotangents, *, retain_graph=True, create_graph=None):
        ct_leaves, ct_spec = tree.flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError(
                "Expected pytree structure of cotangents to be the same as pytree structure of "
                f"outputs to the function. cotangents: {_spec_text(cotangents)}, primal output: "
                f"{_spec_text(output)}"
            )
        pairs = [(o, c) for o, c in zip(out_leaves, ct_leaves) if o.requires_grad]
        with enable_grad():
            grads = (None,) * len(leaves)
            if pairs:
                grads = engine.grad(
                    [o for o, _ in pairs],
                    leaves,
                    [c for _, c in pairs],
                    retain_graph=retain_graph,
                    create_graph=create_graph is not False,  # recorded for enclosing levels
                    allow_unused=True,
                )
            grads = _zeros_for_unused(grads, leaves)
        return _lower(tree.unflatten(spec, grads), private)

    result = (_lower(output, private), vjp_fn)
    return (*result, _lower(aux, private)) if has_aux else result


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """A function returning the Jacobian of `func` with respect to `args[argnums]`, a row at a
    time (one backward pass per output element): for each output leaf, a tensor of shape
    `output.shape + input.shape` per input (a tuple for a tuple `argnums`)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        private: list = []
        with enable_grad():
            new, leaves, spec = _lift_args(args, argnums, private)
            output, aux = _split_aux(func(*new, **kwargs), has_aux, "jacrev")

            def jac_of(out):
                if not isinstance(out, Tensor):
                    raise RuntimeError(_ONLY_TENSORS.format(type(out)))
                rows = [[] for _ in leaves]
                flat = out.reshape(-1)
                for j in range(out.numel()):
                    gs = (None,) * len(leaves)
                    if out.requires_grad:
                        gs = engine.grad(
                            flat[j], leaves, retain_graph=True, create_graph=True, allow_unused=True
                        )
                    for acc, g in zip(rows, _zeros_for_unused(gs, leaves)):
                        acc.append(g)
                jac = [
                    _stacked(acc, leaf).reshape(tuple(out.shape) + tuple(leaf.shape))
                    for acc, leaf in zip(rows, leaves)
                ]
                return _per_argnums(argnums, tree.unflatten(spec, jac))

            jac = tree.map(jac_of, output)
        result = _lower(jac, private)
        return (result, _lower(aux, private)) if has_aux else result

    return wrapper


# -- forward mode (the double-backward trick) -----------------------------------------------


def _linearized(out_leaves, leaves):
    """(seeds, vjp of the seeds): the vjp is linear in its cotangent, so differentiating it
    with respect to the cotangents (`seeds`, whose values never reach a result) gives jvps."""
    seeds = [zeros_like(o, requires_grad=True) for o in out_leaves]
    live = [(o, s) for o, s in zip(out_leaves, seeds) if o.requires_grad]
    vjps = (None,) * len(leaves)
    if live:
        vjps = engine.grad(
            [o for o, _ in live],
            leaves,
            [s for _, s in live],
            create_graph=True,
            allow_unused=True,
        )
    return seeds, [(v, t) for v, t in zip(vjps, range(len(leaves))) if v is not None]


def _pushforward(seeds, vjps, tangents, out_leaves) -> list:
    """J t for the tangents of the inputs: d<vjp(seed), t>/d seed."""
    pairs = [(v, tangents[i]) for v, i in vjps if v.requires_grad]
    if not pairs:
        return [zeros_like(o) for o in out_leaves]
    grads = engine.grad(
        [v for v, _ in pairs],
        seeds,
        [t for _, t in pairs],
        retain_graph=True,
        create_graph=True,
        allow_unused=True,
    )
    return _zeros_for_unused(grads, out_leaves)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """`(func(*primals), J tangents)` (and `aux` with `has_aux`), as `torch.func.jvp`."""
    if not isinstance(primals, tuple):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid "
            "to call f(*primals)."
        )
    p_leaves, p_spec = tree.flatten(primals)
    t_leaves, t_spec = tree.flatten(tangents)
    if p_spec != t_spec:
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same python "
            "structure. For example, if primals is a tuple of 3 tensors, tangents also must be. "
            f"Got primals with structure {_spec_text(primals)} and tangents with structure "
            f"{_spec_text(tangents)}"
        )
    for p, t in zip(p_leaves, t_leaves):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(
                "Trying to set a forward gradient that has a different size than that of the "
                f"original Tensor, this is not supported. Tensor is of size {list(p.shape)} while "
                f"the given forward gradient is of size {list(t.shape)}."
            )
    private: list = []
    with enable_grad():
        leaves = [_lift(p, private) for p in p_leaves]
        output, aux = _split_aux(func(*tree.unflatten(p_spec, leaves)), has_aux, "jvp")
        out_leaves, out_spec = tree.flatten(output)
        seeds, vjps = _linearized(out_leaves, leaves)
        private.extend(seeds)
        tangent_out = _pushforward(seeds, vjps, t_leaves, out_leaves)
    result = (_lower(output, private), _lower(tree.unflatten(out_spec, tangent_out), private))
    return (*result, _lower(aux, private)) if has_aux else result


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """A function returning the Jacobian of `func` with respect to `args[argnums]`, a column
    at a time (one pushforward per input element); laid out as `jacrev`'s."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        private: list = []
        with enable_grad():
            new, leaves, spec = _lift_args(args, argnums, private)
            output, aux = _split_aux(func(*new, **kwargs), has_aux, "jacfwd")
            out_leaves, out_spec = tree.flatten(output)
            seeds, vjps = _linearized(out_leaves, leaves)
            private.extend(seeds)
            columns = [[[] for _ in leaves] for _ in out_leaves]  # [out][input] -> columns
            for k, leaf in enumerate(leaves):
                for e in range(leaf.numel()):
                    basis = [_basis(x, e if m == k else None) for m, x in enumerate(leaves)]
                    for i, col in enumerate(_pushforward(seeds, vjps, basis, out_leaves)):
                        columns[i][k].append(col)
            jac = []
            for i, out in enumerate(out_leaves):
                per_input = [
                    _columns_last(_stacked(columns[i][k], out)).reshape(
                        tuple(out.shape) + tuple(leaf.shape)
                    )
                    for k, leaf in enumerate(leaves)
                ]
                jac.append(_per_argnums(argnums, tree.unflatten(spec, per_input)))
        result = _lower(tree.unflatten(out_spec, jac), private)
        return (result, _lower(aux, private)) if has_aux else result

    return wrapper


def _columns_last(t):
    return permute(t, *range(1, t.dim()), 0)


def hessian(func, argnums=0):
    """The Hessian of a scalar-tensor `func`: `jacfwd(jacrev(func))`, as `torch.func`."""
    return jacfwd(jacrev(func, argnums), argnums)


# -- vmap and functional_call -----------------------------------------------------------------


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """`func` mapped over a dimension of its inputs (`in_dims`: an int, or one entry per
    argument, None for an argument passed whole), the results stacked at `out_dims`.

    `func` runs once per slice, so anything it can do on one example works, and gradients
    flow through the stacking. `randomness`: "error" raises PyTorch's error when `func` draws
    from the default generator, "same" gives every slice the same numbers, "different" its own.
    """
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. Got "
            f"{randomness}"
        )
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    fname = getattr(func, "__name__", type(func).__name__)

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        where = f"vmap({fname}, in_dims={in_dims}, ...)(<inputs>)"
        leaves, dims, spec = _mapped_inputs(args, in_dims, where)
        size = _batch_size(leaves, dims)
        state = _random_state()
        outs = []
        for b in range(size):
            if randomness == "same":
                _set_random_state(state)
            sliced = [x if d is None else x.select(d, b) for x, d in zip(leaves, dims)]
            outs.append(func(*optree.tree_unflatten(spec, sliced), **kwargs))
            if randomness == "error" and _random_state() != state:
                raise RuntimeError(
                    "vmap: called random operation while in randomness error mode. Please "
                    "either use the 'same' or 'different' randomness flags on vmap or perform "
                    "the randomness operation out of vmap"
                )
        return _stacked_outputs(outs, out_dims, fname)

    return wrapped


def _mapped_inputs(args, in_dims, where: str):
    """(flat leaves, the mapped dimension of each or None, the tree of `args`)."""
    if not isinstance(in_dims, int | tuple):
        raise ValueError(
            f"{where}: expected `in_dims` to be int or a (potentially nested) tuple matching the "
            f"structure of inputs, got: {type(in_dims)}."
        )
    leaves, spec = _flatten(args)
    dims_tree = (in_dims,) * len(args) if isinstance(in_dims, int) else in_dims
    try:
        dims = _broadcast(dims_tree, args)
    except (ValueError, TypeError):
        raise ValueError(
            f"{where}: in_dims is not compatible with the structure of `inputs`. in_dims has "
            f"structure {_spec_text(in_dims)} but inputs has structure {_spec_text(args)}."
        ) from None
    out = []
    for x, d in zip(leaves, dims):
        if d is None:
            out.append(None)
            continue
        if not isinstance(x, Tensor):
            raise ValueError(
                f"{where}: Got in_dim={d} for an input but the input is of type {type(x)}. We "
                "cannot vmap over non-Tensor arguments, please use None as the respective in_dim"
            )
        n = x.dim()
        if not -n <= d < n:
            raise ValueError(
                f"{where}: Got in_dim={d} for some input, but that input is a Tensor of "
                f"dimensionality {n} so expected in_dim to satisfy -{n} <= in_dim < {n}."
            )
        out.append(d % n)
    return leaves, out, spec


def _batch_size(leaves, dims) -> int:
    sizes = [x.shape[d] for x, d in zip(leaves, dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if len(set(sizes)) > 1:
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got "
            f"sizes {sizes} for the mapped dimension"
        )
    return sizes[0]


def _stacked_outputs(outs, out_dims, fname: str):
    leaves0, spec = _flatten(outs[0])
    where = f"vmap({fname}, ..., out_dims={out_dims})(<inputs>)"
    try:
        dims = _broadcast(out_dims, outs[0])
    except (ValueError, TypeError):
        raise ValueError(
            f"{where}: out_dims is not compatible with the structure of `outputs`. out_dims has "
            f"structure {_spec_text(out_dims)} but outputs has structure {_spec_text(outs[0])}."
        ) from None
    per_slice = [_flatten(o)[0] for o in outs]
    stacked = []
    for k, (leaf, d) in enumerate(zip(leaves0, dims)):
        if not isinstance(leaf, Tensor):
            raise ValueError(
                f"vmap({fname}, ...): `{fname}` must only return Tensors, got type "
                f"{type(leaf)}. Did you mean to set out_dims= to None for output?"
            )
        if d is None:
            raise ValueError(
                f"vmap({fname}, ...): `{fname}` can not return a BatchedTensor when out_dim is None"
            )
        stacked.append(stack([s[k] for s in per_slice], d))
    return optree.tree_unflatten(spec, stacked)


# in_dims and out_dims say None for "not mapped", so None is a leaf here (tracegrad.tree's
# pytrees treat None as an empty subtree, as JAX does)
def _flatten(value):
    return optree.tree_flatten(value, none_is_leaf=True, namespace=tree.NAMESPACE)


def _broadcast(prefix, full) -> list:
    return optree.broadcast_prefix(prefix, full, none_is_leaf=True, namespace=tree.NAMESPACE)


def _spec_text(value, indent: int = 0) -> str:
    """A pytree's structure as PyTorch's messages print it (`TreeSpec(tuple, None, [*, *])`)."""
    if isinstance(value, tuple | list | dict) or value is None:
        context = list(value) if isinstance(value, dict) else None
        children = [] if value is None else list(value.values() if context else value)
        inner = [_spec_text(c, indent + 2) for c in children]
        body = (",\n" + " " * (indent + 2)).join(inner)
        return f"TreeSpec({type(value).__name__}, {context}, [{body}])"
    return "*"


def _random_state() -> bytes:
    """The global stream's state (`default_generator`, which every sampler without a
    generator draws from), to compare and to restore."""
    return default_generator.get_state().numpy().tobytes()


def _set_random_state(state: bytes) -> None:
    default_generator.set_state(Tensor._wrap(np.frombuffer(state, np.uint8)))


def functional_call(
    module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False
):
    """`module(*args, **kwargs)` with its parameters and buffers replaced by the given tensors
    (dotted names, as `named_parameters` gives them) for this call only, as `torch.func`."""
    dicts = parameter_and_buffer_dicts
    dicts = (dicts,) if isinstance(dicts, dict) else tuple(dicts)
    keys = [k for d in dicts for k in d]
    repeated = list(dict.fromkeys(k for k in keys if keys.count(k) > 1))
    if repeated:
        raise ValueError(
            f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
            "ambiguous"
        )
    replacements = {k: v for d in dicts for k, v in d.items()}
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _swapped(module, replacements, tie_weights, strict):
        return module(*args, **(kwargs or {}))


class _swapped:
    """Put `replacements` in the module's parameter and buffer tables; restore on exit."""

    def __init__(self, module, replacements: dict, tie_weights: bool, strict: bool):
        self.module = module
        names = {}  # every name of each tensor (tied weights share one)
        for table in ("named_parameters", "named_buffers"):
            for name, t in getattr(module, table)(remove_duplicate=False):
                names.setdefault(id(t), []).append(name)
        known = [n for group in names.values() for n in group]
        if strict:
            _strict_keys(module, known, replacements)
        self.replacements = dict(replacements)
        if tie_weights:
            for group in names.values():
                given = [n for n in group if n in replacements]
                for n in group:
                    if given and n not in replacements:
                        self.replacements[n] = replacements[given[0]]
        self.saved: list = []

    def __enter__(self):
        for name, value in self.replacements.items():
            owner, _, attr = name.rpartition(".")
            sub = self.module
            for part in owner.split(".") if owner else ():
                sub = sub._modules[part]
            for table in (sub._parameters, sub._buffers):
                if attr in table:
                    self.saved.append((table, attr, table[attr]))
                    table[attr] = value
                    break
            else:
                self.saved.append((sub, attr, getattr(sub, attr, _MISSING)))
                object.__setattr__(sub, attr, value)
        return self

    def __exit__(self, *exc):
        for place, attr, old in reversed(self.saved):
            if isinstance(place, dict):
                place[attr] = old
            elif old is _MISSING:
                object.__delattr__(place, attr)
            else:
                object.__setattr__(place, attr, old)
        return False


_MISSING = object()


def _strict_keys(module, known, replacements) -> None:
    unexpected = [k for k in replacements if k not in known]
    missing = [k for k in known if k not in replacements]
    if unexpected or missing:
        lines = [f"Error(s) in reparametrizing for {type(module).__name__}:"]
        if unexpected:
            lines.append("\tUnexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + ".")
        if missing:
            lines.append("\tMissing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
        raise RuntimeError("\n".join(lines))
