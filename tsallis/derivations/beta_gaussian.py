"""beta-Gaussian (q-Gaussian) for general alpha > 1, in N dimensions.

Definition (the beta-Gaussian, which generalizes Martins 2020 eqs 10 and 11 to any
alpha > 1): p(t) = [(alpha-1)(c - d^2/2)]_+^(1/(alpha-1)), with
d^2 = (t-mu)^T Sigma^-1 (t-mu), c = -tau, i.e. exp_{2-alpha}(f - A) for f = -d^2/2.
The normalizer is solved from int p = 1 in log form, so that float32 and extreme
sigma, alpha stay in range.
"""

from __future__ import annotations

import sympy as sp

from tsallis.derivations import symbols as S
from tsallis.derivations.lemmas import (
    assert_unit,
    radial_mass,
    radial_power_integral,
    symmetric_beta_cdf,
    tidy_log,
)
from tsallis.derivations.primitives import PositivePart, expm1, log1p
from tsallis.derivations.result import FamilyDerivation, Kernel

SOURCE = "derivations/beta_gaussian.py"


def solve_radial_family(k: sp.Expr) -> dict[str, sp.Expr]:
    """Solve int p = 1 for p = [(c - d^2/2)/k]_+^k in R^n; return closed forms.

    Keys: ``normalization`` (the equation), ``log_ac`` = log((alpha-1) c),
    and, as functions of the symbol ``C`` (= c): ``cov_scale`` (Cov =
    cov_scale * Sigma) and ``power_ratio`` (int p^alpha), in k, n, logdet.
    """
    c = sp.Symbol("c", positive=True)
    ell = sp.Symbol("ell", real=True)  # log c
    am1 = 1 / k  # alpha - 1
    mass = radial_mass(S.n, S.logdet, am1**k * radial_power_integral(c, k, S.n))
    log_mass = sp.expand_log(sp.log(mass.subs(c, sp.exp(ell))), force=True)
    (ell_solution,) = sp.solve(log_mass, ell)
    second = radial_mass(S.n, S.logdet, am1**k * radial_power_integral(c, k, S.n + 2))
    power = radial_mass(S.n, S.logdet, am1 ** (k + 1) * radial_power_integral(c, k + 1, S.n))
    # Dividing by the mass (= 1) cancels the Gamma factors exactly.
    return {
        "normalization": sp.Eq(mass, 1),
        "log_ac": tidy_log(sp.log(am1) + ell_solution, sp.log(k), S.logdet),
        "cov_scale": sp.factor(sp.gammasimp(second / mass / S.n)).subs(c, C),
        "power_ratio": sp.factor(sp.gammasimp(power / mass)).subs(c, C),
    }


C = sp.Symbol("C", positive=True)
LOG_AC = sp.Symbol("log_ac", real=True)  # log((alpha - 1) c), computed once per distribution
LOG_MODE = sp.Symbol("log_mode", real=True)  # log p at the mode
INV_RADIUS2 = sp.Symbol("inv_radius2", positive=True)  # 1 / R^2


def radial_log_density(kk: sp.Expr, alpha: sp.Expr) -> dict[str, sp.Expr]:
    """log p = log p(mode) + k log1p(-d^2 / R^2), with p(mode) and 1/R^2 from log_ac.

    p = [e^log_ac - (alpha-1) d^2/2]^k factors as p(mode) (1 - d^2/R^2)^k. A
    distribution computes log p(mode), 1/R^2 and k once (in float64 if it likes)
    and log_prob is then a few ops per value in the value's dtype. The log1p
    form keeps float32 exact as alpha -> 1, where k log(inner) would multiply
    the rounding of inner by k = 1/(alpha-1). Checked against the direct form.
    """
    inner = sp.exp(LOG_AC) - (alpha - 1) * S.d2 / 2
    log_mode = sp.expand_log(kk * sp.log(inner.subs(S.d2, 0)), force=True)
    inv_radius2 = sp.simplify(-sp.diff(inner, S.d2) / inner.subs(S.d2, 0))
    u = S.d2 * INV_RADIUS2
    # outside first, on a non-strict condition: NaN fails it, so log_prob(NaN) is NaN
    logpdf = sp.Piecewise((-sp.oo, u >= 1), (LOG_MODE + S.k * log1p(-u), True))
    # the factored form is the direct one: compare at 30 digits inside the support
    values = {LOG_MODE: log_mode, INV_RADIUS2: inv_radius2, S.k: kk}
    direct = kk * sp.log(inner)
    for a, ell, d2 in (("1.3", "0.4", "0.5"), ("2.5", "-3", "0.01"), ("1.001", "0.2", "0.3")):
        point = {alpha: sp.Rational(a), LOG_AC: sp.Rational(ell), S.d2: sp.Rational(d2)}
        got = (LOG_MODE + S.k * sp.log(1 - u)).subs(values).subs(point)
        gap = sp.N(got - direct.subs(point), 30)
        if abs(gap) > sp.Float("1e-25") or not sp.N(u.subs(values).subs(point)) < 1:
            raise AssertionError(f"radial log density off by {gap} at {point}")
    return {"log_mode": log_mode, "inv_radius2": inv_radius2, "logpdf": logpdf}


def derive_beta_gaussian() -> FamilyDerivation:
    """Threshold, radius, covariance, Tsallis entropy and 1D cdf for alpha > 1."""
    k, alpha = S.k, S.alpha
    solved = solve_radial_family(k)
    to_alpha = {k: 1 / (alpha - 1)}
    log_ac = tidy_log(solved["log_ac"].subs(to_alpha), sp.log(alpha - 1), S.logdet)
    c = sp.exp(log_ac) / (alpha - 1)
    threshold = -c
    radius = sp.sqrt(2 * c)
    cov_scale = solved["cov_scale"].subs(to_alpha).subs(C, c)
    # int p^alpha = (alpha-1) c * ratio: take its log so that 1 - int p^alpha
    # becomes -expm1(...), exact as alpha -> 1.
    log_int = log_ac + sp.log(sp.factor(solved["power_ratio"].subs(to_alpha) / ((alpha - 1) * C)))
    entropy = -expm1(log_int) / (alpha * (alpha - 1))
    inner = sp.exp(log_ac) - (alpha - 1) * S.d2 / 2  # (alpha-1)(c - d^2/2)
    kk = 1 / (alpha - 1)
    logpdf_d2 = sp.Piecewise((kk * sp.log(inner), inner > 0), (-sp.oo, True))
    radial = radial_log_density(kk, alpha)
    pdf_d2 = sp.Piecewise((inner**kk, inner > 0), (0, True))

    one_d = {S.n: 1, S.logdet: 2 * sp.log(S.scale)}
    z2 = ((S.x - S.loc) / S.scale) ** 2
    log_ac_1d = tidy_log(log_ac.subs(one_d), sp.log(alpha - 1), sp.log(S.scale))
    c_1d = sp.exp(log_ac_1d) / (alpha - 1)
    half_width = S.scale * sp.sqrt(2 * c_1d)
    inner_1d = sp.exp(log_ac_1d) - (alpha - 1) * z2 / 2
    density_1d = inner_1d**kk
    cdf, ppf, unit = symmetric_beta_cdf(density_1d, S.x, S.loc, half_width, kk)
    assert_unit(
        unit, [{alpha: a, S.scale: s} for a, s in (("1.3", "0.7"), ("2.5", "3"), ("7", "0.001"))]
    )

    entropy_1d = entropy.subs(one_d)
    variance_1d = S.scale**2 * cov_scale.subs(one_d)
    kernels = (
        Kernel(
            "threshold",
            (alpha, S.n, S.logdet),
            threshold,
            "tau = -c, for Sigma with log det = logdet.",
        ),
        Kernel(
            "log_ac",
            (alpha, S.n, S.logdet),
            log_ac,
            "log((alpha - 1) c), the stable form of the normalizer.",
        ),
        Kernel(
            "radius",
            (alpha, S.n, S.logdet),
            radius,
            "Support radius sqrt(2c) in the Sigma^-1 metric.",
        ),
        Kernel("cov_scale", (alpha, S.n, S.logdet), cov_scale, "Cov = cov_scale * Sigma."),
        Kernel(
            "tsallis_entropy",
            (alpha, S.n, S.logdet),
            entropy,
            "Tsallis alpha-entropy -Omega_alpha (eq 6).",
        ),
        Kernel(
            "logpdf_d2",
            (S.d2, alpha, S.n, S.logdet),
            logpdf_d2,
            "log p at squared Mahalanobis distance d2.",
        ),
        Kernel(
            "pdf_d2", (S.d2, alpha, S.n, S.logdet), pdf_d2, "p at squared Mahalanobis distance d2."
        ),
        Kernel("log_ac_1d", (alpha, S.scale), log_ac_1d, "log((alpha - 1) c) in 1D."),
        Kernel(
            "log_mode_at",
            (alpha, LOG_AC),
            radial["log_mode"],
            "log p at the mode, from log_ac = log((alpha - 1) c).",
        ),
        Kernel(
            "inv_radius2_at",
            (alpha, LOG_AC),
            radial["inv_radius2"],
            "1 / R^2 (R the support radius in the Sigma^-1 metric), from log_ac.",
        ),
        Kernel(
            "logpdf_radial",
            (S.d2, LOG_MODE, INV_RADIUS2, k),
            radial["logpdf"],
            "log p at squared distance d2 from log_mode, inv_radius2 and k = 1/(alpha-1).",
        ),
        Kernel("threshold_1d", (alpha, S.scale), -c_1d, "tau in 1D."),
        Kernel("half_width_1d", (alpha, S.scale), half_width, "Support half-width in 1D."),
        Kernel("variance_1d", (alpha, S.scale), variance_1d, "Variance in 1D."),
        Kernel("tsallis_entropy_1d", (alpha, S.scale), entropy_1d, "Tsallis alpha-entropy in 1D."),
        Kernel(
            "logpdf_1d",
            (S.x, alpha, S.loc, S.scale),
            logpdf_d2.subs(one_d).subs(S.d2, z2),
            "log p(x) in 1D.",
        ),
        Kernel(
            "pdf_1d", (S.x, alpha, S.loc, S.scale), pdf_d2.subs(one_d).subs(S.d2, z2), "p(x) in 1D."
        ),
        Kernel(
            "cdf_1d",
            (S.x, alpha, S.loc, S.scale),
            cdf,
            "cdf in 1D (regularized incomplete beta).",
            ("numpy",),
        ),
        Kernel("ppf_1d", (S.q, alpha, S.loc, S.scale), ppf, "Quantile function in 1D.", ("numpy",)),
    )
    return FamilyDerivation(
        name="beta_gaussian",
        title="beta-Gaussian, general alpha > 1",
        source="generalizes Martins 2020 eqs (10), (11)",
        alpha=alpha,
        symbols={
            "alpha": alpha,
            "n": S.n,
            "logdet": S.logdet,
            "d2": S.d2,
            "x": S.x,
            "loc": S.loc,
            "scale": S.scale,
            "k": k,
            "log_ac": LOG_AC,
            "log_mode": LOG_MODE,
            "inv_radius2": INV_RADIUS2,
        },
        score=-S.d2 / 2,
        density=PositivePart(inner) ** kk,
        normalization=solved["normalization"].subs(to_alpha),
        threshold=threshold,
        support=radius,
        mean=S.loc,
        variance=cov_scale,
        tsallis_entropy=entropy,
        cdf=cdf,
        ppf=ppf,
        notes=("N-D support: d^2 <= radius^2; (d/radius)^2 ~ Beta(N/2, k+1).",),
        kernels=kernels,
    )
