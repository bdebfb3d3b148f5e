"""scipy.stats-like 1D distributions backed by generated kernels."""

from __future__ import annotations

from types import ModuleType
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from tsallis.core import validation as check
from tsallis.core.validation import FloatArray


class UnivariateFamily:
    """Base of the 1D families: parameters broadcast like scipy.stats.

    Subclasses name their generated module in ``_gen`` and the kernel names in
    ``_names``; ``_shape`` holds parameters placed before (loc, scale).

    Examples:
        >>> from tsallis import Triangular
        >>> d = Triangular([0.0, 1.0], 2.0)  # parameters broadcast: two distributions
        >>> isinstance(d, UnivariateFamily), d.pdf(0.0).shape
        (True, (2,))
    """

    _gen: ModuleType
    _names: ClassVar[dict[str, str]] = {}
    _compact = True

    def __init__(self, loc: ArrayLike = 0.0, scale: ArrayLike = 1.0) -> None:
        self._set(loc=check.as_float("loc", loc), scale=check.scale(scale))

    def _set(self, **params: FloatArray) -> None:
        arrays = check.broadcast(**params)
        for name, value in zip(params, arrays, strict=True):
            setattr(self, name, value)
        self._shape = arrays[:-2]
        self.loc, self.scale = arrays[-2], arrays[-1]

    def _kernel(self, name: str):  # noqa: ANN202
        return getattr(self._gen, self._names.get(name, name))

    def _scalar(self, name: str) -> FloatArray:
        return check.scalar_or_array(self._kernel(name)(*self._shape, self.scale))

    def _at(self, name: str, x: FloatArray) -> FloatArray:
        """Evaluate a kernel at x (or q). Masked branches of np.where may overflow or
        form inf - inf at infinite x; those warnings are silenced, and a NaN that
        reaches the result raises instead of being returned."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            out = np.asarray(self._kernel(name)(x, *self._shape, self.loc, self.scale))
        if np.isnan(out).any():
            raise FloatingPointError(
                f"{type(self).__name__}.{name} produced NaN; please report this input"
            )
        return out[()]

    @property
    def threshold(self) -> FloatArray:
        """lambda / tau with p = [(alpha-1)(f - tau)]_+^(1/(alpha-1)); A for alpha = 1."""
        return self._scalar("threshold")

    def pdf(self, x: ArrayLike) -> FloatArray:
        """Density at x (0 outside the support)."""
        return self._at("pdf", check.as_float("x", x, allow_inf=True))

    def logpdf(self, x: ArrayLike) -> FloatArray:
        """Log density at x (-inf outside the support)."""
        return self._at("logpdf", check.as_float("x", x, allow_inf=True))

    def cdf(self, x: ArrayLike) -> FloatArray:
        """Cumulative distribution function."""
        return self._at("cdf", check.as_float("x", x, allow_inf=True))

    def ppf(self, q: ArrayLike) -> FloatArray:
        """Quantile function (inverse cdf); q in [0, 1]."""
        q_ = check.probability("q", q)
        low, high = self.support()
        return np.where(q_ <= 0, low, np.where(q_ >= 1, high, self._at("ppf", q_)))[()]

    def support(self) -> tuple[FloatArray, FloatArray]:
        """(low, high) end points of the support."""
        if not self._compact:
            inf = np.full(np.shape(self.loc), np.inf)[()]
            return -inf, inf
        width = self._scalar("half_width")
        return (self.loc - width)[()], (self.loc + width)[()]

    def mean(self) -> FloatArray:
        """Mean (= loc: every family here is symmetric about loc)."""
        return self.loc.copy()[()]

    def var(self) -> FloatArray:
        """Variance."""
        return self._scalar("variance")

    def std(self) -> FloatArray:
        """Standard deviation."""
        return np.sqrt(self.var())[()]

    def tsallis_entropy(self) -> FloatArray:
        """H_alpha = -Omega_alpha (eq 6, 1/(alpha(alpha-1)) normalization); Shannon at alpha = 1."""
        return self._scalar("tsallis_entropy")

    entropy = tsallis_entropy

    def rvs(
        self,
        size: int | tuple[int, ...] | None = None,
        random_state: int | np.random.Generator | None = None,
    ) -> FloatArray:
        """Samples by inverse transform of uniforms on (0, 1)."""
        generator = check.rng(random_state)
        shape = np.shape(self.loc) if size is None else check.sample_shape(size)
        try:
            shape = np.broadcast_shapes(shape, np.shape(self.loc))
        except ValueError:
            raise ValueError(
                f"size {size} does not broadcast with the parameters' shape {np.shape(self.loc)}"
            ) from None
        q = generator.random(shape)
        q = np.clip(q, np.finfo(float).tiny, None)  # (0, 1)
        return self.ppf(q)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={check.plain(getattr(self, k))}" for k in self._repr_names())
        return f"{type(self).__name__}({params})"

    def _repr_names(self) -> tuple[str, ...]:
        return ("loc", "scale")
