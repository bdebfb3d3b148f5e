"""Shared steps for symmetric 1D continuous-sparsemax (alpha = 2) families.

For f(t) = f_r(|t - loc|) decreasing in the distance r, p = [f - lambda]_+
has support |t - loc| < w with lambda = f_r(w). Each family then solves
mass(w) = 1 in its own way.
"""

from __future__ import annotations

import sympy as sp

from tsallis.derivations import symbols as S
from tsallis.derivations.result import Kernel

R = sp.Symbol("r", nonnegative=True)


def symmetric_integrals(f_r: sp.Expr, w: sp.Symbol) -> dict[str, sp.Expr]:
    """Integrals of p = f_r(r) - f_r(w) over |t - loc| < w (two halves).

    Returns mass, variance (second central moment) and int p^2 as functions of w.
    """
    inside = f_r - f_r.subs(R, w)
    half = {
        "mass": sp.integrate(inside, (R, 0, w)),
        "variance": sp.integrate(R**2 * inside, (R, 0, w)),
        "int_p2": sp.integrate(sp.expand(inside**2), (R, 0, w)),
    }
    return {key: sp.factor(2 * value) for key, value in half.items()}


def edge_tail_cdf(
    tail: sp.Expr, e: sp.Symbol, half_width: sp.Expr, unit: sp.Expr = 1
) -> sp.Piecewise:
    """cdf from tail(e), the mass within distance e * unit of a support edge.

    Each side is evaluated in its own edge distance, so near an edge the cdf
    is a sum of powers of a small number and carries no cancellation.
    """
    lower, upper = S.loc - half_width, S.loc + half_width
    return sp.Piecewise(
        (0, S.x <= lower),
        (tail.subs(e, (S.x - lower) / unit), S.x < S.loc),
        (1 - tail.subs(e, (upper - S.x) / unit), S.x < upper),
        (1, True),
    )


def common_kernels(
    threshold: sp.Expr,
    threshold_doc: str,
    half_width: sp.Expr,
    variance: sp.Expr,
    entropy: sp.Expr,
    pdf: sp.Expr,
    logpdf: sp.Expr,
) -> tuple[Kernel, ...]:
    """The six kernels every symmetric 1D sparsemax family emits, in one order."""
    scale, args = (S.scale,), (S.x, S.loc, S.scale)
    return (
        Kernel("threshold", scale, threshold, threshold_doc),
        Kernel("half_width", scale, half_width, "Support half-width."),
        Kernel("variance", scale, variance, "Variance."),
        Kernel("tsallis_entropy", scale, entropy, "Tsallis 2-entropy (1 - int p^2) / 2."),
        Kernel("pdf", args, pdf, "p(x)."),
        Kernel("logpdf", args, logpdf, "log p(x); -inf outside the support."),
    )


def densities(f_r: sp.Expr, threshold: sp.Expr) -> tuple[sp.Expr, sp.Expr]:
    """pdf and logpdf in x for p = [f - threshold]_+ (Piecewise, double-where safe)."""
    inside = f_r.subs(R, sp.Abs(S.x - S.loc)) - threshold
    pdf = sp.Piecewise((inside, inside > 0), (0, True))
    logpdf = sp.Piecewise((sp.log(inside), inside > 0), (-sp.oo, True))
    return pdf, logpdf
