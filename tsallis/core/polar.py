"""2-D continuous sparsemax (alpha = 2) in polar coordinates, written once for NumPy and Torch.

The attention density is a truncated paraboloid with support {mu + R L s omega(th):
s < 1} (L L^T = Sigma, R the generated support radius). Per angle the radial
integral of the density times a Gaussian RBF is the generated closed form
(tsallis.core.window.radial_moments); in the angle, a periodic trapezoid whose end
point is not counted twice. Both faces call ``sparsemax_2d_moments``: the NumPy face
(tsallis.attention) assembles the Jacobian rows from its result, the Torch face
(torch_bridge.attention_2d) maps it to the gradients of loc and Sigma.
"""

from __future__ import annotations

import math
from typing import Any

from tsallis.core import arrays as _xs
from tsallis.core import window
from tsallis.core._generated import gaussian, truncated_paraboloid
from tsallis.core.branching import Branch

Array = Any


def logdet_2d(low: Array) -> Array:
    """log |L L^T| from a lower-triangular 2x2 factor (..., 2, 2), (...) (the 2-D
    moments here and the Torch op's Gaussian and angle count, torch_bridge.attention_2d).

    Examples:
        >>> import numpy as np
        >>> float(logdet_2d(np.array([[2.0, 0.0], [1.0, 3.0]])))  # log 36
        3.58351893845611
    """
    xp = _xs.namespace(low)
    return 2 * (xp.log(low[..., 0, 0]) + xp.log(low[..., 1, 1]))


def sparsemax_2d_moments(
    loc: Array,
    scale: Array,
    low: Array,
    mu: Array,
    basis_low: Array,
    angles: int,
    dense: bool,
    branch: Branch | None = None,
) -> tuple[Array, Array, Array]:
    """(rho, J_t, the centred part of J_tt) of 2-D continuous sparsemax against Gaussian RBFs.

    Parameters:
        loc: (..., 2) float64, the density's location.
        scale: (..., 2, 2) float64, Sigma (symmetric positive definite).
        low: (..., 2, 2), the lower Cholesky factor of ``scale``.
        mu: (N, 2), the RBF centres; basis_low: (N, 2, 2), the Cholesky factors of
            their covariances.
        angles: the trapezoid's node count in the angle.
        dense, branch: as in window.radial_moments (no host reads with ``dense``).

    Returns:
        rho (..., N) = E_p[psi_j], taken as at least 0 (an expectation of a positive
        function: far outside the support the difference below rounded to -1.6e-322);
        J_t (..., N, 2) = cov_p(t, psi_j); and inner (..., N, 2, 2), with which
        cov_p(t t^T, psi_j) = loc J_t^T + J_t loc^T + inner (Martins et al. 2020, Prop 3).

    Examples:
        >>> import numpy as np
        >>> eye = np.eye(2)
        >>> rho, _, _ = sparsemax_2d_moments(
        ...     np.zeros(2), eye, eye, np.zeros((1, 2)), 0.1 * eye[None], 64, False
        ... )
        >>> round(float(rho[0]), 6)
        0.55419
    """
    xp = _xs.namespace(loc, mu)
    logdet = logdet_2d(low)
    big_r = truncated_paraboloid.radius(2, logdet)[..., None, None]  # (..., 1, 1)
    step = 2 * math.pi / angles
    theta = xp.arange(angles, dtype=loc.dtype, device=getattr(loc, "device", None)) * step
    omega = xp.stack([xp.cos(theta), xp.sin(theta)])  # (2, n)
    l_omega = low @ omega  # (..., 2, n)
    # L_j^-1 applied by components (2x2 lower triangular): batched solves and
    # reductions over a length-2 axis cost more than the arithmetic
    inv00 = 1 / basis_low[:, 0, 0]
    inv11 = 1 / basis_low[:, 1, 1]
    inv10 = -basis_low[:, 1, 0] * inv00 * inv11
    lw0, lw1 = l_omega[..., None, 0, :], l_omega[..., None, 1, :]  # (..., 1, n)
    a0 = inv00[:, None] * lw0  # (..., N, n)
    a1 = inv10[:, None] * lw0 + inv11[:, None] * lw1
    delta = mu - loc[..., None, :]  # (..., N, 2)
    b0 = (inv00 * delta[..., 0])[..., None]
    b1 = (inv10 * delta[..., 0] + inv11 * delta[..., 1])[..., None]
    big_a = a0 * a0 + a1 * a1
    big_b = a0 * b0 + a1 * b1
    ratio = big_b / big_a
    r0, r1 = b0 - a0 * ratio, b1 - a1 * ratio
    c_res = r0 * r0 + r1 * r1  # |b|^2 - B^2/A, as a norm (no cancellation)
    centre = ratio / big_r  # the peak's r / R
    rt = 1 / (big_r * xp.sqrt(big_a))
    omc = (big_a * big_r - big_b) / (big_a * big_r)
    shape = centre.shape
    moments = window.radial_moments(
        xp.reshape(centre, (-1,)), xp.reshape(omc, (-1,)), xp.reshape(rt, (-1,)), dense, branch
    )
    base = math.sqrt(2 * math.pi) * rt * xp.exp(-c_res / 2)
    radial = {j: base * big_r ** (j + 1) * xp.reshape(moments[f"p{j}"], shape) for j in (1, 2, 3)}
    # dt = |L| r dr dtheta, times the RBF normalizer 1 / (2 pi |L_j|)
    det_ratio = xp.exp(logdet / 2)[..., None] * xp.exp(
        gaussian.logpdf_d2(0.0, 2, logdet_2d(basis_low))
    )
    rho = det_ratio * xp.sum((big_r**2 / 2 * radial[1] - radial[3] / 2) * step, axis=-1)
    rho = _xs.at_least(rho, 0.0)
    # J_t: sum over angles of L omega (radial[2] w); the centred J_tt: of L omega omega^T
    # L^T (radial[3] w), less R^2 / 4 Sigma (radial[1] w), as matrix products over angles
    first = det_ratio[..., None] * ((radial[2] * step) @ xp.matrix_transpose(l_omega))
    squares = xp.stack([lw0 * lw0, lw0 * lw1, lw1 * lw1], axis=-1)[..., 0, :, :]  # (..., n, 3)
    outer = (radial[3] * step) @ squares  # (..., N, 3)
    level = (big_r[..., 0] ** 2 / 4) * xp.sum(radial[1] * step, axis=-1)  # (..., N)
    c00, c01, c10, c11 = (
        outer[..., k] - level * scale[..., None, i, j]
        for k, i, j in ((0, 0, 0), (1, 0, 1), (1, 1, 0), (2, 1, 1))
    )
    inner = xp.stack([xp.stack([c00, c01], axis=-1), xp.stack([c10, c11], axis=-1)], axis=-2)
    return rho, first, det_ratio[..., None, None] * inner
