"""Truncated parabola: continuous sparsemax with f = -(t-mu)^2/(2 sigma^2) (Martins 2020 eq 10)."""

from __future__ import annotations

import sympy as sp

from tsallis.derivations import symbols as S
from tsallis.derivations.lemmas import assert_unit, symmetric_beta_cdf
from tsallis.derivations.primitives import PositivePart
from tsallis.derivations.result import FamilyDerivation, Kernel
from tsallis.derivations.sparsemax_1d import R, common_kernels, densities, symmetric_integrals


def derive_truncated_parabola() -> FamilyDerivation:
    """Solve int [f - lambda]_+ = 1 for the support half-width w, then lambda = f(w)."""
    w = sp.Symbol("w", positive=True)
    f_r = -(R**2) / (2 * S.scale**2)
    integrals = symmetric_integrals(f_r, w)
    normalization = sp.Eq(integrals["mass"], 1)
    (half_width,) = sp.solve(normalization, w)
    threshold = f_r.subs(R, half_width)
    variance = sp.simplify(integrals["variance"].subs(w, half_width))
    int_p2 = sp.simplify(integrals["int_p2"].subs(w, half_width))
    entropy = sp.simplify((1 - int_p2) / 2)
    pdf, logpdf = densities(f_r, threshold)
    density = f_r.subs(R, S.x - S.loc) - threshold
    cdf, ppf, unit = symmetric_beta_cdf(density, S.x, S.loc, half_width, 1)
    assert_unit(unit, [{S.scale: "0.3"}, {S.scale: "5"}])
    args = (S.x, S.loc, S.scale)
    kernels = (
        *common_kernels(threshold, "lambda (eq 10).", half_width, variance, entropy, pdf, logpdf),
        Kernel("cdf", args, cdf, "cdf: a scaled Beta(2, 2).", ("numpy",)),
        Kernel("ppf", (S.q, S.loc, S.scale), ppf, "Quantile function.", ("numpy",)),
    )
    return FamilyDerivation(
        name="truncated_parabola",
        title="Truncated parabola",
        source="Martins 2020 eq (10)",
        alpha=sp.Integer(2),
        symbols={"x": S.x, "loc": S.loc, "scale": S.scale, "w": w},
        score=-((S.x - S.loc) ** 2) / (2 * S.scale**2),
        density=PositivePart(density),
        normalization=normalization,
        threshold=threshold,
        support=half_width,
        mean=S.loc,
        variance=variance,
        tsallis_entropy=entropy,
        cdf=cdf,
        ppf=ppf,
        kernels=kernels,
    )
