"""Generated code against mpmath (40 digits): a fast subset of every family by
default, the whole `tsallis verify` grid under -m slow. Limit 1e-12 (float64)."""

from __future__ import annotations

import mpmath as mp
import numpy as np
import pytest

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
    """The ground truth's radial N-D integral equals a plain 2D mpmath integral over
    x and y (non-diagonal Sigma), split exactly at the ellipse boundary."""
    mp.mp.dps = 20
    sigma = mp.matrix([[mp.mpf("1.3"), mp.mpf("0.4")], [mp.mpf("0.4"), mp.mpf("0.6")]])
    a, b, c = (lambda inv: (inv[0, 0], inv[0, 1], inv[1, 1]))(sigma**-1)
    alpha = mp.mpf("1.5")
    k = 1 / (alpha - 1)
    fam = gt.Family(score=lambda r: -(r**2) / 2, alpha=alpha, dim=2, logdet=mp.log(mp.det(sigma)))
    tau = gt.threshold(fam)
    r2 = -2 * tau  # support: a x^2 + 2 b x y + c y^2 <= r2

    def inner(x: mp.mpf) -> mp.mpf:
        disc = (b * x) ** 2 - c * (a * x * x - r2)
        if disc <= 0:
            return mp.mpf(0)
        lo, hi = (-b * x - mp.sqrt(disc)) / c, (-b * x + mp.sqrt(disc)) / c

        def p(y: mp.mpf) -> mp.mpf:
            base = (alpha - 1) * (-(a * x * x + 2 * b * x * y + c * y * y) / 2 - tau)
            return mp.power(base, k) if base > 0 else mp.mpf(0)

        return mp.quad(p, [lo, hi])

    x_edge = mp.sqrt(r2 * c / (a * c - b * b))
    total = mp.quad(inner, [-x_edge, 0, x_edge])
    assert abs(total - 1) < mp.mpf("1e-17")  # 20 digits, kink-free pieces


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
