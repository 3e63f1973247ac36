"""SciPy is an optional extra: the core package imports and differentiates without it, and
`tracegrad.scipy` then says which extra to install; with it, SciPy's own calls on traced values
reach tracegrad.scipy (ufuncs) or name the tracegrad.scipy function to call instead (SciPy's
Python functions); SciPy's primitives keep to their own namespace of names."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest
import scipy.integrate as si
import scipy.linalg as sl
import scipy.signal as sg
import scipy.special as sc
import scipy.stats as st

import tracegrad as tg
import tracegrad.scipy as tsp
from tracegrad.extend import defvjp, primitive
from tracegrad.numpy._dispatch import scipy_replacement
from tracegrad.primitives import special

ROOT = Path(__file__).resolve().parents[2]

# two ways SciPy is missing: an import hook that refuses it (its finder raises), and a package
# that is not installed (sys.modules[name] = None makes find_spec answer None, as then)
HOOK = """
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name == "scipy" or name.startswith("scipy."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Refuse())
"""
ABSENT = 'sys.modules["scipy"] = None\n'

PROGRAM = """
import numpy as np
import tracegrad as tg
import tracegrad.numpy as tnp
import tracegrad.primitives as primitives
g = tg.grad(lambda x: np.sum(np.tanh(x) * tnp.exp(x)))(np.ones(3))
assert np.all(np.isfinite(g))
assert tg.jit(lambda x: np.sin(x) + 1)(0.5) == np.sin(0.5) + 1
assert not any(p.name.startswith("scipy.") for p in primitives.ALL)
assert not [m for m, v in sys.modules.items() if m.split(".")[0] == "scipy" and v is not None]
assert "tracegrad.primitives.special" not in sys.modules
try:
    import tracegrad.scipy
except ImportError as err:
    print(err)
else:
    raise AssertionError("tracegrad.scipy imported without SciPy")
import tracegrad.torch as tt
assert "distributions" not in tt.__all__
try:
    tt.erf(tt.ones(2))
except ImportError as err:
    print(err)
else:
    raise AssertionError("torch.erf ran without SciPy")
"""


@pytest.mark.parametrize("missing", [HOOK, ABSENT], ids=["import hook", "not installed"])
def test_the_core_package_works_without_scipy(missing):
    code = "import sys\n" + textwrap.dedent(missing) + PROGRAM
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "tracegrad.scipy needs SciPy" in done.stdout
    assert "pip install 'tracegrad[scipy]'" in done.stdout
    assert "torch.erf computes with SciPy's special functions" in done.stdout


def test_with_scipy_installed_importing_tracegrad_does_not_import_it():
    """SciPy's primitives join tracegrad.primitives.ALL, but SciPy itself loads only when one
    first runs (or tracegrad.scipy is imported)."""
    code = (
        "import sys, numpy as np, tracegrad as tg, tracegrad.primitives as p\n"
        "assert any(q.name == 'scipy.special.erf' for q in p.ALL)\n"
        "tg.grad(lambda x: np.sum(np.sin(x)))(np.ones(2))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_scipy_extra_is_declared_and_dev_includes_it():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert any(r.startswith("scipy") for r in extras["scipy"])
    assert any(r.startswith("scipy") for r in extras["dev"])
    assert not any(r.startswith("scipy") for r in project["dependencies"])


# -- SciPy's own calls on traced values ---------------------------------------------------------


def test_scipy_ufuncs_on_traced_values_reach_tracegrad():
    x = np.array([0.3, 1.2, 2.5])

    def f(v):
        return np.sum(sc.gammaln(v) + sc.erf(v) * sc.expit(v) + sc.xlogy(v, v + 1.0))

    def g(v):
        return np.sum(tsp.special.gammaln(v) + tsp.special.erf(v) * tsp.special.expit(v)
                      + tsp.special.xlogy(v, v + 1.0))  # fmt: skip

    assert tg.grad(f)(x).tolist() == tg.grad(g)(x).tolist()
    assert tg.jit(f)(x) == f(x)


def test_a_scipy_ufunc_without_a_rule_names_itself():
    with pytest.raises(NotImplementedError, match=r"scipy.special.hyp2f1 has no tracegrad rule"):
        tg.grad(lambda x: sc.hyp2f1(1.0, 1.0, 2.0, x))(0.5)
    with pytest.raises(TypeError, match=r"scipy.special.erf\(..., out=...\) would write"):
        tg.grad(lambda x: sc.erf(x, out=np.empty(())))(0.5)


def test_numpy_i0_names_the_tracegrad_scipy_replacement():
    with pytest.raises(NotImplementedError, match=r"np.i0.*Use tracegrad.scipy.special.i0"):
        tg.grad(lambda x: np.sum(np.i0(x)))(np.ones(2))


@pytest.mark.parametrize(
    "call, replacement",
    [
        (lambda v: sc.logsumexp(v), "tracegrad.scipy.special.logsumexp"),
        (lambda v: sc.softmax(v, axis=0), "tracegrad.scipy.special.softmax"),
        (lambda v: st.norm.logpdf(v), "tracegrad.scipy.stats.norm.logpdf"),
        (lambda v: st.norm(0.0, 2.0).pdf(v), "tracegrad.scipy.stats.norm.pdf"),
        (lambda v: st.gamma.cdf(v, 2.0), "tracegrad.scipy.stats.gamma.cdf"),
        (lambda v: st.poisson.logpmf(v, 2.0), "tracegrad.scipy.stats.poisson.logpmf"),
        (
            lambda v: st.multivariate_normal(np.zeros(3)).logpdf(v),
            "tracegrad.scipy.stats.multivariate_normal.logpdf",
        ),
        (lambda v: sg.convolve(v, v[:2]), "tracegrad.scipy.signal.convolve"),
        (lambda v: sg.correlate(v, v[:2], "same"), "tracegrad.scipy.signal.correlate"),
        (lambda v: sg.fftconvolve(v, v), "tracegrad.scipy.signal.fftconvolve"),
        (lambda v: sl.expm(np.outer(v, v)), "tracegrad.scipy.linalg.expm"),
        (
            lambda v: sl.cho_factor(np.outer(v, v) + np.eye(3))[0],
            "tracegrad.scipy.linalg.cho_factor",
        ),
        (lambda v: si.trapezoid(v), "tracegrad.scipy.integrate.trapezoid"),
        (lambda v: si.odeint(lambda y, t: -y, v, [0.0, 1.0]), "tracegrad.scipy.integrate.odeint"),
    ],
)
def test_scipy_python_functions_name_their_tracegrad_scipy_replacement(call, replacement):
    """SciPy's Python code converts a traced value: the conversion error (which keeps its
    advice and the user's line) ends by naming the tracegrad.scipy function to call."""
    x = np.array([0.5, 1.5, 2.5])
    with pytest.raises(TypeError, match=f"(?s)cannot convert.*call {replacement} instead"):
        tg.grad(lambda v: np.sum(call(v)))(x)
    with pytest.raises(TypeError, match=f"call {replacement} instead"):
        tg.jit(call)(x)


def test_no_replacement_is_named_outside_scipy():
    assert scipy_replacement() == ""


# -- names --------------------------------------------------------------------------------------


def test_scipy_primitives_keep_to_their_own_names():
    """Primitive names are one namespace with users' own (`tracegrad.extend.primitive` names a
    function of __main__ by its bare name): SciPy's carry the `scipy.` prefix."""
    assert all(p.name.startswith(("scipy.special.", "scipy.stats.")) for p in special.PRIMITIVES)
    assert special.logsumexp_p.name == "scipy.special.logsumexp"

    def logsumexp(x):
        return np.log(np.sum(np.exp(x)))

    logsumexp.__module__ = "__main__"  # as in a script or a notebook
    logsumexp.__qualname__ = "logsumexp"
    mine = primitive(logsumexp)
    defvjp(mine, lambda ans, x: lambda g: g * np.exp(x - ans))
    assert mine.primitive.name == "logsumexp"
    v = np.array([1.0, 2.0])
    np.testing.assert_allclose(tg.grad(mine)(v), tg.grad(tsp.special.logsumexp)(v))


def test_exported_modules_call_scipy_themselves(tmp_path):
    """Generated code imports scipy.special (and scipy.stats) where it calls them, so a module
    written by `export` runs in a fresh interpreter without tracegrad."""
    from tracegrad.codegen import compile_graph

    def f(x, cov):
        lse = tsp.special.logsumexp(x, axis=1, b=np.abs(x) + 0.5)
        mvn = tsp.stats.multivariate_normal.logpdf(x, np.zeros(2), cov)
        return tsp.special.erf(x) * tsp.special.gammaln(x + 2.0), lse + mvn

    x = np.array([[0.3, -1.2], [0.7, 2.0], [1.5, 0.1]])
    cov = np.array([[1.5, 0.2], [0.2, 0.8]])
    graph = tg.make_graph(tg.value_and_grad(lambda x, c: np.sum(f(x, c)[1]), (0, 1)))(x, cov)
    module = compile_graph(graph).export(tmp_path / "model.py")
    assert "tracegrad" not in module.read_text().replace("tracegrad.codegen", "")
    runner = (
        "import sys, numpy as np, importlib.util\n"
        "spec = importlib.util.spec_from_file_location('model', sys.argv[1])\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "fn = next(v for k, v in vars(m).items() if k.startswith('f_'))\n"
        "with np.load(sys.argv[2]) as d: args = [d['x'], d['cov']]\n"
        "value, gx, gc = fn(*args)\n"
        "np.savez(sys.argv[3], value=value, gx=gx, gc=gc)\n"
    )
    (tmp_path / "runner.py").write_text(runner)
    np.savez(tmp_path / "in.npz", x=x, cov=cov)
    subprocess.run(
        [sys.executable, "-I", str(tmp_path / "runner.py"), str(module), str(tmp_path / "in.npz"),
         str(tmp_path / "out.npz")],
        check=True, cwd=tmp_path, capture_output=True, timeout=120,
    )  # fmt: skip
    value, grads = graph(x, cov)
    with np.load(tmp_path / "out.npz") as out:
        assert out["value"].tolist() == np.asarray(value).tolist()
        assert out["gx"].tolist() == grads[0].tolist()
        assert out["gc"].tolist() == grads[1].tolist()
