"""`Module` and `Parameter`: PyTorch's containers of trainable tensors, over tracegrad tensors.

A module registers the `Parameter`s, buffers and sub-modules assigned to its attributes (in
`__setattr__`, as PyTorch does), so `parameters()`, `named_parameters()` (dotted names),
`state_dict()` and `load_state_dict()` walk the tree; calling a module runs its hooks
(`module_hooks`). Messages are PyTorch's, with tensor type names written as NumPy dtype names.
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Mapping

import numpy as np

from tracegrad.torch.dtypes import get_default_dtype
from tracegrad.torch.grad_mode import no_grad
from tracegrad.torch.hooks import RemovableHandle
from tracegrad.torch.nn.module_hooks import call_with_hooks
from tracegrad.torch.tensor import Tensor, _Cell, _readonly


class Parameter(Tensor):
    """A leaf tensor that a `Module` registers as trainable (`requires_grad=True` by default).

    `Parameter(t)` shares `t`'s storage (and version counter), as PyTorch's does; a NumPy
    array or nested list is copied (its dtype kept; Python floats take the default dtype).
    """

    __slots__ = ()

    def __init__(self, data=None, requires_grad: bool = True):
        if data is None:
            cell = _Cell(_readonly(np.empty((0,), get_default_dtype())))
        elif isinstance(data, Tensor):
            cell = data._cell
        else:
            cell = Tensor(data)._cell
        self._init(cell, None, 0)
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


def typename(value) -> str:
    """`torch.typename` with NumPy dtype names for tensors (`float32` for `torch.FloatTensor`)."""
    if isinstance(value, Tensor):
        return value.dtype.name
    kind = type(value)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


def _addindent(text: str, spaces: int) -> str:
    first, *rest = text.split("\n")
    if not rest:
        return text
    return "\n".join([first] + [(" " * spaces + line) if line else line for line in rest])


class Module:
    """Base class of layers and models: override `forward`; call the module to run it."""

    training: bool
    _version = 1  # of the state_dict layout; a layer that changes it bumps it (BatchNorm: 2)

    def __init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", {})
        set_(self, "_buffers", {})
        set_(self, "_non_persistent_buffers_set", set())
        set_(self, "_modules", {})
        # hooks, in call order: entries are tuples (a handle removes its own entry)
        set_(self, "_forward_pre_hooks", [])  # (hook, with_kwargs)
        set_(self, "_forward_hooks", [])  # (hook, with_kwargs, always_call)
        set_(self, "_backward_pre_hooks", [])  # (hook,)
        set_(self, "_backward_hooks", [])  # (hook,)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if (
            d.get("_forward_pre_hooks")
            or d.get("_forward_hooks")
            or d.get("_backward_hooks")
            or d.get("_backward_pre_hooks")
        ):
            return call_with_hooks(self, args, kwargs)
        return self.forward(*args, **kwargs)

    # -- hooks ----------------------------------------------------------------------------------
    @staticmethod
    def _add_hook(hooks: list, entry: tuple, prepend: bool) -> RemovableHandle:
        hooks.insert(0 if prepend else len(hooks), entry)
        return RemovableHandle(hooks, entry)

    def register_forward_pre_hook(
        self, hook, *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """`hook(module, args)` (or `hook(module, args, kwargs)` `with_kwargs`) runs before
        `forward`; what it returns (not None) replaces the arguments (a non-tuple becomes a
        1-tuple; `with_kwargs`, an `(args, kwargs)` pair)."""
        return self._add_hook(self._forward_pre_hooks, (hook, with_kwargs), prepend)

    def register_forward_hook(
        self, hook, *, prepend: bool = False, with_kwargs: bool = False, always_call: bool = False
    ) -> RemovableHandle:
        """`hook(module, args, output)` (or `(module, args, kwargs, output)`) runs after
        `forward`; a returned value replaces the output. `always_call`: also when `forward`
        raised."""
        return self._add_hook(self._forward_hooks, (hook, with_kwargs, always_call), prepend)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """`hook(module, grad_output)` runs when the outputs' gradients are known; a returned
        tuple replaces them."""
        return self._add_hook(self._backward_pre_hooks, (hook,), prepend)

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """`hook(module, grad_input, grad_output)` runs when the gradients of the module's
        tensor inputs are known; a returned tuple replaces `grad_input`."""
        return self._add_hook(self._backward_hooks, (hook,), prepend)

    def register_backward_hook(self, hook):
        raise NotImplementedError(
            "register_backward_hook (deprecated in PyTorch) is not supported by tracegrad; use "
            "register_full_backward_hook"
        )

    # -- registration -------------------------------------------------------------------------
    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__

        def remove_from(*places) -> None:
            for place in places:
                if name in place:
                    if isinstance(place, dict):
                        del place[name]
                    else:
                        place.discard(name)

        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            remove_from(d, self._buffers, self._modules, self._non_persistent_buffers_set)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{typename(value)}' as parameter '{name}' "
                    "(torch.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
        else:
            modules = d.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                remove_from(d, self._parameters, self._buffers, self._non_persistent_buffers_set)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(
                        f"cannot assign '{typename(value)}' as child module '{name}' "
                        "(torch.nn.Module or None expected)"
                    )
                modules[name] = value
            else:
                buffers = d.get("_buffers")
                if buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(
                            f"cannot assign '{typename(value)}' as buffer '{name}' "
                            "(torch.nn.Buffer, torch.Tensor or None expected)"
                        )
                    buffers[name] = value
                else:
                    object.__setattr__(self, name, value)

    def __getattr__(self, name: str):
        d = self.__dict__
        for place in ("_parameters", "_buffers", "_modules"):
            entries = d.get(place)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for place in (self._parameters, self._buffers, self._modules):
            if name in place:
                del place[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def _check_name(self, what: str, name, entries) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{what} name should be a string. Got {typename(name)}")
        if "." in name:
            raise KeyError(f'{what} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{what} name can\'t be empty string ""')
        if hasattr(self, name) and name not in entries:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name("parameter", name, self._parameters)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{typename(param)}' object to parameter '{name}' "
                "(torch.nn.Parameter or None required)"
            )
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                f"created explicitly. To express '{name}' as a function of another Tensor, "
                "compute the value in the forward() method."
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name("buffer", name, self._buffers)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                "(torch Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{typename(module)} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {typename(name)}")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = module

    register_module = add_module

    # -- walking the tree ---------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        if memo is None:
            memo = set()
        if self in memo:
            return
        if remove_duplicate:
            memo.add(self)
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            sub = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and module not in seen:
                seen.add(module)
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def _named_members(self, place: str, prefix: str, recurse: bool, remove_duplicate: bool):
        seen = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for module_prefix, module in modules:
            for name, value in getattr(module, place).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate=True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate=True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        param = getattr(module, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(module, name)

    def get_submodule(self, target: str) -> Module:
        module = self
        for item in target.split(".") if target else ():
            if item not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
            module = module._modules[item]
        return module

    # -- modes and gradients --------------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                g = p.grad
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                g.zero_()

    def apply(self, fn) -> Module:
        """Calls `fn` on every sub-module (children first), then on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- dtype conversion -------------------------------------------------------------------------
    def _apply(self, fn) -> Module:
        """Converts every parameter, its grad and every buffer with `fn`, keeping the objects
        (a parameter held by an optimizer stays that optimizer's), as PyTorch does."""
        for module in self.children():
            module._apply(fn)
        for p in self._parameters.values():
            if p is None:
                continue
            with no_grad():
                new = fn(p)
                if new is not p:
                    p.data = new
                if p._grad is not None and fn(p._grad) is not p._grad:
                    p._grad.data = fn(p._grad)
        for name, buf in self._buffers.items():
            if buf is not None:
                self._buffers[name] = fn(buf)
        return self

    def to(self, *args, **kwargs) -> Module:
        """`to(dtype)`: floating-point parameters and buffers take `dtype` (device 'cpu' only;
        `non_blocking` and `memory_format` are accepted and mean nothing here)."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, str) or a is None:
                device = a
            else:
                dtype = a
        if device is not None and str(device) != "cpu":
            raise RuntimeError(
                f"tracegrad tensors live on the CPU; device={device!r} is not available"
            )
        if dtype is None:
            return self
        dtype = np.dtype(dtype)
        if dtype.kind not in "fc":
            raise TypeError(
                "nn.Module.to only accepts floating point or complex dtypes, but got desired "
                f"dtype={dtype.name}"
            )
        return self._apply(lambda t: t.to(dtype) if t.dtype.kind in "fc" else t)

    def double(self) -> Module:
        return self._apply(lambda t: t.double() if t.dtype.kind == "f" else t)

    def float(self) -> Module:  # noqa: A003 - PyTorch's name
        return self._apply(lambda t: t.float() if t.dtype.kind == "f" else t)

    def half(self) -> Module:
        return self._apply(lambda t: t.half() if t.dtype.kind == "f" else t)

    def bfloat16(self) -> Module:
        """Refused: NumPy, under tracegrad's tensors, has no bfloat16."""
        raise TypeError(
            "bfloat16 is not supported by tracegrad (NumPy has no bfloat16 dtype); use half() "
            "or float()"
        )

    def share_memory(self) -> Module:
        return self

    def cpu(self) -> Module:
        return self

    # -- state ----------------------------------------------------------------------------------
    def state_dict(self, *, destination=None, prefix: str = "", keep_vars: bool = False):
        """Parameters and persistent buffers under dotted names, as detached tensors that share
        the module's storage (`keep_vars=True` gives the parameters themselves)."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        metadata = getattr(destination, "_metadata", None)
        if metadata is not None:  # the layout's version, per module (PyTorch's `_metadata`)
            metadata[prefix[:-1]] = {"version": self._version}
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars
                )
        return destination

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copies values (tensors or NumPy arrays) into the parameters and buffers in place.

        Returns `(missing_keys, unexpected_keys)`; with `strict` a mismatch raises PyTorch's
        `Error(s) in loading state_dict for ...` listing every problem.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list[str] = []
        unexpected: list[str] = []
        errors: list[str] = []
        metadata = getattr(state_dict, "_metadata", None)
        self._load(dict(state_dict), "", missing, unexpected, errors, assign, metadata)
        if strict:
            if unexpected:
                keys = ", ".join(f'"{k}"' for k in unexpected)
                errors.insert(0, f"Unexpected key(s) in state_dict: {keys}. ")
            if missing:
                keys = ", ".join(f'"{k}"' for k in missing)
                errors.insert(0, f"Missing key(s) in state_dict: {keys}. ")
        if errors:
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                + "\n\t".join(errors)
            )
        return _IncompatibleKeys(missing, unexpected)

    def _load(self, state_dict, prefix, missing, unexpected, errors, assign, metadata=None):
        """Loads this module's entries of `state_dict` (keys under `prefix`), then its
        children's; `metadata` is the checkpoint's `_metadata` (layout versions), if any."""
        local = {
            name: v
            for name, v in [*self._parameters.items(), *self._buffers.items()]
            if v is not None and name not in self._non_persistent_buffers_set
        }
        for name, target in local.items():
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor | np.ndarray | np.generic):
                errors.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or '
                    f"Tensor-like object from checkpoint but received {type(value)}"
                )
                continue
            shape = tuple(np.shape(value))
            if target.ndim == 0 and shape == (1,):
                value, shape = value[0], ()
            if shape != target.shape:
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {shape} from "
                    f"checkpoint, the shape in current model is {target.shape}."
                )
                continue
            self._load_one(name, target, value, assign)
        for key in state_dict:
            if key.startswith(prefix):
                head = key[len(prefix) :].split(".", 1)
                known = self._modules if len(head) > 1 else local
                if head[0] not in known:
                    unexpected.append(key)
        for name, module in self._modules.items():
            if module is not None:
                sub = prefix + name + "."
                child = {k: v for k, v in state_dict.items() if k.startswith(sub)}
                module._load(child, sub, missing, unexpected, errors, assign, metadata)

    def _load_one(self, name: str, target: Tensor, value, assign: bool) -> None:
        if not isinstance(value, Tensor):
            value = Tensor(value)  # a copy: the caller's array stays the caller's
        if assign:
            if isinstance(target, Parameter):
                value = Parameter(value.detach(), requires_grad=target.requires_grad)
                self.register_parameter(name, value)
            else:
                self._buffers[name] = value
            return
        with no_grad():
            target.copy_(value.detach())

    # -- printing -------------------------------------------------------------------------------
    def extra_repr(self) -> str:
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = self.extra_repr().split("\n") if self.extra_repr() else []
        for name, module in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(module), 2))
        body = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                body += lines[0]
            else:
                body += "\n  " + "\n  ".join(lines) + "\n"
        return body + ")"

    def __dir__(self):
        keys = list(super().__dir__())
        keys += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(set(keys))
