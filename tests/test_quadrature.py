"""Quadrature rules against mpmath: exactness, the expected convergence orders,
the end point counted once, and kink-aware spectral convergence."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from tsallis import quadrature as Q
from tsallis.core.rules import legendre_unit

mp.mp.dps = 30


def _rate(ns: list[int], errors: list[float]) -> float:
    """Algebraic order p from a log-log fit, error ~ C n^-p."""
    return -np.polyfit(np.log(ns), np.log(errors), 1)[0]


def test_gauss_legendre_exact_for_degree_2n_minus_1():
    rule = Q.GaussLegendre(-0.3, 2.0)
    coefficients = np.random.default_rng(0).normal(size=12)  # degree 11 = 2*6 - 1
    exact = float(mp.quad(lambda t: mp.polyval(list(map(mp.mpf, coefficients)), t), [-0.3, 2.0]))
    result = rule.integrate(lambda t: np.polyval(coefficients, t), 6)
    assert result.nodes == 6
    assert result.value == pytest.approx(exact, rel=1e-14)
    assert rule.nodes_weights(6)[0] is not Q.GaussLegendre(0, 1).nodes_weights(6)[0]
    assert legendre_unit(6) is legendre_unit(6)  # cached


def test_trapezoid_is_second_order_on_smooth_nonperiodic():
    exact = float(mp.quad(lambda t: mp.exp(t) * mp.sin(3 * t), [0, 1]))
    ns = [17, 33, 65, 129, 257]
    errors = [
        abs(Q.Trapezoid(0, 1).integrate(lambda t: np.exp(t) * np.sin(3 * t), n).value - exact)
        for n in ns
    ]
    assert 1.95 < _rate(ns, errors) < 2.05


def test_trapezoid_is_second_order_with_a_kink():
    exact = float(
        mp.quad(lambda t: abs(t - mp.mpf("0.3141")) * mp.exp(t), [0, mp.mpf("0.3141"), 1])
    )
    ns = [33, 65, 129, 257, 513, 1025]
    f = lambda t: np.abs(t - 0.3141) * np.exp(t)  # noqa: E731
    errors = [abs(Q.Trapezoid(0, 1).integrate(f, n).value - exact) for n in ns]
    assert 1.5 < _rate(ns, errors) < 2.5


def test_periodic_trapezoid_is_geometric_and_counts_the_end_once():
    exact = float(2 * mp.pi * mp.besseli(0, 1))  # int_0^2pi exp(cos t) dt
    rule = Q.PeriodicTrapezoid(0.0, 2 * np.pi)
    nodes, weights = rule.nodes_weights(8)
    assert nodes[-1] < 2 * np.pi and nodes[0] == 0.0 and weights.sum() == pytest.approx(2 * np.pi)
    errors = [
        abs(rule.integrate(lambda t: np.exp(np.cos(t)), n).value - exact) / exact
        for n in (4, 8, 12, 16)
    ]
    # geometric: each 4 more nodes gain > 3 digits (I_n(1) ~ 1/(2^n n!)), down to rounding
    assert errors[1] < 1e-3 * errors[0] and errors[2] < 1e-3 * errors[1] and errors[3] < 1e-15
    # counting 0 and 2 pi both (the published bug) is off by f(0) h
    doubled = Q.Trapezoid(0, 2 * np.pi).nodes_weights(9)[0]
    assert len(doubled) == 9 and doubled[-1] == 2 * np.pi


def test_trapezoid_on_the_line_is_exponential():
    exact = float(mp.sqrt(2 * mp.pi) * mp.mpf("0.7"))  # Gaussian with sigma 0.7
    rule = Q.TrapezoidLine(0.3, 12 * 0.7)
    f = lambda t: np.exp(-((t - 0.3) ** 2) / (2 * 0.49))  # noqa: E731
    for n in (9, 13, 17, 25, 33):
        h = 2 * 12 * 0.7 / (n - 1)
        error = abs(rule.integrate(f, n).value - exact) / exact
        # Poisson summation for a Gaussian: relative error 2 exp(-2 pi^2 sigma^2 / h^2)
        bound = 2 * np.exp(-2 * np.pi**2 * 0.49 / h**2)
        assert error <= 1.01 * bound + 1e-15, (n, error, bound)
        if n == 33:
            assert error < 1e-14


def test_kink_aware_is_spectral_on_a_sparse_density():
    """[1 + f]_+^2 with a Laplace-kernel f: kinks at the support edges and the centres."""
    centres, gammas = np.array([0.2, 0.7]), np.array([1.0, 0.8])

    def f(t):
        return (gammas[:, None] * np.exp(-np.abs(t[None, :] - centres[:, None]) / 0.1)).sum(0) - 0.9

    def f_mp(t):
        return sum(
            mp.mpf(g) * mp.exp(-abs(t - mp.mpf(c)) / mp.mpf("0.1"))
            for g, c in zip(gammas, centres, strict=True)
        ) - mp.mpf("0.9")

    alpha = 1.5  # p = [1 + 0.5 f]_+^2
    rule = Q.KinkAware.deformed(f, alpha, 0.0, 1.0, breakpoints=centres)
    assert len(rule.pieces) >= 2
    edges = rule.support_edges
    pieces_mp = []
    for edge in edges:  # the same edges, to 30 digits
        root = mp.findroot(lambda t: 1 + (alpha - 1) * f_mp(t), mp.mpf(edge))
        assert abs(float(root) - edge) < 1e-15
        pieces_mp.append(root)
    integrand_mp = lambda t: max(1 + (alpha - 1) * f_mp(t), 0) ** 2  # noqa: E731
    exact = mp.quad(integrand_mp, sorted([mp.mpf(0), mp.mpf(1), *pieces_mp, *map(mp.mpf, centres)]))
    integrand = lambda t: np.maximum(1 + (alpha - 1) * f(t), 0) ** 2  # noqa: E731
    kink = rule.integrate(integrand, 32)
    assert abs(kink.value / float(exact) - 1) < 1e-13
    assert kink.nodes == 32 * len(rule.pieces)
    uniform = Q.Trapezoid(0.0, 1.0).integrate(integrand, 10_001)
    assert abs(uniform.value / float(exact) - 1) > 1e-10  # the trapezoid is far behind at 1e4 nodes


def test_vector_valued_integrands():
    rule = Q.GaussLegendre(0, 1)
    value = rule.integrate(lambda t: np.stack([t, t**2, t**3]), 4).value
    np.testing.assert_allclose(value, [1 / 2, 1 / 3, 1 / 4], rtol=1e-15)


def test_softplus_smoothing_bias():
    v = np.array([-1.0, 0.0, 1.0])
    for s in (10.0, 100.0, 1000.0):
        smoothed = Q.softplus_positive(v, s)
        assert smoothed[1] == pytest.approx(np.log(2) / s, rel=1e-15)
        assert np.all(smoothed - np.maximum(v, 0) <= np.log(2) / s + 1e-16)
    assert np.isfinite(Q.softplus_positive(np.array([1e6, -1e6]), 1e3)).all()
    e = Q.smoothed_exp_beta(np.array([-3.0, 0.0, 1.0]), 0.5, 1e4)
    np.testing.assert_allclose(e[1:], [1.0, 2.25], rtol=1e-4)
    assert 0 <= e[0] < 1e-7  # softplus(-5000)/s underflows to 0: correct


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: Q.Trapezoid(1.0, 0.0), "a < b"),
        (lambda: Q.GaussLegendre(0.0, np.nan), "b must not contain NaN"),
        (lambda: Q.TrapezoidLine(0.0, -1.0), "half_width must be > 0"),
        (lambda: Q.PeriodicTrapezoid(0.0, 0.0), "period must be > 0"),
        (lambda: Q.Trapezoid(0.0, 1.0).nodes_weights(1), "n must be an integer >= 2"),
        (lambda: Q.GaussLegendre(0.0, 1.0).nodes_weights(2.5), "n must be an integer"),
        (lambda: Q.KinkAware.deformed(np.sin, 0.5, 0.0, 1.0), "alpha must be >= 1"),
        (lambda: Q.KinkAware(lambda t: np.full_like(t, np.nan), 0.0, 1.0), "finite values"),
        (lambda: Q.GaussLegendre(0.0, 1.0).integrate(lambda t: t[:2], 4), "shape"),
        (lambda: Q.softplus_positive(np.zeros(2), 0.0), "sharpness must be > 0"),
        (lambda: Q.smoothed_exp_beta(np.zeros(2), 1.5, 10.0), "beta must be < 1"),
    ],
)
def test_bad_input(make, match):
    with pytest.raises(ValueError, match=match):
        make()
