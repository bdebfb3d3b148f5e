"""beta-logarithm, beta-exponential and the discrete Tsallis entropy (Martins 2020 eqs 4, 6)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from tsallis._generated import deformed as _gen
from tsallis.core import validation as check


def log_beta(u: ArrayLike, beta: ArrayLike) -> np.ndarray:
    """log_beta(u) = (u^(1-beta) - 1)/(1 - beta), log u at beta = 1; smooth in beta.

    Args:
        u: reals >= 0 (inf allowed), any shape.
        beta: reals, broadcasting with u.

    Returns:
        A NumPy scalar for scalar inputs, else a float64 array of the broadcast shape.

    Raises:
        TypeError: non-real input.
        ValueError: u < 0 or NaN.

    Examples:
        >>> import numpy as np
        >>> print(log_beta(np.e, 1.0), log_beta(4.0, 0.5))
        1.0 2.0
    """
    u_ = check.as_float("u", u, allow_inf=True)
    if (u_ < 0).any():
        raise ValueError("u must be >= 0")
    with np.errstate(divide="ignore"):
        return check.scalar_or_array(_gen.log_beta(u_, check.as_float("beta", beta)))


def exp_beta(u: ArrayLike, beta: ArrayLike) -> np.ndarray:
    """exp_beta(u) = [1 + (1-beta) u]_+^(1/(1-beta)), exp u at beta = 1; smooth in beta.

    Args:
        u: reals (inf allowed), any shape.
        beta: reals, broadcasting with u.

    Returns:
        A NumPy scalar for scalar inputs, else a float64 array of the broadcast shape.

    Raises:
        TypeError: non-real input.
        ValueError: NaN.

    Examples:
        >>> print(exp_beta(1.0, 0.5), exp_beta(-3.0, 0.5))
        2.25 0.0
    """
    with np.errstate(over="ignore"):
        value = _gen.exp_beta(check.as_float("u", u, allow_inf=True), check.as_float("beta", beta))
    return check.scalar_or_array(value)


def tsallis_entropy(p: ArrayLike, alpha: ArrayLike, axis: int = -1) -> np.ndarray:
    """H_alpha(p) = -Omega_alpha(p) (eq 6) of probability vectors along ``axis``.

    alpha > 0; alpha = 1 gives Shannon's entropy, and the result is smooth through it.

    Args:
        p: probability vectors along ``axis`` (non-negative, summing to 1 within 1e-6).
        alpha: reals > 0, broadcasting with p's other axes.
        axis: the axis of the vectors.

    Returns:
        A NumPy scalar for one vector, else an array of p's shape without ``axis``.

    Raises:
        TypeError: non-real input.
        ValueError: negative entries, sums other than 1,
            alpha <= 0, or a 0-d p.

    Examples:
        >>> print(tsallis_entropy([0.5, 0.5], alpha=2.0))
        0.25
    """
    p_ = check.as_float("p", p)
    if (p_ < 0).any():
        raise ValueError("p must be >= 0")
    alpha_ = check.positive("alpha", alpha)
    if p_.ndim == 0:
        raise ValueError("p must have at least one dimension")
    total = p_.sum(axis=axis)
    if not np.allclose(total, 1.0, rtol=0, atol=1e-6):
        raise ValueError(
            f"p must sum to 1 along axis {axis}, got sums in"
            f" [{check.plain(total.min())}, {check.plain(total.max())}]"
        )
    alpha_ = np.expand_dims(alpha_, axis) if alpha_.ndim else alpha_
    return check.scalar_or_array(_gen.tsallis_entropy_term(p_, alpha_).sum(axis=axis))
