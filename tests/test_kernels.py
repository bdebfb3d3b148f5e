"""Kernel (deformed) exponential families against mpmath; robustness; Lemma 5.3; checkers."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

from tsallis.kernels import (
    GaussianBase,
    KernelFamily,
    UniformBase,
    kernel_growth,
    prop_5_1,
    prop_5_4,
    tail_decay,
)

GAMMA, INDUCING = [1.0, -0.5, 0.8], [0.2, 0.5, 0.8]


def _truth(family: KernelFamily, g=None, dps: int = 40):
    """int_a^b q0 exp_{2-alpha}(f~) (times g) with mpmath, split at kinks and support edges."""
    with mp.workdps(dps):
        gam = [mp.mpf(float(v)) for v in family.gamma]
        ind = [mp.mpf(float(v)) for v in family.inducing]
        bw, alpha = mp.mpf(family.bandwidth), mp.mpf(family.alpha)
        a, b = mp.mpf(family.base.a), mp.mpf(family.base.b)

        def f(t):
            if family.kernel == "gaussian":
                return sum(
                    g_ * mp.exp(-((t - c) ** 2) / (2 * bw**2))
                    for g_, c in zip(gam, ind, strict=True)
                )
            return sum(g_ * mp.exp(-abs(t - c) / bw) for g_, c in zip(gam, ind, strict=True))

        if isinstance(family.base, GaussianBase):
            m, s = mp.mpf(family.base.mean), mp.mpf(family.base.std)
            lo, hi = (a - m) / s, (b - m) / s
            mass = mp.ncdf(-lo) - mp.ncdf(-hi) if lo > 0 else mp.ncdf(hi) - mp.ncdf(lo)
            q0 = lambda t: mp.npdf(t, m, s) / mass  # noqa: E731
        else:
            q0 = lambda t: 1 / (b - a)  # noqa: E731

        def e(t):
            if alpha == 1:
                return mp.exp(f(t))
            base = 1 + (alpha - 1) * f(t)
            return base ** (1 / (alpha - 1)) if base > 0 else mp.mpf(0)

        points = {a, b, *[c for c in ind if a < c < b]}
        for edge in family.support_edges:  # refined to full working precision
            points.add(mp.findroot(lambda t: 1 + (alpha - 1) * f(t), mp.mpf(edge)))
        if isinstance(family.base, GaussianBase):
            points |= {p for p in (m + k * s for k in (-4, -1, 0, 1, 4)) if a < p < b}
        pts = sorted(points)
        z = mp.quad(lambda t: q0(t) * e(t), pts)
        if g is None:
            return z, None
        return z, [mp.quad(lambda t, gj=gj: q0(t) * e(t) * gj(t), pts) / z for gj in g]


@pytest.mark.parametrize("kernel", ["gaussian", "laplace"])
@pytest.mark.parametrize("alpha", [1.0, 1.5, 2.0, 3.0])
def test_normalizer_and_rbf_expectations_match_mpmath(kernel, alpha):
    family = KernelFamily(GAMMA, INDUCING, alpha=alpha, kernel=kernel, bandwidth=0.1)
    mu, sigma = [0.2, 0.55, 0.9], [0.1, 0.05, 0.3]
    rbf = [lambda t, m=m, s=s: mp.npdf(t, m, s) for m, s in zip(mu, sigma, strict=True)]
    z, expected = _truth(family, rbf)
    assert abs(family.normalizer / float(z) - 1) < 1e-12
    np.testing.assert_allclose(
        family.expect_rbf(mu, sigma), [float(v) for v in expected], rtol=1e-12
    )
    assert family.expect(lambda t: np.ones_like(t)) == pytest.approx(1.0, abs=1e-14)


@pytest.mark.parametrize("alpha", [1.0, 1.5, 2.0])
@pytest.mark.parametrize("mean", [1 + 50 * 0.1, -50 * 0.1])
def test_gaussian_base_far_outside_stays_finite_and_exact(alpha, mean):
    """q0 with its mean 50 standard deviations outside [0, 1]: published code gets Z = 0 and NaN."""
    family = KernelFamily([1.0, 2.0], [0.3, 0.6], alpha=alpha, base=GaussianBase(mean, 0.1))
    values = [
        family.normalizer,
        *family.pdf(np.linspace(0, 1, 11)),
        *family.expect_rbf([0.5, 0.9], [0.1, 0.2]),
    ]
    assert np.isfinite(values).all()
    assert family.normalizer > 0
    z, expected = _truth(family, [lambda t: mp.npdf(t, mp.mpf("0.5"), mp.mpf("0.1"))], dps=60)
    assert abs(family.normalizer / float(z) - 1) < 1e-12
    assert family.expect_rbf([0.5], [0.1])[0] == pytest.approx(float(expected[0]), rel=1e-10)


def test_density_integrates_to_one_and_is_sparse():
    family = KernelFamily(
        [1.0, -2.0, 1.0], [0.2, 0.5, 0.8], alpha=2.0, kernel="laplace", bandwidth=0.08
    )
    assert len(family.support) >= 2  # disjoint supports
    t = np.linspace(0, 1, 2001)
    p = family.pdf(t)
    assert (p == 0).any() and (p >= 0).all()
    assert family.expect(lambda x: np.ones_like(x)) == pytest.approx(1.0, abs=1e-14)


def test_lemma_5_3_is_verified_symbolically_and_the_check_can_fail():
    from tsallis.derivations.deformed import verify_z_scaling

    assert verify_z_scaling()
    assert not verify_z_scaling(lambda alpha: 2 - alpha)  # log_{2-alpha} in place of log_alpha


def test_sufficient_condition_checkers():
    assert kernel_growth("gaussian") == 0.0 and tail_decay(GaussianBase(0.0, 1.0)) == 2.0
    assert prop_5_1(kernel_growth("laplace"), tail_decay(GaussianBase(0.0, 1.0))).holds
    verdict = prop_5_1(4.0, 1.0)  # kernel growth |t|^4 against exponential tails: no guarantee
    assert not verdict.holds and "does not exceed" in verdict.reason
    assert prop_5_1(4.0, 2.5).holds
    family = KernelFamily(
        [-40.0, 40.0, -40.0],
        [-2.5, 0.0, 2.5],
        alpha=2.0,
        base=UniformBase(-3.0, 3.0),
        bandwidth=0.5,
    )
    assert prop_5_4(family, 10.0).holds  # S inside |t| <= C_t: vacuous
    verdict = prop_5_4(family, 2.0)  # f~ <= -24 on 2 < |t| <= 3
    assert verdict.holds and "<= 0" in verdict.reason
    assert not prop_5_4(KernelFamily([1.0], [0.5], alpha=3.0), 0.1).holds  # alpha > 2
    positive = KernelFamily([1.0], [0.5], alpha=1.5, base=UniformBase(-3.0, 3.0))
    assert not prop_5_4(positive, 1.0).holds  # f~ -> 0, so (alpha-1) f~ + 1 -> 1 > 0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"gamma": [1.0, 2.0], "inducing": [0.5]}, ValueError, "one length"),
        ({"alpha": 0.5}, ValueError, "alpha must be >= 1"),
        ({"kernel": "cauchy"}, ValueError, "kernel must be one of"),
        ({"bandwidth": 0.0}, ValueError, "bandwidth must be > 0"),
        ({"gamma": [np.nan, 1.0, 1.0]}, ValueError, "gamma must not contain NaN"),
        ({"base": "uniform"}, TypeError, "base must be"),
        ({"gamma": [-50.0, -50.0, -50.0], "alpha": 2.0}, ValueError, "no mass"),
    ],
)
def test_bad_input(kwargs, error, match):
    params = {"gamma": GAMMA, "inducing": INDUCING, **kwargs}
    with pytest.raises(error, match=match):
        KernelFamily(**params)


def test_bad_bases_and_basis():
    with pytest.raises(ValueError, match="std must be > 0"):
        GaussianBase(0.0, 0.0)
    with pytest.raises(ValueError, match="a < b"):
        UniformBase(1.0, 0.0)
    family = KernelFamily(GAMMA, INDUCING)
    with pytest.raises(ValueError, match="sigma must be > 0"):
        family.expect_rbf([0.1], [-1.0])
    with pytest.raises(ValueError, match="one length"):
        family.expect_rbf([0.1, 0.2], [0.1])


@pytest.mark.parametrize("alpha", [1.0001, 1.000001])
def test_alpha_close_to_one_with_support_edges(alpha):
    """1/(alpha-1) in the thousands: the kink-aware rule uses Gauss-Legendre at the roots
    (Gauss-Jacobi weights overflow there; this raised 'the interval needs a < b')."""
    gamma = np.array([-3e4, 5.0, -3e4, 2.0, 1.0])
    family = KernelFamily(gamma, np.linspace(0, 1, 5), alpha=alpha, bandwidth=0.1)
    assert len(family.support_edges) >= (2 if alpha == 1.0001 else 0)
    rbf = [lambda t: mp.npdf(t, 0.3, 0.1)]
    _, truth = _truth(family, rbf, dps=20)
    got = family.expect_rbf([0.3], [0.1])[0]
    assert abs(got - float(truth[0])) <= 1e-12 * abs(float(truth[0]))


def test_grading_stops_below_the_root_and_never_passes_its_cap():
    """A half panel is graded GRADE_MARGIN levels past the root's (estimated) distance d
    in half-widths: the innermost piece is at most d / GRADE_RATIO^GRADE_MARGIN long, so
    16 nodes see the root from 64 of its widths; the depth never exceeds GRADE_LEVELS
    (1e-16 of the half: a piece that short holds no visible mass)."""
    from tsallis.core import kernel as core
    from tsallis.core import tuning as T

    for d in (1.0, 0.3, 1e-3, 1e-9, 1e-15):
        levels = core.grade_levels(d)
        innermost = T.GRADE_RATIO**-levels
        assert innermost <= d / T.GRADE_RATIO**T.GRADE_MARGIN or innermost < 1e-16
        assert core.grade_levels(d / T.GRADE_RATIO) in (levels + 1, T.GRADE_LEVELS)
    assert core.grade_levels(1e-300) == core.grade_levels(0.0) == T.GRADE_LEVELS
