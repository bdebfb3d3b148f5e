"""scipy.stats has the same distributions: norm, laplace, triang, beta.

The truncated parabola is a scaled Beta(2, 2) on [loc - a, loc + a]; the 1D
beta-Gaussian is a scaled Beta(k+1, k+1), k = 1/(alpha-1). Tolerances: 1e-12
relative (float64; scipy's own special functions are accurate to ~1e-14).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import tsallis

X = np.linspace(-3, 3, 41)
Q = np.array([1e-12, 1e-4, 0.05, 0.3, 0.5, 0.77, 0.999])
RTOL = 1e-12


def _compare(ours, ref, x=X, q=Q, entropy=True, power=1.0):
    """``power`` = k in p = u^k.

    logpdf = k log u; both codes round x (and loc, the edges) before forming u,
    which near an edge is a relative error eps (|x| + |low| + |high|) / gap in u,
    so the justified absolute tolerance is 16 eps (k+1) (1 + that ratio).
    """
    eps = np.finfo(float).eps
    low, high = ours.support()
    gap = np.minimum(x - low, high - x)
    inside = ref.pdf(x) > 0
    if np.isfinite(low).all():
        cond = 1 + (np.abs(x) + np.abs(low) + np.abs(high)) / np.where(gap > 0, gap, np.inf)
        log_tol = 16 * eps * (power + 1) * cond
    else:
        log_tol = 1e-13 + 4 * eps * np.abs(ref.logpdf(x))
    np.testing.assert_allclose(ours.pdf(x), ref.pdf(x), rtol=RTOL, atol=1e-300)
    error = np.abs(ours.logpdf(x)[inside] - ref.logpdf(x)[inside])
    assert (error <= (log_tol * np.ones_like(x))[inside]).all(), float(
        (error / log_tol[inside]).max()
    )
    np.testing.assert_allclose(ours.cdf(x), ref.cdf(x), rtol=1e-11, atol=1e-300)
    # scipy forms the quantile as low + (high - low) x, which rounds by eps (|low| +
    # |high|) (2.3e-13 at the median for sigma = 1e3, where ours is exactly 0)
    spread = 4 * np.finfo(float).eps * (np.abs(low) + np.abs(high)) if np.isfinite(low) else 0
    np.testing.assert_allclose(ours.ppf(q), ref.ppf(q), rtol=1e-11, atol=max(spread, 1e-300))
    np.testing.assert_allclose(ours.var(), ref.var(), rtol=RTOL)
    np.testing.assert_allclose(ours.mean(), ref.mean(), rtol=RTOL)
    if entropy:
        np.testing.assert_allclose(ours.tsallis_entropy(), ref.entropy(), rtol=RTOL)


@pytest.mark.parametrize(("loc", "scale"), [(0.3, 1.0), (-1.0, 1e-3), (2.0, 1e3)])
def test_gaussian_is_norm(loc, scale):
    _compare(tsallis.Gaussian(loc, scale), stats.norm(loc, scale), x=loc + scale * X)


@pytest.mark.parametrize(("loc", "scale"), [(0.3, 1.0), (-1.0, 1e-3), (2.0, 1e3)])
def test_laplace_is_laplace(loc, scale):
    _compare(tsallis.Laplace(loc, scale), stats.laplace(loc, scale), x=loc + scale * X)


@pytest.mark.parametrize(("loc", "b"), [(0.3, 1.0), (-1.0, 1e-3), (2.0, 1e3)])
def test_triangular_is_triang(loc, b):
    a = np.sqrt(b)
    ref = stats.triang(0.5, loc=loc - a, scale=2 * a)
    _compare(tsallis.Triangular(loc, b), ref, x=loc + a * X / 2, entropy=False)


@pytest.mark.parametrize(("loc", "sigma"), [(0.3, 1.0), (-1.0, 1e-3), (2.0, 1e3)])
def test_truncated_parabola_is_beta22(loc, sigma):
    a = (1.5 * sigma**2) ** (1 / 3)  # oracle: the half-width
    ref = stats.beta(2, 2, loc=loc - a, scale=2 * a)
    _compare(tsallis.TruncatedParabola(loc, sigma), ref, x=loc + a * X / 2, entropy=False)


@pytest.mark.parametrize("alpha", [1.01, 1.25, 4 / 3, 1.5, 2.0, 3.0, 5.0])
@pytest.mark.parametrize("sigma", [1e-3, 1.0, 1e3])
def test_beta_gaussian_is_scaled_beta(alpha, sigma):
    """loc = 0: scipy's map (x - low)/(high - low) is then well conditioned; with
    loc != 0 its rounding, raised to the power k = 100 at alpha = 1.01, costs
    scipy ~3e-12 (measured against mpmath; ours stays < 2e-13 there, see verify)."""
    ours = tsallis.BetaGaussian(alpha, 0.0, sigma)
    low, high = ours.support()
    k = 1 / (alpha - 1)
    ref = stats.beta(k + 1, k + 1, loc=low, scale=high - low)
    _compare(ours, ref, x=high * X / 2.5, entropy=False, power=k)


def test_beta_gaussian_support_matches_beta_variance_independently():
    """Var of Beta(k+1, k+1) on [-w, w] is w^2/(2k+3): ties half-width and variance."""
    for alpha in (1.01, 1.5, 5.0):
        d = tsallis.BetaGaussian(alpha, 0.0, 0.7)
        k = 1 / (alpha - 1)
        w = d.support()[1]
        assert d.var() == pytest.approx(w**2 / (2 * k + 3), rel=1e-13)


def test_multivariate_gaussian_is_scipy():
    sigma = np.array([[2.0, 0.3, 0.1], [0.3, 0.5, 0.0], [0.1, 0.0, 1.2]])
    loc = np.array([0.1, -1.0, 2.0])
    ours, ref = tsallis.Gaussian(loc, sigma), stats.multivariate_normal(loc, sigma)
    x = np.random.default_rng(0).normal(size=(20, 3))
    np.testing.assert_allclose(ours.logpdf(x), ref.logpdf(x), rtol=1e-13)
    np.testing.assert_allclose(ours.pdf(x), ref.pdf(x), rtol=1e-13)
    assert ours.tsallis_entropy() == pytest.approx(ref.entropy(), rel=1e-13)
    np.testing.assert_allclose(ours.cov(), sigma)
