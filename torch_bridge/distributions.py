"""The beta-Gaussian (alpha-entmax of a quadratic score) as a torch.distributions.Distribution.

p(t) proportional to [1 - (alpha-1) (d^2/2 - c)]_+^(1/(alpha-1)) with
d^2 = (t - loc)^T Sigma^-1 (t - loc): the alpha-entmax of
f(t) = -d^2 / 2 (Martins 2020 Def 2 with a quadratic f). alpha > 1; alpha -> 1 is
the Gaussian. All closed forms (threshold, radius, log density, variance,
Tsallis entropy) are the generated ones in torch_bridge.closed_forms.beta_gaussian.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from array_api_compat import device
from torch.distributions import Beta, Distribution, constraints

from torch_bridge._generated import beta_gaussian as _gen
from torch_bridge.attention import loc_scale_from_natural
from tsallis.core.arrays import mahalanobis2, namespace
from tsallis.core.tuning import HOST_VALUES
from tsallis.core.validation import broadcast_shape

__all__ = ["BetaGaussian"]

_HALF = (torch.float16, torch.bfloat16)
_NUMPY_DTYPE = {torch.float32: np.dtype(np.float32), torch.float64: np.dtype(np.float64)}


class _Finite(constraints.Constraint):
    """Finite real values (no NaN, no inf) above ``lower`` if given; ``event_dim`` 1 for vectors."""

    def __init__(self, event_dim: int = 0, lower: float | None = None) -> None:
        self.event_dim = event_dim
        self.lower = lower
        super().__init__()

    def check(self, value: torch.Tensor) -> torch.Tensor:
        ok = torch.isfinite(value)
        if self.lower is not None:
            ok = ok & (value > self.lower)
        return ok.all(-1) if self.event_dim == 1 else ok

    def __repr__(self) -> str:
        kind = "finite" if self.lower is None else f"finite and > {self.lower:g}"
        return f"{kind}{' (vector)' if self.event_dim else ''}"


class _Sigma(constraints.Constraint):
    """A 1D scale sigma with sigma^2 a normal number of the dtype log_prob works in.

    Outside [sqrt(tiny), sqrt(max)] the radius in sigma units, a power of sigma, and the
    squared distance under- or overflow together and log_prob would be NaN (0 * inf).
    (N-D: the Cholesky factorization of Sigma refuses such scales.)
    """

    def check(self, value: torch.Tensor) -> torch.Tensor:
        work = torch.promote_types(value.dtype, torch.float32)
        info, value = torch.finfo(work), value.to(work)  # float16 would round the bounds
        return (value >= math.sqrt(info.tiny)) & (value <= math.sqrt(info.max))

    def __repr__(self) -> str:
        return "in [sqrt(tiny), sqrt(max)] of its dtype (float32 for half precision)"


class _SymmetricPositiveDefinite(constraints.Constraint):
    """Finite, symmetric to 1e-6 relative to the largest entry, and positive definite.

    (torch's positive_definite compares with an absolute 1e-6: it accepts any
    asymmetric Sigma with entries near 1e-8 and rejects large ones for rounding.)
    """

    event_dim = 2

    def check(self, value: torch.Tensor) -> torch.Tensor:
        finite = torch.isfinite(value).all(-1).all(-1)
        size = value.abs().amax((-2, -1), keepdim=True)
        symmetric = ((value - value.transpose(-1, -2)).abs() <= 1e-6 * size).all(-1).all(-1)
        eye = torch.eye(value.shape[-1], dtype=value.dtype, device=value.device)
        safe = torch.where((finite & symmetric)[..., None, None], value, eye)
        work = safe.float() if safe.dtype in _HALF else safe
        return finite & symmetric & torch.linalg.cholesky_ex(work).info.eq(0)

    def __repr__(self) -> str:
        return "symmetric positive definite"


_ALPHA = _Finite(lower=1.0)
_FINITE, _FINITE_VECTOR = _Finite(), _Finite(1)
_SPD = _SymmetricPositiveDefinite()
_SIGMA = _Sigma()


def _tensor(name: str, value: object) -> torch.Tensor:
    """A real tensor from a tensor or a real number (TypeError otherwise).

    A number becomes an exact float64 tensor; it does not choose the dtype (``_dtype``).
    """
    if isinstance(value, torch.Tensor):
        if value.is_complex() or value.dtype == torch.bool:
            raise TypeError(f"{name} must be a real tensor, got dtype {value.dtype}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a tensor or a real number, got {type(value).__name__}")
    return torch.tensor(float(value), dtype=torch.float64)


def _dtype(*given: object) -> torch.dtype:
    """The floating dtype of the tensor arguments (promoted); the default one if none."""
    dtype = None
    for value in given:
        if isinstance(value, torch.Tensor):
            dtype = value.dtype if dtype is None else torch.promote_types(dtype, value.dtype)
    if dtype is None or not dtype.is_floating_point:
        return torch.get_default_dtype()
    return dtype


def _broadcast(**shapes: torch.Size) -> torch.Size:
    """The broadcast batch shape; ValueError naming the parameters when they do not."""
    shape = broadcast_shape(*shapes.values())
    if shape is None:
        listed = ", ".join(f"{name} {tuple(shape)}" for name, shape in shapes.items())
        raise ValueError(f"batch shapes do not broadcast: {listed}")
    return torch.Size(shape)


def _log_density(value, loc, factor, log_mode, inv_radius2, k, multivariate: bool, sanitize: bool):  # noqa: ANN001, ANN202
    """log p for Torch tensors or NumPy arrays alike (the host route runs it on NumPy).

    factor is the Cholesky factor (N-D) or sigma (1D). A NaN in the value (or the
    parameters) gives NaN, an infinite value -inf. With ``sanitize`` (gradients are
    needed) such rows enter the arithmetic as the mode (the double-where pattern),
    since 0 * inf in the backward of the substitution or of z * z would make NaN
    gradients; without, the forward's NaN there is simply replaced.
    """
    xp = namespace(value)
    diff = value - loc
    if multivariate:
        # sum_i |diff_i|: NaN iff a NaN, else inf iff an inf. A matrix-vector product:
        # a reduction over a short last axis costs several times as much.
        if isinstance(diff, np.ndarray):  # (the array-API wrapper costs more than the product)
            ones = np.ones(diff.shape[-1], dtype=diff.dtype)
        else:
            ones = xp.ones(diff.shape[-1], dtype=diff.dtype, device=device(diff))
        size = xp.abs(diff) @ ones
        finite = xp.isfinite(size)
        if sanitize:
            diff = xp.where(finite[..., None], diff, 0.0)
        d2 = mahalanobis2(factor, diff)
    else:
        size = diff
        finite = xp.isfinite(size)
        z = (xp.where(finite, diff, 0.0) if sanitize else diff) / factor
        d2 = z * z
    out = xp.where(finite, _gen.logpdf_radial(d2, log_mode, inv_radius2, k), -math.inf)
    return xp.where(xp.isnan(size), math.nan, out)


def _host_view(t: torch.Tensor) -> np.ndarray:
    """A CPU tensor as a NumPy array (half precision as float32, which NumPy has)."""
    return t.detach().to(torch.promote_types(t.dtype, torch.float32)).numpy()


def _as_tensor_like(value: object, like: torch.Tensor) -> torch.Tensor:
    """A result of the core back as a tensor on like's device (NumPy results are wrapped)."""
    if isinstance(value, torch.Tensor):
        return value
    return torch.as_tensor(np.asarray(value), device=like.device)


class BetaGaussian(Distribution):
    """beta-Gaussian with ``alpha`` > 1, ``loc`` and ``scale``.

    1D: ``scale`` is sigma > 0 (the score is -(t - loc)^2 / (2 sigma^2)); the
    support is [loc - a, loc + a], a the generated half-width. N-D: pass
    ``loc`` (..., D) and ``scale`` = Sigma (..., D, D), symmetric positive definite.
    Shapes decide: N-D where scale ends in a D x D matrix and loc in D, else a 1D
    batch; so a 1D batch whose last two dimensions are equal to each other and to
    loc's last (sigma of shape (3, 3) with loc (3, 3)) reads as N-D: flatten it.
    ``log_prob`` is -inf outside the support (values there are not rejected, as
    in scipy.stats' logpdf); ``entropy`` is the Tsallis alpha-entropy; ``rsample``
    is reparameterized (|z|^2 / R^2 ~ Beta(D/2, 1/(alpha-1) + 1) along a uniform
    direction; float16 and bfloat16 are drawn in float32 and cast back).
    ``BetaGaussian.from_natural`` takes theta1 = Sigma^-1 loc, theta2 = -Sigma^-1 / 2.

    Validation follows torch.distributions: with ``validate_args`` the parameters
    are checked against ``arg_constraints`` at construction, a ValueError naming
    the parameter, and ``log_prob`` rejects NaN and misshapen values. It is on
    unless ``validate_args=False`` or while torch.compile traces (torch's global
    default is not used: the first torch.compile call turns it off process-wide).
    With ``validate_args=False`` nothing is read back from the device, and NaN
    propagates (log_prob(NaN) is NaN).

    Raises:
        TypeError: a parameter is not a real tensor or number.
        ValueError: shapes that do not broadcast; with validation, alpha <= 1,
            a non-finite loc, a 1D scale outside [sqrt(tiny), sqrt(max)] of its dtype
            (so sigma <= 0, NaN and inf too), or a Sigma that is not symmetric
            positive definite.

    Args:
        alpha: a real > 1 (a Python number or a tensor broadcasting with loc).
        loc: (...) in 1D, (..., D) in N-D; a floating tensor.
        scale: sigma > 0 (...) in 1D, or Sigma (..., D, D).
        validate_args: check the parameters (default on; see above).

    Examples:
        >>> d = BetaGaussian(2.0, torch.tensor(0.0), torch.tensor(1.0))
        >>> round(float(d.half_width), 4)  # (3 sigma^2 / 2)^(1/3), Martins 2020 eq 10
        1.1447
    """

    has_rsample = True

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:  # type: ignore[override]
        """The parameters' constraints, checked at construction when validating.

        Returns:
            {"alpha", "loc", "scale"} -> constraint (the N-D form checks Sigma).

        Examples:
            >>> d = BetaGaussian(1.5, torch.tensor(0.0), torch.tensor(1.0))
            >>> sorted(d.arg_constraints)
            ['alpha', 'loc', 'scale']
        """
        if getattr(self, "multivariate", False):
            return {"alpha": _ALPHA, "loc": _FINITE_VECTOR, "scale": _SPD}
        return {"alpha": _ALPHA, "loc": _FINITE, "scale": _SIGMA}

    def __init__(
        self,
        alpha: float | torch.Tensor,
        loc: float | torch.Tensor,
        scale: float | torch.Tensor,
        validate_args: bool | None = None,
    ) -> None:
        alpha_t, loc_t, scale_t = (
            _tensor("alpha", alpha),
            _tensor("loc", loc),
            _tensor("scale", scale),
        )
        # N-D where scale ends in a square matrix matching loc's last dimension; any
        # other shapes are a 1D batch (loc and sigma of shape (2, 3) were read as N-D,
        # D = 3, and refused as a malformed Sigma)
        self.multivariate = (
            scale_t.dim() >= 2
            and loc_t.dim() >= 1
            and scale_t.shape[-1] == scale_t.shape[-2] == loc_t.shape[-1]
        )
        dtype = (
            _dtype(loc, scale)
            if isinstance(loc, torch.Tensor) or isinstance(scale, torch.Tensor)
            else _dtype(alpha)
        )
        device = next((v.device for v in (loc, scale, alpha) if isinstance(v, torch.Tensor)), None)
        alpha_t, loc_t, scale_t = (t.to(device=device) for t in (alpha_t, loc_t, scale_t))
        # alpha keeps its precision: a number stays float64 (1 + 1e-6 is 1.0 in float16),
        # a tensor its own dtype, at least float32; outputs come back in the loc dtype.
        alpha_dtype = torch.promote_types(alpha_t.dtype, torch.float32)
        if not alpha_dtype.is_floating_point:
            alpha_dtype = torch.float64
        if self.multivariate:
            d = loc_t.shape[-1]
            if scale_t.shape[-2:] != (d, d):
                raise ValueError(
                    f"scale (Sigma) must have shape (..., {d}, {d}), got {tuple(scale_t.shape)}"
                )
            batch = _broadcast(alpha=alpha_t.shape, loc=loc_t.shape[:-1], scale=scale_t.shape[:-2])
            self.alpha = alpha_t.to(alpha_dtype).expand(batch)
            self.loc = loc_t.to(dtype).expand(*batch, d)
            self.scale = scale_t.to(dtype).expand(*batch, d, d)
            event: tuple[int, ...] = (d,)
        else:
            batch = _broadcast(alpha=alpha_t.shape, loc=loc_t.shape, scale=scale_t.shape)
            self.alpha = alpha_t.to(alpha_dtype).expand(batch)
            self.loc, self.scale = (t.to(dtype).expand(batch) for t in (loc_t, scale_t))
            event = ()
        if validate_args is None:
            # Our default is to validate. torch's own default is process-wide, and the
            # first torch.compile call switches it off as a side effect (torch._dynamo).
            validate_args = not torch.compiler.is_compiling()
        super().__init__(batch_shape=batch, event_shape=event, validate_args=validate_args)
        if self.multivariate:
            # float16 / bfloat16 have no Cholesky kernel: factor in float32.
            work = self.scale.float() if dtype in _HALF else self.scale
            self._low = torch.linalg.cholesky_ex(work)[0].to(dtype)
            self._logdet = 2 * torch.log(torch.diagonal(self._low, dim1=-2, dim2=-1)).sum(-1)

    @classmethod
    def from_natural(
        cls, alpha: float | torch.Tensor, theta1: torch.Tensor, theta2: torch.Tensor
    ) -> BetaGaussian:
        """From theta1 = Sigma^-1 loc, theta2 = -Sigma^-1 / 2 (1D: loc/sigma^2, -1/(2 sigma^2)).

        Args:
            alpha: a real > 1.
            theta1: (...) in 1D, (..., D) in N-D.
            theta2: (...) < 0 in 1D, (..., D, D) negative definite in N-D.

        Returns:
            The distribution with loc and scale from ``loc_scale_from_natural``.

        Raises:
            ValueError: as for ``loc_scale_from_natural`` and the constructor.

        Examples:
            >>> d = BetaGaussian.from_natural(1.5, torch.tensor(1.0), torch.tensor(-0.5))
            >>> float(d.loc), float(d.scale)
            (1.0, 1.0)
        """
        loc, scale = loc_scale_from_natural(theta1, theta2)
        return cls(alpha, loc, scale)

    @property
    def dim(self) -> int:
        """D: 1, or the event size in N-D.

        Examples:
            >>> BetaGaussian(2.0, torch.zeros(2), torch.eye(2)).dim
            2
        """
        return self.event_shape[0] if self.multivariate else 1

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        """1D: the interval [loc - a, loc + a]; N-D: real vectors (the ellipsoid is not a
        torch constraint; log_prob is -inf outside it).

        Examples:
            >>> d = BetaGaussian(2.0, torch.tensor(0.0), torch.tensor(1.0))
            >>> round(float(d.support.upper_bound), 4)
            1.1447
        """
        if self.multivariate:
            return constraints.real_vector
        a = self.half_width
        return constraints.interval(self.loc - a, self.loc + a)

    @property
    def half_width(self) -> torch.Tensor:
        """1D: a, the support is [loc - a, loc + a].

        Returns:
            a, of loc's dtype and batch shape.

        Examples:
            >>> d = BetaGaussian(1.5, torch.tensor(0.0), torch.tensor(1.0))
            >>> round(float(d.half_width), 4)
            1.7188
        """
        return _gen.half_width_1d(self.alpha, self.scale).to(self.loc.dtype)

    @property
    def radius(self) -> torch.Tensor:
        """The support radius R in the Sigma^-1 metric (1D: a / sigma).

        Returns:
            R, of loc's dtype and batch shape.

        Examples:
            >>> round(float(BetaGaussian(2.0, torch.zeros(2), torch.eye(2)).radius), 4)
            1.0623
        """
        if self.multivariate:
            return _gen.radius(self.alpha, self.dim, self._logdet).to(self.loc.dtype)
        return self.half_width / self.scale

    @property
    def mean(self) -> torch.Tensor:
        """loc (the family is symmetric about it).

        Examples:
            >>> float(BetaGaussian(1.5, torch.tensor(0.3), torch.tensor(1.0)).mean)
            0.30000001192092896
        """
        return self.loc

    @property
    def mode(self) -> torch.Tensor:
        """loc.

        Examples:
            >>> float(BetaGaussian(1.5, torch.tensor(0.3), torch.tensor(1.0)).mode)
            0.30000001192092896
        """
        return self.loc

    @property
    def variance(self) -> torch.Tensor:
        """The variance (N-D: the diagonal of the covariance matrix), generated closed form.

        Examples:
            >>> d = BetaGaussian(1.5, torch.tensor(0.0), torch.tensor(1.0))
            >>> round(float(d.variance), 4)
            0.422
        """
        if self.multivariate:
            return torch.diagonal(self.covariance_matrix, dim1=-2, dim2=-1)
        return _gen.variance_1d(self.alpha, self.scale).to(self.loc.dtype)

    @property
    def covariance_matrix(self) -> torch.Tensor:
        """N-D: cov_scale * Sigma; 1D: variance[..., None, None].

        Returns:
            (..., D, D) of loc's dtype.

        Examples:
            >>> BetaGaussian(2.0, torch.zeros(2), torch.eye(2)).covariance_matrix.diagonal()
            tensor([0.1881, 0.1881])
        """
        if not self.multivariate:
            return self.variance[..., None, None]
        factor = _gen.cov_scale(self.alpha, self.dim, self._logdet).to(self.loc.dtype)
        return factor[..., None, None] * self.scale

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        """log p(value): -inf outside the support; NaN raises when validating, else gives NaN.

        ``value`` broadcasts against batch_shape + event_shape.

        Args:
            value: points, of the distribution's dtype (1D: (...); N-D: (..., D)).

        Returns:
            The log-densities, the broadcast batch shape.

        Raises:
            ValueError: with validation, NaN or a misshapen value.

        Examples:
            >>> d = BetaGaussian(1.5, torch.tensor(0.0), torch.tensor(1.0))
            >>> d.log_prob(torch.tensor([0.0, 5.0]))
            tensor([-0.6061,    -inf])
        """
        value = torch.as_tensor(value, dtype=self.loc.dtype, device=self.loc.device)
        if self._validate_args:
            self._validate_sample(value)
        work = torch.promote_types(self.loc.dtype, torch.float32)  # half: in float32
        factor = self._low if self.multivariate else self.scale
        if self._on_host(value):
            # Small CPU calls without gradients: the same arithmetic on NumPy, in the
            # same dtype (a Torch op costs ~3-4 us on a thousand values, a NumPy one ~1 us).
            host = self.__dict__.get("_host_cache")
            if host is None or host[0].dtype != _NUMPY_DTYPE[work]:
                host = tuple(t.detach().to(work).numpy() for t in (self.loc, *self._radial()))
                if self.multivariate:  # each entry of the factor contiguous over the batch
                    entries = torch.movedim(factor.detach().to(work), (-2, -1), (0, 1))
                    host_factor = np.moveaxis(entries.contiguous().numpy(), (0, 1), (-2, -1))
                else:
                    host_factor = factor.detach().to(work).numpy()
                host = (host[0], host_factor, *host[1:])
                self.__dict__["_host_cache"] = host
            with np.errstate(all="ignore"):  # as Torch: no warnings, the values decide
                value = value.detach()
                value = (value if value.dtype == work else value.to(work)).numpy()
                out = _log_density(value, *host, self.multivariate, False)
            out = torch.from_numpy(np.asarray(out))
            return out if out.dtype == self.loc.dtype else out.to(self.loc.dtype)
        params = (self.loc, factor)
        params = tuple(t if t.dtype == work else t.to(work) for t in params)
        value = value if value.dtype == work else value.to(work)
        sanitize = torch.is_grad_enabled() and self._trainable(value)
        out = _log_density(value, *params, *self._radial(), self.multivariate, sanitize)
        return out if out.dtype == self.loc.dtype else out.to(self.loc.dtype)

    def _trainable(self, *more: torch.Tensor) -> bool:
        """Whether a parameter (or one of ``more``) requires a gradient."""
        return any(t.requires_grad for t in (self.alpha, self.loc, self.scale, *more))

    def _on_host(self, value: torch.Tensor) -> bool:
        """Whether log_prob runs on NumPy: CPU, eager, no gradient, at most HOST_VALUES values."""
        return (
            value.device.type == "cpu"
            and value.numel() <= HOST_VALUES
            and not torch.compiler.is_compiling()
            and not (torch.is_grad_enabled() and self._trainable(value))
        )

    def _radial(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(log p at the mode, 1/R^2, k = 1/(alpha-1)) in the value dtype (half: float32).

        log_prob is then log_mode + k log1p(-d^2/R^2): the normalizer (log-gamma
        series) is not recomputed per call, and float32 values stay float32. They
        are computed in alpha's precision (float64 for a Python alpha) and cached
        when no parameter requires a gradient; otherwise they are recomputed, so
        that every log_prob has its own graph (as torch's Normal does).
        """
        cached = self.__dict__.get("_radial_cache")
        if cached is not None:
            return cached
        needs_grad = torch.is_grad_enabled() and self._trainable()
        work = torch.promote_types(self.loc.dtype, torch.float32)
        args = (self.alpha, self._logdet) if self.multivariate else (self.alpha, self.scale)
        if self.loc.device.type == "cpu" and not needs_grad and not torch.compiler.is_compiling():
            # ~100 ops of the log-gamma series, per distribution: ~1 us each in NumPy, ~4 in Torch
            args = tuple(_host_view(t) for t in args)
        if self.multivariate:
            log_ac = _gen.log_ac(args[0], self.dim, args[1])
        else:
            log_ac = _gen.log_ac_1d(*args)
        terms = tuple(
            _as_tensor_like(t, self.loc).to(work)
            for t in (
                _gen.log_mode_at(args[0], log_ac),
                _gen.inv_radius2_at(args[0], log_ac),
                1 / (args[0] - 1),
            )
        )
        # cached only when no parameter can ever need the graph: terms computed under
        # no_grad for trainable parameters would otherwise serve a later backward
        if not self._trainable():
            self.__dict__["_radial_cache"] = terms
        return terms

    def entropy(self) -> torch.Tensor:
        """The Tsallis alpha-entropy (Martins 2020 eq 6), not the Shannon entropy.

        Returns:
            The batch shape, of loc's dtype.

        Examples:
            >>> d = BetaGaussian(1.5, torch.tensor(0.0), torch.tensor(1.0))
            >>> round(float(d.entropy()), 4)
            0.4893
        """
        if self.multivariate:
            out = _gen.tsallis_entropy(self.alpha, self.dim, self._logdet)
        else:
            out = _gen.tsallis_entropy_1d(self.alpha, self.scale)
        return out.to(self.loc.dtype)  # half precision is computed in float32

    def rsample(self, sample_shape: torch.Size | tuple = ()) -> torch.Tensor:
        """Reparameterized samples of shape sample_shape + batch_shape + event_shape.

        Args:
            sample_shape: leading shape of the draws.

        Returns:
            Samples inside the support, differentiable in loc and scale.

        Examples:
            >>> torch.manual_seed(0)  # doctest: +ELLIPSIS
            <torch._C.Generator object at ...>
            >>> d = BetaGaussian(1.5, torch.tensor(0.0), torch.tensor(1.0))
            >>> x = d.rsample((1000,))
            >>> x.shape, bool((x.abs() <= d.half_width).all())
            (torch.Size([1000]), True)
        """
        shape = self._extended_shape(torch.Size(sample_shape))
        if shape.numel() == 0:  # empty in, empty out (torch's Beta cannot draw nothing)
            return self.loc.expand(shape).clone()
        if self.loc.dtype in _HALF:  # Beta and Cholesky have no half kernels: draw in float32
            twin = BetaGaussian(
                self.alpha, self.loc.float(), self.scale.float(), validate_args=False
            )
            return twin.rsample(sample_shape).to(self.loc.dtype)
        k = (1 / (self.alpha - 1)).to(self.loc.dtype)
        radial = Beta(torch.full_like(k, self.dim / 2), k + 1).rsample(sample_shape)  # |z|^2/R^2
        length = torch.sqrt(radial) * self.radius.to(self.loc.dtype)
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
        """NaN and shapes are checked; values outside the support are allowed (log_prob -inf)."""
        event_dim = len(self._event_shape)
        if value.dim() < event_dim or value.shape[value.dim() - event_dim :] != self._event_shape:
            raise ValueError(
                f"value must have event shape {tuple(self._event_shape)} on the right,"
                f" got {tuple(value.shape)}"
            )
        if broadcast_shape(value.shape, self._batch_shape + self._event_shape) is None:
            raise ValueError(
                f"value {tuple(value.shape)} does not broadcast with batch + event shape"
                f" {tuple(self._batch_shape + self._event_shape)}"
            )
        if bool(torch.isnan(value).any()):
            raise ValueError("value must not contain NaN")

    def __repr__(self) -> str:
        shapes = (self.alpha.shape, self.loc.shape, self.scale.shape)
        return "BetaGaussian(alpha: {}, loc: {}, scale: {})".format(*shapes)
