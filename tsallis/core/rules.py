"""Gauss rules on [-1, 1] shared by every backend (host-side NumPy tables).

The nodes and weights are computed once per (n, exponent) in float64 with NumPy
and SciPy and cached read-only; each backend copies them into its own arrays.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import eigh_tridiagonal
from scipy.special import betaln

from tsallis.core.special import lgamma_ratio
from tsallis.core.tuning import SMOOTH_EXPONENT

FloatArray = NDArray[np.float64]

__all__ = ["gauss_jacobi", "hermite_normal", "legendre_unit", "window_rule"]


@lru_cache(maxsize=256)
def legendre_unit(n: int) -> tuple[FloatArray, FloatArray]:
    """Gauss-Legendre nodes and weights on [-1, 1] (cached; read-only)."""
    nodes, weights = np.polynomial.legendre.leggauss(n)
    nodes.flags.writeable = False
    weights.flags.writeable = False
    return nodes, weights


@lru_cache(maxsize=16)
def hermite_normal(n: int) -> tuple[FloatArray, FloatArray]:
    """Gauss-Hermite nodes and weights for E[g(Y)], Y ~ N(0, 1) (cached; read-only).

    The weights sum to 1; the rule is exact for polynomials of degree 2n - 1.
    Made exactly mirror-symmetric (node -y_i is node y_i negated, same weight).
    """
    nodes, weights = np.polynomial.hermite_e.hermegauss(n)
    nodes, weights = (nodes - nodes[::-1]) / 2, (weights + weights[::-1]) / 2
    weights = weights / math.sqrt(2 * math.pi)
    nodes.flags.writeable = False
    weights.flags.writeable = False
    return nodes, weights


# Symmetric Gauss-Jacobi (Gegenbauer) rules above this exponent come from
# ``_gegenbauer``: scipy's weights are NaN for a = 1e6 (accurate up to 1e5, measured).


@lru_cache(maxsize=256)
def _jacobi_unit(n: int, a: float, b: float) -> tuple[FloatArray, FloatArray]:
    """Gauss-Jacobi nodes and weights for int_-1^1 (1-x)^a (1+x)^b g(x) dx.

    Symmetric weights (a = b) take ``_gegenbauer`` (Golub-Welsch): against mpmath
    moments of x^0 .. x^30 it is within 1.3e-13 for a in [-0.9, 999] and n <= 64,
    where scipy's roots_jacobi is off by up to 3.5e-12 for negative a (the escort
    of alpha > 2) and NaN for a = 1e6. Other weights take ``_jacobi`` (Golub-Welsch
    too); one-sided rules with a large exponent overflow, and the callers use
    Gauss-Legendre there (SMOOTH_EXPONENT).
    """
    if a == b:
        return _gegenbauer(n, a)
    return _jacobi(n, a, b)


def gauss_jacobi(n: int, a: float, b: float) -> tuple[FloatArray, FloatArray]:
    """Nodes and weights of int_-1^1 (1 - x)^a (1 + x)^b g(x) dx (cached; read-only).

    Symmetric weights work for any exponent; a one-sided exponent above about
    1000 overflows (use Gauss-Legendre there, see SMOOTH_EXPONENT).
    """
    return _jacobi_unit(int(n), float(a), float(b))


def window_rule(n: int, m: float, left: bool, right: bool) -> tuple[FloatArray, FloatArray]:
    """The rule of a 1D window moment: (1 -+ x)^m carried at each joined edge.

    With m >= SMOOTH_EXPONENT no edge is joined (the escort vanishes to order m
    there) and one-sided rules would overflow: Gauss-Legendre, except for the
    whole support (both edges), whose symmetric rule is exact for any m.
    """
    if m >= SMOOTH_EXPONENT and left != right:
        return legendre_unit(int(n))
    return gauss_jacobi(n, m * right, m * left)


def _gegenbauer(n: int, a: float) -> tuple[FloatArray, FloatArray]:
    """n-point Gauss rule for the weight (1 - x^2)^a on [-1, 1], for any a > -1.

    Golub-Welsch on the Jacobi matrix of the orthonormal Gegenbauer polynomials
    (lambda = a + 1/2, off-diagonals b_j^2 = j (j + 2 lambda - 1) / (4 (j + lambda)
    (j + lambda - 1))) and mu_0 = B(1/2, a + 1) from the stable log-gamma ratio
    (_golub_welsch). Mirror-symmetric by construction.
    """
    lam = a + 0.5
    j = np.arange(1, n + 1, dtype=np.float64)
    off = np.empty(n)  # b_1 .. b_n; b_1 written without the 0/0 of the general term at lam = 0
    off[0] = math.sqrt(1 / (2 * (lam + 1)))
    off[1:] = np.sqrt(j[1:] * (j[1:] + 2 * lam - 1) / (4 * (j[1:] + lam) * (j[1:] + lam - 1)))
    mu0 = math.sqrt(math.pi) * math.exp(-float(lgamma_ratio(a + 1.0, 0.5)))
    return _golub_welsch(np.zeros(n), off, mu0, symmetric=True)


def _jacobi(n: int, a: float, b: float) -> tuple[FloatArray, FloatArray]:
    """n-point Gauss rule for the weight (1 - x)^a (1 + x)^b on [-1, 1], a != b, both > -1.

    Golub-Welsch on the Jacobi matrix of the orthonormal Jacobi polynomials P^(a, b)
    (s = 2j + a + b: diagonal (b^2 - a^2) / (s (s + 2)), for j = 0 (b - a) / (a + b + 2);
    off-diagonals b_j^2 = 4 j (j + a)(j + b)(j + a + b) / (s^2 (s + 1)(s - 1)), for j = 1
    4 (1 + a)(1 + b) / ((2 + a + b)^2 (3 + a + b)), without the 0/0 at a + b = -1) and
    mu_0 = 2^(a + b + 1) B(a + 1, b + 1) (_golub_welsch). Against exact moments (mpmath,
    80 digits) of x^0 .. x^(2n - 1), relative to the weight's total, n = 28 and 64,
    one-sided a in [-0.9, 30]: within 1.2e-14 (7.3e-15 at a = -0.9), where scipy's
    roots_jacobi, used before, was off by up to 3.3e-12 (a = -0.9), 1.8e-12 (-0.75, the
    escort of alpha = 5: an RBF near the support's edge took 1.3e-12 of error into rho)
    and 1.5e-13 (30); its weights next to the ends were 7.7e-12 off at -0.75, ours
    4.6e-15 (4.0e-14 where the recurrence runs in float64; 64 nodes, against a 50-digit
    Golub-Welsch). The gain is the recurrence itself, not its precision.
    """
    j = np.arange(n + 1, dtype=np.float64)
    s = 2 * j + a + b
    diag = np.empty(n)
    diag[0] = (b - a) / (a + b + 2)
    diag[1:] = (b * b - a * a) / (s[1:n] * (s[1:n] + 2))
    off = np.empty(n)  # b_1 .. b_n
    off[0] = math.sqrt(4 * (1 + a) * (1 + b) / ((2 + a + b) ** 2 * (3 + a + b)))
    jj, ss = j[2:], s[2:]
    off[1:] = np.sqrt(4 * jj * (jj + a) * (jj + b) * (jj + a + b) / (ss * ss * (ss + 1) * (ss - 1)))
    mu0 = math.exp((a + b + 1) * math.log(2) + float(betaln(a + 1, b + 1)))
    return _golub_welsch(diag, off, mu0, symmetric=False)


def _golub_welsch(
    diag: FloatArray, off: FloatArray, mu0: float, symmetric: bool
) -> tuple[FloatArray, FloatArray]:
    """Nodes and weights from the Jacobi matrix of orthonormal polynomials, ``diag`` (a_0
    .. a_(n-1)) and ``off`` (b_1 .. b_n; b_n for p_n), and the weight's total ``mu0``:
    its eigenvalues, one Newton step on p_n by the three-term recurrence, and Christoffel
    weights mu0 / sum_j p_j(x)^2 (p_0 = 1). ``symmetric``: a weight even in x, whose rule
    is made exactly mirror-symmetric."""
    n = diag.size
    x = eigh_tridiagonal(diag, off[:-1], eigvals_only=True)
    if symmetric:
        x = (x - x[::-1]) / 2
    # The recurrence in NumPy's long double (x86: a 64-bit mantissa; on Windows and
    # macOS on ARM it is the float64 itself). Weights against a 50-digit Golub-Welsch, n
    # = 64: (1 - x)^-0.75 4.6e-15 (float64 4.0e-14), (1 - x)^-0.9 7.5e-14 (1.4e-13),
    # (1 - x^2)^-0.9 4.8e-14 (1.7e-13)
    wide = np.longdouble
    x, diag, off = x.astype(wide), diag.astype(wide), off.astype(wide)

    def recurrence(t: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """p_0 .. p_(n-1) at t (rows), p_n and p_n'."""
        rows = np.empty((n + 1, t.size), dtype=t.dtype)
        slopes = np.zeros((n + 1, t.size), dtype=t.dtype)
        rows[0], previous, d_previous = 1.0, np.zeros_like(t), np.zeros_like(t)
        for k in range(n):
            before = off[k - 1] if k > 0 else 0.0
            shifted = t - diag[k]
            rows[k + 1] = (shifted * rows[k] - before * previous) / off[k]
            slopes[k + 1] = (rows[k] + shifted * slopes[k] - before * d_previous) / off[k]
            previous, d_previous = rows[k], slopes[k]
        return rows[:n], rows[n], slopes[n]

    _, value, slope = recurrence(x)
    x = x - value / slope
    if symmetric:
        x = (x - x[::-1]) / 2
    rows, _, _ = recurrence(x)
    weights = (wide(mu0) / (rows * rows).sum(0)).astype(np.float64)
    if symmetric:  # (x stays mirror-symmetric through the rounding to float64)
        weights = (weights + weights[::-1]) / 2
    return x.astype(np.float64), weights
