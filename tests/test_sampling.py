"""rvs: Kolmogorov-Smirnov against our own cdf (1D), moments and radial law (N-D).

Seeds are fixed, so the p-value thresholds (1e-3) are deterministic checks;
with n = 20000 a truncated parabola with sigma 10% too large (support 6.6%
wider) gives p ~ 1e-8 (measured), while 1-3% is not detectable at this n.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import tsallis

N = 20_000


@pytest.mark.parametrize(
    "dist",
    [
        tsallis.Gaussian(0.3, 2.0),
        tsallis.Laplace(-1.0, 0.5),
        tsallis.TruncatedParabola(0.3, 1e-3),
        tsallis.Triangular(0.0, 4.0),
        tsallis.LocationScale("t**3/6", 1.0, 0.7),
        tsallis.LocationScale("t**4/12", 0.0, 2.0),
        tsallis.BetaGaussian(1.01, 0.0, 1.0),
        tsallis.BetaGaussian(3.0, 5.0, 1e3),
    ],
    ids=lambda d: repr(d)[:40],
)
def test_ks_univariate(dist):
    sample = dist.rvs(N, random_state=1234)
    assert sample.shape == (N,)
    assert stats.kstest(sample, dist.cdf).pvalue > 1e-3
    low, high = dist.support()
    assert (sample >= low).all() and (sample <= high).all()


def test_ks_detects_a_wrong_distribution():
    """The KS check can fail: samples with sigma 10% too large are rejected."""
    sample = tsallis.TruncatedParabola(0.0, 1.1).rvs(N, random_state=1234)
    assert stats.kstest(sample, tsallis.TruncatedParabola(0.0, 1.0).cdf).pvalue < 1e-3


def test_rvs_broadcasts_over_parameters():
    d = tsallis.BetaGaussian([1.5, 2.0, 4.0], 0.0, [[1.0], [10.0]])
    assert d.rvs(random_state=0).shape == (2, 3)
    assert d.rvs(size=(5, 2, 3), random_state=0).shape == (5, 2, 3)


@pytest.mark.parametrize(("alpha", "dim"), [(2.0, 2), (1.3, 3), (5.0, 5)])
def test_multivariate_moments_and_radius(alpha, dim):
    rng = np.random.default_rng(0)
    root = rng.normal(size=(dim, dim))
    sigma = root @ root.T + dim * np.eye(dim)
    loc = rng.normal(size=dim)
    d = tsallis.BetaGaussian(alpha, loc, sigma)
    sample = d.rvs(N, random_state=7)
    assert sample.shape == (N, dim)
    d2 = d.mahalanobis2(sample)
    assert (d2 <= d.support() ** 2 * (1 + 1e-12)).all()
    # (d / R)^2 ~ Beta(N/2, k+1)
    k = 1 / (alpha - 1)
    assert stats.kstest(d2 / d.support() ** 2, stats.beta(dim / 2, k + 1).cdf).pvalue > 1e-3
    cov = d.cov()
    standard_error = np.sqrt(np.diag(cov) / N)
    assert (np.abs(sample.mean(0) - loc) < 5 * standard_error).all()
    np.testing.assert_allclose(np.cov(sample.T), cov, rtol=0.05, atol=0.05 * np.abs(cov).max())


def test_truncated_paraboloid_and_gaussian_samples():
    sigma = np.array([[2.0, 0.3], [0.3, 0.5]])
    for d in (
        tsallis.TruncatedParaboloid([1.0, -1.0], sigma),
        tsallis.Gaussian([1.0, -1.0], sigma),
    ):
        sample = d.rvs((N,), random_state=3)
        np.testing.assert_allclose(np.cov(sample.T), d.cov(), rtol=0.05, atol=0.02)
