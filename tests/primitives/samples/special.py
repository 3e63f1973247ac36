"""SAMPLES rows for SciPy's special functions (tracegrad.primitives.special).

Arguments whose derivative tracegrad refuses (an order, a shape parameter of an incomplete
gamma or beta function) or that are counts are drawn as integer arrays, so the checks
differentiate exactly the arguments with rules; values stay away from poles, branch points
and the kinks of |x| (i0e, i1e).
"""

from __future__ import annotations

import numpy as np

from tests import strategies as S
from tests.primitives.samples.row import Sample
from tracegrad.primitives import special as sp

INT, SIGNED, AROUND = "int", "signed", "around"


def _args(*spans, tol=1e-6, fd=True):
    """One argument per span: (lo, hi) floats of the sample dtype, ("int", lo, hi),
    ("signed", lo, hi) for either sign with |x| in [lo, hi], or ("around", c, lo, hi) for
    c +- [lo, hi]."""

    def draw(data, dtype):
        shapes = S.broadcast_shapes(data, len(spans)) if len(spans) > 1 else [S.shapes(data)]
        args = []
        for span, shape in zip(spans, shapes):
            if span[0] == INT:
                args.append(S.array(data, shape, np.int64, span[1], span[2]))
            elif span[0] in (SIGNED, AROUND):  # either sign, |x - c| in [lo, hi]
                c, lo, hi = span[1:] if span[0] == AROUND else (None, *span[1:])
                x = S.array(data, shape, dtype, lo, hi)
                sign = np.where(S.array(data, shape, np.bool_), -1, 1).astype(dtype)
                args.append(x * sign if c is None else x * sign + np.asarray(c, dtype))
            else:
                args.append(S.array(data, shape, dtype, *span))
        return tuple(args), {}

    return Sample(draw, tol=tol, fd=fd)


def _log_gauss_mass(data, dtype):
    sa, sw = S.broadcast_shapes(data, 2)
    a = S.array(data, sa, dtype, -3.0, 2.0)
    return (a, (a + S.array(data, sw, dtype, 0.5, 2.5)).astype(dtype)), {}


def _logsumexp(data, dtype):
    # no size-0 arrays: SciPy's own handling of them fails for some axes (tests/scipy checks
    # the ones it handles)
    if data.draw(S.st.booleans(), label="with b"):
        sa, sb = S.broadcast_shapes(data, 2, min_side=1)
        args = (S.array(data, sa, dtype), S.array(data, sb, dtype, 0.5, 2.0))
    else:
        args = (S.array(data, S.shapes(data, min_side=1), dtype),)
    rank = max(1, len(np.broadcast_shapes(*(a.shape for a in args))))
    axis = S.axis_subset(data, rank)
    return args, {"axis": axis, "keepdims": data.draw(S.st.booleans(), label="keepdims")}


def _covariance(data, dtype, d):
    a = S.array(data, (d, d), np.float64, -1.0, 1.0)
    return (a @ a.T / d + np.eye(d) * 1.5).astype(dtype)


def _psd_pinv(data, dtype):
    d = data.draw(S.st.integers(1, 3), label="d")
    return (_covariance(data, dtype, d),), {"allow_singular": False}


def _mvn(data, dtype):
    d = data.draw(S.st.integers(1, 3), label="d")
    points = data.draw(S.st.sampled_from([(0,), (1,), (3,), (2, 2)]), label="points")
    x = S.array(data, points + (d,), dtype)
    mean = S.array(data, (d,), dtype, -1.0, 1.0)
    return (x, mean, _covariance(data, dtype, d)), {"allow_singular": False}


SAMPLES = {
    sp.expit_p: _args((-3, 3)),
    sp.logit_p: _args((0.1, 0.9)),
    sp.log_expit_p: _args((-3, 3)),
    sp.erf_p: _args((-2, 2)),
    sp.erfc_p: _args((-2, 2)),
    sp.erfinv_p: _args((-0.8, 0.8)),
    sp.erfcinv_p: _args((0.2, 1.8)),
    sp.erfcx_p: _args((-1, 2)),
    sp.ndtr_p: _args((-2, 2)),
    sp.ndtri_p: _args((0.1, 0.9)),
    sp.log_ndtr_p: _args((-3, 3)),
    sp.ndtri_exp_p: _args((-3, -0.1)),
    sp.gamma_p: _args((0.5, 3)),
    sp.gammaln_p: _args((0.5, 3)),
    sp.loggamma_p: _args((0.5, 3)),
    sp.gammasgn_p: _args((0.5, 3), fd=False),
    sp.rgamma_p: _args((-2.5, 3), tol=1e-5),
    sp.psi_p: _args((0.5, 3)),
    sp.i0_p: _args((-2, 2)),
    sp.i0e_p: _args((SIGNED, 0.2, 2)),
    sp.i1_p: _args((-2, 2)),
    sp.i1e_p: _args((SIGNED, 0.2, 2)),
    sp.j0_p: _args((-3, 3)),
    sp.j1_p: _args((-3, 3)),
    sp.y0_p: _args((0.5, 3)),
    sp.y1_p: _args((0.5, 3)),
    sp.entr_p: _args((0.2, 2)),
    sp.spence_p: _args((0.2, 0.8)),
    sp.cosm1_p: _args((-3, 3)),
    sp.expm1_p: _args((-2, 2)),
    sp.log1p_p: _args((-0.5, 3)),
    sp.riemann_zeta_p: _args((INT, 2, 6), fd=False),
    sp.beta_p: _args((0.5, 3), (0.5, 3)),
    sp.betaln_p: _args((0.5, 3), (0.5, 3)),
    sp.gammainc_p: _args((INT, 1, 4), (0.2, 3)),
    sp.gammaincc_p: _args((INT, 1, 4), (0.2, 3)),
    sp.gammaincinv_p: _args((INT, 1, 4), (0.1, 0.9)),
    sp.iv_p: _args((INT, -2, 3), (0.2, 3)),
    sp.ive_p: _args((INT, -2, 3), (0.2, 3)),
    sp.jv_p: _args((INT, -2, 3), (0.2, 4)),
    sp.yn_p: _args((INT, -2, 3), (0.5, 3)),
    sp.xlogy_p: _args((-2, 2), (0.2, 3)),
    sp.xlog1py_p: _args((-2, 2), (-0.5, 2)),
    sp.rel_entr_p: _args((0.2, 2), (0.2, 2)),
    sp.kl_div_p: _args((0.2, 2), (0.2, 2)),
    sp.poch_p: _args((0.5, 3), (0.2, 2)),
    sp.hurwitz_zeta_p: _args((INT, 2, 5), (0.5, 3)),
    sp.stdtr_p: _args((INT, 1, 5), (SIGNED, 0.2, 3)),  # SciPy loses digits near t = 0
    sp.stdtrit_p: _args((INT, 1, 5), (AROUND, 0.5, 0.05, 0.4)),  # (the median is t = 0)
    sp.chdtr_p: _args((INT, 1, 5), (0.2, 4)),
    sp.chdtrc_p: _args((INT, 1, 5), (0.2, 4)),
    sp.pdtr_p: _args((INT, 0, 5), (0.2, 4)),
    sp.pdtrc_p: _args((INT, 0, 5), (0.2, 4)),
    sp.pdtrik_ceil_p: _args((0.1, 0.9), (0.5, 4), fd=False),
    sp.betainc_p: _args((INT, 1, 4), (INT, 1, 4), (0.1, 0.9)),
    sp.betaincc_p: _args((INT, 1, 4), (INT, 1, 4), (0.1, 0.9)),
    sp.beta_pdf_p: _args((0.1, 0.9), (0.5, 3), (0.5, 3)),
    sp.beta_ppf_p: _args((0.1, 0.9), (INT, 1, 4), (INT, 1, 4)),
    sp.binom_pmf_p: _args((INT, 0, 5), (INT, 5, 8), (0.1, 0.9)),
    sp.binom_cdf_p: _args((INT, 0, 5), (INT, 5, 8), (0.1, 0.9)),
    sp.binom_sf_p: _args((INT, 0, 5), (INT, 5, 8), (0.1, 0.9)),
    sp.binom_ppf_p: _args((0.1, 0.9), (INT, 5, 8), (0.1, 0.9), fd=False),
    sp.nbinom_pmf_p: _args((INT, 0, 5), (0.5, 4), (0.1, 0.9)),
    sp.nbinom_cdf_p: _args((INT, 0, 5), (INT, 1, 4), (0.1, 0.9)),
    sp.nbinom_sf_p: _args((INT, 0, 5), (INT, 1, 4), (0.1, 0.9)),
    sp.nbinom_ppf_p: _args((0.1, 0.9), (0.5, 4), (0.1, 0.9), fd=False),
    sp.cauchy_ppf_p: _args((0.2, 0.8), (-2, 2), (0.5, 2)),
    sp.log_gauss_mass_p: Sample(_log_gauss_mass),
    sp.von_mises_cdf_p: _args((INT, 1, 4), (-3, 3)),
    sp.vonmises_ppf_p: _args((0.1, 0.9), (INT, 1, 4)),
    sp.logsumexp_p: Sample(_logsumexp),
    sp.logsumexp_sign_p: Sample(_logsumexp),
    sp.psd_pinv_p: Sample(_psd_pinv, tol=1e-5),
    sp.mvn_logpdf_p: Sample(_mvn, tol=1e-5),
}
