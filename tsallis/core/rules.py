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
from scipy.special import roots_jacobi

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
    of alpha > 2) and NaN for a = 1e6. Other weights take roots_jacobi; one-sided
    rules with a large exponent overflow, and the callers use Gauss-Legendre
    there (SMOOTH_EXPONENT).
    """
    if a == b:
        return _gegenbauer(n, a)
    nodes, weights = roots_jacobi(n, a, b)
    return nodes, weights


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
    (j + lambda - 1))), one Newton step on p_n, and Christoffel weights
    mu_0 / sum_j p_j(x)^2 with mu_0 = B(1/2, a + 1) from the stable log-gamma ratio.
    Mirror-symmetric by construction.
    """
    lam = a + 0.5
    j = np.arange(1, n + 1, dtype=np.float64)
    off = np.empty(n)  # b_1 .. b_n; b_1 written without the 0/0 of the general term at lam = 0
    off[0] = math.sqrt(1 / (2 * (lam + 1)))
    off[1:] = np.sqrt(j[1:] * (j[1:] + 2 * lam - 1) / (4 * (j[1:] + lam) * (j[1:] + lam - 1)))
    x = eigh_tridiagonal(np.zeros(n), off[:-1], eigvals_only=True)
    x = (x - x[::-1]) / 2

    def recurrence(t: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """p_0 .. p_(n-1) at t (rows), p_n and p_n'."""
        rows = np.empty((n + 1, t.size))
        slopes = np.zeros((n + 1, t.size))
        rows[0], previous, d_previous = 1.0, np.zeros_like(t), np.zeros_like(t)
        for k in range(n):
            before = off[k - 1] if k > 0 else 0.0
            rows[k + 1] = (t * rows[k] - before * previous) / off[k]
            slopes[k + 1] = (rows[k] + t * slopes[k] - before * d_previous) / off[k]
            previous, d_previous = rows[k], slopes[k]
        return rows[:n], rows[n], slopes[n]

    _, value, slope = recurrence(x)
    x = x - value / slope
    x = (x - x[::-1]) / 2
    rows, _, _ = recurrence(x)
    mu0 = math.sqrt(math.pi) * math.exp(-float(lgamma_ratio(a + 1.0, 0.5)))
    weights = mu0 / (rows * rows).sum(0)
    return x, (weights + weights[::-1]) / 2
