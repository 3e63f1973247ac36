"""Module machinery against torch: forward and backward hooks (call order, return values,
`prepend`, `with_kwargs`, `always_call`, removal), dtype conversion, `zero_grad`, state dicts
with buffers and `load_state_dict` messages; the containers (`ModuleDict`, `ParameterList`,
`ParameterDict`); and `nn.utils` (gradient clipping, parameters as a vector)."""

from __future__ import annotations

import warnings
from collections import OrderedDict

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.torch_oracle import (
    normalize_torch_message,
    torch_one_thread,  # noqa: F401 - the `torch` fixture
)
from tracegrad.torch import nn
from tracegrad.torch.nn import containers as C
from tracegrad.torch.nn import normalization as N
from tracegrad.torch.nn.utils import clip_grad as CG
from tracegrad.torch.nn.utils import convert_parameters as CP


def _lib_nn(lib):
    """The names a scenario uses: torch's own, or ours (imported by module path until wired)."""
    if lib is tt:
        return {"nn": nn, "BatchNorm1d": N.BatchNorm1d, "ModuleDict": C.ModuleDict,
                "ParameterList": C.ParameterList, "ParameterDict": C.ParameterDict,
                "clip_grad_norm_": CG.clip_grad_norm_, "clip_grad_value_": CG.clip_grad_value_,
                "parameters_to_vector": CP.parameters_to_vector,
                "vector_to_parameters": CP.vector_to_parameters}  # fmt: skip
    u = lib.nn.utils
    return {"nn": lib.nn, "BatchNorm1d": lib.nn.BatchNorm1d, "ModuleDict": lib.nn.ModuleDict,
            "ParameterList": lib.nn.ParameterList, "ParameterDict": lib.nn.ParameterDict,
            "clip_grad_norm_": u.clip_grad_norm_, "clip_grad_value_": u.clip_grad_value_,
            "parameters_to_vector": u.parameters_to_vector,
            "vector_to_parameters": u.vector_to_parameters}  # fmt: skip


def _linear(lib, n_in=3, n_out=2):
    lin = lib.nn.Linear(n_in, n_out, dtype=lib.float64)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(np.linspace(-1, 1, n_in * n_out).reshape(n_out, n_in)))
        lin.bias.copy_(lib.tensor(np.linspace(0.5, -0.5, n_out)))
    return lin


def _x(lib, requires_grad=True):
    return lib.tensor(np.linspace(-1, 2, 6).reshape(2, 3), requires_grad=requires_grad)


def _sums(grads):
    return [None if g is None else round(float(g.sum()), 10) for g in grads]


def _both(torch, scenario):
    """`scenario(lib)` in both libraries; what it returns must agree (arrays within 1e-12)."""
    ours, theirs = scenario(tt), scenario(torch)
    _agree(ours, theirs)
    return ours


def _agree(ours, theirs):
    if isinstance(theirs, np.ndarray):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)
    elif isinstance(theirs, list | tuple):
        assert len(ours) == len(theirs), (ours, theirs)
        for a, b in zip(ours, theirs):
            _agree(a, b)
    else:
        assert ours == theirs


def _repr(module) -> str:
    """A module's repr, torch's type names written as ours (`torch.float32` -> `float32`)."""
    return "\n".join(normalize_torch_message(line) for line in repr(module).split("\n"))


def _same_error(ours, theirs) -> None:
    with pytest.raises(Exception) as theirs_info:
        theirs()
    with pytest.raises(type(theirs_info.value)) as ours_info:
        ours()
    expected = normalize_torch_message(str(theirs_info.value))
    assert str(ours_info.value).split("\n")[0] == expected


# -- forward hooks --------------------------------------------------------------------------------


def test_forward_hooks_order_and_return_values_match_torch(torch):
    def scenario(lib):
        log = []
        lin = _linear(lib)
        pre = lin.register_forward_pre_hook(lambda m, args: log.append(("pre", len(args))))
        lin.register_forward_pre_hook(lambda m, args: args[0] * 2)  # not a tuple: wrapped
        lin.register_forward_pre_hook(lambda m, args: log.append("first"), prepend=True)
        lin.register_forward_hook(lambda m, args, out: out + 1)
        lin.register_forward_hook(lambda m, args, out: log.append(("fwd", out.shape)))
        lin.register_forward_hook(lambda m, args, out: log.append("prepended"), prepend=True)
        x = _x(lib)
        y = lin(x)
        pre.remove()
        y2 = lin(x)
        return log, y.detach().numpy(), y2.detach().numpy()

    log, y, y2 = _both(torch, scenario)
    assert log[0] == "first" and "prepended" in log
    np.testing.assert_allclose(y, y2)


def test_forward_hooks_with_kwargs_match_torch(torch):
    def scenario(lib):
        log = []

        class Scale(lib.nn.Module):
            def forward(self, x, *, factor=1.0):
                return x * factor

        m = Scale()
        m.register_forward_pre_hook(
            lambda mod, args, kwargs: (args, {**kwargs, "factor": kwargs["factor"] + 1}),
            with_kwargs=True,
        )
        m.register_forward_hook(
            lambda mod, args, kwargs, out: log.append(sorted(kwargs.items())), with_kwargs=True
        )
        y = m(_x(lib), factor=2.0)
        return log, y.detach().numpy()

    _both(torch, scenario)
    bad = nn.Linear(3, 2)
    bad.register_forward_pre_hook(lambda m, a, k: 1, with_kwargs=True)
    t_bad = torch.nn.Linear(3, 2)
    t_bad.register_forward_pre_hook(lambda m, a, k: 1, with_kwargs=True)
    _same_error(lambda: bad(tt.zeros(1, 3)), lambda: t_bad(torch.zeros(1, 3)))


def test_always_call_forward_hook_runs_when_forward_raises(torch):
    def scenario(lib):
        log = []
        lin = lib.nn.Linear(3, 2)
        lin.register_forward_hook(lambda m, a, o: log.append("plain"))
        lin.register_forward_hook(lambda m, a, o: log.append(("always", o)), always_call=True)
        try:
            lin(lib.zeros(2, 4))
        except RuntimeError:
            log.append("raised")
        lin(lib.zeros(2, 3))
        return [e if isinstance(e, str) else (e[0], e[1] is None) for e in log]

    assert _both(torch, scenario) == [("always", True), "raised", "plain", ("always", False)]


# -- backward hooks -------------------------------------------------------------------------------


def test_full_backward_hooks_see_and_replace_gradients_as_torch(torch):
    def scenario(lib):
        log = []
        lin = _linear(lib)

        def pre(m, grad_output):
            log.append(("pre", _sums(grad_output)))
            return (grad_output[0] * 3,)

        def hook(m, grad_input, grad_output):
            log.append(("hook", _sums(grad_input), _sums(grad_output)))
            return (grad_input[0] * 10,)

        lin.register_full_backward_pre_hook(pre)
        handle = lin.register_full_backward_hook(hook)
        lin.register_full_backward_hook(lambda m, gi, go: log.append("prepended"), prepend=True)
        x = _x(lib)
        y = lin(x)
        (y * y).sum().backward()
        grads = [x.grad.numpy().copy(), lin.weight.grad.numpy().copy()]
        handle.remove()
        x.grad = None
        lin(x).sum().backward()
        return log, grads, x.grad.numpy()

    log, _, _ = _both(torch, scenario)
    assert [e[0] for e in log] == ["pre", "p", "hook", "pre", "p"]


def test_backward_hook_with_several_inputs_and_outputs(torch):
    def scenario(lib):
        log = []

        class Pair(lib.nn.Module):
            def forward(self, a, scale, b):
                return a * b * scale, (a - b).exp()

        m = Pair()
        m.register_full_backward_hook(
            lambda mod, gi, go: log.append((_sums(gi), _sums(go))) or (gi[0], None, gi[2] * 2)
        )
        a = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([0.5, -1.0], dtype=lib.float64)  # needs no gradient
        u, v = m(a, 3.0, b)
        (u.sum() + 2 * v.sum()).backward()
        return log, a.grad.numpy()

    _both(torch, scenario)


def test_backward_hook_when_no_input_requires_grad(torch):
    def scenario(lib):
        log = []
        lin = _linear(lib)
        lin.register_full_backward_hook(lambda m, gi, go: log.append((gi, _sums(go))))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lin(_x(lib, requires_grad=False)).sum().backward()
        return log, [str(w.message)[:60] for w in caught], lin.weight.grad.numpy()

    _both(torch, scenario)
    lin = _linear(tt)
    lin.register_full_backward_hook(lambda m, gi, go: (tt.ones(2, 3),))
    t_lin = _linear(torch)
    t_lin.register_full_backward_hook(lambda m, gi, go: (torch.ones(2, 3),))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same_error(
            lambda: lin(_x(tt, False)).sum().backward(),
            lambda: t_lin(_x(torch, False)).sum().backward(),
        )


def test_backward_hook_returning_the_wrong_count_raises_as_torch(torch):
    lin, t_lin = _linear(tt), _linear(torch)
    lin.register_full_backward_hook(lambda m, gi, go: (None, None))
    t_lin.register_full_backward_hook(lambda m, gi, go: (None, None))
    _same_error(lambda: lin(_x(tt)).sum().backward(), lambda: t_lin(_x(torch)).sum().backward())
    lin, t_lin = _linear(tt), _linear(torch)
    lin.register_full_backward_pre_hook(lambda m, go: (None, None))
    t_lin.register_full_backward_pre_hook(lambda m, go: (None, None))
    _same_error(lambda: lin(_x(tt)).sum().backward(), lambda: t_lin(_x(torch)).sum().backward())


def test_hooks_of_nested_modules_fire_inner_first_in_backward(torch):
    def scenario(lib):
        log = []
        net = lib.nn.Sequential(_linear(lib, 3, 4), lib.nn.Tanh(), _linear(lib, 4, 2))
        for name, m in net.named_modules():
            m.register_forward_hook(lambda mod, a, o, name=name: log.append(("fwd", name)))
            m.register_full_backward_hook(lambda mod, gi, go, name=name: log.append(("bwd", name)))
        net(_x(lib)).sum().backward()
        return log

    log = _both(torch, scenario)
    assert log[-1] == ("bwd", "")


# -- conversion, gradients, walking ---------------------------------------------------------------


def test_dtype_conversions_match_torch(torch):
    def scenario(lib):
        names = _lib_nn(lib)
        net = lib.nn.Sequential(lib.nn.Linear(3, 2), names["BatchNorm1d"](2))
        kinds = []
        for convert in ("double", "float", "half", "double"):
            getattr(net, convert)()
            kinds.append([str(t.dtype).removeprefix("torch.") for t in net.state_dict().values()])
        net.to(lib.float32)
        kinds.append([str(t.dtype).removeprefix("torch.") for t in net.state_dict().values()])
        net.to(dtype=lib.float64, non_blocking=True)
        kinds.append(str(net[0].weight.dtype).removeprefix("torch."))
        return kinds

    kinds = _both(torch, scenario)
    assert kinds[0][-1] == "int64"  # num_batches_tracked stays an integer
    _same_error(lambda: nn.Linear(2, 2).to(tt.int64), lambda: torch.nn.Linear(2, 2).to(torch.int64))
    with pytest.raises(TypeError, match="bfloat16 is not supported by tracegrad"):
        nn.Linear(2, 2).bfloat16()


def test_conversion_keeps_the_parameter_objects():
    lin = nn.Linear(3, 2)
    weight = lin.weight
    lin.double()
    assert lin.weight is weight and weight.dtype == np.float64 and weight.requires_grad


def test_zero_grad_and_requires_grad_match_torch(torch):
    def scenario(lib):
        lin = _linear(lib)
        lin(_x(lib)).sum().backward()
        lin.zero_grad(set_to_none=False)
        zeroed = [p.grad.numpy().copy() for p in lin.parameters()]
        lin.zero_grad()
        cleared = [p.grad is None for p in lin.parameters()]
        lin.requires_grad_(False)
        frozen = [p.requires_grad for p in lin.parameters()]
        return zeroed, cleared, frozen

    assert _both(torch, scenario)[1:] == ([True, True], [False, False])


def test_named_modules_apply_and_lookups_match_torch(torch):
    def scenario(lib):
        shared = lib.nn.Linear(2, 2)
        net = lib.nn.Sequential(shared, lib.nn.ReLU(), lib.nn.Sequential(shared, lib.nn.Tanh()))
        order = []
        net.apply(lambda m: order.append(type(m).__name__))
        return (
            [n for n, _ in net.named_modules()],
            [n for n, _ in net.named_modules(remove_duplicate=False)],
            [n for n, _ in net.named_modules(prefix="top")],
            order,
            net.get_parameter("2.0.weight") is shared.weight,
        )

    _both(torch, scenario)
    net, t_net = nn.Sequential(nn.Linear(2, 2)), torch.nn.Sequential(torch.nn.Linear(2, 2))
    for target in ("0.nope", "0.training"):
        _same_error(lambda t=target: net.get_parameter(t), lambda t=target: t_net.get_parameter(t))
    net[0].register_buffer("b", tt.zeros(1))
    t_net[0].register_buffer("b", torch.zeros(1))
    assert net.get_buffer("0.b") is net[0].b
    _same_error(lambda: net.get_buffer("0.weight"), lambda: t_net.get_buffer("0.weight"))


# -- state dicts ----------------------------------------------------------------------------------


def _stateful(lib):
    names = _lib_nn(lib)

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 2)
            self.bn = names["BatchNorm1d"](2)
            self.register_buffer("kept", lib.ones(2))
            self.register_buffer("scratch", lib.zeros(2), persistent=False)

        def forward(self, x):
            return self.bn(self.lin(x))

    return Net()


def test_state_dict_keys_buffers_and_load_errors_match_torch(torch):
    ours, theirs = _stateful(tt), _stateful(torch)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert "scratch" not in ours.state_dict() and "bn.num_batches_tracked" in ours.state_dict()

    def load(sd_edit, strict=True):
        def run(lib, module):
            sd = OrderedDict(module.state_dict())
            sd_edit(lib, sd)
            return module.load_state_dict(sd, strict=strict)

        return (lambda: run(tt, ours)), (lambda: run(torch, theirs))

    edits = [
        lambda lib, sd: sd.pop("bn.running_var"),
        lambda lib, sd: sd.update({"extra": lib.zeros(1), "lin.extra": lib.zeros(1)}),
        lambda lib, sd: sd.update({"lin.weight": lib.zeros(3, 3)}),
        lambda lib, sd: (sd.pop("kept"), sd.update({"bn.bad": lib.zeros(1)})),
        lambda lib, sd: sd.update({"lin.bias": 3}),
    ]
    for edit in edits:
        _same_error(*load(edit))
    ours_result, theirs_result = (f() for f in load(edits[1], strict=False))
    assert repr(ours_result) == repr(theirs_result)
    ours_result, theirs_result = (f() for f in load(lambda lib, sd: None))
    assert str(ours_result) == str(theirs_result) == "<All keys matched successfully>"


def test_load_state_dict_copies_values_in_place():
    net = _stateful(tt)
    weight = net.lin.weight
    sd = {k: v.detach() * 0 + 2 for k, v in net.state_dict().items()}
    sd["bn.num_batches_tracked"] = tt.tensor(5)
    net.load_state_dict(sd)
    assert net.lin.weight is weight and (weight.detach().numpy() == 2).all()
    assert int(net.bn.num_batches_tracked) == 5


# -- containers -----------------------------------------------------------------------------------


def test_module_dict_matches_torch(torch):
    def scenario(lib):
        md = _lib_nn(lib)["ModuleDict"]({"lin": lib.nn.Linear(2, 3), "act": lib.nn.ReLU()})
        md["out"] = lib.nn.Linear(3, 1)
        md.update([("act", lib.nn.Tanh()), ("extra", lib.nn.Identity())])
        popped = type(md.pop("extra")).__name__
        return (_repr(md), list(md.keys()), [n for n, _ in md.named_parameters()],
                "lin" in md, len(md), popped, list(md))  # fmt: skip

    _both(torch, scenario)
    md, t_md = C.ModuleDict(), torch.nn.ModuleDict()
    _same_error(lambda: md.update(3), lambda: t_md.update(3))
    _same_error(lambda: md.update([(1,)]), lambda: t_md.update([(1,)]))
    _same_error(lambda: md["zz"], lambda: t_md["zz"])
    _same_error(lambda: md(1), lambda: t_md(1))
    _same_error(
        lambda: C.ModuleDict({"a.b": nn.ReLU()}),
        lambda: torch.nn.ModuleDict({"a.b": torch.nn.ReLU()}),
    )
    _same_error(lambda: C.ModuleDict({"a": 3}), lambda: torch.nn.ModuleDict({"a": 3}))


def test_parameter_list_and_dict_match_torch(torch):
    def scenario(lib):
        names = _lib_nn(lib)
        pl = names["ParameterList"](
            [lib.nn.Parameter(lib.ones(3, 2)), lib.zeros(2, dtype=lib.float64), "x"]
        )
        pl.append(lib.ones(1))
        pl += [lib.ones(2, 2)]
        pd = names["ParameterDict"](
            {"b": lib.nn.Parameter(lib.ones(3, 2)), "a": lib.zeros(2, dtype=lib.float64), "c": 3}
        )
        pd["d"] = lib.ones(1)
        pd.setdefault("e", lib.ones(4))
        popped = pd.pop("c")
        merged = pd | names["ParameterDict"](OrderedDict(z=lib.ones(1)))
        return (
            _repr(pl), _repr(pd), len(pl), len(pd), popped,
            [n for n, _ in pl.named_parameters()], [n for n, _ in pd.named_parameters()],
            list(pl.state_dict()), list(pd.state_dict()), list(merged.keys()),
            [type(p).__name__ for p in pl], list(pl[1:3].state_dict()), "a" in pd,
            pd.get("nope", 7), list(pd.fromkeys(["p", "q"]).keys()),
        )  # fmt: skip

    _both(torch, scenario)
    pl, t_pl = C.ParameterList(), torch.nn.ParameterList()
    pd, t_pd = C.ParameterDict(), torch.nn.ParameterDict()
    _same_error(lambda: pl(1), lambda: t_pl(1))
    _same_error(lambda: pd(1), lambda: t_pd(1))
    _same_error(lambda: pl[5], lambda: t_pl[5])
    _same_error(lambda: pd[1], lambda: t_pd[1])
    _same_error(lambda: pl.extend(tt.zeros(2)), lambda: t_pl.extend(torch.zeros(2)))
    _same_error(lambda: pd.update(3), lambda: t_pd.update(3))


def test_parameter_containers_train_with_an_optimizer():
    pl = C.ParameterList([tt.ones(2, dtype=tt.float64)])
    pd = C.ParameterDict({"w": tt.ones(2, dtype=tt.float64)})
    opt = tt.optim.SGD([*pl.parameters(), *pd.parameters()], lr=0.5)
    (pl[0] * pd["w"] * 2).sum().backward()
    opt.step()
    np.testing.assert_allclose(pl[0].detach().numpy(), [0.0, 0.0])
    np.testing.assert_allclose(pd["w"].detach().numpy(), [0.0, 0.0])


# -- nn.utils -------------------------------------------------------------------------------------


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, float("inf")])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_clip_grad_norm_matches_torch(torch, norm_type, dtype):
    def scenario(lib):
        params = [
            lib.tensor(np.linspace(-2, 3, 6).reshape(2, 3).astype(dtype), requires_grad=True),
            lib.tensor(np.array([0.5, -4.0], dtype), requires_grad=True),
            lib.tensor(np.array([1.0], dtype), requires_grad=True),  # no grad: skipped
        ]
        (params[0] ** 3).sum().backward(retain_graph=True)
        (params[1] * 7).sum().backward()
        clip = _lib_nn(lib)["clip_grad_norm_"]
        total = clip(params, max_norm=1.5, norm_type=norm_type)
        again = clip((p for p in params), 100.0, norm_type)  # under max_norm: unchanged
        return [
            total.numpy(), again.numpy(), str(total.dtype).removeprefix("torch."),
            params[0].grad.numpy(), params[1].grad.numpy(), params[2].grad is None,
        ]  # fmt: skip

    rtol = 1e-12 if dtype == "float64" else 1e-6
    ours, theirs = scenario(tt), scenario(torch)
    for a, b in zip(ours, theirs):
        if isinstance(b, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=rtol)
        else:
            assert a == b


def test_clip_grad_norm_edge_cases_match_torch(torch):
    p, t_p = tt.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True)
    total = CG.clip_grad_norm_(p, 1.0)  # a single tensor without grad: norm 0
    assert float(total) == float(torch.nn.utils.clip_grad_norm_(t_p, 1.0)) == 0.0
    p.grad, t_p.grad = tt.tensor([float("nan"), 1.0]), torch.tensor([float("nan"), 1.0])
    _same_error(
        lambda: CG.clip_grad_norm_(p, 1.0, error_if_nonfinite=True),
        lambda: torch.nn.utils.clip_grad_norm_(t_p, 1.0, error_if_nonfinite=True),
    )
    with pytest.warns(UserWarning, match="`parameters` is an empty generator"):
        CG.clip_grad_norm_((q for q in []), 1.0)


def test_clip_grad_value_matches_torch(torch):
    def scenario(lib):
        params = [lib.tensor(np.linspace(-2, 3, 6), requires_grad=True) for _ in range(2)]
        (params[0] ** 3).sum().backward()
        (params[1] * 0.1).sum().backward()
        out = _lib_nn(lib)["clip_grad_value_"](params, 1.25)
        return out, [p.grad.numpy() for p in params]

    _both(torch, scenario)


def test_parameters_to_vector_and_back_match_torch(torch):
    def scenario(lib):
        names = _lib_nn(lib)
        lin = _linear(lib)
        vec = names["parameters_to_vector"](lin.parameters())
        (vec * lib.arange(8, dtype=lib.float64)).sum().backward()  # differentiable
        grads = [p.grad.numpy() for p in lin.parameters()]
        names["vector_to_parameters"](lib.arange(8, dtype=lib.float64) * 0.5, lin.parameters())
        return vec.detach().numpy(), grads, [p.detach().numpy() for p in lin.parameters()]

    _both(torch, scenario)
    _same_error(
        lambda: CP.vector_to_parameters([1.0], []),
        lambda: torch.nn.utils.vector_to_parameters([1.0], []),
    )
