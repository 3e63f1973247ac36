"""tracegrad.torch.nn's distances against torch.nn's: cosine_similarity, pairwise_distance and
pdist (functional) and CosineSimilarity and PairwiseDistance (modules): values and gradients in
float64 and float32 from identical arrays, broadcasting, p-norms (1, 2, 3, inf, 0), zero vectors
(torch's finite gradients), the eps clamps, and torch's messages.

The distances are imported from `tracegrad.torch.nn.distance`, so the tests run before `nn` and
`nn.functional` re-export them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tracegrad.torch as tt
from tests.shim.test_nn_losses import DTYPES, assert_same_error, compare
from tests.shim.torch_oracle import torch_one_thread  # noqa: F401 - the `torch` fixture
from tracegrad.torch.nn import distance

rng = np.random.default_rng(2)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", (1, 0, -1))
def test_cosine_similarity(torch, dim, dtype):
    a, b = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 4, 5))
    compare(torch, lambda L, a, b: L.F.cosine_similarity(a, b, dim), a, b, dtype=dtype)
    compare(torch, lambda L, a, b: L.nn.CosineSimilarity(dim, eps=0.5)(a, b), a, b, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cosine_similarity_broadcasts_and_clamps_small_norms(torch, dtype):
    a, b = rng.standard_normal((6, 4)), rng.standard_normal(4)
    compare(torch, lambda L, a, b: L.F.cosine_similarity(a, b, -1), a, b, dtype=dtype)
    a[0] = 0.0  # a zero vector: the value 0, torch's finite gradient
    a[1] *= 1e-3  # a norm below eps: clamped for the value, the gradient passes the clamp
    compare(
        torch, lambda L, a, b: L.F.cosine_similarity(a, b, 1, eps=0.01), a, b[None], dtype=dtype
    )
    compare(torch, lambda L, a: L.F.cosine_similarity(a, a, 0), a[0], dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", (2.0, 1.0, 3.0, math.inf, 0.5))
def test_pairwise_distance(torch, p, dtype):
    a, b = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    compare(torch, lambda L, a, b: L.F.pairwise_distance(a, b, p), a, b, dtype=dtype)
    compare(
        torch,
        lambda L, a, b: L.nn.PairwiseDistance(p, eps=1e-3, keepdim=True)(a, b),
        a,
        b[0],
        dtype=dtype,
    )


def test_pairwise_distance_of_equal_vectors_and_vectors(torch):
    a = rng.standard_normal((3, 4))
    compare(torch, lambda L, a, b: L.F.pairwise_distance(a, b), a, a.copy())
    compare(torch, lambda L, a, b: L.F.pairwise_distance(a, b, eps=0.0), a, a.copy())
    compare(torch, lambda L, a, b: L.F.pairwise_distance(a, b), a[0], a[1])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", (2.0, 1.0, 3.0, math.inf, 0.0))
def test_pdist(torch, p, dtype):
    x = rng.standard_normal((5, 3))
    compare(torch, lambda L, x: L.F.pdist(x, p), x, dtype=dtype)


def test_pdist_of_repeated_rows_has_a_finite_gradient(torch):
    x = rng.standard_normal((4, 3))
    x[2] = x[0]
    compare(torch, lambda L, x: L.F.pdist(x), x)


def test_modules_repr_and_attributes(torch):
    assert repr(distance.CosineSimilarity()) == repr(torch.nn.CosineSimilarity())
    assert repr(distance.PairwiseDistance()) == repr(torch.nn.PairwiseDistance())
    ours, theirs = distance.PairwiseDistance(3.0), torch.nn.PairwiseDistance(3.0)
    assert (ours.norm, ours.eps, ours.keepdim) == (theirs.norm, theirs.eps, theirs.keepdim)


def test_messages(torch):
    x = rng.standard_normal((2, 3, 4))
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        distance.pdist(tt.tensor(x))
    assert_same_error(lambda: distance.pdist(tt.tensor(x)), lambda: torch.pdist(torch.tensor(x)))
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 5))
    for name in ("cosine_similarity", "pairwise_distance"):
        assert_same_error(
            lambda name=name: getattr(distance, name)(tt.tensor(a), tt.tensor(b)),
            lambda name=name: getattr(torch.nn.functional, name)(torch.tensor(a), torch.tensor(b)),
        )
