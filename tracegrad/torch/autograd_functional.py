"""PyTorch's `torch.autograd.functional`: vjp, jvp, jacobian, hessian, hvp and vhp of a function
of tensors, built, as PyTorch builds them, on `autograd.grad` over the recorded graph.

Each call runs `func` once on fresh views of its inputs, then asks the engine for gradients;
forward-mode products (`jvp`, `hvp`, `strategy="forward-mode"`) use the double-backward trick:
the vjp is linear in its cotangent, so differentiating it with respect to that cotangent gives
the jvp. Results follow PyTorch's structure (a tuple where the inputs or outputs were a tuple)
and its `strict` and `create_graph` semantics and messages. `vectorize=True` gives the same
values as PyTorch's batched call, one backward pass per row (the engine has no batched grads).
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from tracegrad.torch import engine
from tracegrad.torch.grad_mode import enable_grad, is_grad_enabled, set_grad_enabled
from tracegrad.torch.ops.creation import zeros_like
from tracegrad.torch.ops.shapes import stack
from tracegrad.torch.tensor import Tensor

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


# -- the shared steps (PyTorch's helpers of the same names) -------------------------------------


def _as_tuple(inp, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(whether `inp` was a tuple, `inp` as a tuple of tensors), with PyTorch's type errors."""
    is_tuple = isinstance(inp, tuple)
    inp = inp if is_tuple else (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = f"value at index {i}" if is_tuple else f"given {arg_name}"
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                f"Tensors but the {where} has type {type(el)}."
            )
    return is_tuple, inp


def _tuple_postprocess(res, to_unpack):
    """Undo `_as_tuple`: single tensors where the caller gave single tensors."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(inputs, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh tensors to differentiate with respect to: a view that keeps the caller's graph
    when `create_graph` (so the result can be differentiated again with respect to the
    caller's tensors), else a detached leaf."""
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs, create_graph: bool):
    if isinstance(inputs[0], Tensor):
        return inputs if create_graph else tuple(inp.detach() for inp in inputs)
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v, other, is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.shape != el_other.shape:
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{prepend}v has invalid size: should be {tuple(el_other.shape)} but got "
                f"{tuple(el_v.shape)}."
            )


_NOT_REQUIRING = {
    "hessian": (
        "The hessian of the user-provided function with respect to input {i} is independent of "
        "the input. This is not allowed in strict mode. You should ensure that your function is "
        "thrice differentiable and that the hessian depends on the inputs."
    ),
    "jacobian": (
        "While computing the hessian, found that the jacobian of the user-provided function "
        "with respect to input {i} is independent of the input. This is not allowed in strict "
        "mode. You should ensure that your function is twice differentiable and that the "
        "jacobian depends on the inputs (this would be violated by a linear function for "
        "example)."
    ),
    "grad_inputs": (
        "The gradient with respect to input {i} is independent of the inputs of the "
        "user-provided function. This is not allowed in strict mode."
    ),
    "outputs": (
        "Output {i} of the user-provided function does not require gradients. The outputs must "
        "be computed in a differentiable manner from the input when running in strict mode."
    ),
}


def _check_requires_grad(inputs, input_type: str, strict: bool) -> None:
    """strict mode: every value must depend on the inputs (PyTorch's messages per stage)."""
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode."
            )
        if not inp.requires_grad:
            raise RuntimeError(_NOT_REQUIRING[input_type].format(i=i))


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """`autograd.grad` over the outputs that require grad; `None` for unused inputs."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return engine.grad(
        tuple(o for o, _ in pairs),
        inputs,
        tuple(g for _, g in pairs),
        allow_unused=True,
        create_graph=create_graph,
        retain_graph=retain_graph,
    )


_UNUSED = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
    "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
    "grad_outputs when using the double backward trick to compute forward mode gradients. This "
    "is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
    "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
    "{i} in the grad_jacobian. This is not allowed in strict mode as it prevents from using the "
    "double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(grads, refs, strict: bool, create_graph: bool, stage: str) -> tuple:
    """Zeros for the inputs a gradient did not reach (an error in strict mode)."""
    res = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_UNUSED[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode when create_graph=True."
            )
        res.append(g)
    return tuple(res)


def _prepared_v(v, others, is_others_tuple, create_graph, fn_name: str, single_message: str):
    if v is None:
        if len(others) != 1 or others[0].nelement() != 1:
            raise RuntimeError(single_message)
        return None
    _, v = _as_tuple(v, "v", fn_name)
    v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
    _validate_v(v, others, is_others_tuple)
    return v


_V_FOR_INPUT = (
    "The vector v can only be None if the input to the user-provided function is a single "
    "Tensor with a single element."
)


# -- the products -----------------------------------------------------------------------------


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at `inputs`.

    Args:
      func: a function of tensors returning a tensor or a tuple of tensors.
      inputs: a tensor or a tuple of tensors.
      v: the vector (one tensor per output); may be None for a one-element output.
      create_graph: the results can be differentiated again.
      strict: raise where an output does not depend on an input (instead of zeros).
    Returns:
      (outputs, vjp), each a tensor or a tuple as `func`'s outputs and `inputs` were.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "vjp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        v = _prepared_v(
            v,
            outputs,
            is_outputs_tuple,
            create_graph,
            "vjp",
            "The vector v can only be None if the user-provided function returns a single "
            "Tensor with a single element.",
        )
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(
        result, is_inputs_tuple
    )


def _double_backward(grad_inputs, seeds, v, outputs, strict, create_graph, stage):
    """The second half of the double-backward trick: d<grad_inputs, v>/d seeds."""
    with set_grad_enabled(True) if create_graph else nullcontext():
        grads = _autograd_grad(grad_inputs, seeds, v, create_graph=create_graph)
        return _fill_in_zeros(grads, outputs, strict, create_graph, stage)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by the double-backward trick.

    Returns (outputs, jvp), each a tensor or a tuple as `func`'s outputs were.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        v = _prepared_v(v, inputs, is_inputs_tuple, create_graph, "jvp", _V_FOR_INPUT)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jvp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        # the vjp is linear in its cotangent, so the seeds' values never reach the result
        seeds = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, seeds, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    result = _double_backward(grad_inputs, seeds, v, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(
        result, is_outputs_tuple
    )


# -- jacobians --------------------------------------------------------------------------------


def jacobian(
    func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"
):
    """The Jacobian of `func` at `inputs`: `J[i][j]` of shape `outputs[i].shape +
    inputs[j].shape`, nested tuples where `func`'s outputs or `inputs` were tuples.

    `strategy="forward-mode"` (which PyTorch allows only with `vectorize=True`) builds the
    Jacobian a column at a time from jvps; "reverse-mode" a row at a time from vjps.
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "torch.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`create_graph=False` or `strategy="reverse-mode"`.'
            )
        return _jacobian_forward(func, inputs, strict, vectorize, keep_graph=None)
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jacobian"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize and strict:
            raise RuntimeError(
                "torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                "not supported together. Please either set `strict=False` or `vectorize=False`."
            )
        jac = tuple(
            _jacobian_rows(i, out, inputs, strict, create_graph) for i, out in enumerate(outputs)
        )
        jac = _grad_postprocess(jac, create_graph)
        return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _jacobian_rows(i, out, inputs, strict, create_graph) -> tuple:
    """The Jacobian of output `i`: one backward pass per element of it."""
    rows = tuple([] for _ in inputs)
    flat = out.reshape(-1)
    for j in range(out.nelement()):
        vj = _autograd_grad((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
        for k, (acc, g, inp) in enumerate(zip(rows, vj, inputs)):
            if g is None:
                if strict:
                    raise RuntimeError(
                        f"Output {i} of the user-provided function is independent of input {k}. "
                        "This is not allowed in strict mode."
                    )
                g = zeros_like(inp)
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(
                    f"The jacobian of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode when create_graph=True."
                )
            acc.append(g)
    return tuple(
        _stacked(acc, inp).view(tuple(out.shape) + tuple(inp.shape))
        for acc, inp in zip(rows, inputs)
    )


def _stacked(rows, like):
    return stack(rows, 0) if rows else zeros_like(like).reshape(0, *like.shape)


def _jacobian_forward(func, inputs, strict, vectorize, keep_graph):
    """The Jacobian a column at a time: one jvp per element of each input.

    PyTorch's forward-mode results keep their graph when an input requires grad (the dual
    tensors record), and always in a forward-mode hessian (whose inner inputs require grad):
    `keep_graph` None means the former, True the latter."""
    if strict:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and "
            '`strategy="forward-mode"` are not supported together (yet). Please either set '
            '`strict=False` or `strategy="reverse-mode"`.'
        )
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError(
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly "
            "implemented for `vectorize=True`."
        )
    if keep_graph is None:
        keep_graph = any(inp.requires_grad for inp in inputs)
    columns = [[] for _ in inputs]  # per input: one tuple of output tangents per element
    is_outputs_tuple, outputs = None, None
    for k, inp in enumerate(inputs):
        for e in range(inp.nelement()):
            v = tuple(_basis(x, e if m == k else None) for m, x in enumerate(inputs))
            outs, jv = jvp(func, inputs, v, create_graph=keep_graph)
            is_outputs_tuple = isinstance(outs, tuple)
            outputs = outs if is_outputs_tuple else (outs,)
            columns[k].append(jv if is_outputs_tuple else (jv,))
    # lists, not tuples, as PyTorch's forward-mode jacobian returns
    jac = [
        [
            _stacked([c[i] for c in columns[k]], out.reshape(-1)[:0])
            .reshape(inp.nelement(), out.nelement())
            .T.reshape(tuple(out.shape) + tuple(inp.shape))
            for k, inp in enumerate(inputs)
        ]
        for i, out in enumerate(outputs)
    ]
    return _tuple_postprocess(jac, (is_outputs_tuple, is_inputs_tuple))


def _basis(x, e):
    """The tangent of `x` that is 1 at flat position `e` (zeros when `e` is None)."""
    v = np.zeros(x.nelement(), x.dtype)
    if e is not None:
        v[e] = 1
    return Tensor(v.reshape(x.shape))


def hessian(
    func,
    inputs,
    create_graph=False,
    strict=False,
    vectorize=False,
    outer_jacobian_strategy="reverse-mode",
):
    """The Hessian of a scalar `func` at `inputs`: `H[i][j]` of shape `inputs[i].shape +
    inputs[j].shape` (nested tuples when `inputs` is a tuple)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should contain a single "
                "element"
            )
        return out.squeeze()

    def jac_func(*inp):
        if outer_jacobian_strategy == "forward-mode":
            inp = tuple(t.requires_grad_(True) for t in inp)  # so the inner views keep them
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    if outer_jacobian_strategy == "forward-mode":
        if create_graph:  # jacobian's own message
            jacobian(jac_func, inputs, create_graph=True, strategy="forward-mode")
        res = _jacobian_forward(jac_func, inputs, strict, vectorize, keep_graph=True)
    else:
        res = jacobian(jac_func, inputs, create_graph, strict, vectorize, "reverse-mode")
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_function_gradient(func, inputs, v, create_graph, strict, fn_name):
    """The common start of vhp and hvp: (is_inputs_tuple, inputs, v, is_outputs_tuple,
    outputs, jac) where `jac` is the gradient recorded for a second differentiation."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
    v = _prepared_v(v, inputs, is_inputs_tuple, create_graph, fn_name, _V_FOR_INPUT)
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict=strict)
    if is_outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn_name} should contain a single "
            "element"
        )
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict=strict)
    return is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a scalar `func`: a vjp of its gradient."""
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _scalar_function_gradient(
            func, inputs, v, create_graph, strict, "vhp"
        )
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grads = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(
        result, is_inputs_tuple
    )


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a scalar `func`, by the double-backward trick (as PyTorch; the
    Hessian is symmetric, so this equals vhp up to rounding)."""
    with enable_grad():
        is_inputs_tuple, inputs, v, is_outputs_tuple, outputs, jac = _scalar_function_gradient(
            func, inputs, v, create_graph, strict, "hvp"
        )
        seeds = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, seeds, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    result = _double_backward(
        double_back, seeds, v, inputs, strict, create_graph, "double_back_trick"
    )
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return _tuple_postprocess(outputs, is_outputs_tuple), _tuple_postprocess(
        result, is_inputs_tuple
    )
