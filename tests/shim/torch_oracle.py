"""PyTorch as the oracle of the shim's tests: run one scenario in both libraries, compare.

A scenario is a function of the library module (`torch` or `tracegrad.torch`), written once with the
names both share (`lib.tensor`, `lib.autograd.grad`, `lib.no_grad`, `lib.float64`, methods).
`run_both` runs it in tracegrad and, where torch is installed, in torch, and compares what it
returns (tensors by value, dtype and `requires_grad`), the errors it caught with `attempt`
(type and first line of the message) and the warnings it raised (category and first line).
PyTorch's messages are first normalized (`normalize_torch_message`), as SHIM_SEMANTICS.md says.
Where torch is missing, a test using `run_both` checks only what it asserts on the result
itself, and one that asserts nothing is skipped rather than passed.
"""

from __future__ import annotations

import re
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np
import pytest

import tracegrad.torch

try:  # torch is optional: without it the scenarios run in tracegrad only
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    torch = None

_TENSOR_TYPES = {
    "Half": "float16",
    "Float": "float32",
    "Double": "float64",
    "BFloat16": "bfloat16",
    "Byte": "uint8",
    "Char": "int8",
    "Short": "int16",
    "Int": "int32",
    "Long": "int64",
    "Bool": "bool",
    "ComplexFloat": "complex64",
    "ComplexDouble": "complex128",
}


#: dtypes as PyTorch writes them in messages (`torch.complex64`), NumPy's names without `torch.`
_DTYPE_NAMES = sorted(set(_TENSOR_TYPES.values()) - {"bfloat16"}, key=len, reverse=True)


def normalize_torch_message(msg: str, *, scalar_names: bool = False) -> str:
    """The first line of a PyTorch message in tracegrad's terms.

    `torch.Size([2, 3])` becomes `(2, 3)` (`torch.Size([3])` -> `(3,)`, `torch.Size([])` -> `()`)
    and tensor type and dtype names become NumPy dtype names (`torch.FloatTensor` ->
    `float32`, `torch.complex64` -> `complex64`, `CPUComplexDoubleType` -> `complex128`); the
    C++ provenance suffix of warnings (` (Triggered internally at ...)`) goes. With
    `scalar_names`, bare scalar type names too (`expected scalar type Float` -> `float32`).
    """
    line = str(msg).split("\n", 1)[0]
    line = re.sub(r" \(Triggered internally at [^)]*\)$", "", line)

    def size(m: re.Match) -> str:
        dims = [d.strip() for d in m.group(1).split(",") if d.strip()]
        return repr(tuple(int(d) for d in dims))

    line = re.sub(r"torch\.Size\(\[([^\]]*)\]\)", size, line)
    line = re.sub(
        r"torch\.(\w+?)Tensor\b",
        lambda m: _TENSOR_TYPES.get(m.group(1), m.group(0)),
        line,
    )
    line = re.sub(r"\btorch\.(" + "|".join(_DTYPE_NAMES) + r")\b", r"\1", line)
    line = re.sub(  # c10's names of CPU tensor types (`CPUComplexDoubleType`)
        r"\bCPU(\w+?)Type\b", lambda m: _TENSOR_TYPES.get(m.group(1), m.group(0)), line
    )
    if scalar_names:
        names = "|".join(_TENSOR_TYPES)
        line = re.sub(r"\b(" + names + r")\b", lambda m: _TENSOR_TYPES[m.group(1)], line)
    return line


def caught(fn) -> tuple[str, str]:
    """(type name, first line) of what `fn()` raises; fails if it does not raise."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the exception is the result
        return type(e).__name__, str(e).split("\n", 1)[0]
    raise AssertionError("expected an exception")


def assert_same_error(ours, theirs, *, scalar_names: bool = False) -> None:
    """`ours()` and `theirs()` raise the same type with the same (normalized) first line."""
    kind, msg = caught(ours)
    t_kind, t_msg = caught(theirs)
    assert (kind, msg) == (t_kind, normalize_torch_message(t_msg, scalar_names=scalar_names))


@pytest.fixture(scope="module", name="torch")
def torch_one_thread():
    """The torch module, skipping the test where it is not installed; one thread meanwhile."""
    module = pytest.importorskip("torch")
    threads = module.get_num_threads()
    module.set_num_threads(1)
    yield module
    module.set_num_threads(threads)


def first_line(msg) -> str:
    return str(msg).split("\n", 1)[0]


@dataclass(frozen=True)
class Raised:
    """An exception a scenario caught: its type's name and its message's first line."""

    type: str
    message: str


def attempt(fn, *args, **kwargs):
    """`fn(*args, **kwargs)`, or a `Raised` describing the exception it raised."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - every exception is a result to compare
        return Raised(type(e).__name__, first_line(e))


def fn_tree(grad_fn, depth: int = 2):
    """`grad_fn` as `(name, ((next, index), ...))` down to `depth` levels (names below)."""
    if grad_fn is None:
        return None
    if depth == 0:
        return grad_fn.name()
    nexts = tuple((fn_tree(f, depth - 1), i) for f, i in grad_fn.next_functions)
    return (grad_fn.name(), nexts)


@dataclass(frozen=True)
class TensorValue:
    """A tensor as compared: its values, dtype name, `requires_grad` and `is_leaf`."""

    value: np.ndarray = field(compare=False)
    dtype: str
    requires_grad: bool
    is_leaf: bool


@dataclass
class Outcome:
    """What a scenario did in one library: `value` is what it returned (tracegrad objects, for
    further checks), `plain` the same made comparable, `warnings` (category, first line)."""

    value: object
    plain: object
    warnings: list


def _plain(x, is_torch: bool):
    if isinstance(x, tracegrad.torch.Tensor) or (is_torch and isinstance(x, torch.Tensor)):
        arr = np.array(x.detach().resolve_conj().numpy(), copy=True)  # (a lazy conj: values)
        dtype = str(x.dtype).removeprefix("torch.") if is_torch else x.dtype.name
        return TensorValue(arr, dtype, bool(x.requires_grad), bool(x.is_leaf))
    if isinstance(x, Raised):
        return Raised(x.type, normalize_torch_message(x.message)) if is_torch else x
    if isinstance(x, tuple | list):
        return tuple(_plain(v, is_torch) for v in x)
    if isinstance(x, dict):
        return {k: _plain(v, is_torch) for k, v in x.items()}
    if x is None or isinstance(x, bool | int | float | complex | str | np.ndarray | np.generic):
        return x
    if is_torch and isinstance(x, torch.dtype):
        return str(x).removeprefix("torch.")
    if isinstance(x, np.dtype):
        return x.name
    raise TypeError(f"scenario returned a {type(x).__name__}; return tensors, names or values")


def _run(scenario, lib, is_torch: bool) -> Outcome:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = scenario(lib)
        except Exception as e:
            where = "torch" if is_torch else "tracegrad"
            raise AssertionError(
                f"the scenario raised in {where} outside `attempt`:\n{traceback.format_exc()}"
            ) from e
    notes = [
        (
            w.category.__name__,
            normalize_torch_message(w.message) if is_torch else first_line(w.message),
        )
        for w in caught
    ]
    return Outcome(value, _plain(value, is_torch), notes)


def assert_same(ours, theirs, rtol: float, atol: float, path: str = "result") -> None:
    """`ours` (tracegrad) equals `theirs` (torch), both made plain; tensors up to tolerance."""
    if isinstance(theirs, TensorValue):
        assert isinstance(ours, TensorValue), f"{path}: torch gave a tensor, tracegrad {ours!r}"
        assert ours == theirs, f"{path}: tracegrad {ours} but torch {theirs}"
        assert ours.value.shape == theirs.value.shape, (
            f"{path}: tracegrad shape {ours.value.shape} but torch {theirs.value.shape}"
        )
        np.testing.assert_allclose(
            ours.value, theirs.value, rtol=rtol, atol=atol, err_msg=path, equal_nan=True
        )
    elif isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs), (
            f"{path}: tracegrad {ours!r} but torch {theirs!r}"
        )
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert_same(a, b, rtol, atol, f"{path}[{i}]")
    elif isinstance(theirs, dict):
        assert isinstance(ours, dict) and ours.keys() == theirs.keys(), f"{path}: keys differ"
        for k in theirs:
            assert_same(ours[k], theirs[k], rtol, atol, f"{path}[{k!r}]")
    elif isinstance(theirs, float | complex) and not isinstance(ours, bool):
        assert isinstance(ours, float | int | complex), (
            f"{path}: tracegrad {ours!r} but torch {theirs!r}"
        )
        assert np.isclose(ours, theirs, rtol=rtol, atol=atol), f"{path}: {ours} vs {theirs}"
    else:
        assert ours == theirs, f"{path}: tracegrad {ours!r} but torch {theirs!r}"


class _Unchecked(Outcome):
    """`run_both`'s result where torch is missing: it notes when a check reads what the
    scenario did (`value`, `plain`, `warnings`), since nothing else was compared."""

    def __getattribute__(self, name):
        if name in ("value", "plain", "warnings"):
            _forget(self)
        return object.__getattribute__(self, name)


_unread: list[Outcome] = []  # `run_both` results of the running test no check has read yet


def _forget(outcome) -> None:
    for i, o in enumerate(_unread):
        if o is outcome:
            del _unread[i]
            return


def forget_unread() -> None:
    """Called by tests/conftest.py before each test."""
    _unread.clear()


def skip_if_nothing_was_checked() -> None:
    """Called by tests/conftest.py after each test that passed: where torch is missing, a test
    that read none of its `run_both` results checked nothing (torch was its only oracle), so
    it is reported as skipped, not passed."""
    if _unread:
        count = len(_unread)
        _unread.clear()
        pytest.skip(
            f"torch is not installed: run_both compared nothing, and the test made no check of "
            f"its own on the {count} result(s)"
        )


def run_both(scenario, *, rtol: float = 1e-6, atol: float = 0.0, warns: bool = True) -> Outcome:
    """Run `scenario(lib)` in tracegrad and (if installed) torch; assert they agree.

    Returns tracegrad's `Outcome`, so a test can add closed-form checks that also hold where
    torch is missing. Exceptions must be caught inside the scenario with `attempt`; any other
    exception fails the test. `warns=False` skips comparing warnings.

    Without torch only tracegrad runs: the test's own checks on the result are then all it
    has, and a test that makes none is skipped when it ends (`skip_if_nothing_was_checked`,
    which tests/conftest.py calls), so it cannot pass having compared nothing.
    """
    ours = _run(scenario, tracegrad.torch, False)
    if torch is None:
        unchecked = _Unchecked(ours.value, ours.plain, ours.warnings)
        _unread.append(unchecked)
        return unchecked
    theirs = _run(scenario, torch, True)
    assert_same(ours.plain, theirs.plain, rtol, atol)
    if warns:
        assert ours.warnings == theirs.warnings, (
            f"warnings: tracegrad {ours.warnings} but torch {theirs.warnings}"
        )
    return ours


def numpy_of(t) -> np.ndarray:
    """A tracegrad tensor's values (detached), for closed-form checks."""
    return np.asarray(t.detach().numpy())


def libraries() -> list:
    """`tracegrad.torch` and, where installed, `torch`, for tests that run the same lines in
    each and assert a closed form (CI installs torch, so there both always run)."""
    if torch is None:
        return [tracegrad.torch]
    torch.set_num_threads(1)
    return [tracegrad.torch, torch]


def values(t) -> np.ndarray:
    """A tensor's values as a NumPy array (either library's tensor; a conjugate resolved)."""
    return t.detach().resolve_conj().numpy()
