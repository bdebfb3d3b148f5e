"""Elementary helpers for generated NumPy code that scipy.special lacks."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import gammaln, ndtr

# Below this |x| a Taylor polynomial is used; its truncation error is < 1e-18,
# and autograd of the direct quotient would cancel there.
_SERIES_CUTOFF = 1e-2
_LOG1PREL_TERMS = [(-1) ** n / (n + 1) for n in range(10)]


def _horner(x: NDArray[np.floating], coefficients: list[float]) -> NDArray[np.floating]:
    out = coefficients[-1] + 0 * x
    for c in reversed(coefficients[:-1]):
        out = out * x + c
    return out


def log1prel(x: ArrayLike) -> NDArray[np.floating]:
    """log(1 + x) / x, equal to 1 at x = 0 (x > -1)."""
    x = np.asarray(x, dtype=np.result_type(x, np.float64))
    small = np.abs(x) < _SERIES_CUTOFF
    safe = np.where(small, 1.0, x)
    return np.where(small, _horner(x, _LOG1PREL_TERMS), np.log1p(safe) / safe)


def as_arrays(*args: ArrayLike) -> tuple[NDArray[np.floating], ...]:
    """Arguments as floating arrays (integers and lists become float64)."""
    out = []
    for a in args:
        array = np.asarray(a)
        out.append(array if np.issubdtype(array.dtype, np.floating) else array.astype(np.float64))
    return tuple(out)


def normal_mass(lo: ArrayLike, hi: ArrayLike) -> NDArray[np.floating]:
    """Phi(hi) - Phi(lo) for lo <= hi; upper tails when lo > 0 keep it relative-exact."""
    lo, hi = np.asarray(lo), np.asarray(hi)
    return np.where(lo > 0, ndtr(-lo) - ndtr(-hi), ndtr(hi) - ndtr(lo))


# Stirling's series for log Gamma: (z - 1/2) log z - z + log(2 pi)/2 + S(z),
# S(z) = sum_j B_2j / (2j (2j - 1) z^(2j - 1)); eight terms leave < 2e-18 at z >= 10.
STIRLING_MIN = 10.0
STIRLING_TERMS = [
    1 / 12,
    -1 / 360,
    1 / 1260,
    -1 / 1680,
    1 / 1188,
    -691 / 360360,
    1 / 156,
    -3617 / 122400,
]


def _stirling_tail(z: NDArray[np.floating]) -> NDArray[np.floating]:
    return _horner(1 / (z * z), STIRLING_TERMS) / z


def lgamma_ratio(x: ArrayLike, h: ArrayLike) -> NDArray[np.floating]:
    """log Gamma(x + h) - log Gamma(x) for x > 0, x + h > 0, to a few ulps.

    The plain difference loses about x * eps (2.8e-10 at x = 1e6); for x and
    x + h >= STIRLING_MIN the difference of Stirling's series is formed instead:
    (x - 1/2) log1p(h/x) + h log(x + h) - h + S(x + h) - S(x).
    """
    x, h = np.broadcast_arrays(*as_arrays(x, h))
    large = (x >= STIRLING_MIN) & (x + h >= STIRLING_MIN)
    xs = np.where(large, x, STIRLING_MIN)
    hs = np.where(large, h, 0.0)
    asymptotic = (
        (xs - 0.5) * np.log1p(hs / xs)
        + hs * np.log(xs + hs)
        - hs
        + (_stirling_tail(xs + hs) - _stirling_tail(xs))
    )
    with np.errstate(invalid="ignore"):
        direct = gammaln(np.where(large, 1.0, x + h)) - gammaln(np.where(large, 1.0, x))
    return np.where(large, asymptotic, direct)
