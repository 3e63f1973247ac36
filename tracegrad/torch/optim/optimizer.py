"""`Optimizer`, torch's base class: parameter groups with defaults filled in, per-parameter
`state`, step and state-dict hooks, `state_dict()`/`load_state_dict()` in torch's structure,
`zero_grad()`, torch's checks and messages. An algorithm defines `_update_group(group)` (torch's
single-tensor update, with in-place tensor methods), which `step()` runs under `no_grad`; the
helpers at the end are what the algorithms share."""

from __future__ import annotations

import functools
import warnings
from collections import defaultdict
from copy import deepcopy
from itertools import chain

import numpy as np

from tracegrad.torch.creation_from_data import tensor
from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.grad_mode import enable_grad, no_grad
from tracegrad.torch.hooks import RemovableHandle
from tracegrad.torch.tensor import Tensor

__all__ = ["Optimizer", "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook"]


class _RequiredParameter:
    """The default of an option that every parameter group must give (SGD's old `lr`)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_global_pre_hooks: list = []
_global_post_hooks: list = []


def register_optimizer_step_pre_hook(hook) -> RemovableHandle:
    """`hook(optimizer, args, kwargs) -> None | (args, kwargs)` before every optimizer's step."""
    _global_pre_hooks.append(hook)
    return RemovableHandle(_global_pre_hooks, hook)


def register_optimizer_step_post_hook(hook) -> RemovableHandle:
    """`hook(optimizer, args, kwargs)` after every optimizer's step."""
    _global_post_hooks.append(hook)
    return RemovableHandle(_global_post_hooks, hook)


def _hooked(step):
    """`step` with the step hooks around it, as torch's `profile_hook_step`. Only the outermost
    call runs them (a subclass's step calling `super().step()` runs them once), and it marks
    the optimizer as stepped for the schedulers' call-order warning."""

    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        self = args[0]
        if self.__dict__.get("_in_step"):
            return step(*args, **kwargs)
        for hook in (*_global_pre_hooks, *self._optimizer_step_pre_hooks):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(
                        f"{step} must return None or a tuple of (new_args, new_kwargs), but got "
                        f"{result}."
                    )
                args, kwargs = result
        if self.__dict__.get("_lr_sched_tracking"):
            self._opt_called = True
        self._in_step = True
        try:
            out = step(*args, **kwargs)
        finally:
            self._in_step = False
        for hook in (*self._optimizer_step_post_hooks, *_global_post_hooks):
            hook(self, args, kwargs)
        return out

    wrapper._hooked_step = True
    return wrapper


def _typename(value) -> str:
    """torch.typename: a tensor's type (its dtype here), else module.qualname of the class."""
    if isinstance(value, Tensor):
        return value.dtype.name
    kind = type(value)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


class Optimizer:
    """Parameter groups (dicts of "params" and options, defaults filled in) and per-parameter
    `state`; subclasses define `_update_group`, or `step` itself as torch's do."""

    # options a group loaded from an older state dict gets, as each torch class's __setstate__
    _GROUP_DEFAULTS: dict = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__ and not getattr(cls.__dict__["step"], "_hooked_step", False):
            cls.step = _hooked(cls.__dict__["step"])

    def __init__(self, params, defaults: dict) -> None:
        self.defaults = defaults
        self._init_hooks()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                "dicts, but got " + _typename(params)
            )
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict] = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def _init_hooks(self) -> None:
        for when in ("step", "state_dict", "load_state_dict"):
            self.__dict__.setdefault(f"_optimizer_{when}_pre_hooks", [])
            self.__dict__.setdefault(f"_optimizer_{when}_post_hooks", [])

    def __getstate__(self) -> dict:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._init_hooks()
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for key, value in self._GROUP_DEFAULTS.items():
                group.setdefault(key, value)
        self._legacy_steps()

    def _legacy_steps(self) -> None:
        """A `step` saved as a number (old torch) becomes the 0-d tensor the update reads."""
        for p_state in self.state.values():
            step = p_state.get("step") if isinstance(p_state, dict) else None
            if step is not None and not isinstance(step, Tensor):
                p_state["step"] = _step_tensor(float(step))

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # -- groups ---------------------------------------------------------------------------------
    def add_param_group(self, param_group: dict) -> None:
        """Adds a group (a dict with "params" and any per-group options)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list instead."
            )
        else:
            params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        param_group["params"] = params
        if names:
            if len(names) != len(params):
                raise ValueError(
                    "all optimizer params should be with/without names. Some param names are "
                    "missing"
                )
            param_group["param_names"] = names
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, but one of the params is " + _typename(p)
                )
            if not self.defaults.get("differentiable", None) and not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required optimization parameter "
                    f"{name}"
                )
            param_group.setdefault(name, default)
        if len({id(p) for p in params}) != len(params):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this "
                "will cause an error; see github.com/pytorch/pytorch/issues/40967 for more "
                "information",
                stacklevel=3,
            )
        seen = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. cannot add param "
                    f"group {which} to the optimizer"
                )
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drops every `.grad` (the default), or with `set_to_none=False` zeroes it in place."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    # -- the step -------------------------------------------------------------------------------
    def step(self, closure=None):
        """One update of every parameter that has a `.grad`; returns `closure()`'s loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._update_group(group)
        return loss

    def _update_group(self, group) -> None:
        """The algorithm: update the parameters of one group (subclasses define it)."""
        raise NotImplementedError

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """`hook(optimizer, args, kwargs) -> None | (args, kwargs)` before this step."""
        return self._register(self._optimizer_step_pre_hooks, hook, False)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """`hook(optimizer, args, kwargs)` after this optimizer's step."""
        return self._register(self._optimizer_step_post_hooks, hook, False)

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer)` before `state_dict()` builds the dict."""
        return self._register(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer, state_dict) -> None | state_dict` on what `state_dict()` returns."""
        return self._register(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer, state_dict) -> None | state_dict` before loading."""
        return self._register(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer)` after loading."""
        return self._register(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    @staticmethod
    def _register(hooks: list, hook, prepend: bool) -> RemovableHandle:
        hooks.insert(0, hook) if prepend else hooks.append(hook)
        return RemovableHandle(hooks, hook)

    # -- state ----------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}, indices
        numbering the parameters in group order; the state tensors are the live ones."""
        for hook in self._optimizer_state_dict_pre_hooks:
            hook(self)
        index: dict[int, int] = {}
        start = 0

        def pack(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index.setdefault(id(p), i)
            packed["params"] = [index[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack(g) for g in self.param_groups]
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": state, "param_groups": groups}
        for hook in self._optimizer_state_dict_post_hooks:
            state_dict = hook(self, state_dict) or state_dict
        return state_dict

    def load_state_dict(self, state_dict: dict) -> None:
        """Loads a `state_dict()`: groups must match in number and size. Floating-point state
        takes the parameter's dtype (`step` keeps its own). Unlike torch, whose loaded state
        aliases the dict's tensors where no cast is needed, the state is always copied: two
        optimizers loaded from one dict (or one loaded from a live one) never share buffers."""
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks:
            state_dict = hook(self, state_dict) or state_dict
        groups = self.param_groups
        saved = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group"
            )
        id_map = dict(
            zip(
                chain.from_iterable(s["params"] for s in saved),
                chain.from_iterable(g["params"] for g in groups),
            )
        )
        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            state[id_map[k] if k in id_map else k] = _cast(id_map[k], v) if k in id_map else v
        for group, new in zip(groups, saved):
            new["params"] = group["params"]
            if "param_names" in group and "param_names" not in new:
                new["param_names"] = group["param_names"]
        self.__setstate__({"state": state, "param_groups": saved})
        for hook in self._optimizer_load_state_dict_post_hooks:
            hook(self)


Optimizer.step = _hooked(Optimizer.step)


def _cast(param: Tensor, value, key=None):
    """A copy of loaded state `value` for `param`: tensors (or NumPy arrays) as new tensors,
    floating ones in the parameter's dtype except `step`; dicts and lists entry by entry."""
    if isinstance(value, Tensor | np.ndarray):
        array = value._cell.value if isinstance(value, Tensor) else value
        if key != "step" and param.dtype.kind == "f":
            array = array.astype(param.dtype)
        return Tensor._wrap(np.array(array))
    if isinstance(value, dict):
        return {k: _cast(param, v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_cast(param, v) for v in value)
    return value


# -- what the algorithms share -----------------------------------------------------------------


def _check_lr(lr) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


def _check_betas(betas) -> None:
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")


def _check_nonnegative(**values) -> None:
    """torch's `Invalid <name> value: <v>` checks, in the order given."""
    for name, value in values.items():
        if not 0.0 <= value:
            raise ValueError(f"Invalid {name} value: {value}")


def _check_unsupported(differentiable=False, fused=None, capturable=False) -> None:
    """The options whose implementations tracegrad does not have (torch's foreach=True runs
    the same algorithm in another order; here it runs the single-tensor one)."""
    if differentiable:
        raise NotImplementedError("tracegrad optimizers do not support differentiable=True")
    if fused:
        raise NotImplementedError("tracegrad optimizers do not support fused=True")
    if capturable:
        raise NotImplementedError("tracegrad optimizers do not support capturable=True")


def _params_with_grad(optimizer: Optimizer, group) -> list[Tensor]:
    """The group's parameters that have a gradient, the ones a step updates."""
    params = [p for p in group["params"] if p.grad is not None]
    for p in params:
        if p.dtype.kind == "c":
            raise NotImplementedError(
                f"{type(optimizer).__name__}: complex parameters are not supported by "
                "tracegrad's optimizers yet (torch steps their real and imaginary parts as "
                "separate reals)"
            )
    return params


def _scalar_dtype():
    """torch's `_get_scalar_dtype()`: the dtype of `step` and other 0-d state."""
    return np.float64 if get_default_dtype() == np.float64 else np.float32


def _step_tensor(value: float = 0.0) -> Tensor:
    return tensor(value, dtype=_scalar_dtype())


def _to_scalar(x):
    """A 1-element hyperparameter tensor as a 0-d one; numbers unchanged (torch's)."""
    return x.squeeze() if isinstance(x, Tensor) and x.dim() != 0 else x


def _value(x):
    return x.item() if isinstance(x, Tensor) else x


def _grad(p: Tensor, maximize: bool) -> Tensor:
    return -p.grad if maximize else p.grad


def _addcmul(t: Tensor, a: Tensor, b: Tensor, value=1) -> Tensor:
    """`t + value * a * b` in torch's order, `(value * a) * b` (torch fuses the last multiply
    and add; NumPy rounds them separately, so the last bit may differ)."""
    return t.add(a.mul(value).mul(b) if not _is_one(value) else a.mul(b))


def _addcmul_(t: Tensor, a: Tensor, b: Tensor, value=1) -> Tensor:
    return t.add_(a.mul(value).mul(b) if not _is_one(value) else a.mul(b))


def _is_one(value) -> bool:
    return not isinstance(value, Tensor) and value == 1
