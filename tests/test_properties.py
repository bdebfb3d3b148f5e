"""Property tests (hypothesis): normalization, non-negativity, monotone cdf,
ppf(cdf(x)) = x, translation invariance, and the deformed exp/log identities."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import integrate

import tsallis

locs = st.floats(-5, 5)
log_scales = st.floats(-3, 3)
alphas = st.floats(1.05, 6)
settings.register_profile("tsallis", max_examples=40, deadline=None)
settings.load_profile("tsallis")


def _families(loc: float, scale: float, alpha: float) -> list:
    return [
        tsallis.Gaussian(loc, scale),
        tsallis.Laplace(loc, scale),
        tsallis.TruncatedParabola(loc, scale),
        tsallis.Triangular(loc, scale),
        tsallis.LocationScale("t**3/6", loc, scale),
        tsallis.BetaGaussian(alpha, loc, scale),
    ]


@given(locs, log_scales, alphas)
def test_normalized_and_nonnegative(loc, log_scale, alpha):
    scale = 10.0**log_scale
    for d in _families(loc, scale, alpha):
        low, high = d.support()
        low, high = (max(low, loc - 60 * d.std()), min(high, loc + 60 * d.std()))
        total, _ = integrate.quad(
            lambda t, d=d: float(d.pdf(t)),
            low,
            high,
            points=[loc],
            limit=200,
            epsabs=0,
            epsrel=1e-11,
        )
        assert abs(total - 1) < 1e-8, d
        grid = np.linspace(low - d.std(), high + d.std(), 101)
        assert (d.pdf(grid) >= 0).all()
        assert (np.diff(d.cdf(grid)) >= -1e-15).all()


@given(locs, log_scales, alphas, st.floats(0.001, 0.999))
@example(0.0, 0.0, 5.263671875, 0.5)  # scipy's betaincinv(a, a, 1/2) was 1.4e-8 off
def test_ppf_inverts_cdf(loc, log_scale, alpha, q):
    scale = 10.0**log_scale
    for d in _families(loc, scale, alpha):
        assert abs(float(d.cdf(d.ppf(q))) - q) < 1e-10 * max(1.0, abs(loc) / d.std())


@given(locs, log_scales, alphas, st.floats(-3, 3), st.floats(-10, 10))
def test_translation_invariance(loc, log_scale, alpha, z, shift):
    scale = 10.0**log_scale
    for d, e in zip(
        _families(loc, scale, alpha), _families(loc + shift, scale, alpha), strict=True
    ):
        x = loc + z * d.std()
        a, b = float(d.pdf(x)), float(e.pdf(x + shift))
        # rounding of x + shift is |shift| eps, relative to the scale
        assert abs(a - b) <= 1e-9 * max(a, b) * (1 + abs(shift + loc) / d.std()) + 1e-300


@given(st.floats(-3, 3), st.floats(0.0, 2.0))
def test_log_beta_inverts_exp_beta(u, beta):
    e = float(tsallis.exp_beta(u, beta))
    if 0 < e < np.inf:
        assert abs(float(tsallis.log_beta(e, beta)) - u) <= 1e-12 * max(1.0, abs(u))


@given(st.floats(1e-3, 1e3), st.floats(-1e-7, 1e-7))
def test_log_beta_smooth_through_one(u, delta):
    near = float(tsallis.log_beta(u, 1 + delta))
    assert (
        abs(near - np.log(u)) <= 2 * abs(delta) * np.log(u) ** 2 + 1e-15 * abs(np.log(u)) + 1e-300
    )


@given(
    st.lists(st.floats(0, 1), min_size=2, max_size=8).filter(lambda v: sum(v) > 0.1),
    st.floats(0.5, 4),
)
def test_discrete_entropy_permutation_invariant_and_bounded(values, alpha):
    p = np.array(values) / np.sum(values)
    h = float(tsallis.tsallis_entropy(p, alpha))
    assert h >= -1e-15
    assert abs(h - float(tsallis.tsallis_entropy(p[::-1], alpha))) < 1e-13
    uniform = float(tsallis.tsallis_entropy(np.full(len(p), 1 / len(p)), alpha))
    assert h <= uniform + 1e-13


def test_discrete_entropy_continuous_at_alpha_one():
    p = np.array([0.1, 0.2, 0.7])
    shannon = -(p * np.log(p)).sum()
    assert abs(float(tsallis.tsallis_entropy(p, 1.0)) - shannon) < 1e-15
    for delta in (1e-4, 1e-8, 1e-12):
        assert abs(float(tsallis.tsallis_entropy(p, 1 + delta)) - shannon) < 2 * delta
    # two sums of three rounded terms (ours sums p (1 - p) / 2): a few ulps apart, and
    # which ulp depends on the SIMD width of NumPy's loops (equal with AVX2, not AVX-512)
    quadratic = (1 - (p**2).sum()) / 2
    assert abs(float(tsallis.tsallis_entropy(p, 2.0)) - quadratic) <= 4 * np.finfo(float).eps


def test_custom_g_family_is_a_density():
    """A g without a closed-form root (cosh) works end to end: normalized, cdf/ppf consistent."""
    d = tsallis.LocationScale("cosh(t)", 0.2, 0.5)
    low, high = d.support()
    total, _ = integrate.quad(
        lambda t: float(d.pdf(t)), low, high, points=[0.2], epsabs=0, epsrel=1e-12
    )
    assert abs(total - 1) < 1e-10
    q = np.array([0.01, 0.3, 0.5, 0.9])
    np.testing.assert_allclose(d.cdf(d.ppf(q)), q, rtol=1e-12)
    assert abs(float(d.threshold) + np.sinh(float(d.support()[1] - 0.2) / 0.5) / 0.5) < 1e-12
