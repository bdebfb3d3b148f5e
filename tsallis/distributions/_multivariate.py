"""N-dimensional families: loc (N,), scale = Sigma (N, N) positive definite."""

from __future__ import annotations

from types import ModuleType
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from tsallis.core import arrays as _xs
from tsallis.core import validation as check
from tsallis.core.validation import FloatArray


class MultivariateFamily:
    """Elliptical family: the density depends on t through d^2 = (t-mu)^T Sigma^-1 (t-mu).

    Generated kernels take (d2, *shape, n, logdet); logdet keeps extreme Sigma in range.

    Examples:
        >>> import numpy as np
        >>> from tsallis import TruncatedParaboloid
        >>> d = TruncatedParaboloid([0.0, 0.0], np.eye(2))
        >>> isinstance(d, MultivariateFamily), d.mahalanobis2([[1.0, 0.0], [0.0, 2.0]])
        (True, array([1., 4.]))
    """

    _gen: ModuleType
    _names: ClassVar[dict[str, str]] = {}

    def __init__(self, loc: ArrayLike, scale: ArrayLike) -> None:
        self.loc = check.as_float("loc", loc)
        self.scale, self._chol, self._logdet = check.covariance("scale", scale, self.loc)
        self.dim = self.loc.shape[0]
        self._shape: tuple[float, ...] = ()

    def _kernel(self, name: str):  # noqa: ANN202
        return getattr(self._gen, self._names.get(name, name))

    def _scalar(self, name: str) -> np.float64:
        return np.float64(self._kernel(name)(*self._shape, self.dim, self._logdet))

    def mahalanobis2(self, x: ArrayLike) -> FloatArray:
        """d^2 = (x-mu)^T Sigma^-1 (x-mu) for x of shape (..., N)."""
        x_ = check.as_float("x", x, allow_inf=True)
        if x_.shape[-1:] != (self.dim,):
            raise ValueError(f"x must have shape (..., {self.dim}), got {x_.shape}")
        with np.errstate(invalid="ignore", over="ignore"):  # d^2 = inf far out: density 0
            d2 = _xs.mahalanobis2(self._chol, x_ - self.loc)
        return np.where(np.isinf(x_).any(axis=-1), np.inf, d2)

    @property
    def threshold(self) -> np.float64:
        """lambda / tau (A for alpha = 1)."""
        return self._scalar("threshold")

    def logpdf(self, x: ArrayLike) -> FloatArray:
        """Log density (-inf outside the support)."""
        return np.asarray(
            self._kernel("logpdf_d2")(self.mahalanobis2(x), *self._shape, self.dim, self._logdet)
        )[()]

    def pdf(self, x: ArrayLike) -> FloatArray:
        """Density."""
        return np.exp(self.logpdf(x))[()]

    def support(self) -> np.float64:
        """Support radius in the Sigma^-1 metric (inf for full support)."""
        return self._scalar("radius")

    def mean(self) -> FloatArray:
        """Mean (= loc)."""
        return self.loc.copy()

    def cov(self) -> FloatArray:
        """Covariance matrix, cov_scale * Sigma."""
        return self._scalar("cov_scale") * self.scale

    def var(self) -> FloatArray:
        """Marginal variances (the diagonal of cov())."""
        return np.diag(self.cov()).copy()

    def tsallis_entropy(self) -> np.float64:
        """H_alpha = -Omega_alpha (eq 6); Shannon at alpha = 1."""
        return self._scalar("tsallis_entropy")

    entropy = tsallis_entropy

    def cdf(self, x: ArrayLike) -> FloatArray:
        """Not defined for N-D families."""
        raise ValueError(f"cdf is defined for 1D families only; this one has N = {self.dim}")

    def ppf(self, q: ArrayLike) -> FloatArray:
        """Not defined for N-D families."""
        raise ValueError(f"ppf is defined for 1D families only; this one has N = {self.dim}")

    def _whitened(self, generator: np.random.Generator, shape: tuple[int, ...]) -> FloatArray:
        raise NotImplementedError

    def rvs(
        self,
        size: int | tuple[int, ...] | None = None,
        random_state: int | np.random.Generator | None = None,
    ) -> FloatArray:
        """Samples of shape (*size, N): loc + L z with z drawn in whitened space."""
        generator = check.rng(random_state)
        shape = check.sample_shape(size)
        z = self._whitened(generator, shape)
        return self.loc + z @ self._chol.T

    def __repr__(self) -> str:
        loc, scale = check.plain(self.loc), check.plain(self.scale)
        return f"{type(self).__name__}(loc={loc}, scale={scale})"


def uniform_directions(
    generator: np.random.Generator, shape: tuple[int, ...], dim: int
) -> FloatArray:
    """Points uniform on the unit sphere S^(dim-1).

    Examples:
        >>> import numpy as np
        >>> u = uniform_directions(np.random.default_rng(0), (3,), 2)
        >>> np.linalg.norm(u, axis=-1).round(12)
        array([1., 1., 1.])
    """
    normal = generator.standard_normal((*shape, dim))
    return normal / np.linalg.norm(normal, axis=-1, keepdims=True)
