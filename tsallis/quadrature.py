"""Quadrature rules with one small interface.

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

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import brentq

from tsallis._generated import deformed as _deformed
from tsallis.core import validation as check
from tsallis.core.rules import gauss_jacobi, legendre_unit
from tsallis.core.rules import window_rule as window_rule  # re-exported (public name)
from tsallis.core.tuning import SMOOTH_EXPONENT

FloatArray = NDArray[np.float64]
Integrand = Callable[[FloatArray], NDArray[np.floating]]


@dataclass(frozen=True)
class QuadratureResult:
    """An integral and the number of integrand evaluations (nodes) it used.

    Attributes:
        value: the integral: a float, or an array for a vector-valued integrand.
        nodes: the integrand evaluations.

    Examples:
        >>> Trapezoid(0.0, 1.0).integrate(lambda t: t**2, 3).nodes
        3
    """

    value: NDArray[np.floating] | float
    nodes: int


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
    """Base: subclasses define ``nodes_weights``.

    Examples:
        >>> print(GaussLegendre(0.0, 1.0).integrate(lambda t: t**3, 2).value.round(15))
        0.25
    """

    name = "rule"
    minimum_nodes = 1

    def nodes_weights(self, n: int) -> tuple[FloatArray, FloatArray]:
        """The rule's nodes and weights for a node count n (each subclass defines it).

        Args:
            n: the node count (at least ``minimum_nodes``; an integer).

        Returns:
            (nodes, weights), float64 (n,) each (KinkAware: n per piece).

        Raises:
            ValueError: n too small or not an integer.

        Examples:
            >>> Trapezoid(0.0, 1.0).nodes_weights(3)
            (array([0. , 0.5, 1. ]), array([0.25, 0.5 , 0.25]))
        """
        raise NotImplementedError

    def integrate(self, f: Integrand, n: int) -> QuadratureResult:
        """sum_k w_k f(x_k) over the last axis of f's values.

        Args:
            f: a vectorized integrand: nodes (n,) to values (..., n).
            n: the node count.

        Returns:
            ``QuadratureResult(value, nodes)``: value of shape (...,).

        Raises:
            ValueError: a bad n, or values of the wrong shape.

        Examples:
            >>> import numpy as np
            >>> Trapezoid(0.0, 1.0).integrate(lambda t: np.stack([t, t**2]), 3)
            QuadratureResult(value=array([0.5  , 0.375]), nodes=3)
        """
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
    """Composite trapezoid on [a, b] with n >= 2 equally spaced points.

    Args:
        a: the left end, finite.
        b: the right end, finite and > a.

    Examples:
        >>> print(Trapezoid(0.0, 1.0).integrate(lambda t: t**2, 3).value)
        0.375
    """

    name = "trapezoid"
    minimum_nodes = 2

    def __init__(self, a: float, b: float) -> None:
        self.a, self.b = _interval(a, b)

    def nodes_weights(self, n: int) -> tuple[FloatArray, FloatArray]:
        """n equally spaced nodes on [a, b] (n >= 2), the end weights halved (see Rule).

        Examples:
            >>> Trapezoid(0.0, 1.0).nodes_weights(3)[1]
            array([0.25, 0.5 , 0.25])
        """
        n = _count(self.name, n, 2)
        nodes = np.linspace(self.a, self.b, n)
        weights = np.full(n, (self.b - self.a) / (n - 1))
        weights[[0, -1]] /= 2
        return nodes, weights


class TrapezoidLine(Rule):
    """Trapezoid for integrals over R, truncated to [center - half_width, center + half_width].

    Args:
        center: the centre of the truncated line.
        half_width: > 0; nodes lie on [center - half_width, center + half_width].

    Examples:
        >>> import numpy as np
        >>> r = TrapezoidLine(0.0, 8.0).integrate(lambda t: np.exp(-t**2 / 2), 33)
        >>> print(round(float(r.value / np.sqrt(2 * np.pi)), 12))
        1.0
    """

    name = "trapezoid-line"
    minimum_nodes = 2

    def __init__(self, center: float, half_width: float) -> None:
        self.center = float(check.as_float("center", center))
        self.half_width = float(check.positive("half_width", half_width))

    def nodes_weights(self, n: int) -> tuple[FloatArray, FloatArray]:
        """n equally spaced nodes on the truncated line, equal weights (see Rule).

        Examples:
            >>> TrapezoidLine(0.0, 5.0).nodes_weights(3)
            (array([-5.,  0.,  5.]), array([5., 5., 5.]))
        """
        n = _count(self.name, n, 2)
        nodes = np.linspace(self.center - self.half_width, self.center + self.half_width, n)
        return nodes, np.full(n, 2 * self.half_width / (n - 1))


class GaussLegendre(Rule):
    """n-point Gauss-Legendre on [a, b] (nodes cached per n).

    Args:
        a: the left end, finite.
        b: the right end, finite and > a.

    Examples:
        >>> print(GaussLegendre(0.0, 1.0).integrate(lambda t: t**3, 2).value.round(15))
        0.25
    """

    name = "gauss-legendre"

    def __init__(self, a: float, b: float) -> None:
        self.a, self.b = _interval(a, b)

    def nodes_weights(self, n: int) -> tuple[FloatArray, FloatArray]:
        """The n Gauss-Legendre nodes and weights mapped to [a, b] (see Rule).

        Examples:
            >>> GaussLegendre(0.0, 1.0).nodes_weights(2)[0].round(6)
            array([0.211325, 0.788675])
        """
        nodes, weights = legendre_unit(_count(self.name, n, 1))
        half = (self.b - self.a) / 2
        return self.a + half * (nodes + 1), half * weights


class PeriodicTrapezoid(Rule):
    """n points start + k period / n, k = 0 .. n-1: the end point is not repeated.

    Args:
        start: the first node.
        period: the period > 0.

    Examples:
        >>> import numpy as np
        >>> r = PeriodicTrapezoid(0.0, 2 * np.pi).integrate(lambda t: np.exp(np.cos(t)), 16)
        >>> print(round(float(r.value), 12))  # 2 pi I0(1)
        7.954926521013
    """

    name = "periodic-trapezoid"

    def __init__(self, start: float = 0.0, period: float = 2 * np.pi) -> None:
        self.start = float(check.as_float("start", start))
        self.period = float(check.positive("period", period))

    def nodes_weights(self, n: int) -> tuple[FloatArray, FloatArray]:
        """n equally spaced nodes over one period, the end point counted once (see Rule).

        Examples:
            >>> PeriodicTrapezoid(0.0, 4.0).nodes_weights(4)
            (array([0., 1., 2., 3.]), array([1., 1., 1., 1.]))
        """
        n = _count(self.name, n, 1)
        nodes = self.start + self.period * np.arange(n) / n
        return nodes, np.full(n, self.period / n)


@dataclass
class KinkAware(Rule):
    """Gauss quadrature per piece of {t in [a, b] : u(t) > 0}, also split at ``breakpoints``.

    The roots of u are bracketed on a uniform scan of ``scan`` points and
    refined with brentq to full precision, so an integrand carrying [u]_+^k is
    smooth inside every piece. At a piece end that is a root of u, the
    integrand behaves like (distance)^k with k = ``edge_exponent``: for
    non-integer k such pieces use Gauss-Jacobi with weight (1-x)^k (1+x)^k on
    the root ends (the weight is divided back out, so callers integrate plain
    functions), which keeps the convergence spectral; other pieces use
    Gauss-Legendre. Pass kinks of the integrand itself (for example the centres
    of a Laplace kernel) as ``breakpoints``. Pieces narrower than the scan
    spacing can be missed: raise ``scan`` for them.

    Args:
        u: the function whose positive part the integrand carries, (n,) -> (n,).
        a: the left end, finite.
        b: the right end, finite and > a.
        breakpoints: further points to split at (kinks of the integrand itself).
        scan: the number of scan points that bracket the roots of u.
        edge_exponent: k of the integrand's (distance)^k behaviour at a root of u.

    Examples:
        >>> import numpy as np
        >>> u = lambda t: 0.25 - (t - 0.5) ** 2  # [u]_+ has kinks at 0.25 and 0.75
        >>> r = KinkAware(u, 0.0, 1.0).integrate(lambda t: np.maximum(u(t), 0.0), 4)
        >>> print(round(float(r.value), 14), r.nodes)  # exactly 1/6 (a parabola on one piece)
        0.16666666666667 4
    """

    u: Callable[[FloatArray], FloatArray]
    a: float
    b: float
    breakpoints: Sequence[float] = ()
    scan: int = 2048
    edge_exponent: float = 0.0
    pieces: list[tuple[float, float]] = field(init=False)
    name = "kink-aware"

    def __post_init__(self) -> None:
        self.a, self.b = _interval(self.a, self.b)
        self.scan = _count("scan", self.scan, 3)
        self.edge_exponent = float(check.as_float("edge_exponent", self.edge_exponent))
        if self.edge_exponent < 0:
            raise ValueError(f"edge_exponent must be >= 0, got {self.edge_exponent}")
        self._roots: set[float] = set()
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
        """Pieces of the support of exp_{2-alpha}(f) = [1 + (alpha-1) f]_+^(1/(alpha-1)).

        The edge exponent defaults to 1/(alpha - 1), the density's behaviour at the edges.

        Args:
            f: the score f, vectorized.
            alpha: >= 1.
            a: the interval's start.
            b: its end.
            **options: the other KinkAware fields (breakpoints, scan, edge_exponent).

        Returns:
            The rule for u = 1 + (alpha - 1) f.

        Raises:
            ValueError: alpha < 1, or as for KinkAware.

        Examples:
            >>> import numpy as np
            >>> rule = KinkAware.deformed(lambda t: -8 * (t - 0.5) ** 2, 2.0, 0.0, 1.0)
            >>> p = lambda t: np.maximum(1 - 8 * (t - 0.5) ** 2, 0)
            >>> round(float(rule.integrate(p, 4).value), 15)  # 2 (r - 8 r^3 / 3), r = 8^-1/2
            0.471404520791032
        """
        alpha_ = float(check.as_float("alpha", alpha))
        if alpha_ < 1:
            raise ValueError(f"alpha must be >= 1, got {alpha_}")
        exponent = 0.0 if alpha_ == 1 else 1 / (alpha_ - 1)
        options.setdefault("edge_exponent", exponent)
        return cls(lambda t: 1 + (alpha_ - 1) * np.asarray(f(t)), a, b, **options)

    def _find_pieces(self) -> list[tuple[float, float]]:
        grid = np.linspace(self.a, self.b, self.scan)
        values = np.asarray(self.u(grid), dtype=float)
        if values.shape != grid.shape or not np.isfinite(values).all():
            raise ValueError("u must return finite values of the same shape as its argument")
        cuts = {self.a, self.b, *(float(p) for p in self.breakpoints if self.a < p < self.b)}

        def scalar(t: float) -> float:
            return float(np.asarray(self.u(np.array([t])))[0])

        for i in np.nonzero(np.sign(values[:-1]) * np.sign(values[1:]) < 0)[0]:
            root = brentq(scalar, grid[i], grid[i + 1], xtol=1e-300, rtol=4 * np.finfo(float).eps)
            self._roots.add(root)
            cuts.add(root)
        edges = sorted(cuts)
        return [
            (lo, hi)
            for lo, hi in itertools.pairwise(edges)
            if hi > lo and scalar((lo + hi) / 2) > 0
        ]

    @property
    def support_edges(self) -> list[float]:
        """The roots of u found in (a, b): where the support begins or ends.

        Returns:
            Sorted floats.

        Examples:
            >>> rule = KinkAware.deformed(lambda t: -8 * (t - 0.5) ** 2, 2.0, 0.0, 1.0)
            >>> [round(edge, 6) for edge in rule.support_edges]
            [0.146447, 0.853553]
        """
        return sorted(self._roots)

    def _piece(self, lo: float, hi: float, n: int) -> tuple[FloatArray, FloatArray]:
        k = self.edge_exponent
        left = k if lo in self._roots else 0.0
        right = k if hi in self._roots else 0.0
        if (left == 0 and right == 0) or float(k).is_integer() or k >= SMOOTH_EXPONENT:
            return GaussLegendre(lo, hi).nodes_weights(n)
        x, w = gauss_jacobi(n, right, left)
        half = (hi - lo) / 2
        return lo + half * (x + 1), half * w / ((1 - x) ** right * (1 + x) ** left)

    def refine(self, f: Integrand, n: int, rtol: float = 1e-14, max_pieces: int = 1024) -> int:
        """Bisect pieces until the n- and 2n-point estimates of int f agree to rtol of the total.

        For integrands that are smooth on each piece but nearly singular (a base
        u that comes close to 0 without crossing it). Replaces ``pieces``.

        Args:
            f: the integrand, vectorized.
            n: nodes per piece.
            rtol: the agreement asked, relative to the whole integral.
            max_pieces: where bisection stops regardless.

        Returns:
            The piece count.

        Examples:
            >>> import numpy as np
            >>> peak = lambda t: 1 / ((t - 0.5) ** 2 + 1e-6)  # int = 2000 atan(500)
            >>> rule = KinkAware(lambda t: np.ones_like(t), 0.0, 1.0)
            >>> pieces = rule.refine(peak, 8)
            >>> bool(abs(rule.integrate(peak, 8).value / (2000 * np.arctan(500)) - 1) < 1e-13)
            True
        """
        n = _count(self.name, n, 1)

        def estimate(lo: float, hi: float, m: int) -> float:
            x, w = self._piece(lo, hi, m)
            return float(np.sum(np.asarray(f(x)) * w))

        total = abs(sum(estimate(lo, hi, 2 * n) for lo, hi in self.pieces)) or 1.0
        done, todo = [], list(self.pieces)
        while todo:
            lo, hi = todo.pop()
            coarse, fine = estimate(lo, hi, n), estimate(lo, hi, 2 * n)
            if abs(fine - coarse) <= rtol * total or len(done) + len(todo) >= max_pieces:
                done.append((lo, hi))
            else:
                middle = (lo + hi) / 2
                todo += [(lo, middle), (middle, hi)]
        self.pieces = sorted(done)
        return len(self.pieces)

    def nodes_weights(self, n: int) -> tuple[FloatArray, FloatArray]:
        """n Gauss nodes on each piece (Gauss-Jacobi next to a support edge with a
        non-integer edge exponent), concatenated; empty when u > 0 nowhere (see Rule).

        Examples:
            >>> rule = KinkAware.deformed(lambda t: -8 * (t - 0.5) ** 2, 2.0, 0.0, 1.0)
            >>> rule.nodes_weights(3)[0].size
            3
        """
        n = _count(self.name, n, 1)
        if not self.pieces:
            return np.empty(0), np.empty(0)
        parts = [self._piece(lo, hi, n) for lo, hi in self.pieces]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def softplus_positive(v: NDArray[np.floating], sharpness: float) -> NDArray[np.floating]:
    """softplus(s v) / s, the smoothed [v]_+ of Moreno 2022 sec 5.3.1 (bias <= log(2)/s).

    Args:
        v: reals, any shape.
        sharpness: s > 0 (larger: closer to [v]_+).

    Returns:
        An array of v's shape.

    Examples:
        >>> import numpy as np
        >>> softplus_positive(np.array([-1.0, 0.0, 1.0]), 50.0).round(4)
        array([0.    , 0.0139, 1.    ])
    """
    return np.asarray(_deformed.softplus_positive(v, check.positive("sharpness", sharpness)))


def smoothed_exp_beta(
    u: NDArray[np.floating], beta: float, sharpness: float
) -> NDArray[np.floating]:
    """exp_beta(u) with [.]_+ replaced by the softplus smoothing (beta < 1).

    Args:
        u: reals, any shape.
        beta: the deformation, < 1.
        sharpness: the softplus sharpness s > 0.

    Returns:
        An array of u's shape.

    Examples:
        >>> import numpy as np
        >>> smoothed_exp_beta(np.array([0.0, 1.0]), 0.5, 50.0).round(4)
        array([1.  , 2.25])
    """
    beta_ = check.as_float("beta", beta)
    if (beta_ >= 1).any():
        raise ValueError(f"beta must be < 1 for the smoothed exp_beta, got {beta!r}")
    return np.asarray(_deformed.smoothed_exp_beta(u, beta_, check.positive("sharpness", sharpness)))
