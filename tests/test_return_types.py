"""SciPy's convention for results, the same in every family: a NumPy scalar for scalar
input, an array of the broadcast shape for array input; messages print plain values."""

from __future__ import annotations

import numpy as np
import pytest

import tsallis

UNIVARIATE = [
    lambda loc, scale: tsallis.Gaussian(loc, scale),
    lambda loc, scale: tsallis.Laplace(loc, scale),
    lambda loc, scale: tsallis.TruncatedParabola(loc, scale),
    lambda loc, scale: tsallis.Triangular(loc, scale),
    lambda loc, scale: tsallis.LocationScale("t**3/6", loc, scale),
    lambda loc, scale: tsallis.BetaGaussian(1.5, loc, scale),
]


def _results(d, x):
    low, high = d.support()
    return {
        "threshold": d.threshold,
        "pdf": d.pdf(x),
        "logpdf": d.logpdf(x),
        "cdf": d.cdf(x),
        "ppf": d.ppf(np.clip(np.abs(x) / 4, 0.01, 0.99)),
        "support low": low,
        "support high": high,
        "mean": d.mean(),
        "var": d.var(),
        "std": d.std(),
        "tsallis_entropy": d.tsallis_entropy(),
    }


@pytest.mark.parametrize("make", UNIVARIATE)
def test_univariate_scalar_in_scalar_out(make):
    for name, value in _results(make(0.3, 2.0), 0.5).items():
        assert isinstance(value, np.float64), (name, type(value))


@pytest.mark.parametrize("make", UNIVARIATE)
def test_univariate_array_in_array_out(make):
    d = make(np.array([0.3, -1.0]), 2.0)
    x = np.array([[0.5, 0.1], [1.5, -2.0], [0.0, 0.2]])
    for name, value in _results(d, x).items():
        expected = x.shape if name in ("pdf", "logpdf", "cdf", "ppf") else (2,)
        assert isinstance(value, np.ndarray) and value.shape == expected, (name, value)
    assert isinstance(d.rvs(random_state=0), np.ndarray)
    assert isinstance(make(0.3, 2.0).rvs(random_state=0), np.float64)


@pytest.mark.parametrize(
    "d",
    [
        tsallis.TruncatedParaboloid([0.0, 1.0], np.eye(2)),
        tsallis.Gaussian([0.0, 1.0], np.eye(2)),
        tsallis.BetaGaussian(1.5, [0.0, 1.0], np.eye(2)),
    ],
)
def test_multivariate_scalars_are_numpy_scalars(d):
    for value in (d.threshold, d.support(), d.tsallis_entropy(), d.pdf([0.1, 0.9])):
        assert isinstance(value, np.float64), type(value)
    assert d.pdf([[0.1, 0.9], [0.0, 0.0], [5.0, 5.0]]).shape == (3,)


def test_deformed_functions_follow_the_convention():
    assert isinstance(tsallis.exp_beta(0.5, 0.5), np.float64)
    assert isinstance(tsallis.log_beta(2.0, 1.5), np.float64)
    assert isinstance(tsallis.tsallis_entropy([0.2, 0.8], alpha=1.5), np.float64)
    assert tsallis.exp_beta([0.5, 1.0], 0.5).shape == (2,)
    assert tsallis.tsallis_entropy([[0.2, 0.8], [1.0, 0.0]], alpha=1.5).shape == (2,)


@pytest.mark.parametrize(
    ("call", "shown"),
    [
        (lambda: tsallis.Gaussian(0.0, np.float64(-1.0)), "got min -1.0"),
        (lambda: tsallis.BetaGaussian(np.float64(0.5), 0.0, 1.0), "got 0.5"),
        (lambda: tsallis.tsallis_entropy([0.2, 0.5], alpha=1.5), "[0.7, 0.7]"),
    ],
)
def test_messages_print_plain_values(call, shown):
    with pytest.raises(ValueError) as error:
        call()
    assert shown in str(error.value) and "np.float64" not in str(error.value)


def test_repr_prints_plain_parameters():
    assert repr(tsallis.TruncatedParabola(0.0, 1.0)) == "TruncatedParabola(loc=0.0, scale=1.0)"
