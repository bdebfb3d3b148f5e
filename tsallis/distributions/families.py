"""The public families: Gaussian, Laplace, TruncatedParabola, TruncatedParaboloid,
Triangular, LocationScale and BetaGaussian."""

from __future__ import annotations

from functools import cache
from types import ModuleType
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from tsallis._generated import (
    beta_gaussian,
    gaussian,
    laplace,
    location_scale_cubic,
    location_scale_quadratic,
    triangular,
    truncated_parabola,
    truncated_paraboloid,
)
from tsallis.core import validation as check
from tsallis.core.validation import FloatArray
from tsallis.distributions._multivariate import MultivariateFamily, uniform_directions
from tsallis.distributions._univariate import UnivariateFamily

_ALPHA_ONE = {"threshold": "log_partition", "tsallis_entropy": "entropy"}


def _is_multivariate(loc: ArrayLike, scale: ArrayLike) -> bool:
    """N-D when loc has shape (N,) and scale has shape (N, N); otherwise 1D broadcasting.

    A 1D family with loc of shape (N,) and an (N, N) scale array is thus read as N-D;
    reshape loc to (1, N) to broadcast it instead.
    """
    n = np.shape(loc)[0] if np.ndim(loc) == 1 else None
    return n is not None and np.shape(scale) == (n, n)


class Gaussian(UnivariateFamily):
    """Normal distribution (alpha = 1); loc (N,), scale = Sigma (N, N) gives the N-D Gaussian.

    Args:
        loc: location(s), real, broadcasting with scale (scipy.stats style).
        scale: sigma > 0 (1D), finite and in [1e-150, 1e150].

    Methods follow scipy.stats: pdf, logpdf, cdf, ppf, rvs, support, mean, var, std,
    tsallis_entropy (entropy); threshold is the normalizer. A scalar input gives a NumPy
    scalar, an array input an array of the broadcast shape.

    Raises:
        TypeError: non-real parameters.
        ValueError: NaN, inf or out-of-range scale.

    Examples:
        >>> d = Gaussian(0.0, 1.0)
        >>> print(round(float(d.pdf(0.0)), 6), d.var())
        0.398942 1.0
    """

    _gen = gaussian
    _names: ClassVar[dict[str, str]] = _ALPHA_ONE
    _compact = False

    def __new__(cls, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0) -> Gaussian:
        if cls is Gaussian and _is_multivariate(loc, scale):
            return object.__new__(MultivariateGaussian)
        return object.__new__(cls)


class MultivariateGaussian(MultivariateFamily, Gaussian):
    """N-D Gaussian N(loc, Sigma); built by ``Gaussian(loc, Sigma)``.

    Args:
        loc: the mean, real (N,).
        scale: Sigma, (N, N) symmetric positive definite.

    Examples:
        >>> import numpy as np
        >>> d = Gaussian([0.0, 0.0], np.eye(2))  # builds a MultivariateGaussian
        >>> print(type(d).__name__, round(float(d.pdf([0.0, 0.0])), 6))
        MultivariateGaussian 0.159155
    """

    _gen = gaussian
    _names: ClassVar[dict[str, str]] = {
        "threshold": "log_partition_nd",
        "tsallis_entropy": "entropy_nd",
    }

    def __init__(self, loc: ArrayLike, scale: ArrayLike) -> None:
        MultivariateFamily.__init__(self, loc, scale)

    def support(self) -> np.float64:
        return np.float64(np.inf)

    def cov(self) -> FloatArray:
        return self.scale.copy()  # Cov = Sigma: E[d^2] = N in the derivation

    def _whitened(self, generator: np.random.Generator, shape: tuple[int, ...]) -> FloatArray:
        return generator.standard_normal((*shape, self.dim))


class Laplace(UnivariateFamily):
    """Laplace distribution, f = -|t - loc| / scale (alpha = 1).

    Args:
        loc: location(s), real, broadcasting with scale (scipy.stats style).
        scale: b > 0, finite and in [1e-150, 1e150].

    Methods follow scipy.stats: pdf, logpdf, cdf, ppf, rvs, support, mean, var, std,
    tsallis_entropy (entropy); threshold is the normalizer. A scalar input gives a NumPy
    scalar, an array input an array of the broadcast shape.

    Raises:
        TypeError: non-real parameters.
        ValueError: NaN, inf or out-of-range scale.

    Examples:
        >>> d = Laplace(0.0, 1.0)
        >>> print(d.pdf(0.0), d.var())
        0.5 2.0
    """

    _gen = laplace
    _names: ClassVar[dict[str, str]] = _ALPHA_ONE
    _compact = False


class TruncatedParabola(UnivariateFamily):
    """Continuous sparsemax of f = -(t-loc)^2 / (2 scale^2) (Martins 2020 eq 10).

    Args:
        loc: location(s), real, broadcasting with scale (scipy.stats style).
        scale: sigma > 0, finite and in [1e-150, 1e150].

    Methods follow scipy.stats: pdf, logpdf, cdf, ppf, rvs, support, mean, var, std,
    tsallis_entropy (entropy); threshold is the normalizer. A scalar input gives a NumPy
    scalar, an array input an array of the broadcast shape.

    Raises:
        TypeError: non-real parameters.
        ValueError: NaN, inf or out-of-range scale.

    Examples:
        >>> d = TruncatedParabola(0.0, 1.0)
        >>> low, high = d.support()  # +-(3 sigma^2 / 2)^(1/3)
        >>> print(round(float(high), 6), round(float(d.pdf(0.0)), 6))
        1.144714 0.655185
    """

    _gen = truncated_parabola


class Triangular(UnivariateFamily):
    """Continuous sparsemax of f = -|t-loc| / scale, scale = b (Martins 2020 eq 12).

    Args:
        loc: location(s), real, broadcasting with scale (scipy.stats style).
        scale: b > 0, finite and in [1e-150, 1e150].

    Methods follow scipy.stats: pdf, logpdf, cdf, ppf, rvs, support, mean, var, std,
    tsallis_entropy (entropy); threshold is the normalizer. A scalar input gives a NumPy
    scalar, an array input an array of the broadcast shape.

    Raises:
        TypeError: non-real parameters.
        ValueError: NaN, inf or out-of-range scale.

    Examples:
        >>> d = Triangular(0.0, 1.0)
        >>> print(*d.support(), d.pdf(0.0))
        -1.0 1.0 1.0
    """

    _gen = triangular


class TruncatedParaboloid(MultivariateFamily):
    """Continuous sparsemax of f = -(t-loc)^T Sigma^-1 (t-loc) / 2 (Martins 2020 eq 11).

    Args:
        loc: the mean, shape (N,).
        scale: Sigma, symmetric positive definite, shape (N, N).

    support() is the radius of the ellipsoid in Mahalanobis units; pdf, logpdf take
    points of shape (..., N); cov, var, rvs and tsallis_entropy as in scipy.stats.

    Raises:
        TypeError, ValueError: non-real or mis-shaped parameters, a Sigma that is not
            symmetric positive definite.

    Examples:
        >>> import numpy as np
        >>> d = TruncatedParaboloid([0.0, 0.0], np.eye(2))
        >>> print(round(float(d.support()), 6), round(float(d.pdf([0.0, 0.0])), 6))
        1.062252 0.56419
    """

    _gen = truncated_paraboloid

    def pdf(self, x: ArrayLike) -> FloatArray:
        """The density at points x (..., N): 0 outside the support ellipsoid.

        Args:
            x: points, real (..., N).

        Returns:
            float64 (...,); a NumPy scalar for one point.

        Examples:
            >>> import numpy as np
            >>> round(float(TruncatedParaboloid([0.0, 0.0], np.eye(2)).pdf([0.0, 0.0])), 6)
            0.56419
        """
        return np.asarray(self._gen.pdf_d2(self.mahalanobis2(x), self.dim, self._logdet))[()]

    def _whitened(self, generator: np.random.Generator, shape: tuple[int, ...]) -> FloatArray:
        return _radial_sample(generator, shape, self.dim, 1.0, self.support())


def _radial_sample(
    generator: np.random.Generator, shape: tuple[int, ...], dim: int, k: float, radius: float
) -> FloatArray:
    """(r / radius)^2 ~ Beta(N/2, k + 1), direction uniform."""
    r = radius * np.sqrt(generator.beta(dim / 2, k + 1, size=shape))
    return r[..., None] * uniform_directions(generator, shape, dim)


class BetaGaussian(UnivariateFamily):
    """beta-Gaussian (q-Gaussian, q = 2 - alpha) for alpha > 1; loc (N,), scale (N, N) gives N-D.

    p(t) = [(alpha - 1)(-tau - (t - loc)^2 / (2 scale^2))]_+^(1/(alpha - 1)): alpha = 2 is
    the truncated parabola, alpha -> 1 the Gaussian.

    Args:
        alpha: reals > 1, broadcasting with loc and scale (1D); a scalar for N-D.
        loc: location(s); shape (N,) for N-D.
        scale: sigma > 0 (1D), or Sigma (N, N) symmetric positive definite.

    Raises:
        TypeError, ValueError: non-real parameters, alpha <= 1, a bad scale.

    Examples:
        >>> d = BetaGaussian(2.0, 0.0, 1.0)
        >>> print(round(float(d.pdf(0.0)), 6))
        0.655185
    """

    _gen = beta_gaussian
    _names: ClassVar[dict[str, str]] = {
        "threshold": "threshold_1d",
        "half_width": "half_width_1d",
        "variance": "variance_1d",
        "tsallis_entropy": "tsallis_entropy_1d",
        "pdf": "pdf_1d",
        "logpdf": "logpdf_1d",
        "cdf": "cdf_1d",
        "ppf": "ppf_1d",
    }

    def __new__(
        cls, alpha: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0
    ) -> BetaGaussian:
        if cls is BetaGaussian and _is_multivariate(loc, scale):
            return object.__new__(MultivariateBetaGaussian)
        return object.__new__(cls)

    def __init__(self, alpha: ArrayLike, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0) -> None:
        self._set(
            alpha=check.sparse_alpha(alpha),
            loc=check.as_float("loc", loc),
            scale=check.scale(scale),
        )

    def _repr_names(self) -> tuple[str, ...]:
        return ("alpha", "loc", "scale")


class MultivariateBetaGaussian(MultivariateFamily, BetaGaussian):
    """N-D beta-Gaussian; built by ``BetaGaussian(alpha, loc, Sigma)`` with scalar alpha.

    Args:
        alpha: a real > 1 (2: the truncated paraboloid).
        loc: the mode, real (N,).
        scale: Sigma, (N, N) symmetric positive definite.

    Examples:
        >>> import numpy as np
        >>> d = BetaGaussian(2.0, [0.0, 0.0], np.eye(2))  # alpha = 2: the truncated paraboloid
        >>> print(type(d).__name__, round(float(d.support()), 6))
        MultivariateBetaGaussian 1.062252
    """

    _gen = beta_gaussian
    _names: ClassVar[dict[str, str]] = {}

    def __init__(self, alpha: ArrayLike, loc: ArrayLike, scale: ArrayLike) -> None:
        alpha_ = check.sparse_alpha(alpha)
        if alpha_.ndim != 0:
            raise ValueError("alpha must be a scalar for the N-D beta-Gaussian")
        MultivariateFamily.__init__(self, loc, scale)
        self.alpha = float(alpha_)
        self._shape = (self.alpha,)

    def pdf(self, x: ArrayLike) -> FloatArray:
        """The density at points x (..., N): 0 outside the support ellipsoid.

        Args:
            x: points, real (..., N).

        Returns:
            float64 (...,); a NumPy scalar for one point.

        Examples:
            >>> import numpy as np
            >>> round(float(BetaGaussian(1.5, [0.0, 0.0], np.eye(2)).pdf([0.0, 0.0])), 6)
            0.384835
        """
        return np.asarray(
            self._gen.pdf_d2(self.mahalanobis2(x), self.alpha, self.dim, self._logdet)
        )[()]

    def _whitened(self, generator: np.random.Generator, shape: tuple[int, ...]) -> FloatArray:
        return _radial_sample(generator, shape, self.dim, 1 / (self.alpha - 1), self.support())

    def __repr__(self) -> str:
        alpha, loc, scale = (check.plain(v) for v in (self.alpha, self.loc, self.scale))
        return f"BetaGaussian(alpha={alpha}, loc={loc}, scale={scale})"


_BUILTIN_G = {"t**3/6": location_scale_cubic, "t**2/2": location_scale_quadratic}
_BUILTIN_G.update({"cubic": location_scale_cubic, "quadratic": location_scale_quadratic})


@cache
def _location_scale_module(g: str) -> ModuleType:
    """Generated NumPy code for g: checked in for the built-ins, else derived now.

    A custom g imports SymPy (through derivations) on first use, renders the
    same NumPy printer output that ``tsallis derive`` would, and compiles it.
    """
    key = g.replace(" ", "").replace("^", "**")
    if key in _BUILTIN_G:
        return _BUILTIN_G[key]
    from tsallis.derivations.codegen import render_module
    from tsallis.derivations.location_scale import derive_location_scale

    result = derive_location_scale(g, "custom")
    source = render_module(
        result.title, "derivations/location_scale.py", "runtime", result.kernels, "numpy"
    )
    module = ModuleType(f"tsallis._generated.location_scale<{g}>")
    exec(compile(source, module.__name__, "exec"), module.__dict__)
    return module


class LocationScale(UnivariateFamily):
    """Continuous sparsemax of f = -(1/scale) g'(|t-loc|/scale) (Martins 2020 eq 13).

    ``g`` is a SymPy string in t, convex and C^1 on [0, oo) ("t**3/6" and
    "t**2/2" are built in); an invalid g raises ValueError.

    Args:
        g: the formula of g(t), parsed safely (never evaluated as Python); another g is
            derived by SymPy on first use (a few seconds, then cached).
        loc: location(s), real, broadcasting with scale.
        scale: sigma > 0.

    Raises:
        TypeError: a g that is not a string, non-real parameters.
        ValueError: a g that
            does not parse or is not convex and C^1, NaN or a bad scale.

    Examples:
        >>> d = LocationScale("t**2/2", 0.0, 1.0)  # g' = t: the triangular density
        >>> print(*d.support(), d.pdf(0.0))
        -1.0 1.0 1.0
    """

    def __init__(self, g: str, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0) -> None:
        if not isinstance(g, str):
            raise TypeError(f"g must be a SymPy string such as 't**3/6', got {type(g).__name__}")
        self.g = g
        self._gen = _location_scale_module(g)
        super().__init__(loc, scale)

    def _at(self, name: str, x: FloatArray) -> FloatArray:
        """pdf, logpdf and cdf at the standardized z = (x - loc) / scale.

        p(x; loc, scale) = p(z; 0, 1) / scale exactly, and a custom g may put any
        power of the scale in the closed forms; at z nothing under- or overflows.
        """
        if name not in ("pdf", "logpdf", "cdf"):
            return super()._at(name, x)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            z = (x - self.loc) / self.scale
            out = np.asarray(self._kernel(name)(z, 0.0, 1.0))
        if np.isnan(out).any():
            raise FloatingPointError(f"LocationScale.{name} produced NaN; please report this input")
        if name == "pdf":
            return (out / self.scale)[()]
        return (out - np.log(self.scale) if name == "logpdf" else out)[()]

    def ppf(self, q: ArrayLike) -> FloatArray:
        """Quantiles by bisection on the generated tail mass (monotone in the edge distance).

        Args:
            q: probabilities in [0, 1], any shape.

        Returns:
            float64 of q's shape (a NumPy scalar for a scalar q).

        Raises:
            ValueError: q outside [0, 1] or NaN.

        Examples:
            >>> LocationScale("t**4/4", 0.0, 1.0).ppf([0.5, 0.9]).round(6)
            array([0.     , 0.58069])
        """
        q_ = check.probability("q", q)
        a = float(self._gen.half_width(1.0))
        tail = np.minimum(q_, 1 - q_)
        low = np.full(np.shape(tail), a * 1e-300)
        high = np.full(np.shape(tail), a)
        for _ in range(200):  # geometric steps while the bracket spans decades, then halving
            mid = np.where(high > 4 * low, np.sqrt(low * high), 0.5 * (low + high))
            below = self._gen.tail_mass(mid) < tail
            low, high = np.where(below, mid, low), np.where(below, high, mid)
        e = np.where(tail <= 0, 0.0, 0.5 * (low + high))
        offset = (a - e) * self.scale
        return np.where(q_ < 0.5, self.loc - offset, self.loc + offset)[()]

    def _repr_names(self) -> tuple[str, ...]:
        return ("g", "loc", "scale")
