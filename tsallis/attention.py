"""Continuous attention with Gaussian RBFs: rho, its Jacobian, and the value function.

rho(theta) = E_p[psi] (Martins 2020 eq 15) and J = d rho / d theta =
cov_{p,2-alpha}(phi, psi) (Prop 3, eq 18), for p the alpha-entmax of
f(t) = theta^T phi(t), phi = [t, t^2] in 1D and [t, vec(t t^T)] in D dims.

1D (any alpha >= 1). p is a beta-Gaussian with half-width a; every
integral is a window moment G(m, j) (derivations/attention.py), computed in
float64 by tsallis.core.window, the same code the Torch ops run. Per element:

- alpha = 1: the generated Gaussian-product closed forms (Alg 1);
- alpha in {2, 3/2, 4/3, 5/4} and a well-conditioned element: the generated
  erf/exp closed form of G;
- otherwise: a wide-RBF expansion, one Gauss-Jacobi rule shared by the row,
  or Gauss-Jacobi on the element's window where the integrand is within
  e^-80 of its peak (thresholds in tsallis.core.tuning).

D dims: alpha = 1 (Alg 1), and alpha = 2 for D = 2 (polar coordinates: the
generated radial closed form, and the periodic trapezoid in the angle).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from tsallis._generated import gaussian
from tsallis.core import polar, window
from tsallis.core import validation as check
from tsallis.core._generated import attention as gen

__all__ = ["GaussianRBF", "jacobian", "rho", "ridge_value_function"]

FloatArray = NDArray[np.floating]
RhoJac = tuple[FloatArray, FloatArray | None]  # rho, and J when asked

# 2D sparsemax: nodes of the periodic trapezoid in the angle (at least, at most).
ANGLE_NODES = 64
MAX_ANGLE_NODES = 1 << 14
_CHUNK_2D = 1 << 20  # values (rows x N x angles) per intermediate of the 2D moments


def _floating(name: str, value: ArrayLike) -> FloatArray:
    """A float array that keeps float32 input as float32; NaN and inf rejected."""
    array = np.asarray(value)
    if not np.issubdtype(array.dtype, np.floating):
        array = check.as_float(name, array)
    else:
        check.as_float(name, array)
    return array


@dataclass(frozen=True, eq=False)
class GaussianRBF:
    """Gaussian RBFs psi_j(t) = N(t; mu_j, Sigma_j).

    1D: ``mu`` (N,), ``sigma`` (N,) standard deviations. D dims: ``mu`` (N, D),
    ``sigma`` (N, D, D) covariance matrices (symmetric positive definite).

    Args:
        mu: centres, (N,) in 1D or (N, D), real.
        sigma: standard deviations > 0 (N,) in 1D, or covariances (N, D, D).

    Raises:
        TypeError: non-real input.
        ValueError: mismatched shapes, sigma <= 0 or a
            covariance that is not symmetric positive definite, NaN or inf.

    Examples:
        >>> import numpy as np
        >>> basis = GaussianRBF(np.linspace(0, 1, 4), np.full(4, 0.2))
        >>> basis.mu.shape, basis.sigma.shape
        ((4,), (4,))
    """

    mu: FloatArray
    sigma: FloatArray
    _chol: FloatArray | None = field(default=None, repr=False)
    _logdet: FloatArray | None = field(default=None, repr=False)
    _ridge_cache: dict = field(default_factory=dict, repr=False)

    def __init__(self, mu: ArrayLike, sigma: ArrayLike) -> None:
        mu_a, sigma_a = _floating("mu", mu), _floating("sigma", sigma)
        chol = None
        if mu_a.ndim == 1:
            if sigma_a.shape != mu_a.shape:
                raise ValueError(
                    f"sigma must have shape {mu_a.shape} to match mu (N,), got {sigma_a.shape}"
                )
            if (sigma_a <= 0).any():
                raise ValueError("sigma (RBF standard deviations) must be > 0")
        elif mu_a.ndim == 2:
            n, d = mu_a.shape
            if sigma_a.shape != (n, d, d):
                raise ValueError(
                    f"sigma must have shape ({n}, {d}, {d}) to match mu (N, D), got {sigma_a.shape}"
                )
            if not np.allclose(sigma_a, np.swapaxes(sigma_a, -1, -2), rtol=1e-6, atol=0):
                raise ValueError("sigma (RBF covariances Sigma_j) must be symmetric")
            try:
                chol = np.linalg.cholesky(sigma_a)
            except np.linalg.LinAlgError:
                raise ValueError(
                    "sigma (RBF covariances Sigma_j) must be positive definite"
                ) from None
        else:
            raise ValueError(f"mu must have shape (N,) or (N, D), got {mu_a.shape}")
        if mu_a.shape[0] == 0:
            raise ValueError("mu must hold at least one basis function (N >= 1)")
        object.__setattr__(self, "mu", mu_a)
        object.__setattr__(self, "sigma", sigma_a)
        object.__setattr__(self, "_chol", chol)
        if chol is not None:
            logdet = 2 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
            object.__setattr__(self, "_logdet", logdet)
        object.__setattr__(self, "_ridge_cache", {})

    @property
    def dim(self) -> int:
        """D: 1 for a 1D basis, 2 for a 2D one.

        Examples:
            >>> import numpy as np
            >>> GaussianRBF(np.linspace(0, 1, 4), np.full(4, 0.2)).dim
            1
        """
        return 1 if self.mu.ndim == 1 else self.mu.shape[1]

    @property
    def size(self) -> int:
        """N, the number of basis functions.

        Examples:
            >>> import numpy as np
            >>> GaussianRBF(np.linspace(0, 1, 4), np.full(4, 0.2)).size
            4
        """
        return self.mu.shape[0]

    def __call__(self, t: ArrayLike) -> FloatArray:
        """psi(t): 1D t (...,) -> (..., N); D dims t (..., D) -> (..., N)."""
        t = _floating("t", t)
        if self.dim == 1:
            return gen.gaussian_rho(t[..., None] - self.mu, 0 * self.sigma, self.sigma)
        if t.shape[-1:] != (self.dim,):
            raise ValueError(f"t must have shape (..., {self.dim}), got {t.shape}")
        diff = t[..., None, :] - self.mu
        z = np.linalg.solve(self._chol, diff[..., None])[..., 0]
        return np.exp(gaussian.logpdf_d2((z**2).sum(-1), self.dim, self._logdet))


def _inputs_1d(
    loc: ArrayLike, scale: ArrayLike, basis: GaussianRBF
) -> tuple[FloatArray, FloatArray, np.dtype]:
    loc_a, scale_a = _floating("loc", loc), _floating("scale", scale)
    if (scale_a <= 0).any():
        raise ValueError("scale (sigma of the attention density) must be > 0")
    loc_a, scale_a = check.broadcast(loc=loc_a, scale=scale_a)
    dtype = np.result_type(loc_a, scale_a, basis.mu, basis.sigma)
    return loc_a.astype(dtype, copy=False), scale_a.astype(dtype, copy=False), dtype


# ---------------------------------------------------------------- 1D window moments


def _rho_jacobian_1d(
    alpha: float, loc: ArrayLike, scale: ArrayLike, basis: GaussianRBF, jac: bool
) -> RhoJac:
    loc, scale, dtype = _inputs_1d(loc, scale, basis)
    # alpha = 1: the Gaussian closed form in the inputs' dtype; otherwise the window
    # moments (tsallis.core.window, the code the Torch ops run) in float64.
    work = dtype if alpha == 1 else np.float64
    args = tuple(v.astype(work, copy=False) for v in (loc, scale, basis.mu, basis.sigma))
    rho_, first, centred = window.moments_1d(alpha, *args, dense=False)
    if not jac:
        return rho_.astype(dtype, copy=False), None
    second = centred + 2 * args[0][..., None] * first
    jac_ = np.stack([first, second], axis=-2)
    return rho_.astype(dtype, copy=False), jac_.astype(dtype, copy=False)


# ---------------------------------------------------------------- D dims


def _inputs_nd(
    loc: ArrayLike, scale: ArrayLike, basis: GaussianRBF
) -> tuple[FloatArray, FloatArray, FloatArray, np.dtype]:
    d = basis.dim
    loc_a, scale_a = _floating("loc", loc), _floating("scale", scale)
    if loc_a.shape[-1:] != (d,):
        raise ValueError(
            f"loc must have shape (..., {d}) to match the basis (D = {d}), got {loc_a.shape}"
        )
    if scale_a.shape[-2:] != (d, d):
        raise ValueError(f"scale (Sigma) must have shape (..., {d}, {d}), got {scale_a.shape}")
    if not np.allclose(scale_a, np.swapaxes(scale_a, -1, -2), rtol=1e-6, atol=0):
        raise ValueError("scale (Sigma) must be symmetric")
    try:
        chol = np.linalg.cholesky(scale_a)
    except np.linalg.LinAlgError:
        raise ValueError("scale (Sigma) must be positive definite") from None
    batch = np.broadcast_shapes(loc_a.shape[:-1], scale_a.shape[:-2])
    dtype = np.result_type(loc_a, scale_a, basis.mu, basis.sigma)
    loc_a = np.broadcast_to(loc_a, (*batch, d)).astype(dtype, copy=False)
    scale_a = np.broadcast_to(scale_a, (*batch, d, d)).astype(dtype, copy=False)
    chol = np.broadcast_to(chol, (*batch, d, d)).astype(dtype, copy=False)
    return loc_a, scale_a, chol, dtype


def _outer_rows(first: FloatArray, loc: FloatArray, inner: FloatArray) -> FloatArray:
    """J rows for vec(t t^T): mu J_t^T + J_t mu^T + inner, flattened (..., D*D, N).

    ``first`` (..., N, D) is J_t, ``inner`` (..., N, D, D) the centred part.
    """
    mu = loc[..., None, :, None]
    jt = first[..., :, None, :]
    block = mu * jt + np.swapaxes(mu * jt, -1, -2) + inner
    return np.moveaxis(block.reshape(*block.shape[:-2], -1), -2, -1)


def _gaussian_nd(loc: FloatArray, scale: FloatArray, basis: GaussianRBF, jac: bool) -> RhoJac:
    """alpha = 1 (Alg 1): r_j = N(mu; mu_j, Sigma + Sigma_j); J = cov_p(phi, psi_j)."""
    d = basis.dim
    total = scale[..., None, :, :] + basis.sigma.astype(scale.dtype, copy=False)  # (..., N, D, D)
    low = np.linalg.cholesky(total)
    delta = basis.mu - loc[..., None, :]  # mu_j - mu
    z = np.linalg.solve(low, delta[..., None])[..., 0]
    logdet = 2 * np.log(np.diagonal(low, axis1=-2, axis2=-1)).sum(-1)
    r = np.exp(gaussian.logpdf_d2((z**2).sum(-1), d, logdet)).astype(scale.dtype, copy=False)
    if not jac:
        return r, None
    # Centred forms (no mu mu^T - mu~ mu~^T cancellation): with S = Sigma + Sigma_j,
    # mu~ - mu = Sigma S^-1 delta and Sigma~ - Sigma = -Sigma S^-1 Sigma.
    sig = np.broadcast_to(scale[..., None, :, :], total.shape)
    shift = sig @ np.linalg.solve(total, delta[..., None])  # (..., N, D, 1)
    half = np.linalg.solve(low, sig)  # L^-1 Sigma
    inner = shift @ np.swapaxes(shift, -1, -2) - np.swapaxes(half, -1, -2) @ half
    first = r[..., None] * shift[..., 0]
    rows_t = np.swapaxes(first, -1, -2)
    rows_tt = _outer_rows(first, loc, r[..., None, None] * inner)
    return r, np.concatenate([rows_t, rows_tt], axis=-2)


def _angle_nodes(loc: FloatArray, chol: FloatArray, basis: GaussianRBF) -> int:
    """Angles for the periodic trapezoid: enough for the narrowest RBF as seen from mu.

    In whitened coordinates an RBF of smallest std w at distance d spans an angle
    of std s = w / max(d, w); the trapezoid error on such a peak is about
    exp(-2 pi^2 s^2 / h^2), below 1e-13 for h <= 0.8 s, i.e. n >= 8 / s.
    """
    white = np.linalg.solve(chol[..., None, :, :], basis._chol)  # L^-1 L_j, (..., N, 2, 2)
    smallest = np.linalg.svd(white, compute_uv=False)[..., -1]
    centre = np.linalg.solve(chol[..., None, :, :], (basis.mu - loc[..., None, :])[..., None])
    distance = np.linalg.norm(centre[..., 0], axis=-1)
    spread = smallest / np.maximum(distance, smallest)
    needed = int(np.ceil(8 / spread.min()))
    return int(min(max(needed, ANGLE_NODES), MAX_ANGLE_NODES))


def _sparsemax_2d(
    loc: FloatArray, scale: FloatArray, chol: FloatArray, basis: GaussianRBF, jac: bool
) -> RhoJac:
    """alpha = 2, D = 2, in blocks of rows: at most _CHUNK_2D values (rows x N x angles)
    per intermediate. The angle count is chosen once for the whole batch."""
    batch = loc.shape[:-1]
    count = _angle_nodes(loc, chol, basis)
    flat = [a.reshape(-1, *a.shape[len(batch) :]) for a in (loc, scale, chol)]
    rows = max(1, _CHUNK_2D // (basis.size * count))
    parts = [
        _sparsemax_2d_block(*(a[i : i + rows] for a in flat), basis, jac, count)
        for i in range(0, flat[0].shape[0], rows)
    ]
    rho_ = np.concatenate([p[0] for p in parts]).reshape(*batch, basis.size)
    if not jac:
        return rho_, None
    jacobian_ = np.concatenate([p[1] for p in parts])
    return rho_, jacobian_.reshape(*batch, *jacobian_.shape[1:])


def _sparsemax_2d_block(
    loc: FloatArray,
    scale: FloatArray,
    chol: FloatArray,
    basis: GaussianRBF,
    jac: bool,
    count: int,
) -> RhoJac:
    """alpha = 2, D = 2: the shared core's polar moments (tsallis.core.polar, float64;
    ``count`` trapezoid nodes in the angle), returned in the inputs' dtype."""
    dtype = scale.dtype
    wide = [np.asarray(a, dtype=np.float64) for a in (loc, scale, chol, basis.mu, basis._chol)]
    r, first, inner = polar.sparsemax_2d_moments(*wide, count, dense=False)
    if not jac:
        return r.astype(dtype, copy=False), None
    rows_tt = _outer_rows(first, wide[0], inner)
    rows = np.concatenate([np.swapaxes(first, -1, -2), rows_tt], axis=-2)
    return r.astype(dtype, copy=False), rows.astype(dtype, copy=False)


# ---------------------------------------------------------------- public API


def _evaluate(
    alpha: float, loc: ArrayLike, scale: ArrayLike, basis: GaussianRBF, jac: bool
) -> RhoJac:
    if not isinstance(basis, GaussianRBF):
        raise TypeError(f"basis must be a GaussianRBF, got {type(basis).__name__}")
    alpha = check.real_at_least("alpha", alpha, 1.0)
    if basis.dim == 1:
        return _rho_jacobian_1d(alpha, loc, scale, basis, jac)
    loc_a, scale_a, chol, dtype = _inputs_nd(loc, scale, basis)
    supported = alpha == 1 or (alpha == 2 and basis.dim == 2)
    if supported and loc_a.shape[:-1] and math.prod(loc_a.shape[:-1]) == 0:
        batch, d, n = loc_a.shape[:-1], basis.dim, basis.size  # empty in, empty out
        jacobian_ = np.zeros((*batch, d + d * d, n), dtype) if jac else None
        return np.zeros((*batch, n), dtype), jacobian_
    if alpha == 1:
        return _gaussian_nd(loc_a, scale_a, basis, jac)
    if alpha == 2 and basis.dim == 2:
        return _sparsemax_2d(loc_a, scale_a, chol, basis, jac)
    raise ValueError(
        f"alpha = {alpha} in D = {basis.dim}: supported are alpha >= 1 in 1D, alpha = 1 in any D,"
        " and alpha = 2 in D = 2"
    )


def rho(alpha: float, loc: ArrayLike, scale: ArrayLike, basis: GaussianRBF) -> FloatArray:
    """rho_j = E_p[psi_j] (Martins 2020 eq 15), shape (..., N).

    1D: ``loc`` and ``scale`` (= sigma, the attention density has score
    -(t - loc)^2 / (2 sigma^2)) broadcast to (...). D dims: ``loc`` (..., D),
    ``scale`` = Sigma (..., D, D). float32 input is computed in float64 where
    the window moments need it and returned as float32.

    Args:
        alpha: >= 1 in 1D (1: softmax, 2: sparsemax); 1 in any D; 2 in D = 2.
        loc: the density's location, (...) in 1D or (..., D).
        scale: sigma > 0 (...) in 1D, or Sigma (..., D, D) positive definite.
        basis: the N Gaussian RBFs psi_j.

    Returns:
        rho of shape (..., N), float32 for float32 input, else float64.

    Raises:
        TypeError: non-real input.
        ValueError: alpha out of the supported range, NaN,
            a scale <= 0 or not positive definite, mismatched shapes.

    Examples:
        >>> import numpy as np
        >>> basis = GaussianRBF(np.linspace(0, 1, 4), np.full(4, 0.2))
        >>> rho(2.0, 0.5, 0.1, basis).round(4)
        array([0.1595, 1.3387, 1.3387, 0.1595])
    """
    # (rho >= 0 in the core, an expectation of a positive function: window for 1D,
    # polar for 2D sparsemax; the Gaussian's exp is never negative)
    return _evaluate(alpha, loc, scale, basis, jac=False)[0][()]


def jacobian(alpha: float, loc: ArrayLike, scale: ArrayLike, basis: GaussianRBF) -> FloatArray:
    """J = d rho / d theta = cov_{p,2-alpha}(phi, psi) (Prop 3), shape (..., M, N).

    theta = [mu / sigma^2, -1 / (2 sigma^2)] in 1D (M = 2), and
    [Sigma^-1 mu, vec(-Sigma^-1 / 2)] in D dims (M = D + D^2, rows of vec in
    row-major order).

    Args:
        alpha: as for ``rho``.
        loc: as for ``rho``.
        scale: as for ``rho``.
        basis: as for ``rho``.

    Returns:
        drho/d(loc, scale), shape (..., 2, N) in 1D (derivatives in loc and sigma).

    Raises:
        TypeError, ValueError: as for ``rho``.

    Examples:
        >>> import numpy as np
        >>> basis = GaussianRBF(np.linspace(0, 1, 4), np.full(4, 0.2))
        >>> jacobian(2.0, np.array([0.5]), np.array([0.1]), basis).shape  # (batch, 2, N)
        (1, 2, 4)
    """
    return _evaluate(alpha, loc, scale, basis, jac=True)[1]


def ridge_value_function(
    H: ArrayLike,  # noqa: N803 (the paper's name)
    positions: ArrayLike,
    basis: GaussianRBF,
    penalty: float,
) -> FloatArray:
    """B = H G with G = F^T (F F^T + penalty I)^-1 (Martins 2020 eq 16), shape (..., D_v, N).

    ``H`` (..., D_v, L) holds the observations at ``positions`` ((L,) in 1D,
    (L, D) in D dims); F[j, l] = psi_j(t_l). G is cached on the basis per
    (positions, penalty).

    Args:
        H: values at the positions, shape (..., D_v, L).
        positions: the L observation positions, (L,) in 1D or (L, D).
        basis: the N Gaussian RBFs.
        penalty: the ridge penalty >= 0.

    Returns:
        B = H G, shape (..., D_v, N).

    Raises:
        TypeError: non-real input.
        ValueError: shapes that do not match, a penalty < 0,
            NaN or inf.

    Examples:
        >>> import numpy as np
        >>> basis = GaussianRBF(np.linspace(0, 1, 4), np.full(4, 0.2))
        >>> ridge_value_function(np.ones((2, 10)), np.linspace(0, 1, 10), basis, 0.1).shape
        (2, 4)
    """
    if not isinstance(basis, GaussianRBF):
        raise TypeError(f"basis must be a GaussianRBF, got {type(basis).__name__}")
    h = _floating("H", H)
    pos = _floating("positions", positions)
    expected = 1 if basis.dim == 1 else 2
    if pos.ndim != expected or (basis.dim > 1 and pos.shape[-1] != basis.dim):
        want = "(L,)" if basis.dim == 1 else f"(L, {basis.dim})"
        raise ValueError(f"positions must have shape {want}, got {pos.shape}")
    if h.ndim < 2 or h.shape[-1] != pos.shape[0]:
        raise ValueError(
            f"H must have shape (..., D_v, {pos.shape[0]}) to match positions, got {h.shape}"
        )
    lam = float(check.as_float("penalty", penalty))
    if lam < 0:
        raise ValueError(f"penalty must be >= 0, got {penalty!r}")
    key = (pos.shape, pos.dtype.str, pos.tobytes(), lam)
    g = basis._ridge_cache.get(key)
    if g is None:
        f = np.swapaxes(basis(pos), 0, 1).astype(np.float64)  # (N, L)
        gram = f @ f.T + lam * np.eye(f.shape[0])
        try:
            low = np.linalg.cholesky(gram)
        except np.linalg.LinAlgError:
            raise ValueError("F F^T + penalty I is singular: use penalty > 0") from None
        g = np.linalg.solve(low.T, np.linalg.solve(low, f)).T  # (L, N)
        basis._ridge_cache[key] = g
    dtype = np.result_type(h, basis.mu)
    return (h @ g).astype(dtype, copy=False)
