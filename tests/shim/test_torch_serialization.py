"""`torch.save` / `torch.load`: round trips of tracegrad's format, PyTorch's checkpoints read
without running their pickle's code, and the errors for files that are neither."""

from __future__ import annotations

import io
import math
import os
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import tracegrad.torch as tt
from tracegrad.torch import serialization
from tracegrad.torch.serialization import load, save


def _round_trip(obj, **load_args):
    buffer = io.BytesIO()
    save(obj, buffer)
    buffer.seek(0)
    return load(buffer, **load_args)


def _same(a, b) -> None:
    assert type(a) is type(b)
    assert a.dtype == b.dtype and a.shape == b.shape and a.requires_grad == b.requires_grad
    np.testing.assert_array_equal(a.numpy(force=True), b.numpy(force=True))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "complex128", "uint8"])
def test_round_trip_keeps_values_and_dtype(dtype):
    x = tt.tensor((np.arange(12).reshape(3, 4) % 3).astype(dtype))
    _same(_round_trip(x), x)
    scalar = tt.tensor(np.array(7, dtype=dtype))
    out = _round_trip(scalar)
    _same(out, scalar)
    assert out.shape == ()
    empty = tt.zeros((0, 3), dtype=np.dtype(dtype))
    _same(_round_trip(empty), empty)


def test_round_trip_to_a_path(tmp_path):
    x = tt.randn(2, 3, dtype=tt.float64)
    path = tmp_path / "x.pt"
    save({"x": x}, path)
    _same(load(path)["x"], x)
    save([x], str(path))
    _same(load(str(path), map_location="cpu")[0], x)


def test_non_contiguous_tensors_keep_their_layout():
    x = tt.tensor(np.arange(24.0).reshape(4, 6))
    transposed, strided = x.T, x[:, ::2]
    out_t, out_s = _round_trip((transposed, strided))
    _same(out_t, transposed)
    _same(out_s, strided)
    assert out_t.numpy().strides == transposed.numpy().strides  # still a transpose
    assert out_s.numpy().flags.c_contiguous  # the gaps of a slice are not saved


def test_requires_grad_is_kept_as_torch_keeps_it():
    torch = pytest.importorskip("torch")
    x = tt.tensor([1.0, 2.0], requires_grad=True)
    out = _round_trip({"leaf": x, "non_leaf": x * 2, "plain": x.detach()})
    t = torch.tensor([1.0, 2.0], requires_grad=True)
    buffer = io.BytesIO()
    torch.save({"leaf": t, "non_leaf": t * 2, "plain": t.detach()}, buffer)
    buffer.seek(0)
    expected = torch.load(buffer)
    for key, value in out.items():
        assert value.requires_grad == expected[key].requires_grad
        assert value.is_leaf and expected[key].is_leaf
    out["non_leaf"].sum().backward()  # a loaded tensor is a leaf of a new graph
    np.testing.assert_array_equal(out["non_leaf"].grad.numpy(), [1.0, 1.0])


def test_parameters_load_as_parameters():
    p = tt.nn.Parameter(tt.ones(3))
    frozen = tt.nn.Parameter(tt.zeros(2), requires_grad=False)
    out_p, out_frozen = _round_trip([p, frozen])
    assert isinstance(out_p, tt.nn.Parameter) and out_p.requires_grad
    assert isinstance(out_frozen, tt.nn.Parameter) and not out_frozen.requires_grad


def test_nested_containers_round_trip():
    x = tt.ones(2)
    obj = {
        "state": OrderedDict([("w", x), ("b", tt.zeros(1))]),
        "list": [1, -(2**70), 2.5, math.inf, -math.inf, "s", None, True, False, 1 - 2j],
        "tuple": (x, (tt.float64, tt.int64)),
        3: "int key",
        (1, "a"): "tuple key",
        "empty": ({}, [], ()),
    }
    out = _round_trip(obj)
    assert type(out) is dict and type(out["state"]) is OrderedDict
    assert list(out["state"]) == ["w", "b"]
    assert out["list"] == obj["list"] and type(out["list"][7]) is bool
    assert type(out["list"][0]) is int and type(out["list"][2]) is float
    assert out["tuple"][1] == (np.dtype("float64"), np.dtype("int64"))
    assert out[3] == "int key" and out[(1, "a")] == "tuple key"
    assert out["empty"] == ({}, [], ())
    assert math.isnan(_round_trip([math.nan])[0])
    # one tensor saved twice is one tensor after loading, as with pickle's memo
    assert out["state"]["w"] is out["tuple"][0]


def test_aliases_share_storage_after_loading():
    x = tt.tensor([1.0, 2.0])
    alias, other = _round_trip([x, x.detach()])
    alias.add_(1)
    np.testing.assert_array_equal(other.numpy(), [2.0, 3.0])
    assert other._version == 1


def test_save_refuses_what_the_format_cannot_hold():
    with pytest.raises(TypeError, match="cannot save an object of type ndarray"):
        save({"a": np.ones(2)}, io.BytesIO())
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        save(loop, io.BytesIO())


def test_tracegrad_state_dict_loads_into_a_module():
    tt.manual_seed(0)
    model = tt.nn.Sequential(tt.nn.Linear(3, 4), tt.nn.ReLU(), tt.nn.LayerNorm(4))
    state = _round_trip(model.state_dict())
    other = tt.nn.Sequential(tt.nn.Linear(3, 4), tt.nn.ReLU(), tt.nn.LayerNorm(4))
    other.load_state_dict(state)
    x = tt.randn(5, 3)
    np.testing.assert_array_equal(other(x).detach().numpy(), model(x).detach().numpy())


# -- PyTorch's checkpoints ------------------------------------------------------------------------
def _torch_saved(obj) -> io.BytesIO:
    torch = pytest.importorskip("torch")
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return buffer


def _check_like_torch(ours, theirs) -> None:
    expected = theirs.detach().to(theirs.dtype).numpy()
    assert ours.dtype == expected.dtype and ours.shape == tuple(theirs.shape)
    assert ours.requires_grad == theirs.requires_grad
    np.testing.assert_array_equal(ours.numpy(force=True), expected)


def test_a_state_dict_saved_by_torch_loads(tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    model.double()
    model(torch.randn(8, 3, dtype=torch.float64))  # running statistics and the int64 counter
    torch.save(model.state_dict(), tmp_path / "model.pt")
    state = load(tmp_path / "model.pt")
    assert type(state) is OrderedDict and list(state) == list(model.state_dict())
    for key, value in model.state_dict().items():
        _check_like_torch(state[key], value)
    assert state["1.num_batches_tracked"].dtype == np.int64


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_torch_state_dict_loads_into_a_tracegrad_module(dtype):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    layers = (torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.LayerNorm(4))
    model = torch.nn.Sequential(*layers).to(getattr(torch, dtype))
    ours = tt.nn.Sequential(tt.nn.Linear(3, 4), tt.nn.Tanh(), tt.nn.LayerNorm(4)).to(
        getattr(tt, dtype)
    )
    ours.load_state_dict(load(_torch_saved(model.state_dict())))
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(dtype)
    expected = model(torch.from_numpy(x)).detach().numpy()
    tol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(ours(tt.tensor(x)).detach().numpy(), expected, rtol=tol, atol=tol)


def test_torch_tensors_of_each_dtype_and_layout_load():
    torch = pytest.importorskip("torch")
    base = torch.arange(12).reshape(3, 4)
    dtypes = (torch.float16, torch.float32, torch.float64, torch.int8, torch.uint8, torch.int32)
    dtypes += (torch.int64, torch.bool, torch.complex64, torch.complex128, torch.uint16)
    tensors = [base.to(d) for d in dtypes]
    views = [base.t(), base[:, 1::2], base[1], base[0, 0], base[:1].expand(3, 4)]
    out_tensors, out_views = load(_torch_saved((tensors, views)))
    for ours, theirs in zip(out_tensors + out_views, tensors + views, strict=True):
        _check_like_torch(ours, theirs)
    assert out_views[0].numpy().strides == tuple(s * 8 for s in base.t().stride())


def test_torch_conjugate_and_negative_views_load_as_their_values():
    torch = pytest.importorskip("torch")
    z = torch.tensor([1 + 2j, 3 - 1j])
    conj, neg = load(_torch_saved((z.conj(), torch._neg_view(z))))
    assert conj.is_conj()
    np.testing.assert_array_equal(conj.resolve_conj().numpy(), [1 - 2j, 3 + 1j])
    np.testing.assert_array_equal(neg.numpy(), [-1 - 2j, -3 + 1j])


def test_torch_bfloat16_loads_as_float32():
    torch = pytest.importorskip("torch")
    x = torch.tensor([1.5, -2.25, 3e38], dtype=torch.bfloat16)
    out = load(_torch_saved(x))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), x.float().numpy())


def test_torch_parameters_flags_and_other_values_load():
    torch = pytest.importorskip("torch")
    x = torch.randn(2, 3, requires_grad=True)
    obj = {
        "param": torch.nn.Parameter(torch.ones(2)),
        "frozen": torch.nn.Parameter(torch.ones(2), requires_grad=False),
        "leaf": x,
        "non_leaf": x * 2,
        "tied": [x, x],
        "size": torch.Size([2, 3]),
        "dtype": torch.float64,
        "device": torch.device("cpu"),
        "numbers": (1, 2.5, 1 + 2j, "s", None, True, b"raw", {1, 2}),
    }
    out = load(_torch_saved(obj))
    assert isinstance(out["param"], tt.nn.Parameter) and out["param"].requires_grad
    assert isinstance(out["frozen"], tt.nn.Parameter) and not out["frozen"].requires_grad
    _check_like_torch(out["leaf"], x)
    _check_like_torch(out["non_leaf"], x * 2)
    assert out["tied"][0] is out["tied"][1]
    assert out["size"] == (2, 3) and out["dtype"] == np.float64 and out["device"] == "cpu"
    assert out["numbers"] == obj["numbers"]


def _with_pickle(checkpoint: io.BytesIO, data: bytes) -> io.BytesIO:
    """The checkpoint with its `data.pkl` replaced."""
    out = io.BytesIO()
    with zipfile.ZipFile(checkpoint) as z, zipfile.ZipFile(out, "w") as w:
        for name in z.namelist():
            w.writestr(name, data if name.endswith("/data.pkl") else z.read(name))
    out.seek(0)
    return out


class _Evil:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def test_a_malicious_pickle_is_refused_naming_its_global(tmp_path):
    target = tmp_path / "pwned"
    evil = pickle.dumps({"w": _Evil(str(target))}, protocol=2)
    with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL posix\.mkdir is not allowed"):
        load(_with_pickle(_torch_saved({"w": None}), evil))
    assert not target.exists()
    for protocol in (0, 4, 5):  # GLOBAL, STACK_GLOBAL: both go through find_class
        evil = pickle.dumps(_Evil(str(target)), protocol=protocol)
        with pytest.raises(pickle.UnpicklingError, match="posix.mkdir"):
            load(_with_pickle(_torch_saved(None), evil))
    assert not target.exists()


class _Built:
    def __reduce__(self):
        return (set, ([1],), {"attribute": 1})  # BUILD: attributes set on a built object


def test_attributes_are_set_only_on_an_ordered_dict():
    with pytest.raises(pickle.UnpicklingError, match="Can only build an OrderedDict's attrib"):
        load(_with_pickle(_torch_saved(None), pickle.dumps(_Built(), protocol=2)))


def test_a_view_outside_its_storage_is_refused():
    checkpoint = _torch_saved(pytest.importorskip("torch").ones(4))
    with zipfile.ZipFile(checkpoint) as z:
        data = z.read("archive/data.pkl")
    checkpoint.seek(0)
    # storage offset 0 -> 200: the view would read past the 4 elements of its storage
    forged = data.replace(b"QK\x00K\x04\x85", b"QK\xc8K\x04\x85")
    assert forged != data
    with pytest.raises(pickle.UnpicklingError, match="invalid tensor view"):
        load(_with_pickle(checkpoint, forged))


def test_map_location():
    torch = pytest.importorskip("torch")
    checkpoint = _torch_saved(torch.ones(2)).getvalue()
    for location in ("cpu", {"cpu": "cpu"}, lambda storage, location: storage):
        out = load(io.BytesIO(checkpoint), map_location=location)
        np.testing.assert_array_equal(out.numpy(), [1.0, 1.0])
    with pytest.raises(RuntimeError, match="tracegrad tensors live on the CPU"):
        load(io.BytesIO(checkpoint), map_location="cuda")
    # a checkpoint of a CUDA tensor, as a CUDA machine writes it
    cuda = _with_pickle(io.BytesIO(checkpoint), _cuda_pickle(checkpoint))
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        load(io.BytesIO(cuda.getvalue()))
    out = load(io.BytesIO(cuda.getvalue()), map_location={"cuda:0": "cpu"})
    np.testing.assert_array_equal(out.numpy(), [1.0, 1.0])


def _cuda_pickle(checkpoint: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(checkpoint)) as z:
        data = z.read("archive/data.pkl")
    return data.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")


# -- errors -----------------------------------------------------------------------------------
def test_a_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="No such file or directory"):
        load(tmp_path / "missing.pt")


def test_a_file_that_is_no_checkpoint_raises_a_clear_error(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    with pytest.raises(RuntimeError, match="is not a file written by tracegrad.torch.save or"):
        load(path)
    path.write_bytes(b"")
    with pytest.raises(RuntimeError, match="is empty"):
        load(path)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("a.txt", "x")
    with pytest.raises(RuntimeError, match="neither a tracegrad.torch.save file"):
        load(path)
    raw_pickle = io.BytesIO(pickle.dumps(_Evil(str(tmp_path / "pwned"))))
    with pytest.raises(RuntimeError, match="not a zip archive"):
        load(raw_pickle)  # a bare pickle is never unpickled
    assert not (tmp_path / "pwned").exists()


def test_torch_legacy_format_is_named():
    torch = pytest.importorskip("torch")
    buffer = io.BytesIO()
    torch.save(torch.ones(2), buffer, _use_new_zipfile_serialization=False)
    buffer.seek(0)
    with pytest.raises(RuntimeError, match="_use_new_zipfile_serialization=False"):
        load(buffer)


def test_a_damaged_manifest_is_an_unpickling_error():
    buffer = io.BytesIO()
    save({"x": tt.ones(2)}, buffer)
    with zipfile.ZipFile(buffer) as z:
        data = z.read("tracegrad/data/0")
    damaged = io.BytesIO()
    with zipfile.ZipFile(damaged, "w") as z:
        z.writestr("tracegrad/manifest.json", '{"format": "tracegrad.torch.save"}')
        z.writestr("tracegrad/data/0", data)
    damaged.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="invalid tracegrad.torch.save file"):
        load(damaged)


def test_torch_save_and_load_are_wired():
    assert tt.save is serialization.save and tt.load is serialization.load
    _same(tt.load(_round_trip_buffer(tt.ones(2))), tt.ones(2))


def _round_trip_buffer(obj) -> io.BytesIO:
    buffer = io.BytesIO()
    tt.save(obj, buffer)
    buffer.seek(0)
    return buffer
