"""The package's shape: imports go one way, the top level is the functional API, and the
PyTorch-style names live in `tracegrad.torch`.

The import graph is read from the source with `ast`, as Python runs it: a module imports what
its module-level statements import (class bodies and `if`/`try` blocks included, `if
TYPE_CHECKING:` blocks not), and importing `tracegrad.a.b` from outside `tracegrad.a` runs
`tracegrad/a/__init__.py` first, so that is an edge to the package too. The root package is
exempt from that rule: it re-exports everything and nothing below it may import it.
"""

from __future__ import annotations

import ast
import graphlib
import importlib
import pathlib

import numpy as np
import pytest

import tracegrad
import tracegrad.torch
from tracegrad.core import Tracer
from tracegrad.torch.graph import AccumulateGrad, GradFn
from tracegrad.torch.methods import METHODS
from tracegrad.torch.tensor import Tensor, _Implemented

ROOT = pathlib.Path(tracegrad.__file__).parent


def _modules() -> dict[str, pathlib.Path]:
    found = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = ("tracegrad", *path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _module_level(body):
    """The import statements that run when the module is imported."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif _is_type_checking(node):
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
            for field in ("body", "orelse", "finalbody"):
                yield from _module_level(getattr(node, field, []))
            for handler in getattr(node, "handlers", []):
                yield from _module_level(handler.body)
        elif isinstance(node, ast.ClassDef):
            yield from _module_level(node.body)


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The tracegrad modules an import statement imports."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    return {n for n in names if n in MODULES}


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for module, path in MODULES.items():
        deps = set()
        for node in _module_level(ast.parse(path.read_text()).body):
            for target in _targets(module, node):
                deps.add(target)
                package = target.rpartition(".")[0]
                while package != "tracegrad":  # the packages that import runs first
                    if not (module == package or module.startswith(package + ".")):
                        deps.add(package)
                    package = package.rpartition(".")[0]
        deps.discard(module)
        graph[module] = deps
    return graph


def test_the_module_level_import_graph_has_no_cycle():
    graph = import_graph()
    assert len(graph) > 60 and graph["tracegrad.torch.engine"]  # the reader found the modules
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as err:
        pytest.fail(f"import cycle: {' -> '.join(err.args[1])}")


def test_nothing_below_the_root_imports_the_root():
    graph = import_graph()
    assert not [m for m, deps in graph.items() if "tracegrad" in deps and m != "tracegrad"]


def test_the_cycle_finder_finds_a_cycle():
    graph = import_graph()
    graph["tracegrad.ir.types"] = graph["tracegrad.ir.types"] | {"tracegrad.core"}
    with pytest.raises(graphlib.CycleError):
        tuple(graphlib.TopologicalSorter(graph).static_order())


def test_a_package_import_counts_as_importing_its_init():
    graph = import_graph()
    # tracegrad.api.common imports tracegrad.transforms.vjp: tracegrad/transforms/__init__.py
    # runs first
    assert {"tracegrad.transforms.vjp", "tracegrad.transforms"} <= graph["tracegrad.api.common"]


# Imports inside functions that reach upward, each where DESIGN.md §7 allows one (a graph runs
# and prints through the layers above it; Tracer operators and a primitive's `bind` look up
# the layer above at call time), and the shim's one: `Tensor` declares its methods, and the
# modules implementing them build on `Tensor`.
UPWARD = {
    ("tracegrad.ir.graph", "__call__"): "tracegrad.interpret",
    ("tracegrad.ir.graph", "__str__"): "tracegrad.ir.printing",
    ("tracegrad.ir.primitive", "bind"): "tracegrad.core",
    ("tracegrad.core", "_numpy_dispatch"): "tracegrad.numpy._dispatch",
    # the rules of the control-flow primitives run transforms on their sub-graphs (§7)
    ("tracegrad.primitives.control", "_rules"): "tracegrad.transforms.control",
    ("tracegrad.primitives.custom", "_rules"): "tracegrad.transforms.custom",
    ("tracegrad.primitives.ode", "_rules"): "tracegrad.transforms.ode",
    ("tracegrad.primitives.control", "_taylor_rules"): "tracegrad.transforms.control_taylor",
    ("tracegrad.primitives.custom", "_taylor_rules"): "tracegrad.transforms.custom_taylor",
    # linear algebra's reverse mode for factorisations is its forward mode transposed
    ("tracegrad.primitives.linalg._common", "_transposition"): "tracegrad.transforms.custom",
    ("tracegrad.torch.tensor", "_implementation"): "tracegrad.torch.methods",
    # scipy.special's ufuncs on traced values reach tracegrad.scipy, which builds on
    # tracegrad.numpy, at call time (and SciPy's functions on traced values are named there)
    ("tracegrad.numpy._dispatch", "_tsp"): "tracegrad.scipy",
    # torch.matrix_exp and torch.triangular_solve are SciPy's functions, and SciPy is optional:
    # `import tracegrad` must not import it
    ("tracegrad.torch.ops.linalg_names", "_scipy_linalg"): "tracegrad.scipy.linalg",
}


def _function_imports():
    for module, path in MODULES.items():
        text = path.read_text()
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import | ast.ImportFrom):
                    above = lines[fn.lineno - 1 : node.lineno]  # the function up to it
                    yield module, fn.name, node, any("#" in line for line in above)


def test_imports_inside_functions_are_the_allowed_upward_ones_with_a_comment():
    seen = {}
    for module, function, node, commented in _function_imports():
        targets = _targets(module, node)
        if not targets:  # a third-party import made lazily (hypothesis in tracegrad.testing)
            assert module.startswith("tracegrad.testing"), (module, function)
            continue
        key = (module, function)
        assert key in UPWARD, f"{module}.{function} imports {targets} inside a function"
        assert targets == {UPWARD[key]}, (key, targets)
        assert commented, f"{module}.{function}: say why the import is inside the function"
        seen[key] = targets
    assert seen.keys() == UPWARD.keys()


def test_modules_over_600_lines_say_why():
    for module, path in MODULES.items():
        text = path.read_text()
        if text.count("\n") > 600:
            doc = ast.get_docstring(ast.parse(text)) or ""
            assert "Over 600 lines: " in doc, f"{module} has {text.count(chr(10))} lines"


# -- the top level and tracegrad.torch ---------------------------------------------------------

# The functional API and the tensor entry points issue 12 keeps at the top level.
FUNCTIONAL = (
    set(
        "Aval ConcretizationError EscapedTracerError Graph check_grads extend grad hessian ir "
        "jacfwd jacrev jit jvp linearize make_graph numpy stop_gradient testing torch tree "
        "value_and_grad vjp vmap".split()
    )
    | set(
        "checkpoint checkpoint_name checkpoint_policies custom_jvp custom_root custom_vjp "
        "fixed_point remat".split()
    )
    | set("derivatives jet taylor".split())  # Taylor mode (issue 26)
)
TENSOR_ALIASES = set(
    "tensor Tensor no_grad enable_grad set_grad_enabled inference_mode is_grad_enabled autograd "
    "nn optim manual_seed set_default_dtype get_default_dtype".split()
)
DTYPES = set(
    "float16 float32 float64 half float double int8 int16 int32 int64 uint8 bool short int long "
    "complex64 complex128".split()
)

# What `tracegrad` exported before the shim moved to tracegrad.torch (its `__all__` at
# 87d0f05, and the dtype names it defined).
OLD_TOP_LEVEL = DTYPES | {
    *"Aval ConcretizationError EscapedTracerError Graph Tensor abs absolute acos acosh add "
    "addcdiv addcmul all allclose amax amin any arange arccos arccosh arcsin arcsinh arctan "
    "arctanh argmax argmin as_tensor asin asinh atan atan2 atanh autograd bmm cat ceil "
    "check_grads chunk clamp clamp_max clamp_min clip clone concat concatenate contiguous cos "
    "cosh cumprod cumsum div dot einsum empty empty_like enable_grad eq equal exp exp2 expand "
    "expand_as expm1 eye flatten flip floor floor_divide from_numpy full full_like gather ge "
    "get_default_dtype grad gt hessian index_select inference_mode is_anomaly_enabled "
    "is_grad_enabled is_tensor isclose isfinite isinf isnan jacfwd jacrev jit jvp le lerp "
    "linearize linspace log log10 log1p log2 log_softmax logical_and logical_not logical_or "
    "logsumexp lt make_graph manual_seed masked_fill matmul max maximum mean min minimum mm mul "
    "mv narrow ne neg negative nn no_grad norm numel numpy ones ones_like optim outer permute "
    "pow prod rand rand_like randint randn randn_like randperm reciprocal relu remainder repeat "
    "reshape reshape_as result_type round rsqrt rsub select set_default_dtype set_grad_enabled "
    "sigmoid sign sin sinh softmax split sqrt square squeeze stack std stop_gradient sub sum "
    "swapaxes swapdims t tan tanh tensor transpose tree tril triu trunc unbind unsqueeze "
    "value_and_grad var view view_as vjp vmap where zeros zeros_like".split()
}


def test_the_top_level_is_the_functional_api_and_the_listed_aliases():
    assert set(tracegrad.__all__) == FUNCTIONAL | TENSOR_ALIASES  # dtypes: attributes only
    for name in TENSOR_ALIASES | DTYPES:
        assert getattr(tracegrad, name) is getattr(tracegrad.torch, name), name
    assert tracegrad.float32 == np.float32 and isinstance(tracegrad.float64, np.dtype)


def test_a_star_import_leaves_the_builtins_alone():
    namespace: dict = {}
    exec("from tracegrad import *", namespace)
    assert not {"int", "float", "bool", "sum", "abs", "max", "min", "round"} & namespace.keys()
    assert namespace["grad"] is tracegrad.grad and namespace["tensor"] is tracegrad.torch.tensor


def test_every_old_top_level_name_has_a_home():
    assert len(OLD_TOP_LEVEL) == 187 + len(DTYPES)
    for name in sorted(OLD_TOP_LEVEL):
        if name in FUNCTIONAL | TENSOR_ALIASES | DTYPES:
            assert hasattr(tracegrad, name), name
        else:
            assert hasattr(tracegrad.torch, name), f"{name} is neither here nor in tracegrad.torch"


@pytest.mark.parametrize(
    "name", sorted(OLD_TOP_LEVEL - FUNCTIONAL - TENSOR_ALIASES - DTYPES), ids=str
)
def test_a_removed_name_says_where_it_lives(name):
    with pytest.raises(AttributeError) as err:
        getattr(tracegrad, name)
    message = str(err.value)
    assert f"tracegrad.torch.{name}" in message
    if hasattr(tracegrad.numpy, name):
        assert f"tracegrad.numpy.{name}" in message
    else:
        assert "tracegrad.numpy" not in message


def test_an_unknown_name_is_a_plain_attribute_error():
    with pytest.raises(AttributeError, match="^module 'tracegrad' has no attribute 'nonsense'$"):
        tracegrad.nonsense  # noqa: B018


def test_sum_inside_grad_points_at_numpy_and_torch():
    """The confusion issue 12 names: `tg.sum(x)` inside `tg.grad` used to raise a conversion
    error; now it says which sum the user may have meant."""
    with pytest.raises(AttributeError, match=r"tracegrad\.torch\.sum .*tracegrad\.numpy\.sum"):
        tracegrad.grad(lambda x: tracegrad.sum(x))(np.ones(3))


def test_the_torch_namespace_is_pytorchs():
    torch = importlib.import_module("tracegrad.torch")
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    torch.sum(x, dim=1).sum().backward()  # PyTorch's `dim`
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 2)))
    assert torch.float32 is tracegrad.float32 and torch.is_anomaly_enabled() is False


# -- Tensor declares its methods ---------------------------------------------------------------


def test_tensor_declares_every_method_its_modules_implement():
    declared = {
        name
        for klass in Tensor.__mro__
        for name, value in vars(klass).items()
        if isinstance(value, _Implemented)
    }
    installed = {name for name in METHODS if vars(Tensor).get(name) is METHODS[name]}
    assert declared | installed == set(METHODS)
    for name in METHODS:
        getattr(Tensor, name)  # installs the implementation
        assert vars(Tensor)[name] is METHODS[name], name


def test_stop_gradient_on_tensors_is_detach():
    """The functional `stop_gradient` meets a tensor: it detaches it (pytrees too), as JAX's
    meets an array; the gradient through the detached branch is zero."""
    torch = tracegrad.torch
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    held = tracegrad.stop_gradient({"y": x * 3})["y"]
    assert held.grad_fn is None and not held.requires_grad
    (x * held).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 6.0])  # d/dx of x * (3x held) = 3x


def test_the_classes_every_operation_makes_have_no_getattr_hook():
    # A class with `__getattr__` makes CPython 3.11 read every attribute of its instances on
    # the unspecialized path (about twice the cost of each read; the tensors' chain of scalar
    # operations ran 9% more instructions with it): NumPy's methods are class attributes.
    for cls in (Tracer, Tensor, GradFn, AccumulateGrad):
        assert not [k for k in cls.__mro__ if "__getattr__" in vars(k)], cls
    x = tracegrad.torch.tensor([1.5, 2.5])
    assert x.astype(np.float32).dtype == np.float32  # NumPy's method, which PyTorch lacks
    assert Tensor.transpose is METHODS["transpose"]  # PyTorch's method wins over NumPy's
    assert tracegrad.grad(lambda v: v.astype(np.float64).ptp())(np.array([1.0, 3.0]))[1] == 1.0
