"""The beta-Gaussian (alpha-entmax of a quadratic score) as a torch.distributions.Distribution.

p(t) proportional to [1 - (alpha-1) (d^2/2 - c)]_+^(1/(alpha-1)) with
d^2 = (t - loc)^T Sigma^-1 (t - loc): the alpha-entmax of
f(t) = -d^2 / 2 (seed 000 Def 2 with a quadratic f). alpha > 1; alpha -> 1 is
the Gaussian. All closed forms (threshold, radius, log density, variance,
Tsallis entropy) are the generated ones in torch_bridge.closed_forms.beta_gaussian.
"""

from __future__ import annotations

import torch
from torch.distributions import Beta, Distribution, constraints
from torch.distributions.utils import broadcast_all

from torch_bridge._generated import beta_gaussian as _gen
from torch_bridge.attention import loc_scale_from_natural

__all__ = ["BetaGaussian"]


class BetaGaussian(Distribution):
    """beta-Gaussian with ``alpha`` > 1, ``loc`` and ``scale``.

    1D: ``scale`` is sigma > 0 (the score is -(t - loc)^2 / (2 sigma^2)); the
    support is [loc - a, loc + a], a the generated half-width. N-D: pass
    ``loc`` (..., D) and ``scale`` = Sigma (..., D, D), positive definite.
    ``log_prob`` is -inf outside the support (values there are not
    rejected); ``entropy`` is the Tsallis alpha-entropy; ``rsample`` is
    reparameterized (|z|^2 / R^2 ~ Beta(D/2, 1/(alpha-1) + 1) along a uniform
    direction). ``BetaGaussian.from_natural`` takes theta1 = Sigma^-1 loc,
    theta2 = -Sigma^-1 / 2 instead.
    """

    arg_constraints = {"alpha": constraints.greater_than(1.0)}  # noqa: RUF012
    has_rsample = True

    def __init__(
        self,
        alpha: float | torch.Tensor,
        loc: float | torch.Tensor,
        scale: float | torch.Tensor,
        validate_args: bool | None = None,
    ) -> None:
        loc_t = torch.as_tensor(loc) if not isinstance(loc, torch.Tensor) else loc
        scale_t = torch.as_tensor(scale) if not isinstance(scale, torch.Tensor) else scale
        self.multivariate = (
            scale_t.dim() >= 2 and loc_t.dim() >= 1 and scale_t.shape[-1] == loc_t.shape[-1]
        )
        if self.multivariate:
            d = loc_t.shape[-1]
            if scale_t.shape[-2:] != (d, d):
                raise ValueError(
                    f"scale (Sigma) must have shape (..., {d}, {d}), got {tuple(scale_t.shape)}"
                )
            dtype = torch.promote_types(loc_t.dtype, scale_t.dtype)
            if not dtype.is_floating_point:
                dtype = torch.get_default_dtype()
            alpha_t = torch.as_tensor(alpha, dtype=dtype, device=loc_t.device)
            low, info = torch.linalg.cholesky_ex(scale_t.to(dtype))
            if bool((info != 0).any()):
                raise ValueError("scale (Sigma) must be symmetric positive definite")
            batch = torch.broadcast_shapes(alpha_t.shape, loc_t.shape[:-1], scale_t.shape[:-2])
            self.alpha = alpha_t.expand(batch)
            self.loc = loc_t.to(dtype).expand(*batch, d)
            self.scale = scale_t.to(dtype).expand(*batch, d, d)
            self._low = low.expand(*batch, d, d)
            self._logdet = 2 * torch.log(torch.diagonal(self._low, dim1=-2, dim2=-1)).sum(-1)
            event = (d,)
        else:
            self.alpha, self.loc, self.scale = broadcast_all(alpha, loc_t, scale_t)
            if not self.scale.is_floating_point():
                self.alpha, self.loc, self.scale = (
                    t.to(torch.get_default_dtype()) for t in (self.alpha, self.loc, self.scale)
                )
            batch, event = self.loc.shape, ()
        if not torch.compiler.is_compiling():
            if not bool((self.alpha > 1).all()) or not bool(torch.isfinite(self.alpha).all()):
                raise ValueError("alpha must be finite and > 1 (alpha = 1 is the Gaussian)")
            if not bool(torch.isfinite(self.loc).all()):
                raise ValueError("loc must be finite")
            if not self.multivariate and not bool(
                (torch.isfinite(self.scale) & (self.scale > 0)).all()
            ):
                raise ValueError("scale (sigma) must be finite and > 0")
        super().__init__(batch_shape=batch, event_shape=event, validate_args=validate_args)

    @classmethod
    def from_natural(
        cls, alpha: float | torch.Tensor, theta1: torch.Tensor, theta2: torch.Tensor
    ) -> BetaGaussian:
        """From theta1 = Sigma^-1 loc, theta2 = -Sigma^-1 / 2 (1D: loc/sigma^2, -1/(2 sigma^2))."""
        loc, scale = loc_scale_from_natural(theta1, theta2)
        return cls(alpha, loc, scale)

    @property
    def dim(self) -> int:
        return self.event_shape[0] if self.multivariate else 1

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        if self.multivariate:
            return constraints.real_vector
        a = self.half_width
        return constraints.interval(self.loc - a, self.loc + a)

    @property
    def half_width(self) -> torch.Tensor:
        """1D: a, the support is [loc - a, loc + a]."""
        return _gen.half_width_1d(self.alpha, self.scale)

    @property
    def radius(self) -> torch.Tensor:
        """The support radius R in the Sigma^-1 metric (1D: a / sigma)."""
        if self.multivariate:
            return _gen.radius(self.alpha, self.dim, self._logdet)
        return self.half_width / self.scale

    @property
    def mean(self) -> torch.Tensor:
        return self.loc

    @property
    def mode(self) -> torch.Tensor:
        return self.loc

    @property
    def variance(self) -> torch.Tensor:
        if self.multivariate:
            return torch.diagonal(self.covariance_matrix, dim1=-2, dim2=-1)
        return _gen.variance_1d(self.alpha, self.scale)

    @property
    def covariance_matrix(self) -> torch.Tensor:
        """N-D: cov_scale * Sigma; 1D: variance[..., None, None]."""
        if not self.multivariate:
            return self.variance[..., None, None]
        return _gen.cov_scale(self.alpha, self.dim, self._logdet)[..., None, None] * self.scale

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """log p(value); -inf outside the support."""
        value = torch.as_tensor(value, dtype=self.loc.dtype, device=self.loc.device)
        if self.multivariate:
            diff = (value - self.loc)[..., None]
            z = torch.linalg.solve_triangular(self._low, diff, upper=False)[..., 0]
            return _gen.logpdf_d2((z * z).sum(-1), self.alpha, self.dim, self._logdet)
        return _gen.logpdf_1d(value, self.alpha, self.loc, self.scale)

    def entropy(self) -> torch.Tensor:
        """The Tsallis alpha-entropy (seed 000 eq 6), not the Shannon entropy."""
        if self.multivariate:
            return _gen.tsallis_entropy(self.alpha, self.dim, self._logdet)
        return _gen.tsallis_entropy_1d(self.alpha, self.scale)

    def rsample(self, sample_shape: torch.Size | tuple = ()) -> torch.Tensor:
        shape = self._extended_shape(torch.Size(sample_shape))
        k = 1 / (self.alpha - 1)
        radial = Beta(torch.full_like(k, self.dim / 2), k + 1).rsample(sample_shape)  # |z|^2/R^2
        length = torch.sqrt(radial) * self.radius
        if not self.multivariate:
            sign = torch.where(
                torch.rand(shape, dtype=self.loc.dtype, device=self.loc.device) < 0.5, -1.0, 1.0
            )
            return self.loc + self.scale * sign * length
        direction = torch.randn(shape, dtype=self.loc.dtype, device=self.loc.device)
        direction = direction / torch.linalg.vector_norm(direction, dim=-1, keepdim=True)
        z = direction * length[..., None]
        return self.loc + (self._low @ z[..., None])[..., 0]

    def _validate_sample(self, value: torch.Tensor) -> None:
        """Values outside the support are allowed (log_prob -inf); shapes are still checked."""
        if not isinstance(value, torch.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim = len(self._event_shape)
        if value.shape[value.dim() - event_dim :] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: {value.shape}")
        torch.broadcast_shapes(value.shape, self._batch_shape + self._event_shape)

    def __repr__(self) -> str:
        shapes = (self.alpha.shape, self.loc.shape, self.scale.shape)
        return "BetaGaussian(alpha: {}, loc: {}, scale: {})".format(*shapes)
