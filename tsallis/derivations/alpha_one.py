"""alpha = 1 families: Gaussian (1D and N-D) and Laplace (Martins 2020 section 2.2).

p = exp(f - A) with A = log int exp(f) the log-partition; the threshold of
these families is A, and the Tsallis 1-entropy is Shannon's, A - E[f].
"""

from __future__ import annotations

import sympy as sp

from tsallis.derivations import symbols as S
from tsallis.derivations.lemmas import gaussian_radial_moment, radial_mass, tidy_log
from tsallis.derivations.result import FamilyDerivation, Kernel

_T = sp.Symbol("t", real=True)


def _expect(weight: sp.Expr, pdf_t: sp.Expr, pieces: list[tuple[sp.Expr, sp.Expr]]) -> sp.Expr:
    """E[weight] under pdf_t, integrating piece by piece (split at kinks)."""
    return sp.simplify(sum(sp.integrate(weight * pdf_t, (_T, lo, hi)) for lo, hi in pieces))


def derive_gaussian() -> FamilyDerivation:
    """Gaussian: 1D from f = -(t-mu)^2/(2 sigma^2); N-D through the radial reduction."""
    f_t = -((_T - S.loc) ** 2) / (2 * S.scale**2)
    pieces = [(-sp.oo, S.loc), (S.loc, sp.oo)]
    partition = sp.simplify(sum(sp.integrate(sp.exp(f_t), (_T, lo, hi)) for lo, hi in pieces))
    log_partition = tidy_log(sp.log(partition), sp.log(S.scale))
    pdf_t = sp.exp(f_t - log_partition)
    variance = _expect((_T - S.loc) ** 2, pdf_t, pieces)
    shannon = sp.expand(log_partition - _expect(f_t, pdf_t, pieces))
    cdf = sp.simplify(sp.integrate(pdf_t, (_T, -sp.oo, S.x)).rewrite(sp.erfc))
    (ppf,) = sp.solve(sp.Eq(cdf, S.q), S.x)
    logpdf = f_t.subs(_T, S.x) - log_partition

    mass_nd = radial_mass(S.n, S.logdet, gaussian_radial_moment(S.n))
    log_partition_nd = tidy_log(sp.log(mass_nd), S.logdet)
    second = radial_mass(S.n, S.logdet, gaussian_radial_moment(S.n + 2)) / mass_nd
    mean_d2 = sp.gammasimp(second)  # E[d^2] = N: Cov = Sigma
    shannon_nd = sp.expand(log_partition_nd + mean_d2 / 2)
    args = (S.x, S.loc, S.scale)
    kernels = (
        Kernel("log_partition", (S.scale,), log_partition, "A = log(sqrt(2 pi) sigma)."),
        Kernel("variance", (S.scale,), variance, "Variance sigma^2."),
        Kernel("entropy", (S.scale,), shannon, "Shannon entropy."),
        Kernel("logpdf", args, logpdf, "log p(x)."),
        Kernel("pdf", args, sp.exp(logpdf), "p(x)."),
        Kernel("cdf", args, cdf, "cdf (erfc form, accurate in the lower tail)."),
        Kernel("ppf", (S.q, S.loc, S.scale), ppf, "Quantile function.", ("numpy",)),
        Kernel("log_partition_nd", (S.n, S.logdet), log_partition_nd, "A in N dimensions."),
        Kernel("entropy_nd", (S.n, S.logdet), shannon_nd, "Shannon entropy in N dimensions."),
        Kernel(
            "logpdf_d2",
            (S.d2, S.n, S.logdet),
            -S.d2 / 2 - log_partition_nd,
            "log p at squared Mahalanobis distance d2.",
        ),
    )
    return FamilyDerivation(
        name="gaussian",
        title="Gaussian",
        source="Martins 2020 section 2.2",
        alpha=sp.Integer(1),
        symbols={"x": S.x, "loc": S.loc, "scale": S.scale, "n": S.n, "logdet": S.logdet},
        score=f_t.subs(_T, S.x),
        density=sp.exp(logpdf),
        normalization=sp.Eq(sp.Integral(sp.exp(f_t), (_T, -sp.oo, sp.oo)), partition),
        threshold=log_partition,
        support=sp.oo,
        mean=S.loc,
        variance=variance,
        tsallis_entropy=shannon,
        log_partition=log_partition,
        shannon_entropy=shannon,
        cdf=cdf,
        ppf=ppf,
        notes=("N-D: Cov = Sigma (E[d^2] = N).",),
        kernels=kernels,
    )


def derive_laplace() -> FamilyDerivation:
    """Laplace: f = -|t-mu|/b, integrated on each side of the kink at mu."""
    b = S.scale
    left_f, right_f = (_T - S.loc) / b, -(_T - S.loc) / b
    partition = sp.integrate(sp.exp(left_f), (_T, -sp.oo, S.loc)) + sp.integrate(
        sp.exp(right_f), (_T, S.loc, sp.oo)
    )
    log_partition = tidy_log(sp.log(partition), sp.log(b))
    left_p, right_p = sp.exp(left_f - log_partition), sp.exp(right_f - log_partition)

    def expect(weight_left: sp.Expr, weight_right: sp.Expr) -> sp.Expr:
        return sp.simplify(
            sp.integrate(weight_left * left_p, (_T, -sp.oo, S.loc))
            + sp.integrate(weight_right * right_p, (_T, S.loc, sp.oo))
        )

    variance = expect((_T - S.loc) ** 2, (_T - S.loc) ** 2)
    shannon = sp.expand(log_partition - expect(left_f, right_f))
    lower = sp.simplify(sp.integrate(left_p, (_T, -sp.oo, S.x)))
    upper = sp.simplify(sp.integrate(right_p, (_T, S.x, sp.oo)))
    cdf = sp.Piecewise((lower, S.x < S.loc), (1 - upper, True))
    mass = sp.Symbol("m", positive=True)
    (x_lower,) = sp.solve(sp.Eq(lower, mass), S.x)
    (x_upper,) = sp.solve(sp.Eq(upper, mass), S.x)
    ppf = sp.Piecewise(
        (sp.expand(x_lower.subs(mass, S.q)), S.q < sp.Rational(1, 2)),
        (sp.expand(x_upper.subs(mass, 1 - S.q)), True),
    )
    logpdf = -sp.Abs(S.x - S.loc) / b - log_partition
    args = (S.x, S.loc, b)
    kernels = (
        Kernel("log_partition", (b,), log_partition, "A = log(2 b)."),
        Kernel("variance", (b,), variance, "Variance 2 b^2."),
        Kernel("entropy", (b,), shannon, "Shannon entropy."),
        Kernel("logpdf", args, logpdf, "log p(x)."),
        Kernel("pdf", args, sp.exp(logpdf), "p(x)."),
        Kernel("cdf", args, cdf, "cdf.", ("numpy",)),
        Kernel("ppf", (S.q, S.loc, b), ppf, "Quantile function.", ("numpy",)),
    )
    return FamilyDerivation(
        name="laplace",
        title="Laplace",
        source="Martins 2020 section 2.2",
        alpha=sp.Integer(1),
        symbols={"x": S.x, "loc": S.loc, "scale": b},
        score=-sp.Abs(S.x - S.loc) / b,
        density=sp.exp(logpdf),
        normalization=sp.Eq(
            sp.Integral(sp.exp(-sp.Abs(_T - S.loc) / b), (_T, -sp.oo, sp.oo)), partition
        ),
        threshold=log_partition,
        support=sp.oo,
        mean=S.loc,
        variance=variance,
        tsallis_entropy=shannon,
        log_partition=log_partition,
        shannon_entropy=shannon,
        cdf=cdf,
        ppf=ppf,
        kernels=kernels,
    )
