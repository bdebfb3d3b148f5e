"""Quadrature rules with one small interface (SPEC 3.4).

Every rule has ``nodes_weights(n)`` and ``integrate(f, n)``. ``f`` maps an
array of nodes (n,) to values (..., n), so one call integrates a whole vector
of integrands (for example E_p[psi_j] for every basis function j). The result
reports the node count actually used.

Rules:
- ``Trapezoid(a, b)``: n points including both ends; O(h^2) for smooth
  non-periodic integrands, O(h^2) with kinks.
- ``TrapezoidLine(center, half_width)``: the real-line trapezoid truncated to
  [center - half_width, center + half_width], equal weights; error
  O(exp(-2 pi a / h)) for integrands analytic in |Im z| < a, plus the tail.
- ``GaussLegendre(a, b)``: cached nodes; exact for degree 2n - 1.
- ``PeriodicTrapezoid(start, period)``: n points, the end point once only;
  geometric for periodic analytic integrands.
- ``KinkAware(u, a, b)``: Gauss-Legendre on each piece of {u > 0} and between
  given break points, for integrands carrying [u]_+ (n nodes per piece).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq

from tsallis import _validation as check
from tsallis._generated import deformed as _deformed

FloatArray = NDArray[np.float64]
Integrand = Callable[[FloatArray], NDArray[np.floating]]


@dataclass(frozen=True)
class QuadratureResult:
    """An integral and the number of integrand evaluations (nodes) it used."""

    value: NDArray[np.floating] | float
    nodes: int


@lru_cache(maxsize=256)
def _legendre_unit(n: int) -> tuple[FloatArray, FloatArray]:
    nodes, weights = np.polynomial.legendre.leggauss(n)
    nodes.flags.writeable = False
    weights.flags.writeable = False
    return nodes, weights


def _count(name: str, n: int, minimum: int) -> int:
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < minimum:
        raise ValueError(f"{name}: n must be an integer >= {minimum}, got {n!r}")
    return int(n)


def _interval(a: float, b: float) -> tuple[float, float]:
    a_, b_ = float(check.as_float("a", a)), float(check.as_float("b", b))
    if not a_ < b_:
        raise ValueError(f"the interval needs a < b, got a = {a_}, b = {b_}")
    return a_, b_


class Rule:
    """Base: subclasses define ``nodes_weights``."""

    name = "rule"
    minimum_nodes = 1

    def nodes_weights(self, n: int) -> tuple[FloatArray, FloatArray]:
        raise NotImplementedError

    def integrate(self, f: Integrand, n: int) -> QuadratureResult:
        """sum_k w_k f(x_k) over the last axis of f's values."""
        nodes, weights = self.nodes_weights(n)
        if nodes.size == 0:
            return QuadratureResult(0.0, 0)
        values = np.asarray(f(nodes))
        if values.shape[-1:] != nodes.shape:
            raise ValueError(
                f"f must return values of shape (..., {nodes.size}), got {values.shape}"
            )
        return QuadratureResult(values @ weights, int(nodes.size))


class Trapezoid(Rule):
    """Composite trapezoid on [a, b] with n >= 2 equally spaced points."""

    name = "trapezoid"
    minimum_nodes = 2

    def __init__(self, a: float, b: float) -> None:
        self.a, self.b = _interval(a, b)

    def nodes_weights(self, n: int) -> tuple[FloatArray, FloatArray]:
        n = _count(self.name, n, 2)
        nodes = np.linspace(self.a, self.b, n)
        weights = np.full(n, (self.b - self.a) / (n - 1))
        weights[[0, -1]] /= 2
        return nodes, weights


class TrapezoidLine(Rule):
    """Trapezoid for integrals over R, truncated to [center - half_width, center + half_width]."""

    name = "trapezoid-line"
    minimum_nodes = 2

    def __init__(self, center: float, half_width: float) -> None:
        self.center = float(check.as_float("center", center))
        self.half_width = float(check.positive("half_width", half_width))

    def nodes_weights(self, n: int) -> tuple[FloatArray, FloatArray]:
        n = _count(self.name, n, 2)
        nodes = np.linspace(self.center - self.half_width, self.center + self.half_width, n)
        return nodes, np.full(n, 2 * self.half_width / (n - 1))


class GaussLegendre(Rule):
    """n-point Gauss-Legendre on [a, b] (nodes cached per n)."""

    name = "gauss-legendre"

    def __init__(self, a: float, b: float) -> None:
        self.a, self.b = _interval(a, b)

    def nodes_weights(self, n: int) -> tuple[FloatArray, FloatArray]:
        nodes, weights = _legendre_unit(_count(self.name, n, 1))
        half = (self.b - self.a) / 2
        return self.a + half * (nodes + 1), half * weights


class PeriodicTrapezoid(Rule):
    """n points start + k period / n, k = 0 .. n-1: the end point is not repeated."""

    name = "periodic-trapezoid"

    def __init__(self, start: float = 0.0, period: float = 2 * np.pi) -> None:
        self.start = float(check.as_float("start", start))
        self.period = float(check.positive("period", period))

    def nodes_weights(self, n: int) -> tuple[FloatArray, FloatArray]:
        n = _count(self.name, n, 1)
        nodes = self.start + self.period * np.arange(n) / n
        return nodes, np.full(n, self.period / n)


@dataclass
class KinkAware(Rule):
    """Gauss-Legendre per piece of {t in [a, b] : u(t) > 0}, also split at ``breakpoints``.

    The roots of u are bracketed on a uniform scan of ``scan`` points and
    refined with brentq to full precision, so an integrand carrying [u]_+ (a
    deformed exponential's support edges) is smooth on every piece, and the
    rule converges spectrally. Pass kinks of the integrand itself (for
    example the centres of a Laplace kernel) as ``breakpoints``. Pieces
    narrower than the scan spacing can be missed: raise ``scan`` for them.
    """

    u: Callable[[FloatArray], FloatArray]
    a: float
    b: float
    breakpoints: Sequence[float] = ()
    scan: int = 2048
    pieces: list[tuple[float, float]] = field(init=False)
    name = "kink-aware"

    def __post_init__(self) -> None:
        self.a, self.b = _interval(self.a, self.b)
        self.scan = _count("scan", self.scan, 3)
        self.pieces = self._find_pieces()

    @classmethod
    def deformed(
        cls,
        f: Callable[[FloatArray], FloatArray],
        alpha: float,
        a: float,
        b: float,
        **options: object,
    ) -> KinkAware:
        """Pieces of the support of exp_{2-alpha}(f) = [1 + (alpha-1) f]_+^(1/(alpha-1))."""
        alpha_ = float(check.as_float("alpha", alpha))
        if alpha_ < 1:
            raise ValueError(f"alpha must be >= 1, got {alpha_}")
        return cls(lambda t: 1 + (alpha_ - 1) * np.asarray(f(t)), a, b, **options)

    def _find_pieces(self) -> list[tuple[float, float]]:
        grid = np.linspace(self.a, self.b, self.scan)
        values = np.asarray(self.u(grid), dtype=float)
        if values.shape != grid.shape or not np.isfinite(values).all():
            raise ValueError("u must return finite values of the same shape as its argument")
        cuts = {self.a, self.b, *(float(p) for p in self.breakpoints if self.a < p < self.b)}
        for i in np.nonzero(np.sign(values[:-1]) * np.sign(values[1:]) < 0)[0]:
            scalar = lambda t: float(np.asarray(self.u(np.array([t])))[0])  # noqa: E731
            cuts.add(
                brentq(scalar, grid[i], grid[i + 1], xtol=1e-300, rtol=4 * np.finfo(float).eps)
            )
        edges = sorted(cuts)
        pieces = []
        for lo, hi in itertools.pairwise(edges):
            middle = np.array([(lo + hi) / 2])
            if hi > lo and float(np.asarray(self.u(middle))[0]) > 0:
                pieces.append((lo, hi))
        return pieces

    def nodes_weights(self, n: int) -> tuple[FloatArray, FloatArray]:
        n = _count(self.name, n, 1)
        if not self.pieces:
            return np.empty(0), np.empty(0)
        parts = [GaussLegendre(lo, hi).nodes_weights(n) for lo, hi in self.pieces]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def softplus_positive(v: NDArray[np.floating], sharpness: float) -> NDArray[np.floating]:
    """softplus(s v) / s, the smoothed [v]_+ of seed 001 sec 5.3.1 (bias <= log(2)/s)."""
    return np.asarray(_deformed.softplus_positive(v, check.positive("sharpness", sharpness)))


def smoothed_exp_beta(
    u: NDArray[np.floating], beta: float, sharpness: float
) -> NDArray[np.floating]:
    """exp_beta(u) with [.]_+ replaced by the softplus smoothing (beta < 1)."""
    beta_ = check.as_float("beta", beta)
    if (beta_ >= 1).any():
        raise ValueError(f"beta must be < 1 for the smoothed exp_beta, got {beta!r}")
    return np.asarray(_deformed.smoothed_exp_beta(u, beta_, check.positive("sharpness", sharpness)))
