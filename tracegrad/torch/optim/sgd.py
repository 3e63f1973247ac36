"""Descent without moment estimates: `SGD` (momentum, dampening, Nesterov, L2 weight decay,
`maximize`), `ASGD` (averaged SGD) and `Rprop` (per-coordinate steps from gradient signs), as
torch's single-tensor updates (torch/optim/sgd.py, asgd.py, rprop.py) in their order."""

from __future__ import annotations

from tracegrad.torch.creation_from_data import tensor
from tracegrad.torch.ops import full_like, where, zeros_like
from tracegrad.torch.optim.optimizer import (
    Optimizer,
    _addcmul_,
    _check_lr,
    _check_nonnegative,
    _check_unsupported,
    _grad,
    _params_with_grad,
    _scalar_dtype,
    _step_tensor,
    _to_scalar,
    _value,
)
from tracegrad.torch.tensor import Tensor

__all__ = ["ASGD", "SGD", "Rprop"]


class SGD(Optimizer):
    """`p -= lr * g`, `g` with weight decay added and through the momentum buffer, which the
    first step initialises to the gradient itself (torch's, not zero)."""

    _GROUP_DEFAULTS = {
        "nesterov": False,
        "maximize": False,
        "foreach": None,
        "differentiable": False,
        "fused": False,
    }

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
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
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
        lr = _to_scalar(group["lr"])
        wd, momentum = group["weight_decay"], group["momentum"]
        dampening, nesterov = group["dampening"], group["nesterov"]
        for p in _params_with_grad(self, group):
            grad = _grad(p, group["maximize"])
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


class ASGD(Optimizer):
    """SGD with a decaying rate `eta = lr / (1 + lambd * lr * step) ** alpha`, weight decay
    `p *= 1 - lambd * eta`, and the running average `ax` of the iterates from step `t0` on."""

    _GROUP_DEFAULTS = {
        "foreach": None,
        "maximize": False,
        "differentiable": False,
        "capturable": False,
    }

    def __init__(
        self,
        params,
        lr=1e-2,
        lambd=1e-4,
        alpha=0.75,
        t0=1e6,
        weight_decay=0,
        foreach=None,
        maximize=False,
        differentiable=False,
        capturable=False,
    ):
        _check_lr(lr)
        _check_nonnegative(weight_decay=weight_decay)
        _check_unsupported(differentiable, None, capturable)
        defaults = {
            "lr": lr,
            "lambd": lambd,
            "alpha": alpha,
            "t0": t0,
            "weight_decay": weight_decay,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _update_group(self, group) -> None:
        lr = _to_scalar(group["lr"])
        lambd, alpha, t0, wd = group["lambd"], group["alpha"], group["t0"], group["weight_decay"]
        for p in _params_with_grad(self, group):
            grad = _grad(p, group["maximize"])
            state = self.state[p]
            if not state:
                state["step"] = _step_tensor()
                state["eta"] = tensor(_value(lr), dtype=_scalar_dtype())
                state["mu"] = _step_tensor(1.0)
                state["ax"] = zeros_like(p)
            mu, ax, eta, step_t = state["mu"], state["ax"], state["eta"], state["step"]
            step_t.add_(1)
            if wd != 0:
                grad = grad.add(p, alpha=wd)
            eta_value = _value(eta)
            p.mul_(1 - lambd * eta_value)
            p.add_(grad, alpha=-eta_value)
            if mu.item() != 1:
                ax.add_(p.sub(ax).mul_(mu))
            else:
                ax.copy_(p)
            step = _value(step_t)
            # through a tensor of the default dtype, as torch's `as_tensor` (it rounds a loaded,
            # float64 `eta` to float32 too)
            eta.copy_(tensor(_value(lr / ((1 + lambd * lr * step) ** alpha))))
            mu.copy_(tensor(1 / max(1, step - t0)))


class Rprop(Optimizer):
    """Resilient backpropagation: each coordinate's step grows by `etas[1]` while its
    gradient keeps its sign and shrinks by `etas[0]` (skipping that update) when it flips,
    within `step_sizes`; the parameter moves by the step against the gradient's sign."""

    _GROUP_DEFAULTS = {
        "foreach": None,
        "maximize": False,
        "differentiable": False,
        "capturable": False,
    }

    def __init__(
        self,
        params,
        lr=1e-2,
        etas=(0.5, 1.2),
        step_sizes=(1e-6, 50),
        *,
        capturable=False,
        foreach=None,
        maximize=False,
        differentiable=False,
    ):
        _check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _check_unsupported(differentiable, None, capturable)
        defaults = {
            "lr": lr,
            "etas": etas,
            "step_sizes": step_sizes,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "capturable": capturable,
        }
        super().__init__(params, defaults)

    def _update_group(self, group) -> None:
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        for p in _params_with_grad(self, group):
            grad = _grad(p, group["maximize"])
            state = self.state[p]
            if not state:
                state["step"] = _step_tensor()
                state["prev"] = zeros_like(p)
                state["step_size"] = full_like(p.grad, _value(_to_scalar(group["lr"])))
            prev, step_size = state["prev"], state["step_size"]
            state["step"].add_(1)
            sign = grad.mul(prev).sign()
            # torch's masked writes, in its order (etaplus, etaminus > 0: none undoes another)
            sign = where(sign.gt(0), etaplus, sign)
            sign = where(sign.lt(0), etaminus, sign)
            sign = where(sign.eq(0), 1.0, sign)
            step_size.mul_(sign).clamp_(step_size_min, step_size_max)
            grad = where(sign.eq(etaminus), 0.0, grad)  # after a sign flip: no step
            _addcmul_(p, grad.sign(), step_size, value=-1)
            prev.copy_(grad)
