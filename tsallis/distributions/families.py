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
    """Normal distribution (alpha = 1); loc (N,), scale = Sigma (N, N) gives the N-D Gaussian."""

    _gen = gaussian
    _names: ClassVar[dict[str, str]] = _ALPHA_ONE
    _compact = False

    def __new__(cls, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0) -> Gaussian:
        if cls is Gaussian and _is_multivariate(loc, scale):
            return object.__new__(MultivariateGaussian)
        return object.__new__(cls)


class MultivariateGaussian(MultivariateFamily, Gaussian):
    """N-D Gaussian N(loc, Sigma); built by ``Gaussian(loc, Sigma)``."""

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
    """Laplace distribution, f = -|t - loc| / scale (alpha = 1)."""

    _gen = laplace
    _names: ClassVar[dict[str, str]] = _ALPHA_ONE
    _compact = False


class TruncatedParabola(UnivariateFamily):
    """Continuous sparsemax of f = -(t-loc)^2 / (2 scale^2) (Martins 2020 eq 10)."""

    _gen = truncated_parabola


class Triangular(UnivariateFamily):
    """Continuous sparsemax of f = -|t-loc| / scale, scale = b (Martins 2020 eq 12)."""

    _gen = triangular


class TruncatedParaboloid(MultivariateFamily):
    """Continuous sparsemax of f = -(t-loc)^T Sigma^-1 (t-loc) / 2 (Martins 2020 eq 11)."""

    _gen = truncated_paraboloid

    def pdf(self, x: ArrayLike) -> FloatArray:
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
    """beta-Gaussian (q-Gaussian, q = 2 - alpha) for alpha > 1; loc (N,), scale (N, N) gives N-D."""

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
    """N-D beta-Gaussian; built by ``BetaGaussian(alpha, loc, Sigma)`` with scalar alpha."""

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
        """Quantiles by bisection on the generated tail mass (monotone in the edge distance)."""
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
