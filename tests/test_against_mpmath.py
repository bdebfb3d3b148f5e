"""Generated code against mpmath (40 digits): a fast subset of every family by
default, the whole `tsallis verify` grid under -m slow. Limit 1e-12 (float64)."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest
from scipy import integrate

import tsallis
from tsallis import groundtruth as gt
from tsallis import verify

LIMIT = verify.LIMIT
FAST_1D = [
    verify.Case1D(name, score, alpha, s, ())
    for name, score, alpha in [
        ("truncated_parabola", "quadratic", 2.0),
        ("triangular", "abs", 2.0),
        ("location_scale_cubic", "cubic_ls", 2.0),
        ("location_scale_quadratic", "quadratic_ls", 2.0),
    ]
    for s in (1e-6, 1e3)
] + [
    verify.Case1D("gaussian", "quadratic", 1.0, 1e-6, (), compact=False),
    verify.Case1D("laplace", "abs", 1.0, 1e3, (), compact=False),
    verify.Case1D("beta_gaussian", "quadratic", 1.01, 1e-6, (1.01,), "_1d"),
    verify.Case1D("beta_gaussian", "quadratic", 5.0, 1e3, (5.0,), "_1d"),
]
FAST_ND = [
    verify.CaseND("truncated_paraboloid", 2.0, 1e-6, 5),
    verify.CaseND("gaussian", 1.0, 1e3, 3),
    verify.CaseND("beta_gaussian", 1.01, 1e-6, 5),
    verify.CaseND("beta_gaussian", 4 / 3, 1.0, 2),
]


def _assert_all(checks: list[verify.Check]) -> None:
    assert checks
    bad = [c for c in checks if not c.error <= LIMIT]
    assert not bad, bad[:5]


@pytest.mark.parametrize("case", FAST_1D + FAST_ND, ids=lambda c: f"{c.name}-{c.alpha}-{c.scale}")
def test_fast_subset(case):
    _assert_all(verify._run(case, 40))


def test_deformed_against_definitions():
    _assert_all(verify._run("deformed", 40))


@pytest.mark.slow
def test_full_grid():
    checks = verify.run(dps=40)
    _assert_all(checks)
    assert len(checks) > 4000


def test_verify_fails_on_a_wrong_value(monkeypatch: pytest.MonkeyPatch):
    """The harness can fail: a threshold off by 1e-10 relative is reported."""
    from tsallis._generated import truncated_parabola

    real = truncated_parabola.threshold
    monkeypatch.setattr(truncated_parabola, "threshold", lambda s: real(s) * (1 + 1e-10))
    checks = verify.run_1d(verify.Case1D("truncated_parabola", "quadratic", 2.0, 1.0, ()))
    worst = max(c.error for c in checks if c.quantity == "threshold" and c.backend == "numpy")
    assert 5e-11 < worst < 2e-10


def test_radial_reduction_matches_cartesian_2d():
    """The ground truth's radial N-D integral equals a plain 2D integral (non-diagonal Sigma)."""
    sigma = np.array([[1.3, 0.4], [0.4, 0.6]])
    logdet = float(np.linalg.slogdet(sigma)[1])
    inverse = np.linalg.inv(sigma)
    alpha = 1.5
    mp.mp.dps = 30
    fam = gt.Family(score=lambda r: -(r**2) / 2, alpha=mp.mpf(alpha), dim=2, logdet=mp.mpf(logdet))
    tau = float(gt.threshold(fam))
    k = 1 / (alpha - 1)

    def p(y: float, x: float) -> float:
        d2 = np.array([x, y]) @ inverse @ np.array([x, y])
        base = (alpha - 1) * (-d2 / 2 - tau)
        return base**k if base > 0 else 0.0

    radius = np.sqrt(-2 * tau) * np.sqrt(np.linalg.eigvalsh(sigma).max())
    total, _ = integrate.dblquad(p, -radius, radius, -radius, radius, epsabs=1e-11, epsrel=1e-11)
    assert abs(total - 1) < 1e-7  # scipy's 2D adaptive rule on a kinked integrand


@pytest.mark.parametrize(
    "dist",
    [
        tsallis.Gaussian(0.3, 2.0),
        tsallis.Laplace(0.3, 1e-3),
        tsallis.TruncatedParabola(-1.0, 1e3),
        tsallis.Triangular(0.3, 1e-6),
        tsallis.LocationScale("t**4/12", 0.3, 0.5),
        tsallis.BetaGaussian(2.5, 0.3, 1e-3),
        tsallis.BetaGaussian(1.25, [0.0, 1.0, 2.0], np.diag([1e-6, 2e-6, 5e-7])),
        tsallis.TruncatedParaboloid([0.0, 1.0], [[2.0, 0.3], [0.3, 0.5]]),
        tsallis.Gaussian([0.0, 1.0], [[2.0, 0.3], [0.3, 0.5]]),
    ],
    ids=repr,
)
def test_summary_of_distribution_objects(dist):
    """groundtruth.summary(dist) from the definition alone matches the public API."""
    truth = gt.summary(dist, dps=30)
    assert abs(truth["mass"].value - 1) < 1e-25
    assert truth["mass"].error < 1e-20
    assert float(abs(truth["threshold"].value / mp.mpf(float(dist.threshold)) - 1)) < 1e-12
    assert float(abs(truth["entropy"].value / mp.mpf(float(dist.tsallis_entropy())) - 1)) < 1e-12
    if hasattr(dist, "cov"):
        factor = float(dist.cov()[0, 0] / dist.scale[0, 0])
        assert float(abs(truth["variance"].value / mp.mpf(factor) - 1)) < 1e-12
    else:
        assert float(abs(truth["variance"].value / mp.mpf(float(dist.var())) - 1)) < 1e-12
        assert float(abs(truth["mean"].value - mp.mpf(float(dist.loc)))) < 1e-12 * max(
            1, abs(float(dist.loc))
        )


def test_groundtruth_cdf_beyond_the_support():
    mp.mp.dps = 30
    family = gt.Family(score=lambda r: -(r**2) / 2, alpha=mp.mpf(2), loc=mp.mpf("0.3"))
    tau = gt.threshold(family)
    width = gt.edge(family, tau)
    assert gt.cdf(family, tau, family.loc - 2 * width) == 0
    assert gt.cdf(family, tau, family.loc + 2 * width) == 1
    assert abs(gt.cdf(family, tau, family.loc) - mp.mpf(1) / 2) < 1e-28
    left = gt.cdf(family, tau, family.loc - width / 2)
    right = gt.cdf(family, tau, family.loc + width / 2)
    assert abs(left + right - 1) < 1e-28  # symmetry


def test_summary_rejects_batches():
    with pytest.raises(ValueError, match="scalar parameters"):
        gt.summary(tsallis.Gaussian([0.0, 1.0], 1.0))
