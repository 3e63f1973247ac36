"""Step sizes from a running sum or average of squared gradients, without a first moment:
`Adagrad`, `Adadelta` and `RMSprop` (centered, with momentum), as torch's single-tensor updates
(torch/optim/adagrad.py, adadelta.py, rmsprop.py) operation for operation."""

from __future__ import annotations

from tracegrad.torch.ops import full_like, zeros_like
from tracegrad.torch.optim.optimizer import (
    Optimizer,
    _addcmul,
    _addcmul_,
    _check_lr,
    _check_nonnegative,
    _check_unsupported,
    _grad,
    _params_with_grad,
    _step_tensor,
    _to_scalar,
    _value,
)

__all__ = ["Adadelta", "Adagrad", "RMSprop"]

_COMMON_DEFAULTS = {"foreach": None, "maximize": False, "differentiable": False}


class Adagrad(Optimizer):
    """`p -= clr * g / (sqrt(sum of g^2) + eps)`, `clr = lr / (1 + (step - 1) * lr_decay)`.
    As in torch, the state (`step`, `sum`) exists from construction for every parameter."""

    _GROUP_DEFAULTS = {**_COMMON_DEFAULTS, "fused": None}

    def __init__(
        self,
        params,
        lr=1e-2,
        lr_decay=0,
        weight_decay=0,
        initial_accumulator_value=0,
        eps=1e-10,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        fused=None,
    ):
        _check_lr(lr)
        _check_nonnegative(
            lr_decay=lr_decay,
            weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value,
        )
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_unsupported(differentiable, fused)
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p].update(self._fresh(p, initial_accumulator_value))

    @staticmethod
    def _fresh(p, initial_accumulator_value) -> dict:
        return {"step": _step_tensor(), "sum": full_like(p, initial_accumulator_value)}

    def _update_group(self, group) -> None:
        lr = _to_scalar(group["lr"])
        wd, lr_decay, eps = group["weight_decay"], group["lr_decay"], group["eps"]
        for p in _params_with_grad(self, group):
            grad = _grad(p, group["maximize"])
            state = self.state[p]
            if not state:  # a parameter added by add_param_group
                state.update(self._fresh(p, self.defaults["initial_accumulator_value"]))
            step_t, state_sum = state["step"], state["sum"]
            step_t.add_(1)
            step = _value(step_t)
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            clr = lr / (1 + (step - 1) * lr_decay)
            _addcmul_(state_sum, grad, grad, value=1)
            std = state_sum.sqrt().add_(eps)
            p.addcdiv_(grad, std, value=-clr)


class Adadelta(Optimizer):
    """Steps `delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g`, both averages
    decaying by `rho`; `lr` scales the step (1.0 by default)."""

    _GROUP_DEFAULTS = {**_COMMON_DEFAULTS, "capturable": False}

    def __init__(
        self,
        params,
        lr=1.0,
        rho=0.9,
        eps=1e-6,
        weight_decay=0,
        foreach=None,
        *,
        capturable=False,
        maximize=False,
        differentiable=False,
    ):
        _check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative(epsilon=eps, weight_decay=weight_decay)
        _check_unsupported(differentiable, None, capturable)
        defaults = {
            "lr": lr,
            "rho": rho,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "capturable": capturable,
            "foreach": foreach,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update_group(self, group) -> None:
        lr = _to_scalar(group["lr"])
        rho, eps, wd = group["rho"], group["eps"], group["weight_decay"]
        for p in _params_with_grad(self, group):
            grad = _grad(p, group["maximize"])
            state = self.state[p]
            if not state:
                state.update(step=_step_tensor(), square_avg=zeros_like(p), acc_delta=zeros_like(p))
            square_avg, acc_delta = state["square_avg"], state["acc_delta"]
            state["step"].add_(1)
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            _addcmul_(square_avg.mul_(rho), grad, grad, value=1 - rho)
            std = square_avg.add(eps).sqrt_()
            delta = acc_delta.add(eps).sqrt_()
            delta.div_(std).mul_(grad)
            _addcmul_(acc_delta.mul_(rho), delta, delta, value=1 - rho)
            p.add_(delta, alpha=-lr)


class RMSprop(Optimizer):
    """RMSprop with torch's `alpha` (the smoothing of the squared gradient), `eps` added
    after the square root, `centered`, `momentum`, L2 `weight_decay` and `maximize`."""

    _GROUP_DEFAULTS = {
        **_COMMON_DEFAULTS,
        "momentum": 0,
        "centered": False,
        "capturable": False,
    }

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
        _check_nonnegative(epsilon=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
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
            state["step"] = _step_tensor()
            state["square_avg"] = zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = zeros_like(p)
        return state

    def _update_group(self, group) -> None:
        lr = _to_scalar(group["lr"])
        alpha, eps, wd = group["alpha"], group["eps"], group["weight_decay"]
        momentum = group["momentum"]
        for p in _params_with_grad(self, group):
            grad = _grad(p, group["maximize"])
            state = self._state(p, group)
            state["step"].add_(1)
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            square_avg = state["square_avg"]
            _addcmul_(square_avg.mul_(alpha), grad, grad, value=1 - alpha)
            if group["centered"]:
                grad_avg = state["grad_avg"].lerp_(grad, 1 - alpha)
                avg = _addcmul(square_avg, grad_avg, grad_avg, value=-1).sqrt_()
            else:
                avg = square_avg.sqrt()
            avg = avg.add_(eps)
            if momentum > 0:
                buf = state["momentum_buffer"]
                buf.mul_(momentum).addcdiv_(grad, avg)
                p.add_(buf, alpha=-lr)
            else:
                p.addcdiv_(grad, avg, value=-lr)
