"""The Adam family: `Adam` (and AMSGrad), `AdamW`, `Adamax`, `NAdam`, `RAdam`, as torch's
single-tensor updates (torch/optim/adam.py, adamax.py, nadam.py, radam.py) operation for
operation: moments by `lerp_` and `mul_().addcmul_()`, bias corrections from the `step` kept as a
0-d tensor of the default scalar dtype, `eps` after the square root. `SparseAdam` is refused."""

from __future__ import annotations

from tracegrad.torch.ops import maximum, zeros_like
from tracegrad.torch.optim.optimizer import (
    Optimizer,
    _addcmul_,
    _check_betas,
    _check_lr,
    _check_nonnegative,
    _check_unsupported,
    _grad,
    _params_with_grad,
    _step_tensor,
    _to_scalar,
    _value,
)
from tracegrad.torch.tensor import Tensor

__all__ = ["Adam", "AdamW", "Adamax", "NAdam", "RAdam", "SparseAdam"]

_COMMON_DEFAULTS = {"maximize": False, "foreach": None, "differentiable": False}


def _moments(p: Tensor, **extra) -> dict:
    """Fresh state: step 0 and zero first and second moments (plus `extra` entries)."""
    return {"step": _step_tensor(), **extra, "exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)}


def _decay(p: Tensor, grad: Tensor, lr, wd, decoupled: bool) -> Tensor:
    """L2 weight decay added to the gradient, or decoupled: `p *= 1 - lr * wd` (AdamW)."""
    if wd == 0:
        return grad
    if decoupled:
        p.mul_(1 - lr * wd)
        return grad
    return grad.add(p, alpha=wd)


class Adam(Optimizer):
    """Adam with bias corrections, AMSGrad's running maximum, L2 or decoupled (`AdamW`)
    weight decay and `maximize`."""

    _GROUP_DEFAULTS = {
        **_COMMON_DEFAULTS,
        "amsgrad": False,
        "capturable": False,
        "decoupled_weight_decay": False,
        "fused": None,
    }

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
        if isinstance(lr, Tensor):
            if foreach and not capturable:
                raise ValueError(
                    "lr as a Tensor is not supported for capturable=False and foreach=True"
                )
        _check_lr(lr)
        _check_nonnegative(epsilon=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        if not (
            (isinstance(betas[0], float) and isinstance(betas[1], float))
            or (isinstance(betas[0], Tensor) and isinstance(betas[1], Tensor))
        ):
            raise ValueError("betas must be either both floats or both Tensors")
        for i, beta in enumerate(betas):
            if isinstance(beta, Tensor):
                if not capturable and foreach:
                    raise ValueError(
                        f"betas[{i}] as a Tensor is not supported for capturable=False and "
                        "foreach=True"
                    )
                if beta.numel() != 1:
                    raise ValueError(f"Tensor betas[{i}] must be 1-element")
        _check_unsupported(differentiable, fused, capturable)
        defaults = {
            "lr": lr,
            "betas": tuple(map(_to_scalar, betas)),
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

    def _update_group(self, group) -> None:
        lr = _to_scalar(group["lr"])
        beta1, beta2 = (_to_scalar(b) for b in group["betas"])
        wd, eps, amsgrad = group["weight_decay"], group["eps"], group["amsgrad"]
        for p in _params_with_grad(self, group):
            grad = _grad(p, group["maximize"])
            state = self.state[p]
            if not state:
                state.update(_moments(p))
                if amsgrad:
                    state["max_exp_avg_sq"] = zeros_like(p)
            exp_avg, exp_avg_sq, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]
            step_t.add_(1)
            grad = _decay(p, grad, lr, wd, group["decoupled_weight_decay"])
            device_beta1 = beta1.to(p.dtype) if isinstance(beta1, Tensor) else beta1
            exp_avg.lerp_(grad, 1 - device_beta1)
            _addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)
            step = _value(step_t)
            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2**0.5
            if amsgrad:
                max_sq = state["max_exp_avg_sq"]
                max_sq.copy_(maximum(max_sq, exp_avg_sq))
                denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            else:
                denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
            p.addcdiv_(exp_avg, denom, value=-step_size)


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

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:  # whatever was saved, AdamW's decay is decoupled
            group["decoupled_weight_decay"] = True


class Adamax(Optimizer):
    """Adam with the infinity norm: `exp_inf = max(beta2 * exp_inf, |g| + eps)` replaces the
    second moment, and only the first moment is bias-corrected."""

    _GROUP_DEFAULTS = {**_COMMON_DEFAULTS, "capturable": False}

    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        foreach=None,
        *,
        maximize=False,
        differentiable=False,
        capturable=False,
    ):
        _check_lr(lr)
        _check_nonnegative(epsilon=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        _check_unsupported(differentiable, None, capturable)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _update_group(self, group) -> None:
        lr = _to_scalar(group["lr"])
        beta1, beta2 = group["betas"]
        eps, wd = group["eps"], group["weight_decay"]
        for p in _params_with_grad(self, group):
            grad = _grad(p, group["maximize"])
            state = self.state[p]
            if not state:
                state.update(step=_step_tensor(), exp_avg=zeros_like(p), exp_inf=zeros_like(p))
            exp_avg, exp_inf, step_t = state["exp_avg"], state["exp_inf"], state["step"]
            step_t.add_(1)
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            exp_avg.lerp_(grad, 1 - beta1)
            exp_inf.copy_(maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
            clr = lr / (1 - beta1 ** _value(step_t))
            p.addcdiv_(exp_avg, exp_inf, value=-clr)


class NAdam(Optimizer):
    """Adam with Nesterov momentum: the momentum coefficient `mu_t` warms up with
    `momentum_decay` and its running product `mu_product` is kept in the state."""

    _GROUP_DEFAULTS = {**_COMMON_DEFAULTS, "capturable": False, "decoupled_weight_decay": False}

    def __init__(
        self,
        params,
        lr=2e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        momentum_decay=4e-3,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        _check_lr(lr)
        _check_nonnegative(epsilon=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        _check_unsupported(differentiable, None, capturable)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "momentum_decay": momentum_decay,
            "decoupled_weight_decay": decoupled_weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update_group(self, group) -> None:
        lr = _to_scalar(group["lr"])
        beta1, beta2 = group["betas"]
        wd, eps, momentum_decay = group["weight_decay"], group["eps"], group["momentum_decay"]
        for p in _params_with_grad(self, group):
            grad = _grad(p, group["maximize"])
            state = self.state[p]
            if not state:
                state.update(_moments(p, mu_product=_step_tensor(1.0)))
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            mu_product, step_t = state["mu_product"], state["step"]
            step_t.add_(1)
            step = _value(step_t)
            bias_correction2 = 1 - beta2**step
            grad = _decay(p, grad, lr, wd, group["decoupled_weight_decay"])
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
            mu_product.mul_(mu)
            exp_avg.lerp_(grad, 1 - beta1)
            _addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)
            denom = exp_avg_sq.div(bias_correction2).sqrt()
            mu_product_next = _value(mu_product) * mu_next
            denom.add_(eps)
            p.addcdiv_(grad, denom, value=(-lr * (1.0 - mu) / (1.0 - _value(mu_product))))
            p.addcdiv_(exp_avg, denom, value=(-lr * mu_next) / (1.0 - mu_product_next))


class RAdam(Optimizer):
    """Rectified Adam: while the variance estimate is unreliable (`rho_t <= 5`) the step is
    plain momentum; after, Adam's step times the rectification term."""

    _GROUP_DEFAULTS = {**_COMMON_DEFAULTS, "capturable": False, "decoupled_weight_decay": False}

    def __init__(
        self,
        params,
        lr=1e-3,
        betas=(0.9, 0.999),
        eps=1e-8,
        weight_decay=0,
        decoupled_weight_decay=False,
        *,
        foreach=None,
        maximize=False,
        capturable=False,
        differentiable=False,
    ):
        _check_lr(lr)
        _check_nonnegative(epsilon=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        _check_unsupported(differentiable, None, capturable)
        defaults = {
            "lr": lr,
            "betas": betas,
            "eps": eps,
            "weight_decay": weight_decay,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "decoupled_weight_decay": decoupled_weight_decay,
            "differentiable": differentiable,
        }
        super().__init__(params, defaults)

    def _update_group(self, group) -> None:
        lr = _to_scalar(group["lr"])
        beta1, beta2 = group["betas"]
        wd, eps = group["weight_decay"], group["eps"]
        for p in _params_with_grad(self, group):
            grad = _grad(p, group["maximize"])
            state = self.state[p]
            if not state:
                state.update(_moments(p))
            exp_avg, exp_avg_sq, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]
            step_t.add_(1)
            step = _value(step_t)
            grad = _decay(p, grad, lr, wd, group["decoupled_weight_decay"])
            exp_avg.lerp_(grad, 1 - beta1)
            _addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)
            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            bias_corrected_exp_avg = exp_avg / bias_correction1
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
            if rho_t > 5.0:
                rect = (
                    (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
                ) ** 0.5
                adaptive_lr = (bias_correction2**0.5) / exp_avg_sq.sqrt().add_(eps)
                p.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
            else:
                p.add_(bias_corrected_exp_avg * lr, alpha=-1.0)


class SparseAdam(Optimizer):
    """Out of scope: torch's SparseAdam steps sparse gradients, which tracegrad tensors (dense
    NumPy arrays) never have; `Adam` is the dense equivalent."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        raise NotImplementedError(
            "SparseAdam is out of scope for tracegrad: it updates sparse gradients, and "
            "tracegrad tensors are dense; use Adam (the same update on dense gradients)"
        )
