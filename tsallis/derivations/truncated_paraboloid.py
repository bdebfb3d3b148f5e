"""Truncated paraboloid in N dimensions with general Sigma (Martins 2020 eq 11).

p = [-lambda - d^2/2]_+: the alpha = 2, k = 1 member of the radial family,
solved from int p = 1 with N symbolic.
"""

from __future__ import annotations

import sympy as sp

from tsallis.derivations import symbols as S
from tsallis.derivations.beta_gaussian import C, solve_radial_family
from tsallis.derivations.primitives import PositivePart, expm1
from tsallis.derivations.result import FamilyDerivation, Kernel


def derive_truncated_paraboloid() -> FamilyDerivation:
    """lambda = -c with log c solved in closed form for any N and log det Sigma."""
    solved = solve_radial_family(sp.Integer(1))
    log_c = solved["log_ac"]  # alpha - 1 = 1
    c = sp.exp(log_c)
    threshold = -c
    cov_scale = solved["cov_scale"].subs(C, c)
    entropy = -expm1(log_c + sp.log(sp.factor(solved["power_ratio"] / C))) / 2
    inner = c - S.d2 / 2
    logpdf = sp.Piecewise((sp.log(inner), inner > 0), (-sp.oo, True))
    pdf = sp.Piecewise((inner, inner > 0), (0, True))
    ndargs = (S.n, S.logdet)
    kernels = (
        Kernel("threshold", ndargs, threshold, "lambda (eq 11), for Sigma with log det = logdet."),
        Kernel(
            "radius",
            ndargs,
            sp.sqrt(2 * c),
            "Support radius sqrt(-2 lambda) in the Sigma^-1 metric.",
        ),
        Kernel("cov_scale", ndargs, cov_scale, "Cov = cov_scale * Sigma."),
        Kernel("tsallis_entropy", ndargs, entropy, "Tsallis 2-entropy (1 - int p^2) / 2."),
        Kernel("logpdf_d2", (S.d2, *ndargs), logpdf, "log p at squared Mahalanobis distance d2."),
        Kernel("pdf_d2", (S.d2, *ndargs), pdf, "p at squared Mahalanobis distance d2."),
    )
    return FamilyDerivation(
        name="truncated_paraboloid",
        title="Truncated paraboloid",
        source="Martins 2020 eq (11)",
        alpha=sp.Integer(2),
        symbols={"n": S.n, "logdet": S.logdet, "d2": S.d2},
        score=-S.d2 / 2,
        density=PositivePart(inner),
        normalization=solved["normalization"],
        threshold=threshold,
        support=sp.sqrt(2 * c),
        mean=S.loc,
        variance=cov_scale,
        tsallis_entropy=entropy,
        notes=("Cov = cov_scale * Sigma; the support is the ellipsoid d^2 <= radius^2.",),
        kernels=kernels,
    )
