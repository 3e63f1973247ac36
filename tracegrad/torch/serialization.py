"""`torch.save` and `torch.load` without pickled code: a file holds data, never instructions.

`save` writes a zip archive (entries stored, not compressed) with two kinds of entry:

- `tracegrad/manifest.json`: `{"format": "tracegrad.torch.save", "version": 1, "object": tree,
  "tensors": [...], "storages": [...]}`. The tree is JSON with one-key objects as tags: `None`,
  booleans, ints, strings and lists are themselves; `{"float": "nan"}` (and `inf`, `-inf`) for
  non-finite floats, `{"tuple": [...]}`, `{"dict": [[k, v], ...]}`, `{"OrderedDict": [...]}`,
  `{"complex": [re, im]}`, `{"dtype": "float32"}` and `{"tensor": i}`, an index into `tensors`
  (`{"storage": j, "requires_grad": b, "parameter": b, "conj": b}`), so a tensor saved twice loads
  as one object. Storage `j` (`{"dtype", "shape", "strides"}`, strides in elements) is one tensor
  cell, so a tensor and its `detach()`ed alias load sharing storage and version counter again.
- `tracegrad/data/<j>`: the cell's array in its own memory order (a transposed tensor stays
  transposed), little-endian.

`load` reads that format and PyTorch's own (`torch.save` since 1.6: a zip with `<name>/data.pkl`
and `<name>/data/<key>` storages). PyTorch's pickle is read by `_TorchUnpickler`, whose only
globals are the dozen that torch's weights-only format names (tensor rebuild functions, storage
types, dtypes, `OrderedDict`, `torch.Size`, ...) mapped to functions of this module: torch is never
imported, and any other global raises `UnpicklingError` naming it. Tensor views are checked
against their storage's bounds before any array is made. CPU only, so `map_location` may name the
CPU (or map devices to it); `weights_only=False` is accepted and changes nothing.
"""

from __future__ import annotations

import io
import json
import math
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np

from tracegrad.torch.nn.module import Parameter
from tracegrad.torch.tensor import Tensor, _Cell

__all__ = ["load", "save"]

_FORMAT = "tracegrad.torch.save"
_MANIFEST = "tracegrad/manifest.json"
# The first bytes of a pickle written by torch.save(..., _use_new_zipfile_serialization=False):
# protocol 2, then the magic number 0x1950a86a20f9469cfc6c as a LONG1
_LEGACY_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"


# -- save -----------------------------------------------------------------------------------------
def save(obj, f) -> None:
    """Write `obj` (tensors, and dicts, lists, tuples of them, numbers, strings, `None`) to `f`,
    a path or a writable binary file, in the format of the module docstring."""
    writer = _Writer()
    tree = writer.encode(obj, set())
    manifest = {
        "format": _FORMAT,
        "version": 1,
        "object": tree,
        "tensors": writer.tensors,
        "storages": writer.storages,
    }
    text = json.dumps(manifest, allow_nan=False)
    with _opened(f, "wb") as stream, zipfile.ZipFile(stream, "w", zipfile.ZIP_STORED) as z:
        z.writestr(_MANIFEST, text)
        for j, data in enumerate(writer.data):
            z.writestr(f"tracegrad/data/{j}", data)


class _Writer:
    """Encodes the object tree, collecting each tensor (by identity) and each cell once."""

    def __init__(self):
        self.tensors: list[dict] = []
        self.storages: list[dict] = []
        self.data: list[bytes] = []
        self._tensor_index: dict[int, int] = {}
        self._cell_index: dict[int, int] = {}
        self._keep: list = []  # keeps the ids above from being reused while saving

    def encode(self, obj, active: set[int]):
        if obj is None or isinstance(obj, bool | str):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            return float(obj) if math.isfinite(obj) else {"float": repr(float(obj))}
        if isinstance(obj, complex):
            return {"complex": [self.encode(obj.real, active), self.encode(obj.imag, active)]}
        if isinstance(obj, np.dtype):
            return {"dtype": obj.name}
        if isinstance(obj, Tensor):
            return {"tensor": self._tensor(obj)}
        if not isinstance(obj, list | tuple | dict):
            raise TypeError(
                f"tracegrad.torch.save cannot save an object of type {type(obj).__name__}: the "
                "format holds tensors, dtypes, numbers, strings, None, and dicts, lists and "
                "tuples of them"
            )
        if id(obj) in active:
            raise ValueError("tracegrad.torch.save: the object contains itself")
        active.add(id(obj))
        if isinstance(obj, dict):
            tag = "OrderedDict" if isinstance(obj, OrderedDict) else "dict"
            out = {tag: [[self.encode(k, active), self.encode(v, active)] for k, v in obj.items()]}
        elif isinstance(obj, tuple):
            out = {"tuple": [self.encode(x, active) for x in obj]}
        else:
            out = [self.encode(x, active) for x in obj]
        active.discard(id(obj))
        return out

    def _tensor(self, t: Tensor) -> int:
        if id(t) not in self._tensor_index:
            self._keep.append(t)
            self._tensor_index[id(t)] = len(self.tensors)
            self.tensors.append(
                {
                    "storage": self._storage(t._cell),
                    "requires_grad": t.requires_grad,
                    "parameter": isinstance(t, Parameter),
                    "conj": t._conj,
                }
            )
        return self._tensor_index[id(t)]

    def _storage(self, cell: _Cell) -> int:
        if id(cell) not in self._cell_index:
            self._keep.append(cell)
            self._cell_index[id(cell)] = len(self.storages)
            # order="K" keeps the memory order (a transpose stays a transpose) and drops gaps
            a = np.array(cell.value, order="K", copy=True)
            little = a.dtype.newbyteorder("<")
            strides = [s // a.itemsize for s in a.strides] if a.size else _dense_strides(a.shape)
            self.storages.append(
                {"dtype": a.dtype.name, "shape": list(a.shape), "strides": strides}
            )
            self.data.append(a.ravel(order="K").astype(little, copy=False).tobytes())
        return self._cell_index[id(cell)]


def _dense_strides(shape) -> list[int]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return strides[::-1]


# -- load -----------------------------------------------------------------------------------------
def load(f, map_location=None, *, weights_only: bool = True):
    """Read what `save` wrote, or a checkpoint written by `torch.save` (PyTorch's zip format).

    `f` is a path or a readable binary file. `map_location` may be `None`, `"cpu"` (or a device
    whose `str` is `"cpu"`), a dict mapping saved locations (`"cuda:0"`) to `"cpu"`, or a
    function `(storage, location)` called on each storage of a torch checkpoint (a 1-d NumPy
    array), returning the storage to use. Nothing in the file is ever run, whatever
    `weights_only` says.
    """
    with _opened(f, "rb") as stream:
        archive = _archive(stream, f)
        with archive:
            names = archive.namelist()
            if _MANIFEST in names:
                _check_location("cpu", map_location)
                return _read_tracegrad(archive)
            pickles = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
            if not pickles:
                raise RuntimeError(
                    f"{_name(f)} is a zip archive but neither a tracegrad.torch.save file "
                    f"(no {_MANIFEST}) nor a torch.save checkpoint (no <name>/data.pkl)"
                )
            return _read_torch(archive, pickles[0][: -len("data.pkl")], map_location)


class _opened:
    """`f` as a binary stream: a path is opened (and closed), a file object is used as it is."""

    def __init__(self, f, mode: str):
        self.f, self.mode, self.owned = f, mode, isinstance(f, str | bytes | os.PathLike)

    def __enter__(self):
        self.stream = open(self.f, self.mode) if self.owned else self.f  # noqa: SIM115
        return self.stream

    def __exit__(self, *exc) -> None:
        if self.owned:
            self.stream.close()


def _name(f) -> str:
    return repr(os.fspath(f)) if isinstance(f, str | bytes | os.PathLike) else "the file"


def _archive(stream, f) -> zipfile.ZipFile:
    if not (hasattr(stream, "seek") and stream.seekable()):
        stream = io.BytesIO(stream.read())  # zip's directory is at the end
    start = stream.tell()
    head = stream.read(len(_LEGACY_MAGIC))
    stream.seek(start)
    if not head:
        raise RuntimeError(f"{_name(f)} is empty: it is not a file written by torch.save")
    if head == _LEGACY_MAGIC:
        raise RuntimeError(
            f"{_name(f)} was written by torch.save(..., _use_new_zipfile_serialization=False), "
            "PyTorch's legacy format, which tracegrad.torch.load does not read; save it again "
            "with torch.save's default format"
        )
    try:
        return zipfile.ZipFile(stream)
    except zipfile.BadZipFile:
        raise RuntimeError(
            f"{_name(f)} is not a file written by tracegrad.torch.save or torch.save "
            "(not a zip archive)"
        ) from None


def _check_location(location: str, map_location) -> None:
    """Resolves a saved device to the target, which must be the CPU."""
    target = _target(location, map_location)
    if target == "cpu":
        return
    if location.startswith("cuda") and target == location:
        raise RuntimeError(
            "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
            "False. If you are running on a CPU-only machine, please use torch.load with "
            "map_location=torch.device('cpu') to map your storages to the CPU."
        )
    raise RuntimeError(f"tracegrad tensors live on the CPU; cannot load a tensor onto {target!r}")


def _target(location: str, map_location) -> str:
    if map_location is None or callable(map_location):
        return location
    if isinstance(map_location, dict):
        return str(map_location.get(location, location))
    return str(map_location)


# -- tracegrad's format ---------------------------------------------------------------------------
def _read_tracegrad(archive: zipfile.ZipFile):
    try:
        manifest = json.loads(archive.read(_MANIFEST))
        if manifest.get("format") != _FORMAT or manifest.get("version") != 1:
            raise ValueError("unknown format or version")
        cells = [_read_cell(archive, j, s) for j, s in enumerate(manifest["storages"])]
        tensors = [_make_tensor(cells, t) for t in manifest["tensors"]]
        return _decode(manifest["object"], tensors)
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise pickle.UnpicklingError(
            f"invalid tracegrad.torch.save file ({type(e).__name__}: {e})"
        ) from None


def _read_cell(archive: zipfile.ZipFile, j: int, spec: dict) -> _Cell:
    dtype = np.dtype(spec["dtype"])
    flat = np.frombuffer(archive.read(f"tracegrad/data/{j}"), dtype.newbyteorder("<"))
    if flat.dtype != dtype:
        flat = flat.astype(dtype)
    return _Cell(_strided(flat, 0, spec["shape"], spec["strides"]))


def _make_tensor(cells: list[_Cell], spec: dict) -> Tensor:
    t = Tensor.__new__(Tensor)
    t._init(cells[spec["storage"]], None, 0)
    t._conj = bool(spec["conj"])
    if spec["parameter"]:
        return Parameter(t, requires_grad=bool(spec["requires_grad"]))
    t._set_requires_grad(bool(spec["requires_grad"]), "")
    return t


def _decode(node, tensors: list[Tensor]):
    if node is None or isinstance(node, bool | int | float | str):
        return node
    if isinstance(node, list):
        return [_decode(x, tensors) for x in node]
    ((tag, value),) = node.items()
    if tag == "tensor":
        return tensors[value]
    if tag == "float":
        return float(value)
    if tag == "complex":
        return complex(*(_decode(x, tensors) for x in value))
    if tag == "dtype":
        return np.dtype(value)
    if tag == "tuple":
        return tuple(_decode(x, tensors) for x in value)
    if tag in ("dict", "OrderedDict"):
        kind = OrderedDict if tag == "OrderedDict" else dict
        return kind((_decode(k, tensors), _decode(v, tensors)) for k, v in value)
    raise ValueError(f"unknown tag {tag!r}")


def _strided(flat: np.ndarray, offset, shape, strides) -> np.ndarray:
    """A read-only view of `flat`, after checking that every element it reaches is inside."""
    shape, strides = tuple(shape), tuple(strides)
    numbers = (offset, *shape, *strides)
    if len(shape) != len(strides) or not all(type(n) is int and n >= 0 for n in numbers):
        raise pickle.UnpicklingError(
            f"invalid tensor view: offset {offset!r}, size {shape!r}, stride {strides!r}"
        )
    if 0 in shape:
        out = np.empty(shape, flat.dtype)
    else:
        last = offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))
        if last >= flat.size:
            raise pickle.UnpicklingError(
                f"invalid tensor view: size {shape!r}, stride {strides!r} and offset {offset} "
                f"reach element {last} of a storage of {flat.size} elements"
            )
        out = np.lib.stride_tricks.as_strided(
            flat[offset:], shape, [s * flat.itemsize for s in strides], writeable=False
        )
    out.flags.writeable = False
    return out


# -- PyTorch's format -----------------------------------------------------------------------------
class _Marker:
    """A torch class named by a pickle (`torch.Tensor`, a storage type): data, not callable."""

    def __init__(self, name: str, dtype=None):
        self.name, self.dtype = name, dtype

    def __repr__(self) -> str:
        return self.name


_STORAGES = {
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",  # read as float32, which holds every bfloat16 exactly
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
    "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
}
_DTYPES = (
    *("float16", "float32", "float64", "bfloat16", "complex64", "complex128", "bool"),
    *("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"),
)
_UNTYPED = _Marker("torch.storage.UntypedStorage", "uint8")
_TENSOR = _Marker("torch.Tensor")
_PARAMETER = _Marker("torch.nn.parameter.Parameter")


class _Storage:
    """A storage of a torch checkpoint: a flat array of its elements (bytes, in the file's byte
    order, for an untyped storage)."""

    def __init__(self, flat: np.ndarray, byteorder: str = "="):
        self.flat, self.byteorder = flat, byteorder


def _rebuild_tensor(storage, storage_offset, size, stride):
    if not isinstance(storage, _Storage):
        raise pickle.UnpicklingError(f"expected a storage, got {type(storage).__name__}")
    return Tensor._wrap(_strided(storage.flat, storage_offset, size, stride))


def _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks, metadata=None):
    t = _rebuild_tensor(storage, offset, size, stride)
    if metadata:  # the lazy conjugate and negative bits: torch saved the memory, not the values
        value = t._cell.value
        value = np.conj(value) if metadata.get("conj") else value
        t = Tensor._wrap(-value if metadata.get("neg") else value)
        t._conj = bool(metadata.get("conj"))
    t._set_requires_grad(bool(requires_grad), "")
    return t


def _rebuild_tensor_v3(storage, offset, size, stride, requires_grad, hooks, dtype, metadata=None):
    # torch's newer dtypes (uint16, ...) come as an untyped (byte) storage and the dtype
    bfloat16 = isinstance(dtype, _Marker) and dtype.dtype == "bfloat16"
    if not isinstance(storage, _Storage) or not (bfloat16 or isinstance(dtype, np.dtype)):
        raise pickle.UnpicklingError("invalid arguments to torch._utils._rebuild_tensor_v3")
    stored = np.dtype(np.uint16 if bfloat16 else dtype).newbyteorder(storage.byteorder)
    flat = storage.flat[: storage.flat.size // stored.itemsize * stored.itemsize].view(stored)
    flat = _bfloat16_to_float32(flat) if bfloat16 else flat.astype(stored.newbyteorder("="))
    return _rebuild_tensor_v2(_Storage(flat), offset, size, stride, requires_grad, hooks, metadata)


def _rebuild_parameter(data, requires_grad, hooks, state=None):
    if not isinstance(data, Tensor) or state:
        raise pickle.UnpicklingError("tracegrad reads Parameters without Python attributes only")
    return Parameter(data, requires_grad=bool(requires_grad))


def _rebuild_from_type_v2(func, new_type, args, state):
    if new_type not in (_TENSOR, _PARAMETER) or state:
        attributes = ", ".join(map(repr, state or ())) or "none"
        raise pickle.UnpicklingError(
            f"tracegrad reads plain tensors only, not {new_type!r} with attributes ({attributes})"
        )
    out = func(*args)
    return Parameter(out, out.requires_grad) if new_type is _PARAMETER else out


def _size(*args):
    return tuple(*args)


def _device(kind, index=None):
    return str(kind) if index is None else f"{kind}:{index}"


def _bytearray(data=b""):
    if not isinstance(data, bytes):  # not bytearray(n), which would allocate n bytes
        raise pickle.UnpicklingError("bytearray is read from bytes only")
    return bytearray(data)


def _encode(text, encoding="latin1"):
    # protocol 2 writes bytes as _codecs.encode(text, "latin1"); allow only that codec
    if encoding != "latin1" or not isinstance(text, str):
        raise pickle.UnpicklingError(f"_codecs.encode with {encoding!r} is not allowed")
    return text.encode("latin1")


_ALLOWED = {
    ("collections", "OrderedDict"): OrderedDict,
    ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
    ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
    ("torch", "Size"): _size,
    ("torch", "device"): _device,
    ("torch", "Tensor"): _TENSOR,
    ("torch.nn.parameter", "Parameter"): _PARAMETER,
    ("torch.storage", "UntypedStorage"): _UNTYPED,
    # protocol 2 names builtins by their Python 2 module, `__builtin__`
    **{(m, "complex"): complex for m in ("builtins", "__builtin__")},
    **{(m, "set"): set for m in ("builtins", "__builtin__")},
    **{(m, "bytearray"): _bytearray for m in ("builtins", "__builtin__")},
    ("_codecs", "encode"): _encode,
    **{("torch", n): _Marker(f"torch.{n}", d) for n, d in _STORAGES.items()},
    # torch's dtypes are data: the NumPy dtype where there is one, else a marker for v3 above
    **{
        ("torch", n): (_Marker(f"torch.{n}", n) if n == "bfloat16" else np.dtype(n))
        for n in _DTYPES
    },
}


def _load_build(self) -> None:
    # BUILD sets attributes: allowed only for the `_metadata` of a state dict's OrderedDict, so
    # a pickle cannot set the slots of a tensor it built
    state = self.stack.pop()
    inst = self.stack[-1]
    if type(inst) is not OrderedDict or not isinstance(state, dict):
        raise pickle.UnpicklingError(
            f"Can only build an OrderedDict's attributes, but got {type(inst).__name__}"
        )
    inst.__dict__.update(state)


class _TorchUnpickler(pickle._Unpickler):
    """Reads `data.pkl` of a torch checkpoint. `find_class` is every way a pickle names code
    (GLOBAL, STACK_GLOBAL, INST, OBJ, EXT); it is Python's own unpickler, not the C one, so that
    BUILD can be restricted too."""

    dispatch = {**pickle._Unpickler.dispatch, pickle.BUILD[0]: _load_build}

    def __init__(self, data: bytes, archive, prefix: str, map_location, byteorder: str):
        super().__init__(io.BytesIO(data))
        self.archive, self.prefix, self.map_location = archive, prefix, map_location
        self.byteorder = byteorder
        self.storages: dict[str, _Storage] = {}

    def find_class(self, module: str, name: str):
        allowed = _ALLOWED.get((module, name))
        if allowed is None:
            raise pickle.UnpicklingError(
                f"Unsupported global: GLOBAL {module}.{name} is not allowed: tracegrad.torch.load "
                "reads tensors, state dicts and containers of numbers and strings, and never runs "
                "code named by a file"
            )
        return allowed

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"Only persistent_load of storage is allowed, got {pid!r}")
        _, kind, key, location, numel = pid
        if not isinstance(kind, _Marker) or kind.dtype is None or kind in (_TENSOR, _PARAMETER):
            raise pickle.UnpicklingError(f"invalid storage type {kind!r}")
        if key not in self.storages:
            self.storages[key] = self._read_storage(kind, str(key), str(location), numel)
        return self.storages[key]

    def _read_storage(self, kind: _Marker, key: str, location: str, numel) -> _Storage:
        _check_location(location, self.map_location)
        raw = self.archive.read(f"{self.prefix}data/{key}")
        stored = np.dtype(np.uint16 if kind.dtype == "bfloat16" else kind.dtype)
        if kind is not _UNTYPED:
            stored = stored.newbyteorder("<" if self.byteorder == "little" else ">")
        if type(numel) is not int or numel * stored.itemsize > len(raw):
            raise pickle.UnpicklingError(f"storage {key} holds fewer than {numel!r} elements")
        flat = np.frombuffer(raw, stored, count=numel)
        if kind.dtype == "bfloat16":
            flat = _bfloat16_to_float32(flat)
        elif kind is not _UNTYPED:
            flat = flat.astype(flat.dtype.newbyteorder("="), copy=False)
        if callable(self.map_location):
            mapped = self.map_location(flat, location)
            flat = flat if mapped is None else np.asarray(mapped).reshape(-1)
        return _Storage(flat, "<" if self.byteorder == "little" else ">")


def _bfloat16_to_float32(bits: np.ndarray) -> np.ndarray:
    # a bfloat16 is the high half of a float32
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _read_torch(archive: zipfile.ZipFile, prefix: str, map_location):
    names = set(archive.namelist())
    byteorder = "little"
    if f"{prefix}byteorder" in names:
        byteorder = archive.read(f"{prefix}byteorder").decode("ascii", "replace").strip()
    if byteorder not in ("little", "big"):
        raise pickle.UnpicklingError(f"unknown byteorder {byteorder!r}")
    unpickler = _TorchUnpickler(
        archive.read(f"{prefix}data.pkl"), archive, prefix, map_location, byteorder
    )
    try:
        return unpickler.load()
    except pickle.UnpicklingError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, EOFError) as e:
        raise pickle.UnpicklingError(
            f"invalid torch.save checkpoint ({type(e).__name__}: {e})"
        ) from None
