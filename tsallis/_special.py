"""Elementary helpers for generated NumPy code that scipy.special lacks."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr

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
