"""`tracegrad.torch.optim`: PyTorch's `SGD`, `RMSprop`, `Adam` and `AdamW` over tensors.

The updates are PyTorch's single-tensor ("for-loop") algorithms, operation for operation
(torch/optim/sgd.py, rmsprop.py and adam.py), written with in-place tensor methods under
`no_grad`: each rebinds the parameter to a new array and bumps its version, so a graph that
saved the old value raises PyTorch's version error rather than reading a changed one.
Parameter groups, `state` keyed by parameter, `state_dict()`/`load_state_dict()` and the
argument checks and messages follow `torch.optim.Optimizer`.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from copy import deepcopy
from itertools import chain

import numpy as np

from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.grad_mode import enable_grad, no_grad
from tracegrad.torch.ops import maximum, zeros_like
from tracegrad.torch.tensor import Tensor, tensor

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "RMSprop"]


class _RequiredParameter:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _typename(value) -> str:
    if isinstance(value, Tensor):
        return value.dtype.name
    kind = type(value)
    return (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )


def _scalar(value):
    return value.item() if isinstance(value, Tensor) else value


class Optimizer:
    """Holds parameter groups (each a dict of "params" and options, defaults filled in) and
    per-parameter `state`; subclasses define `_update_group`, the update of one group."""

    def __init__(self, params, defaults: dict) -> None:
        self.defaults = defaults
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
            if not (p.is_leaf or p.retains_grad):
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

    def step(self, closure=None):
        """One update of every parameter that has a `.grad`; returns `closure()`'s loss."""
        loss = self._closure(closure)
        with no_grad():
            for group in self.param_groups:
                self._update_group(group)
        return loss

    def _update_group(self, group) -> None:
        """The algorithm: update the parameters of one group (subclasses define it)."""
        raise NotImplementedError

    def _closure(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    # -- state ------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}, indices
        numbering the parameters in group order; the state tensors are the live ones."""
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
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Loads a `state_dict()`: groups must match in number and size. Floating-point state
        takes the parameter's dtype (`step` keeps its own); tensors are new objects, so two
        optimizers loaded from one dict do not share buffers."""
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

        def cast(param, value, key=None):
            if isinstance(value, Tensor | np.ndarray):
                t = Tensor._wrap(value._cell.value if isinstance(value, Tensor) else value.copy())
                if key != "step" and param.dtype.kind == "f" and t.dtype != param.dtype:
                    t = t.to(param.dtype)
                return t
            if isinstance(value, dict):
                return {k: cast(param, v, k) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return type(value)(cast(param, v) for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = cast(id_map[k], v)
            else:
                state[k] = v
        for group, new in zip(groups, saved):
            new["params"] = group["params"]
            if "param_names" in group and "param_names" not in new:
                new["param_names"] = group["param_names"]
        self.state = state
        self.param_groups = saved

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"


def _check_unsupported(differentiable, fused, capturable=False) -> None:
    if differentiable:
        raise NotImplementedError("tracegrad optimizers do not support differentiable=True")
    if fused:
        raise NotImplementedError("tracegrad optimizers do not support fused=True")
    if capturable:
        raise NotImplementedError("tracegrad optimizers do not support capturable=True")


def _params_with_grad(group):
    return [p for p in group["params"] if p.grad is not None]


def _check_lr(lr) -> None:
    if isinstance(lr, Tensor) and lr.numel() != 1:
        raise ValueError("Tensor lr must be 1-element")
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")


# -- SGD ---------------------------------------------------------------------------------------


class SGD(Optimizer):
    """Stochastic gradient descent with PyTorch's momentum, dampening, Nesterov momentum,
    weight decay and `maximize` (torch.optim.SGD's update, operation for operation)."""

    def __init__(
        self,
        params,
        lr=1e-3,
        momentum=0,
        dampening=0,
        weight_decay=0,
        nesterov=False,
        *,
        maximize=False,
        foreach=None,
        differentiable=False,
        fused=None,
    ):
        _check_lr(lr)
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_unsupported(differentiable, fused)
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def _update_group(self, group) -> None:
        lr = _scalar(group["lr"])
        wd, momentum = group["weight_decay"], group["momentum"]
        dampening, nesterov = group["dampening"], group["nesterov"]
        for p in _params_with_grad(group):
            grad = p.grad if not group["maximize"] else -p.grad
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = state["momentum_buffer"] = grad.detach().clone()
                else:
                    buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                grad = grad.add(buf, alpha=momentum) if nesterov else buf
            p.add_(grad, alpha=-lr)


# -- RMSprop -----------------------------------------------------------------------------------


class RMSprop(Optimizer):
    """RMSprop with PyTorch's `alpha` (the smoothing of the squared gradient), `eps` added
    after the square root, `centered`, `momentum`, L2 `weight_decay` and `maximize`."""

    def __init__(
        self,
        params,
        lr=1e-2,
        alpha=0.99,
        eps=1e-8,
        weight_decay=0,
        momentum=0,
        centered=False,
        capturable=False,
        foreach=None,
        maximize=False,
        differentiable=False,
    ):
        _check_lr(lr)
        for what, value in (
            ("epsilon", eps),
            ("momentum", momentum),
            ("weight_decay", weight_decay),
            ("alpha", alpha),
        ):
            if not 0.0 <= value:
                raise ValueError(f"Invalid {what} value: {value}")
        _check_unsupported(differentiable, None, capturable)
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "alpha": alpha,
            "eps": eps,
            "centered": centered,
            "weight_decay": weight_decay,
            "capturable": capturable,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _state(self, p, group) -> dict:
        state = self.state[p]
        if not state:
            scalar = np.float64 if get_default_dtype() == np.float64 else np.float32
            state["step"] = tensor(0.0, dtype=scalar)
            state["square_avg"] = zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = zeros_like(p)
        return state

    def _update_group(self, group) -> None:
        lr = _scalar(group["lr"])
        alpha, eps, wd = group["alpha"], group["eps"], group["weight_decay"]
        momentum = group["momentum"]
        for p in _params_with_grad(group):
            grad = p.grad if not group["maximize"] else -p.grad
            state = self._state(p, group)
            state["step"].add_(1)
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            square_avg = state["square_avg"]
            # addcmul_(grad, grad, value=1 - alpha): value * grad * grad, left to right
            square_avg.mul_(alpha).add_(grad.mul(1 - alpha).mul(grad))
            if group["centered"]:
                grad_avg = _lerp_(state["grad_avg"], grad, 1 - alpha)
                avg = square_avg.sub(grad_avg.mul(grad_avg)).sqrt_()
            else:
                avg = square_avg.sqrt()
            avg = avg.add_(eps)
            if momentum > 0:
                buf = state["momentum_buffer"]
                buf.mul_(momentum).add_(grad.div(avg))
                p.add_(buf, alpha=-lr)
            else:
                # addcdiv_(grad, avg, value=-lr): value * grad / avg, then add
                p.add_(grad.mul(-lr).div(avg))


# -- Adam and AdamW ----------------------------------------------------------------------------


def _lerp_(start: Tensor, end: Tensor, weight: float) -> Tensor:
    """PyTorch's lerp formula: `start + w * (end - start)` for |w| < 0.5, else
    `end - (end - start) * (1 - w)` (exact at w = 1)."""
    if abs(weight) < 0.5:
        return start.add_(end.sub(start), alpha=weight)
    return start.copy_(end.sub(end.sub(start).mul(1 - weight)))


class Adam(Optimizer):
    """Adam (and AMSGrad) with PyTorch's bias corrections, `eps` added after the square root,
    L2 `weight_decay` (or decoupled, as `AdamW`) and `maximize`."""

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        amsgrad=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
        fused=None,
        decoupled_weight_decay=False,
    ):
        _check_lr(lr)
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not (
            (isinstance(betas[0], float) and isinstance(betas[1], float))
            or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))
        ):
            raise ValueError("betas must be either both floats or both Tensors")
        _check_unsupported(differentiable, fused, capturable)
        defaults = {
            "lr": lr,
            "betas": tuple(_scalar(b) for b in betas),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def _state(self, p, amsgrad: bool) -> dict:
        state = self.state[p]
        if not state:
            # PyTorch keeps `step` as a 0-d tensor of its scalar dtype, on the CPU
            scalar = np.float64 if get_default_dtype() == np.float64 else np.float32
            state["step"] = tensor(0.0, dtype=scalar)
            state["exp_avg"] = zeros_like(p)
            state["exp_avg_sq"] = zeros_like(p)
            if amsgrad:
                state["max_exp_avg_sq"] = zeros_like(p)
        return state

    def _update_group(self, group) -> None:
        lr = _scalar(group["lr"])
        beta1, beta2 = group["betas"]
        wd, eps, amsgrad = group["weight_decay"], group["eps"], group["amsgrad"]
        for p in _params_with_grad(group):
            grad = p.grad if not group["maximize"] else -p.grad
            state = self._state(p, amsgrad)
            exp_avg, exp_avg_sq, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]
            step_t.add_(1)
            if wd != 0:
                if group["decoupled_weight_decay"]:
                    p.mul_(1 - lr * wd)
                else:
                    grad = grad.add(p, alpha=wd)
            _lerp_(exp_avg, grad, 1 - beta1)
            # addcmul_(grad, grad, value=1 - beta2) computes value * grad * grad left to right
            exp_avg_sq.mul_(beta2).add_(grad.mul(1 - beta2).mul(grad))
            step = step_t.item()
            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2**0.5
            if amsgrad:
                max_sq = state["max_exp_avg_sq"]
                max_sq.copy_(maximum(max_sq, exp_avg_sq))
                denom = max_sq.sqrt().div(bias_correction2_sqrt).add_(eps)
            else:
                denom = exp_avg_sq.sqrt().div(bias_correction2_sqrt).add_(eps)
            # addcdiv_(exp_avg, denom, value=-step_size): value * exp_avg / denom, then add
            p.add_(exp_avg.mul(-step_size).div(denom))


class AdamW(Adam):
    """Adam with decoupled weight decay: `p *= 1 - lr * weight_decay` before the Adam step."""

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=1e-2,
        amsgrad=False,
        *,
        maximize=False,
        foreach=None,
        capturable=False,
        differentiable=False,
        fused=None,
    ):
        super().__init__(
            params,
            lr,
            betas,
            eps,
            weight_decay,
            amsgrad,
            foreach=foreach,
            maximize=maximize,
            capturable=capturable,
            differentiable=differentiable,
            fused=fused,
            decoupled_weight_decay=True,
        )

    def load_state_dict(self, state_dict: dict) -> None:
        super().load_state_dict(state_dict)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
