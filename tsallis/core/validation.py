"""Input checks shared by every public constructor and function.

Bad input raises ValueError (or TypeError for non-numbers) naming the
argument and its valid range; nothing returns a silent NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]


def plain(value: object) -> str:
    """A value as an error message prints it: -1.0, not np.float64(-1.0); arrays as
    NumPy prints them; anything else as its repr."""
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return repr(value.item())
    if isinstance(value, np.ndarray):
        return np.array2string(value, threshold=8)
    return repr(value)


def scalar_or_array(value: ArrayLike) -> FloatArray:
    """SciPy's convention for results: a NumPy scalar for a 0-d result, else the array."""
    return np.asarray(value)[()]


def as_float(name: str, value: ArrayLike, allow_inf: bool = False) -> FloatArray:
    """``value`` as a float64 array; rejects non-numbers, NaN and (by default) inf.

    Strings, bytes and booleans are not numbers here (np.asarray would parse "2").
    """
    if isinstance(value, (str, bytes, bool, np.bool_)) or np.asarray(value).dtype.kind in "USb":
        raise TypeError(
            f"{name} must be a real number or array of real numbers, got {plain(value)}"
        )
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be a real number or array of real numbers, got {plain(value)}"
        ) from None
    if np.isnan(array).any():
        raise ValueError(f"{name} must not contain NaN")
    if not allow_inf and np.isinf(array).any():
        raise ValueError(f"{name} must be finite")
    return array


def _real_number(name: str, value: object) -> float:
    """A real scalar as a Python float (TypeError for non-numbers; strings and booleans
    are not numbers here, even where float() would take them)."""
    if isinstance(value, (str, bytes, bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, got {plain(value)}")
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {plain(value)}") from None


def real_at_least(name: str, value: object, lower: float) -> float:
    """A finite real scalar >= ``lower`` as a Python float (TypeError for non-numbers).

    Strings and booleans are not numbers here, even where float() would take them.
    """
    number = _real_number(name, value)
    if not (math.isfinite(number) and number >= lower):
        raise ValueError(f"{name} must be a finite number >= {lower:g}, got {plain(value)}")
    return number


def real_above(name: str, value: object, lower: float) -> float:
    """A finite real scalar > ``lower`` as a Python float (TypeError for non-numbers)."""
    number = _real_number(name, value)
    if not (math.isfinite(number) and number > lower):
        raise ValueError(f"{name} must be a finite number > {lower:g}, got {plain(value)}")
    return number


def positive(name: str, value: ArrayLike) -> FloatArray:
    """A finite array with every entry > 0."""
    array = as_float(name, value)
    if (array <= 0).any():
        raise ValueError(f"{name} must be > 0, got min {plain(array.min())}")
    return array


# Scales of the 1D families: beyond this range powers of the scale in the closed forms
# (up to scale^4) leave float64's range. Physical scales are far inside it.
SCALE_RANGE = (1e-150, 1e150)


def scale(value: ArrayLike, name: str = "scale") -> FloatArray:
    """A finite array with every entry in SCALE_RANGE (ValueError otherwise)."""
    array = positive(name, value)
    low, high = SCALE_RANGE
    if ((array < low) | (array > high)).any():
        bad = array[(array < low) | (array > high)].flat[0]
        raise ValueError(
            f"{name} must lie in [{low:g}, {high:g}] (beyond, powers of it under- or overflow"
            f" in float64), got {float(bad)!r}"
        )
    return array


def sparse_alpha(value: ArrayLike) -> FloatArray:
    """alpha for a sparse family: finite and > 1."""
    array = as_float("alpha", value)
    if (array <= 1).any():
        raise ValueError(
            f"alpha must be > 1 for a sparse family, got {plain(array.min())}; "
            "use tsallis.Gaussian for alpha = 1"
        )
    return array


def probability(name: str, value: ArrayLike) -> FloatArray:
    """Levels in [0, 1]."""
    array = as_float(name, value)
    if ((array < 0) | (array > 1)).any():
        raise ValueError(f"{name} must lie in [0, 1]")
    return array


def broadcast(**arrays: FloatArray) -> tuple[FloatArray, ...]:
    """Broadcast parameters like scipy.stats; a mismatch names the arguments."""
    try:
        return tuple(np.broadcast_arrays(*arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{k} {np.shape(v)}" for k, v in arrays.items())
        raise ValueError(f"shape mismatch: cannot broadcast {shapes}") from None


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...] | None:
    """The shape that ``shapes`` broadcast to by NumPy's rules, or None where they do not.

    From the shapes alone, so that torch.compile traces it: there a failing
    torch.broadcast_shapes inside try/except became Dynamo's own error instead of the
    caller's ValueError. Plain loops: Dynamo did not trace max over a generator; and no
    set of sizes: under torch.compile(dynamic=True) they may be symbolic, which compare
    but do not hash.

    Parameters:
        shapes: sequences of non-negative ints (a tensor's ``shape``, a tuple).

    Returns:
        The broadcast shape as a tuple, or None.

    Examples:
        >>> broadcast_shape((3, 1), (4,))
        (3, 4)
        >>> broadcast_shape((3,), (4,)) is None
        True
    """
    length = 0
    for shape in shapes:
        length = len(shape) if len(shape) > length else length
    out = []
    for axis in range(-length, 0):
        size = 1
        for shape in shapes:
            if len(shape) >= -axis and shape[axis] != 1:
                if size != 1 and shape[axis] != size:
                    return None
                size = shape[axis]
        out.append(size)
    return tuple(out)


def covariance(
    name: str, value: ArrayLike, loc: FloatArray
) -> tuple[FloatArray, FloatArray, float]:
    """Check a symmetric positive definite (N, N) matrix matching loc (N,).

    Returns (Sigma, its Cholesky factor L, log det Sigma).
    """
    sigma = as_float(name, value)
    if sigma.ndim != 2:
        raise ValueError(f"{name} (Sigma) must be an (N, N) matrix, got shape {sigma.shape}")
    if loc.ndim != 1:
        raise ValueError(f"loc must have shape (N,) when {name} is a matrix, got {loc.shape}")
    n = loc.shape[0]
    if sigma.shape != (n, n):
        raise ValueError(f"{name} must have shape ({n}, {n}) to match loc, got {sigma.shape}")
    if not np.allclose(sigma, sigma.T, rtol=1e-12, atol=1e-12 * np.abs(sigma).max()):
        raise ValueError(f"{name} (Sigma) must be symmetric")
    try:
        chol = np.linalg.cholesky(sigma)
    except np.linalg.LinAlgError:
        raise ValueError(f"{name} (Sigma) must be positive definite") from None
    logdet = float(2 * np.log(np.diag(chol)).sum())
    return sigma, chol, logdet


def rng(random_state: int | np.random.Generator | None) -> np.random.Generator:
    """A numpy Generator from a seed, a Generator or None."""
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**32 - 1))
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError):
        raise ValueError(
            f"random_state must be None, an int or a numpy Generator, got {random_state!r}"
        ) from None


def sample_shape(size: int | tuple[int, ...] | None) -> tuple[int, ...]:
    """``size`` of rvs as a shape tuple (None -> ()); integers only, as in NumPy.

    Raises TypeError for a non-integer (2.5, np.float64(3.0), "3") anywhere in
    ``size`` and ValueError for a negative entry.
    """
    if size is None:
        return ()
    if isinstance(size, np.ndarray) and size.ndim <= 1:
        entries = tuple(size.reshape(-1).tolist()) if size.dtype.kind in "iu" else (size,)
    else:
        entries = size if isinstance(size, (tuple, list)) else (size,)
    for n in entries:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(
                f"size must be None, an int or a tuple of ints, got {plain(size)}"
                f" ({type(n).__name__} is not an integer)"
            )
    shape = tuple(int(n) for n in entries)
    if any(n < 0 for n in shape):
        raise ValueError(f"size must be non-negative, got {plain(size)}")
    return shape
