"""Base laws Q on an interval [a, b] for the kernel families (Moreno 2022 section 5).

Shared by the NumPy face (tsallis.kernels) and the Torch face
(torch_bridge.kernel_attention) through tsallis.core.kernel: each gives log q0
on [a, b] (for NumPy arrays and Torch tensors alike) and the break points a
kink-aware rule should respect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import log_ndtr

from tsallis.core import arrays as _xs
from tsallis.core import validation as check
from tsallis.core._generated import gaussian as _gaussian

Array = Any  # a NumPy array or a Torch tensor

__all__ = ["GaussianBase", "UniformBase"]


@dataclass(frozen=True)
class UniformBase:
    """Q uniform on [a, b]."""

    a: float = 0.0
    b: float = 1.0

    def __post_init__(self) -> None:
        if not float(check.as_float("a", self.a)) < float(check.as_float("b", self.b)):
            raise ValueError(f"base interval needs a < b, got [{self.a}, {self.b}]")

    def log_density(self, t: Array) -> Array:
        """log q0(t) = -log(b - a), shaped like t (a NumPy array or a Torch tensor)."""
        xp, (t,) = _xs.arrays(t)
        return xp.zeros_like(t) - float(np.log(self.b - self.a))

    def breakpoints(self) -> list[float]:
        return []


@dataclass(frozen=True)
class GaussianBase:
    """Q = N(mean, std^2) conditioned on [a, b]; stable when the mean is far outside."""

    mean: float
    std: float
    a: float = 0.0
    b: float = 1.0

    def __post_init__(self) -> None:
        check.as_float("mean", self.mean)
        check.positive("std", self.std)
        if not float(check.as_float("a", self.a)) < float(check.as_float("b", self.b)):
            raise ValueError(f"base interval needs a < b, got [{self.a}, {self.b}]")

    def log_mass(self) -> float:
        """log P(a <= N(mean, std^2) <= b), without underflow in either tail."""
        lo, hi = (self.a - self.mean) / self.std, (self.b - self.mean) / self.std
        if lo > 0:  # mirror into the lower tail, where log_ndtr is accurate
            lo, hi = -hi, -lo
        upper, lower = log_ndtr(hi), log_ndtr(lo)
        return float(upper + np.log1p(-np.exp(lower - upper)))

    def log_density(self, t: Array) -> Array:
        """log q0(t), the normal log density minus log P(a <= T <= b)."""
        return _gaussian.logpdf(t, self.mean, self.std) - self.log_mass()

    def breakpoints(self) -> list[float]:
        return [self.mean + k * self.std for k in (-8, -4, -2, -1, 0, 1, 2, 4, 8)]
