"""Devices for a CPU-only shim: `torch.device`, the default device, and the `cuda` and
`accelerator` namespaces of a PyTorch build without CUDA.

Programs written for GPUs ask before they move data (`torch.cuda.is_available()`,
`torch.accelerator.current_accelerator()`), so these answer as PyTorch's CPU build does, and
moving a tensor to another device fails with that build's error. `check_device` is the one
place that decides whether a `device=` argument names the CPU; it imports nothing from the
shim, so the tensor class and every factory can use it.
"""

from __future__ import annotations

__all__ = [
    "accelerator",
    "cuda",
    "device",
    "get_default_device",
    "set_default_device",
]

# PyTorch's device types, in the order its parser lists them
_TYPES = (
    "cpu cuda ipu xpu mkldnn opengl opencl ideep hip ve fpga maia xla lazy vulkan mps meta hpu "
    "mtia privateuseone"
).split()
_NO_ACCELERATOR = "Cannot access accelerator device when none is available."
NO_CUDA = "Torch not compiled with CUDA enabled"


class device:  # noqa: N801 - PyTorch's name
    """`torch.device(type, index=None)`, or from a string `"cuda:1"`: a value (compared and
    hashed by type and index), usable as `with torch.device("cpu"):` to set the default."""

    __slots__ = ("_type", "_index", "_previous")

    def __init__(self, type, index=None):  # noqa: A002 - PyTorch's argument name
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, int) and not isinstance(type, bool):
            raise RuntimeError(_NO_ACCELERATOR)  # a bare index means the current accelerator
        elif not isinstance(type, str):
            raise TypeError(
                f"device() received an invalid combination of arguments - got "
                f"({type.__class__.__name__})"
            )
        else:
            type, parsed = _parse(type)
            if parsed is not None:
                if index is not None:
                    raise RuntimeError(
                        "type (string) must not include an index because index was passed "
                        "explicitly: " + f"{type}:{parsed}"
                    )
                index = parsed
        if index is not None:
            if not isinstance(index, int) or isinstance(index, bool):
                raise TypeError(
                    f"device(): argument 'index' (position 2) must be int, not "
                    f"{index.__class__.__name__}"
                )
            if index < 0:
                raise RuntimeError("Device index must not be negative")
        self._type, self._index, self._previous = type, index, None

    @property
    def type(self) -> str:
        return self._type

    @property
    def index(self) -> int | None:
        return self._index

    def __repr__(self) -> str:
        if self._index is None:
            return f"device(type={self._type!r})"
        return f"device(type={self._type!r}, index={self._index})"

    def __str__(self) -> str:
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __eq__(self, other) -> bool:
        # PyTorch compares devices only with devices: `device("cpu") == "cpu"` is False
        if not isinstance(other, device):
            return False
        return (self._type, self._index) == (other._type, other._index)

    def __hash__(self) -> int:
        return hash((self._type, self._index))

    def __reduce__(self):
        return (device, (self._type, self._index))

    def __enter__(self) -> device:
        self._previous = _default[0]
        set_default_device(self)
        return self

    def __exit__(self, *exc) -> None:
        _default[0] = self._previous


def _parse(text: str) -> tuple[str, int | None]:
    """PyTorch's device-string grammar: `type` or `type:index`, with its messages."""
    type_, sep, index = text.partition(":")
    if type_ not in _TYPES:
        raise RuntimeError(
            f"Expected one of {', '.join(_TYPES)} device type at start of device string: {text}"
        )
    if not sep:
        return type_, None
    if not index.isdigit() or (len(index) > 1 and index[0] == "0"):
        raise RuntimeError(f"Invalid device string: '{text}'")
    return type_, int(index)


def check_device(where) -> device:
    """The CPU device `where` names (None: the default device), or PyTorch's CPU-only build's
    error for any other: an AssertionError for CUDA and XPU (raised by their lazy
    initialisation in PyTorch), a RuntimeError for backends PyTorch was not linked with."""
    if where is None:
        where = _default[0]
    if isinstance(where, str) and where == "cpu":
        return _CPU
    d = where if isinstance(where, device) else device(where)
    if d.type == "cpu":
        return d
    if d.type in ("cuda", "xpu"):
        raise AssertionError(f"Torch not compiled with {d.type.upper()} enabled")
    raise RuntimeError(f"PyTorch is not linked with support for {d.type} devices")


_Device = device  # for the functions whose argument is named `device`, as PyTorch's
_CPU = device("cpu")
_default = [_CPU]  # the default device, a one-element cell (set_default_device rebinds it)


def get_default_device() -> device:
    """The device factories use without `device=`: always `device(type='cpu')` here."""
    return device(_default[0])


def set_default_device(device) -> None:  # noqa: A002 - PyTorch's argument name
    """Sets the default device. As in PyTorch, a device this build lacks is accepted here and
    refused by the first factory that uses it; None restores the CPU."""
    _default[0] = _CPU if device is None else _Device(device)


class _Cuda:
    """`torch.cuda` of PyTorch's CPU build: the questions answer "no GPU", the seeding calls
    are no-ops (so CPU-only runs of GPU scripts seed as usual), and anything that needs a GPU
    raises `Torch not compiled with CUDA enabled` (an AssertionError, as PyTorch's)."""

    @staticmethod
    def is_available() -> bool:
        return False

    @staticmethod
    def device_count() -> int:
        return 0

    @staticmethod
    def is_initialized() -> bool:
        return False

    @staticmethod
    def manual_seed(seed) -> None:
        return None

    manual_seed_all = manual_seed

    @staticmethod
    def seed() -> None:
        return None

    seed_all = seed

    @staticmethod
    def empty_cache() -> None:
        return None

    @staticmethod
    def memory_allocated(device=None) -> int:  # noqa: A002, ARG004 - PyTorch's signature
        return 0

    @staticmethod
    def _unavailable(*args, **kwargs):
        raise AssertionError(NO_CUDA)

    current_device = synchronize = get_device_name = get_device_properties = _unavailable
    set_device = get_device_capability = _unavailable

    def __repr__(self) -> str:
        return "<tracegrad.torch.cuda: PyTorch's CPU build (no CUDA)>"


class _Accelerator:
    """`torch.accelerator` with none present: `current_accelerator()` is None and anything
    that needs the device raises PyTorch's `Cannot access accelerator device ...`."""

    @staticmethod
    def is_available() -> bool:
        return False

    @staticmethod
    def device_count() -> int:
        return 0

    @staticmethod
    def current_accelerator(check_available: bool = False) -> None:  # noqa: ARG004
        return None

    @staticmethod
    def _unavailable(*args, **kwargs):
        raise RuntimeError(_NO_ACCELERATOR)

    current_device_index = current_device_idx = set_device_index = _unavailable
    set_device_idx = synchronize = current_stream = _unavailable

    def __repr__(self) -> str:
        return "<tracegrad.torch.accelerator: none available>"


cuda = _Cuda()
accelerator = _Accelerator()
