"""Triangular: continuous sparsemax with f = -|t-mu|/b (Martins 2020 eq 12)."""

from __future__ import annotations

import sympy as sp

from tsallis.derivations import symbols as S
from tsallis.derivations.primitives import PositivePart
from tsallis.derivations.result import FamilyDerivation, Kernel
from tsallis.derivations.sparsemax_1d import (
    R,
    common_kernels,
    densities,
    edge_tail_cdf,
    symmetric_integrals,
)


def derive_triangular() -> FamilyDerivation:
    """Solve int [f - lambda]_+ = 1 for the half-width w; cdf and ppf piecewise."""
    b = S.scale
    w = sp.Symbol("w", positive=True)
    f_r = -R / b
    integrals = symmetric_integrals(f_r, w)
    normalization = sp.Eq(integrals["mass"], 1)
    (half_width,) = sp.solve(normalization, w)
    threshold = f_r.subs(R, half_width)
    variance = sp.simplify(integrals["variance"].subs(w, half_width))
    entropy = sp.simplify((1 - integrals["int_p2"].subs(w, half_width)) / 2)
    pdf, logpdf = densities(f_r, threshold)

    # Mass within distance e of a support edge: a monomial in e.
    e = sp.Symbol("e", nonnegative=True)
    tail = sp.integrate(f_r.subs(R, half_width - e) - threshold, (e, 0, e))
    cdf = edge_tail_cdf(tail, e, half_width)
    lower_edge, upper_edge = S.loc - half_width, S.loc + half_width
    mass = sp.Symbol("m", positive=True)  # tail mass: q below the mode, 1 - q above
    (e_of_mass,) = sp.solve(sp.Eq(tail, mass), e)
    ppf = sp.Piecewise(
        (lower_edge + e_of_mass.subs(mass, S.q), S.q < sp.Rational(1, 2)),
        (upper_edge - e_of_mass.subs(mass, 1 - S.q), True),
    )
    args = (S.x, S.loc, b)
    kernels = (
        *common_kernels(
            threshold, "lambda = -1/sqrt(b) (eq 12).", half_width, variance, entropy, pdf, logpdf
        ),
        Kernel("cdf", args, cdf, "cdf (piecewise quadratic).", ("numpy",)),
        Kernel("ppf", (S.q, S.loc, b), ppf, "Quantile function.", ("numpy",)),
    )
    return FamilyDerivation(
        name="triangular",
        title="Triangular",
        source="Martins 2020 eq (12)",
        alpha=sp.Integer(2),
        symbols={"x": S.x, "loc": S.loc, "scale": b, "w": w},
        score=-sp.Abs(S.x - S.loc) / b,
        density=PositivePart(-sp.Abs(S.x - S.loc) / b - threshold),
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
