"""Every NumPy name a user of HIPS autograd or jax.numpy reaches for exists in
`tracegrad.numpy`, and `np.<name>` on a traced value reaches it.

The lists are shared/NUMPY_COVERAGE.md's NumPy sections (the names HIPS autograd can
differentiate, its compositions and its non-differentiable registrations, minus
`make_diagonal`, which NumPy does not have) and the names issue 13 adds beyond them. Each
name's values and derivatives are checked in its family's test module; this one checks that
none is missing and that NumPy's dispatch finds it.
"""

from __future__ import annotations

import numpy as np
import pytest

import tracegrad as tg
import tracegrad.numpy as tnp
from tracegrad.numpy import _dispatch

AUTOGRAD_NUMPY = """
abs absolute acos acosh add amax amin angle arccos arccosh arcsin arcsinh arctan arctan2 arctanh
array_split asin asinh atan atan2 atanh atleast_1d atleast_2d atleast_3d broadcast_to clip conj
conjugate cos cosh cross cumsum deg2rad degrees diag diagonal diff divide dot dsplit einsum exp
exp2 expand_dims expm1 fabs fliplr flipud fmax fmin full gradient hsplit imag inner kron
linspace log log10 log1p log2 logaddexp logaddexp2 matmul max maximum min minimum mod moveaxis
multiply nan_to_num negative outer pad partition permute_dims pow power prod rad2deg radians
ravel real real_if_close reciprocal remainder repeat reshape roll rollaxis rot90 sin sinc sinh
sort split sqrt square squeeze subtract sum swapaxes tan tanh tensordot tile trace transpose
tril triu true_divide vsplit astype hypot
append array column_stack concatenate hstack mean row_stack select stack std var vstack where
all allclose any argmax argmin argpartition argsort argwhere around array_equal array_equiv ceil
count_nonzero empty_like equal fix flatnonzero floor floor_divide full_like greater
greater_equal isclose iscomplex iscomplexobj isfinite isinf isnan isneginf isposinf isreal
isscalar less less_equal logical_and logical_not logical_or logical_xor ndim nonzero not_equal
ones_like result_type rint round searchsorted shape sign size trunc zeros_like
""".split()

BEYOND = """
median percentile quantile nansum nanmean nanmax nanmin nanprod nanstd nanvar nanmedian
nanpercentile nanquantile nanargmax nanargmin nancumsum nancumprod interp convolve correlate cov
corrcoef trapezoid bincount histogram vecdot matvec vecmat cumulative_sum cumulative_prod
asarray zeros ones empty arange logspace geomspace eye identity meshgrid tri diagflat indices
unique
""".split()

CONSTANTS_AND_DTYPES = """
pi e inf nan newaxis float32 float64 complex64 complex128 int32 int64 bool_ finfo iinfo
""".split()

# ndarray methods users call on traced values (NUMPY_COVERAGE.md's list without autograd's
# internals and the attributes tested elsewhere)
METHODS = """
all any argmax argmin argpartition argsort astype clip compress cumprod cumsum diagonal
flatten max mean min nonzero prod ptp ravel repeat reshape round searchsorted squeeze std sum
swapaxes take trace transpose var conj conjugate dot
""".split()


@pytest.mark.parametrize("name", sorted(set(AUTOGRAD_NUMPY + BEYOND + CONSTANTS_AND_DTYPES)))
def test_the_name_is_in_tracegrad_numpy(name):
    assert name in tnp.__all__, f"tracegrad.numpy.{name} is missing"
    assert hasattr(tnp, name)


@pytest.mark.parametrize("name", sorted(set(AUTOGRAD_NUMPY + BEYOND)))
def test_numpy_dispatch_reaches_the_name(name):
    theirs = getattr(np, name)
    ours = getattr(tnp, name)
    if isinstance(theirs, np.ufunc):
        assert _dispatch.UFUNCS[theirs] is ours
    else:
        assert _dispatch.FUNCTIONS[theirs] is ours


@pytest.mark.parametrize("name", METHODS)
def test_the_method_resolves_on_a_traced_value(name):
    def f(x):
        method = getattr(x, name)
        assert callable(method)
        return x

    tg.make_graph(f)(np.ones((2, 3)))
