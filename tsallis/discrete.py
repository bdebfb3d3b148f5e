"""Finite sparse maps: softmax, sparsemax, alpha-entmax and evidential softmax.

Martins 2020 eqs 3 and 14 (the finite Omega_alpha-RPM and its Jacobians) and
Chen 2021 (ev-softmax eq 7, its training variant eq 10, Jacobian eq 9, and the
post-hoc evidential sparsification eqs 4-6 that it generalizes).

Every map acts along ``axis``. The algorithms (sort-based thresholds,
bisection, gppr Jacobian, ev-softmax logits) live in ``tsallis.core.discrete``,
which the Torch ops run too; this module validates, moves the axis and picks
the dtype. The closed forms (thresholds, entmax probabilities, gppr weights,
the eq 10 shift, the eq 6 mass) are generated from ``derivations/discrete.py``.
float32 input is computed in float32, float16 in float32 and cast back; other
real input in float64.

ev-softmax conventions (shared with ``torch_bridge``):
- the support is {k : v_k >= min(mean(v), max(v))}: the clamp keeps the
  largest entry in the support when the rounded mean of a constant row
  exceeds every entry by an ulp;
- ``mask`` marks the valid entries; masked entries and -inf entries take no
  part in the mean and get probability 0 (log-probability -inf); a masked entry
  may hold anything (NaN included), NaN or +inf in a valid entry raises;
- a row without any valid entry returns all 0 (log: all -inf);
- an entry less than the dtype's smallest normal number below the threshold
  counts as a tie (kept), so that flush-to-zero cannot drop the maximum.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from tsallis.core import discrete as _core
from tsallis.core._generated import discrete as _gen
from tsallis.core.validation import real_above, real_at_least

FloatArray = NDArray[np.floating]


def _scores(
    v: ArrayLike, axis: int, name: str = "v", check_values: bool = True
) -> tuple[FloatArray, np.dtype]:
    """``v`` as a floating array with ``axis`` moved last; returns it and the output dtype."""
    array = np.asarray(v)
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise TypeError(f"{name} must be a real array, got dtype {array.dtype}")
    out_dtype = array.dtype if np.issubdtype(array.dtype, np.floating) else np.dtype(np.float64)
    work = np.float32 if out_dtype in (np.float16, np.float32) else np.float64
    array = array.astype(work)
    if array.ndim == 0:
        raise ValueError(f"{name} must have at least one axis, got a scalar")
    if not isinstance(axis, (int, np.integer)) or not -array.ndim <= axis < array.ndim:
        raise ValueError(f"axis must be an int in [-{array.ndim}, {array.ndim}), got {axis!r}")
    if array.shape[axis] == 0:
        raise ValueError(f"{name} must have at least one entry along axis {axis}")
    if check_values and np.isnan(array).any():
        raise ValueError(f"{name} must not contain NaN")
    if check_values and np.isposinf(array).any():
        raise ValueError(f"{name} must not contain +inf")
    return np.moveaxis(array, axis, -1), out_dtype


def _finite_rows(v: ArrayLike, axis: int) -> tuple[FloatArray, np.dtype]:
    """_scores with -inf entries allowed (probability 0, as in torch_bridge's maps); a
    row with no finite entry raises ValueError (it has no distribution)."""
    array, dtype = _scores(v, axis)
    if (array.max(axis=-1) == -np.inf).any():  # (NaN and +inf were refused)
        raise ValueError("every row of v needs a finite entry (a row of -inf has no distribution)")
    return array, dtype


def _restore(out: FloatArray, axis: int, dtype: np.dtype) -> FloatArray:
    return np.moveaxis(out, -1, axis).astype(dtype, copy=False)


# --- Omega_alpha maps (Martins 2020 eq 3; alpha = 2 sparsemax, alpha = 3/2 entmax15) ---


def softmax(v: ArrayLike, axis: int = -1) -> FloatArray:
    """exp(v) / sum exp(v) along ``axis`` (Martins 2020 eq 3).

    Args:
        v: scores, any shape, real (float32 and float64 keep their dtype; others
            become float64); -inf entries get probability 0.
        axis: the axis of the distribution.

    Returns:
        Probabilities of v's shape, summing to 1 along ``axis``.

    Raises:
        TypeError: v is not real.
        ValueError: NaN or +inf in v, or a row of -inf.

    Examples:
        >>> import numpy as np
        >>> softmax(np.array([0.4, 1.4, -0.8])).round(4)
        array([0.2488, 0.6763, 0.0749])
    """
    z, dtype = _finite_rows(v, axis)
    return _softmax_rows(z, axis, dtype)


def _softmax_rows(z: FloatArray, axis: int, dtype: np.dtype) -> FloatArray:
    """softmax of _finite_rows' z, restored to ``axis`` and ``dtype``."""
    with np.errstate(over="ignore"):  # a gap max - v beyond the dtype: inf, exp(-inf) = 0
        return _restore(_core.normalized(z), axis, dtype)


def sparsemax(v: ArrayLike, axis: int = -1) -> FloatArray:
    """Euclidean projection of v onto the simplex (alpha = 2), exact (``entmax`` at 2).

    Args:
        v: scores, any shape, real; -inf entries get probability 0.
        axis: the axis of the distribution.

    Returns:
        Probabilities of v's shape (v's dtype for float32 and float64), summing to 1
        along ``axis``, with exact zeros off the support.

    Raises:
        TypeError, ValueError: as for ``softmax``.

    Examples:
        >>> import numpy as np
        >>> sparsemax(np.array([0.5, 1.0, -1.0]))
        array([0.25, 0.75, 0.  ])
    """
    return entmax(v, 2.0, axis)


def entmax(v: ArrayLike, alpha: float, axis: int = -1) -> FloatArray:
    """alpha-entmax along ``axis`` for any alpha > 0.

    alpha = 1 is exactly softmax (the limit, not the entmax package's uniform
    vector); below 1 the map is dense, with heavier tails than softmax (as
    torch_bridge.entmax, whose range of alpha this is). alpha = 2 and 3/2 on at most
    2^15 values (tuning.NUMPY_SORT_ELEMENTS) use the sort-based closed forms; every
    other case runs Newton's method on the threshold and renormalizes
    (tsallis.core.discrete.entmax_map, which torch_bridge.entmax runs too; for alpha = 2
    that is Michelot's algorithm, exact in finitely many steps).

    Args:
        v: scores, any shape, real; -inf entries get probability 0.
        alpha: a real > 0 (1: softmax, 2: sparsemax; above 2 computed in float64).
        axis: the axis of the distribution.

    Returns:
        Probabilities of v's shape (v's dtype for float32 and float64), summing to 1
        along ``axis``.

    Raises:
        TypeError: v or alpha not real.
        ValueError: alpha <= 0 or not finite, NaN or +inf in v, or a row of -inf.

    Examples:
        >>> import numpy as np
        >>> entmax(np.array([0.4, 1.4, -0.8]), 1.5).round(4)
        array([0.1693, 0.8307, 0.    ])
    """
    alpha = real_above("alpha", alpha, 0.0)
    z, dtype = _finite_rows(v, axis)
    if alpha == 1:  # the closed form (Newton would find it in one step)
        return _softmax_rows(z, axis, dtype)
    # float64 above alpha = 2: there the map is not Lipschitz at the support edge
    # (dp/dz = p^(2 - alpha)), and float32 arithmetic measured 7e-6 off at alpha = 3 for
    # p ~ 2e-3.
    # (the core's map silences NumPy's floating-point warnings itself)
    out = _core.entmax_map(z.astype(np.float64) if alpha > 2 else z, float(alpha), slopes=False)[0]
    return _restore(out, axis, dtype)


# --- ev-softmax (Chen 2021 eqs 7, 10) ---


def _valid_entries(z: FloatArray, mask: ArrayLike | None, axis: int) -> NDArray[np.bool_] | None:
    """``mask`` broadcast to v with the axis moved last (None without a mask).

    NaN or +inf in an unmasked entry raises ValueError; a masked entry is
    ignored whatever it holds. (-inf entries are excluded by the core.)
    """
    if mask is None:
        if np.isnan(z).any() or np.isposinf(z).any():
            raise ValueError("v must not contain NaN or +inf (outside the mask)")
        return None
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"mask must be a boolean array (True = valid), got dtype {mask.dtype}")
    shape = np.moveaxis(np.empty(z.shape, dtype=np.bool_), -1, axis).shape
    try:
        broadcast = np.broadcast_to(mask, shape)
    except ValueError:
        raise ValueError(f"mask of shape {mask.shape} does not broadcast to v {shape}") from None
    counted = np.moveaxis(broadcast, axis, -1)
    if (counted & (np.isnan(z) | np.isposinf(z))).any():
        raise ValueError("v must not contain NaN or +inf (outside the mask)")
    return counted


def _ev_normalized(
    v: ArrayLike, axis: int, mask: ArrayLike | None, eps: float, log: bool
) -> FloatArray:
    """ev_softmax_train,eps (its log with ``log``) through the core's logits (eq 10).

    Rows with no valid entry give 0 (log: -inf).
    """
    eps = real_at_least("eps", eps, 0.0)
    z, dtype = _scores(v, axis, check_values=False)
    valid = _valid_entries(z, mask, axis)
    # -inf - finite and huge differences are -inf (probability 0), as intended
    with np.errstate(over="ignore", invalid="ignore"):
        logits, empty = _core.ev_logits(z, valid, eps)
        out = _core.normalized(logits, log=log)
    if empty is not None:
        out = np.where(empty, -np.inf if log else 0, out)
    return _restore(out, axis, dtype)


def ev_softmax(
    v: ArrayLike, axis: int = -1, mask: ArrayLike | None = None, eps: float = 0.0
) -> FloatArray:
    """Evidential softmax (eq 7); ``eps > 0`` gives the training variant (eq 10).

    p_k is proportional to (1{v_k >= mean(v)} + eps) exp(v_k) over the valid
    entries; see the module docstring for mask and edge cases.

    Args:
        v: scores, any shape, real.
        axis: the axis of the distribution.
        mask: None, or booleans broadcastable to v: the entries that count (the
            others get 0 and take no part in the mean).
        eps: the eq 10 eps >= 0.

    Returns:
        Probabilities of v's shape, summing to 1 along ``axis`` (rows without a valid
        entry: 0).

    Raises:
        TypeError, ValueError: bad v, mask or eps, NaN or +inf in a valid entry.

    Examples:
        >>> import numpy as np
        >>> ev_softmax(np.array([0.4, 1.4, -0.8])).round(4)
        array([0.2689, 0.7311, 0.    ])
        >>> ev_softmax(np.array([0.4, 1.4, -0.8]), eps=0.1).round(4)
        array([0.267 , 0.7257, 0.0073])
    """
    return _ev_normalized(v, axis, mask, eps, log=False)


def log_ev_softmax(
    v: ArrayLike, axis: int = -1, mask: ArrayLike | None = None, eps: float = 1e-6
) -> FloatArray:
    """log ev_softmax_train,eps(v), computed as logits minus their log-sum-exp.

    Finite on every valid entry when eps > 0; with eps = 0 the entries off the
    support are -inf. Masked entries are -inf. Arguments as for ``ev_softmax``.

    Returns:
        Log-probabilities of v's shape.

    Args:
        v: scores, any shape, real.
        axis: the axis of the distribution.
        mask: None, or booleans broadcastable to v (True: a valid entry).
        eps: the eq 10 eps >= 0 (default 1e-6).

    Raises:
        TypeError, ValueError: bad v, mask or eps, NaN or +inf in a valid entry.

    Examples:
        >>> import numpy as np
        >>> log_ev_softmax(np.array([0.4, 1.4, -0.8])).round(2)
        array([ -1.31,  -0.31, -16.33])
    """
    return _ev_normalized(v, axis, mask, eps, log=True)


# --- post-hoc evidential sparsification (Chen 2021 eqs 4-6) ---


class EvidentialSparsification(NamedTuple):
    """Eqs 4-6: evidential weights w, belief masses m and the sparse distribution.

    Attributes:
        weights: the evidential weights w, (..., K).
        masses: the belief masses m of the K singletons, (..., K).
        probs: the sparse distribution, (..., K): the normalized masses.

    Examples:
        >>> import numpy as np
        >>> beta_hat = np.array([[0.5, 1.0, -0.3], [1.0, 0.2, -1.0]])  # bias row, weights
        >>> result = evidential_sparsification(np.array([0.3]), beta_hat)
        >>> result.probs.round(4), result.masses.shape
        (array([0.4354, 0.5646, 0.    ]), (3,))
    """

    weights: FloatArray
    masses: FloatArray
    probs: FloatArray


def evidential_sparsification(phi: ArrayLike, beta_hat: ArrayLike) -> EvidentialSparsification:
    """Post-hoc evidential sparsification of Itkina et al. (Chen 2021 section 2.3).

    ``phi`` has shape (..., J): last hidden layer features; ``beta_hat`` has
    shape (J + 1, K): last-layer weights with the bias in row 0. The weights
    are eq 4 (each row of beta_hat centred over the K classes), the masses
    eq 6 and the distribution eq 5, p_k proportional to 1{m_k != 0} exp(w_k).

    m_k = 0 exactly when exp(w_k^+) - 1 and prod_{l != k} (1 - exp(-w_l^-))
    are both 0; that test is made on the two terms, so a mass too small for
    the dtype (w_k^- > 745) still counts as nonzero.

    Args:
        phi: features, shape (..., J), real.
        beta_hat: last-layer weights, shape (J + 1, K), the bias in row 0.

    Returns:
        EvidentialSparsification(weights, masses, probs), each of shape (..., K).

    Raises:
        TypeError: non-real input.
        ValueError: shapes that do not match, NaN or inf.

    Examples:
        >>> import numpy as np
        >>> phi = np.array([0.3, -1.2])
        >>> bias, weights = [0.5, 1.0, -0.3, 0.2], [[1.0, 0.2, -1.0, 0.9], [0.0, 0.5, 0.4, -0.6]]
        >>> beta_hat = np.array([bias, *weights])
        >>> evidential_sparsification(phi, beta_hat).probs.round(4)
        array([0.3136, 0.2232, 0.    , 0.4632])
    """
    features = np.asarray(phi, dtype=np.float64)
    weights = np.asarray(beta_hat, dtype=np.float64)
    if weights.ndim != 2 or weights.shape[0] < 1 or weights.shape[1] < 1:
        raise ValueError(f"beta_hat must have shape (J + 1, K), got {weights.shape}")
    if features.ndim == 0 or features.shape[-1] != weights.shape[0] - 1:
        raise ValueError(
            f"phi must have shape (..., {weights.shape[0] - 1}) to match beta_hat "
            f"{weights.shape}, got {features.shape}"
        )
    if not (np.isfinite(features).all() and np.isfinite(weights).all()):
        raise ValueError("phi and beta_hat must be finite")
    centred = weights - weights.mean(axis=1, keepdims=True)
    w = centred[0] + features @ centred[1:]
    w_plus, w_minus = np.maximum(w, 0), np.maximum(-w, 0)
    factors = -np.expm1(-w_minus)  # 1 - exp(-w^-), exactly 0 when w >= 0
    others = _product_of_others(factors)
    with np.errstate(over="ignore"):  # w^+ > 709: the mass is inf, its support test holds
        masses = _gen.evidential_mass(w_plus, w_minus, others)
        nonzero = (np.expm1(w_plus) + others) > 0
    probs = np.where(nonzero, np.exp(w - np.where(nonzero, w, -np.inf).max(-1, keepdims=True)), 0)
    return EvidentialSparsification(w, masses, probs / probs.sum(axis=-1, keepdims=True))


def _product_of_others(factors: FloatArray) -> FloatArray:
    """prod_{l != k} factors_l for every k, by prefix and suffix products (no division)."""
    ones = np.ones_like(factors[..., :1])
    before = np.cumprod(np.concatenate([ones, factors[..., :-1]], axis=-1), axis=-1)
    after = np.cumprod(np.concatenate([ones, factors[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    return before * after


# --- Jacobians (Martins 2020 eq 14, Chen 2021 eq 9; gppr form for entmax) ---


def gppr_jacobian(weights: FloatArray) -> FloatArray:
    """Diag(s) - s s^T / sum(s) over the last axis (the finite cov_{p,2-alpha}).

    Args:
        weights: s >= 0 over the last axis, shape (..., K).

    Returns:
        The Jacobian, shape (..., K, K); a row with s = 0 everywhere gives 0.

    Examples:
        >>> import numpy as np
        >>> gppr_jacobian(np.array([1.0, 1.0, 0.0]))
        array([[ 0.5, -0.5,  0. ],
               [-0.5,  0.5,  0. ],
               [ 0. ,  0. ,  0. ]])
    """
    return _core.gppr_jacobian(np.asarray(weights))


def softmax_jacobian(v: ArrayLike, axis: int = -1) -> FloatArray:
    """Diag(p) - p p^T, p = softmax(v) (eq 14): the gppr form with s = p^(2-1).

    Every Jacobian has shape (..., K, K): ``axis`` is moved last and doubled.

    Args:
        v: scores, any shape, real.
        axis: the axis of the distribution.

    Returns:
        dp/dv, shape (..., K, K) with the K entries of ``axis`` last.

    Raises:
        TypeError, ValueError: as for ``softmax``.

    Examples:
        >>> import numpy as np
        >>> softmax_jacobian(np.array([0.0, 0.0]))
        array([[ 0.25, -0.25],
               [-0.25,  0.25]])
    """
    return entmax_jacobian(v, 1.0, axis)


def sparsemax_jacobian(v: ArrayLike, axis: int = -1) -> FloatArray:
    """Diag(s) - s s^T / 1^T s, s the support indicator of sparsemax(v) (eq 14).

    Returns:
        The Jacobian dp/dv, shape (..., K, K) for v of shape (..., K) along ``axis``.

    Args:
        v: scores, any shape, real.
        axis: the axis of the distribution.

    Raises:
        TypeError, ValueError: as for ``sparsemax``.

    Examples:
        >>> import numpy as np
        >>> sparsemax_jacobian(np.array([0.5, 1.0, -1.0]))
        array([[ 0.5, -0.5,  0. ],
               [-0.5,  0.5,  0. ],
               [ 0. ,  0. ,  0. ]])
    """
    return entmax_jacobian(v, 2.0, axis)


def entmax_jacobian(v: ArrayLike, alpha: float, axis: int = -1) -> FloatArray:
    """gppr form Diag(s) - s s^T / sum s with s = p^(2 - alpha) on the support.

    Args:
        v: scores, any shape, real.
        alpha: a real > 0.
        axis: the axis of the distribution.

    Returns:
        dp/dv, shape (..., K, K) with the K entries of ``axis`` last.

    Raises:
        TypeError, ValueError: as for ``entmax``.

    Examples:
        >>> import numpy as np
        >>> entmax_jacobian(np.array([0.4, 1.4, -0.8]), 1.5).round(4)
        array([[ 0.2835, -0.2835,  0.    ],
               [-0.2835,  0.2835,  0.    ],
               [ 0.    ,  0.    ,  0.    ]])
    """
    alpha = real_above("alpha", alpha, 0.0)
    z, dtype = _finite_rows(v, axis)
    p = entmax(z, alpha)
    return _core.gppr_jacobian(_core.gppr_weights(p, alpha)).astype(dtype, copy=False)


def ev_softmax_jacobian(v: ArrayLike, axis: int = -1, mask: ArrayLike | None = None) -> FloatArray:
    """Eq 9: Diag(p) - p p^T with p = ev_softmax(v) (0 in every row or column off the support).

    Args:
        v: scores, any shape, real.
        axis: the axis of the distribution.
        mask: None, or booleans broadcastable to v (True: a valid entry).

    Returns:
        dp/dv, shape (..., K, K) with the K entries of ``axis`` last.

    Raises:
        TypeError, ValueError: as for ``ev_softmax``.

    Examples:
        >>> import numpy as np
        >>> ev_softmax_jacobian(np.array([0.4, 1.4, -0.8])).round(4)
        array([[ 0.1966, -0.1966,  0.    ],
               [-0.1966,  0.1966,  0.    ],
               [ 0.    ,  0.    ,  0.    ]])
    """
    p = np.moveaxis(ev_softmax(v, axis=axis, mask=mask), axis, -1)
    work = p.astype(np.promote_types(p.dtype, np.float32))
    return _core.gppr_jacobian(work).astype(p.dtype, copy=False)
