"""Bad input raises ValueError (TypeError for non-numbers) naming the argument."""

from __future__ import annotations

import numpy as np
import pytest

import tsallis

ONE_D = [tsallis.Gaussian, tsallis.Laplace, tsallis.TruncatedParabola, tsallis.Triangular]
SPD = np.array([[2.0, 0.3], [0.3, 1.0]])


@pytest.mark.parametrize("family", ONE_D)
@pytest.mark.parametrize(
    ("loc", "scale", "match"),
    [
        (0.0, 0.0, "scale must be > 0"),
        (0.0, -1.0, "scale must be > 0"),
        (0.0, np.nan, "scale must not contain NaN"),
        (np.nan, 1.0, "loc must not contain NaN"),
        (np.inf, 1.0, "loc must be finite"),
        ([0.0, 1.0], [1.0, 2.0, 3.0], "shape mismatch"),
    ],
)
def test_univariate_constructors(family, loc, scale, match):
    with pytest.raises(ValueError, match=match):
        family(loc, scale)


@pytest.mark.parametrize("family", ONE_D)
def test_non_numbers_raise_type_error(family):
    with pytest.raises(TypeError, match="scale must be a real number"):
        family(0.0, "wide")


@pytest.mark.parametrize(
    ("alpha", "match"),
    [
        (1.0, "alpha must be > 1"),
        (0.5, "alpha must be > 1"),
        (np.nan, "alpha must not contain NaN"),
        ([1.5, 1.0], "alpha must be > 1"),
    ],
)
def test_beta_gaussian_alpha(alpha, match):
    with pytest.raises(ValueError, match=match):
        tsallis.BetaGaussian(alpha, 0.0, 1.0)


def test_beta_gaussian_shapes_and_scale():
    with pytest.raises(ValueError, match="shape mismatch"):
        tsallis.BetaGaussian([1.5, 2.0], [0.0, 1.0, 2.0], 1.0)
    with pytest.raises(ValueError, match="scale must be > 0"):
        tsallis.BetaGaussian(1.5, 0.0, 0.0)
    with pytest.raises(ValueError, match="alpha must be a scalar"):
        tsallis.BetaGaussian([1.5, 2.0], [0.0, 0.0], SPD)


@pytest.mark.parametrize(
    "make",
    [
        lambda loc, sigma: tsallis.TruncatedParaboloid(loc, sigma),
        lambda loc, sigma: tsallis.BetaGaussian(1.7, loc, sigma),
        lambda loc, sigma: tsallis.Gaussian(loc, sigma),
    ],
)
@pytest.mark.parametrize(
    ("loc", "sigma", "match"),
    [
        ([0.0, 0.0], [[1.0, 0.5], [0.0, 1.0]], "must be symmetric"),
        ([0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]], "must be positive definite"),
        ([0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]], "must be positive definite"),
        ([0.0, np.nan], SPD, "loc must not contain NaN"),
        ([0.0, 0.0], [[np.nan, 0.0], [0.0, 1.0]], "scale must not contain NaN"),
    ],
)
def test_multivariate_constructors(make, loc, sigma, match):
    with pytest.raises(ValueError, match=match):
        make(loc, sigma)


def test_multivariate_shape_errors():
    with pytest.raises(ValueError, match=r"scale must have shape \(3, 3\)"):
        tsallis.TruncatedParaboloid([0.0, 0.0, 0.0], SPD)
    with pytest.raises(ValueError, match=r"loc must have shape \(N,\)"):
        tsallis.TruncatedParaboloid([[0.0, 0.0]], SPD)
    # N-D only when loc is (N,) and scale (N, N); else 1D broadcasting, which fails here
    with pytest.raises(
        ValueError, match=r"shape mismatch: cannot broadcast loc \(3,\), scale \(2, 2\)"
    ):
        tsallis.Gaussian([0.0, 0.0, 0.0], SPD)


def test_truncated_paraboloid_needs_matrix():
    with pytest.raises(ValueError, match=r"scale \(Sigma\) must be an \(N, N\) matrix"):
        tsallis.TruncatedParaboloid(0.0, 1.0)


def test_location_scale_bad_g():
    with pytest.raises(ValueError, match=r"g: .*not convex"):
        tsallis.LocationScale("-t**2", 0.0, 1.0)
    with pytest.raises(TypeError, match="g must be a SymPy string"):
        tsallis.LocationScale(3, 0.0, 1.0)
    with pytest.raises(ValueError, match="scale must be > 0"):
        tsallis.LocationScale("t**3/6", 0.0, -1.0)


@pytest.mark.parametrize(
    "dist",
    [
        tsallis.Gaussian(0.0, 1.0),
        tsallis.TruncatedParabola(0.0, 1.0),
        tsallis.BetaGaussian(3.0, 0.0, 1.0),
        tsallis.LocationScale("t**2/2", 0.0, 1.0),
    ],
)
def test_methods_reject_bad_arguments(dist):
    with pytest.raises(ValueError, match="x must not contain NaN"):
        dist.pdf([0.0, np.nan])
    with pytest.raises(ValueError, match="x must not contain NaN"):
        dist.cdf(np.nan)
    with pytest.raises(ValueError, match=r"q must lie in \[0, 1\]"):
        dist.ppf(1.5)
    with pytest.raises(ValueError, match="q must not contain NaN"):
        dist.ppf(np.nan)
    with pytest.raises(ValueError, match="size"):
        tsallis.Gaussian([0.0, 1.0], 1.0).rvs(size=3)
    with pytest.raises(ValueError, match="random_state"):
        dist.rvs(2, random_state="seed")


def test_multivariate_methods_reject_bad_points():
    d = tsallis.TruncatedParaboloid([0.0, 0.0], SPD)
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., 2\)"):
        d.pdf([0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="x must not contain NaN"):
        d.logpdf([np.nan, 0.0])


def test_deformed_functions_reject_bad_input():
    with pytest.raises(ValueError, match="u must not contain NaN"):
        tsallis.exp_beta(np.nan, 0.5)
    with pytest.raises(ValueError, match="beta must be finite"):
        tsallis.log_beta(1.0, np.inf)
    with pytest.raises(ValueError, match="u must be >= 0"):
        tsallis.log_beta(-1.0, 0.5)
    with pytest.raises(ValueError, match="p must sum to 1"):
        tsallis.tsallis_entropy([0.5, 0.2], 2.0)
    with pytest.raises(ValueError, match="p must be >= 0"):
        tsallis.tsallis_entropy([1.5, -0.5], 2.0)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        tsallis.tsallis_entropy([0.5, 0.5], 0.0)


@pytest.mark.parametrize(
    "make",
    [tsallis.Gaussian, lambda m, s: tsallis.BetaGaussian(1.5, m, s), tsallis.TruncatedParaboloid],
)
def test_multivariate_has_no_cdf(make):
    d = make([0.0, 0.0], SPD)
    with pytest.raises(ValueError, match="cdf is defined for 1D families only"):
        d.cdf([0.0, 0.0])
    with pytest.raises(ValueError, match="ppf is defined for 1D families only"):
        d.ppf(0.5)


@pytest.mark.parametrize(
    "dist",
    [
        tsallis.Gaussian(0.3, 1.0),
        tsallis.Laplace(0.3, 1.0),
        tsallis.TruncatedParabola(0.3, 1.0),
        tsallis.Triangular(0.3, 1.0),
        tsallis.LocationScale("t**3/6", 0.3, 1.0),
        tsallis.BetaGaussian(3.0, 0.3, 1.0),
    ],
    ids=repr,
)
def test_infinite_points(dist):
    x = np.array([-np.inf, np.inf])
    np.testing.assert_array_equal(dist.pdf(x), [0.0, 0.0])
    np.testing.assert_array_equal(dist.logpdf(x), [-np.inf, -np.inf])
    np.testing.assert_array_equal(dist.cdf(x), [0.0, 1.0])


def test_nothing_is_silently_nan():
    """Valid extremes give finite, non-NaN answers."""
    for d in (
        tsallis.BetaGaussian(1.01, 0.3, 1e-6),
        tsallis.BetaGaussian(5.0, 0.3, 1e3),
        tsallis.TruncatedParabola(0.3, 1e-6),
        tsallis.Laplace(0.3, 1e-6),
    ):
        for value in (
            d.threshold,
            d.var(),
            d.tsallis_entropy(),
            d.pdf(0.3),
            d.cdf(0.3),
            d.ppf(0.25),
        ):
            assert np.isfinite(value)


@pytest.mark.parametrize(
    "dist",
    [tsallis.TruncatedParabola(), tsallis.BetaGaussian(1.5, np.zeros(2), np.eye(2))],
    ids=["1d", "2d"],
)
def test_rvs_size_takes_integers_only(dist):
    """As NumPy's Generator: floats (even 3.0) are a TypeError, negatives a ValueError."""
    for size in (2.5, (2, 2.5), np.float64(3.0), "3", True, np.array([2.0])):
        with pytest.raises(TypeError, match="size must be None, an int or a tuple of ints"):
            dist.rvs(size=size)
    with pytest.raises(ValueError, match="size must be non-negative"):
        dist.rvs(size=(2, -1))
    event = (2,) if dist is not None and getattr(dist, "dim", 1) == 2 else ()
    for size, shape in (
        (3, (3,)),
        (np.int64(2), (2,)),
        ((2, 0), (2, 0)),
        (np.array([1, 2]), (1, 2)),
    ):
        assert dist.rvs(size=size, random_state=0).shape == shape + event
