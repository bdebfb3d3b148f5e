"""2D continuous attention in Torch: alpha = 1 (Alg 1) and alpha = 2 (polar coordinates).

alpha = 1: rho_j = N(mu; mu_j, Sigma + Sigma_j), differentiated by autograd
(every argument, the basis covariances included).

alpha = 2: t = mu + R L (cos th, sin th) s over the support s < 1 (L L^T =
Sigma, R the generated support radius). Per angle the radial integral is the
generated closed form (Gauss-Legendre windows where it is ill conditioned);
in the angle a periodic trapezoid whose end point is never counted twice. A
custom autograd.Function returns J = cov_{p,0}(phi, psi) (Prop 3) from the
same nodes; its backward maps J to loc and Sigma through theta1 = Sigma^-1 mu,
theta2 = -Sigma^-1 / 2, and to the RBF centres by translation. The RBF
covariances get no gradient here (ValueError if they require one).
"""

from __future__ import annotations

import math

import torch
from torch.autograd.function import once_differentiable

from torch_bridge._compile import branch_for, dense_for, prepare_tables
from torch_bridge._generated import gaussian, truncated_paraboloid
from torch_bridge.basis import check_spd
from tsallis.core import polar
from tsallis.core.validation import broadcast_shape

_F64 = torch.float64
MAX_ANGLES = 1 << 14
MIN_ANGLES = 64
CHUNK_2D = 1 << 20  # values (rows x N x angles) per intermediate of the alpha = 2 moments


def _gaussian_2d(
    loc: torch.Tensor, scale: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor
) -> torch.Tensor:
    total = scale[..., None, :, :] + sigma  # (..., N, 2, 2)
    low = torch.linalg.cholesky(total)
    delta = (mu - loc[..., None, :])[..., None]
    z = torch.linalg.solve_triangular(low, delta, upper=False)[..., 0]
    return torch.exp(gaussian.logpdf_d2((z * z).sum(-1), 2, polar.logdet_2d(low)))


def _angle_count(
    loc: torch.Tensor, scale: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor
) -> int:
    """Angles for the trapezoid: n >= 8 / s for the narrowest RBF that matters, seen from loc.

    In coordinates whitened by Sigma an RBF of smallest std w at distance d
    spans an angle of std s = w / max(d, w); the trapezoid error on such a
    peak is about exp(-2 pi^2 s^2 / h^2), below 1e-13 for n >= 8 / s. RBFs
    whose centre lies z RBF widths outside the support, with
    z^2 - min_row(z^2) > 70 (weight below e^-35 of the row's nearest), are
    left out. Reads one number back from the device.
    """
    with torch.no_grad():
        low = torch.linalg.cholesky(scale)[..., None, :, :]
        white = torch.linalg.solve_triangular(low, torch.linalg.cholesky(sigma), upper=False)
        smallest = torch.linalg.svdvals(white)[..., -1]  # (..., N)
        centre = torch.linalg.solve_triangular(
            low, (mu - loc[..., None, :])[..., None], upper=False
        )
        distance = torch.linalg.vector_norm(centre[..., 0], dim=-1)
        radius = truncated_paraboloid.radius(2, polar.logdet_2d(low[..., 0, :, :]))[..., None]
        outside = torch.clamp(distance - radius, min=0) / smallest
        nearest = outside.amin(-1, keepdim=True)
        matters = outside * outside - nearest * nearest <= 70
        spread = smallest / torch.maximum(distance, smallest)
        spread = torch.where(matters, spread, torch.ones_like(spread))
        needed = math.ceil(8 / float(spread.min()))
    return int(min(max(needed, MIN_ANGLES), MAX_ANGLES))


def _sparsemax_moments(
    loc: torch.Tensor, scale: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor, angles: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """rho (..., N), J_t (..., N, 2) and the centred J_tt part (..., N, 2, 2), float64
    (the shared core's polar.sparsemax_2d_moments)."""
    low, basis_low = torch.linalg.cholesky(scale), torch.linalg.cholesky(sigma)
    prepare_tables(2.0, loc.device)
    return polar.sparsemax_2d_moments(
        loc, scale, low, mu, basis_low, angles, dense_for(loc), branch_for(loc)
    )


def _blocked_moments(
    loc: torch.Tensor, scale: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor, angles: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """_sparsemax_moments in blocks of rows: at most CHUNK_2D values (rows x N x angles)
    per intermediate, whatever the batch size."""
    batch = loc.shape[:-1]
    flat_loc, flat_scale = loc.reshape(-1, 2), scale.reshape(-1, 2, 2)
    rows = max(1, CHUNK_2D // (mu.shape[0] * angles))
    parts = [
        _sparsemax_moments(flat_loc[i : i + rows], flat_scale[i : i + rows], mu, sigma, angles)
        for i in range(0, flat_loc.shape[0], rows)
    ]
    return tuple(
        torch.cat([p[k] for p in parts]).reshape(*batch, *parts[0][k].shape[1:]) for k in range(3)
    )


class _Sparsemax2D(torch.autograd.Function):
    @staticmethod
    def forward(
        ctx: torch.autograd.function.FunctionCtx,
        loc: torch.Tensor,
        scale: torch.Tensor,
        mu: torch.Tensor,
        sigma: torch.Tensor,
        angles: int,
    ) -> torch.Tensor:
        args = [t.to(_F64) for t in (loc, scale, mu, sigma)]
        rho, first, inner = _blocked_moments(*args, angles)
        ctx.save_for_backward(first, inner, args[0], args[1])
        ctx.dtypes = (loc.dtype, scale.dtype, mu.dtype)
        return rho.to(loc.dtype)

    @staticmethod
    @once_differentiable
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> tuple:
        first, inner, loc, scale = ctx.saved_tensors
        g = grad.to(_F64)
        precision = torch.linalg.inv(scale)
        theta1 = (precision @ loc[..., None])[..., 0]
        v1 = (g[..., None] * first).sum(-2)  # sum_j g_j J_t[j], (..., 2)
        # sum_j g_j J_tt[j] with J_tt = mu J_t^T + J_t mu^T + inner
        v2 = loc[..., :, None] * v1[..., None, :]
        v2 = v2 + v2.transpose(-1, -2) + (g[..., None, None] * inner).sum(-3)
        p_v1 = (precision @ v1[..., None])[..., 0]
        grad_loc = p_v1
        grad_scale = -p_v1[..., :, None] * theta1[..., None, :] + precision @ v2 @ precision / 2
        grad_mu = None
        if ctx.needs_input_grad[2]:
            d_mu = torch.einsum("...de,...je->...jd", precision, g[..., None] * first)
            grad_mu = -d_mu.reshape(-1, *d_mu.shape[-2:]).sum(0)
        out = (grad_loc, grad_scale, grad_mu)
        return (
            *(None if v is None else v.to(d) for v, d in zip(out, ctx.dtypes, strict=True)),
            None,
            None,
        )


def _attention_2d(
    loc: torch.Tensor,
    scale: torch.Tensor,
    basis: torch.nn.Module,
    alpha: float,
    validate: bool,
    angles: int | None,
) -> torch.Tensor:
    """rho for a 2D basis; see torch_bridge.attention.continuous_attention."""
    if loc.shape[-1:] != (2,) or scale.dim() < 2 or scale.shape[-2:] != (2, 2):
        raise ValueError(
            f"2D: loc must have shape (..., 2) and scale (Sigma) (..., 2, 2), got"
            f" {tuple(loc.shape)} and {tuple(scale.shape)}"
        )
    if scale.dtype != loc.dtype or scale.device != loc.device:
        raise ValueError(
            f"scale ({scale.dtype}, {scale.device}) must match loc ({loc.dtype}, {loc.device})"
        )
    batch = broadcast_shape(loc.shape[:-1], scale.shape[:-2])
    if batch is None:
        raise ValueError(
            f"loc {tuple(loc.shape)} and scale {tuple(scale.shape)} batch shapes must broadcast"
        )
    if validate:
        if not bool(torch.isfinite(loc).all() & torch.isfinite(scale).all()):
            raise ValueError("loc and scale (Sigma) must be finite")
        check_spd("scale (Sigma)", scale.detach())
    if alpha not in (1.0, 2.0):
        raise ValueError(f"alpha = {alpha} in 2D: supported are alpha = 1 and alpha = 2")
    loc = loc.expand(*batch, 2)
    scale = scale.expand(*batch, 2, 2)
    if loc.numel() == 0:  # empty in, empty out; still on the graph, as torch's own ops are
        anchor = 0 * (loc.sum() + scale.sum() + basis.mu.sum() + basis.sigma.sum())
        return loc.new_zeros(*batch, basis.mu.shape[0]) + anchor.to(loc.dtype)
    scale = (scale + scale.transpose(-1, -2)) / 2
    if alpha == 1.0:
        args = [t.to(_F64) for t in (loc, scale, basis.mu, basis.sigma)]
        return _gaussian_2d(*args).to(loc.dtype)
    if basis.sigma.requires_grad:
        raise ValueError(
            "basis.sigma (RBF covariances) cannot be trained with alpha = 2 in 2D:"
            " its gradient is not implemented; detach it or use alpha = 1"
        )
    if angles is None:
        angles = _angle_count(
            loc.detach().to(_F64),
            scale.detach().to(_F64),
            basis.mu.detach().to(_F64),
            basis.sigma.to(_F64),
        )
    elif not isinstance(angles, int) or isinstance(angles, bool) or angles < 4:
        raise ValueError(f"angles must be an int >= 4 (or None: adaptive), got {angles!r}")
    return _Sparsemax2D.apply(loc, scale, basis.mu, basis.sigma, angles)
