"""Kernel exponential (alpha = 1) and kernel deformed exponential (alpha > 1)
families on an interval (Moreno 2022 section 5).

f~(t) = sum_i gamma_i k(t, t_i), with a Gaussian or Laplace kernel, and a base
probability law Q on [a, b]: uniform, or a Gaussian q0 normalized on [a, b].
Following Alg 1 (Moreno 2022), Z = int exp_{2-alpha}(f~) dQ and p = q0 exp_{2-alpha}(f~) / Z
(a density on [a, b] with respect to Lebesgue measure).

The quadrature is tsallis.core.kernel, the code torch_bridge.kernel_attention
runs too: Gauss-Legendre panels cut at the Laplace kernel's centres and the
base's break points and no wider than the bandwidth (or the base std, or the
narrowest RBF of expect_rbf), support boundaries found by bracketed Newton,
everything summed in log space, so a Gaussian q0 far from [a, b] cannot
underflow Z to 0 or produce NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from itertools import pairwise

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import logsumexp

from tsallis._generated import deformed as _deformed
from tsallis._generated import gaussian as _gaussian
from tsallis.core import kernel as _core
from tsallis.core import validation as check
from tsallis.core.bases import GaussianBase, UniformBase

FloatArray = NDArray[np.float64]
KERNELS = _core.KERNELS


def kernel_sum(
    t: ArrayLike, gamma: FloatArray, inducing: FloatArray, kernel: str, bandwidth: float
) -> FloatArray:
    """f~(t) = sum_i gamma_i k(t, t_i) for the Gaussian or Laplace kernel.

    Args:
        t: points, any shape.
        gamma: weights (..., M) of the M inducing points.
        inducing: the M inducing points.
        kernel: "gaussian"; any other name is the Laplace kernel (callers validate it:
            ``KernelFamily`` accepts "gaussian" and "laplace").
        bandwidth: the kernel bandwidth h > 0.

    Returns:
        f~ at t, shape (..., *t.shape).

    Examples:
        >>> import numpy as np
        >>> t, gamma, inducing = np.array([0.0, 0.5]), np.array([1.0, -1.0]), np.array([0.0, 1.0])
        >>> kernel_sum(t, gamma, inducing, "gaussian", 0.5).round(4)
        array([0.8647, 0.    ])
    """
    t_ = np.asarray(t, dtype=float)
    return _core.kernel_matrix(t_, np.asarray(inducing, dtype=float), kernel, bandwidth) @ gamma


_NO_MASS = "exp_{2-alpha}(f~) vanishes on the whole interval: the family has no mass"


@dataclass
class KernelFamily:
    """p(t) = q0(t) exp_{2-alpha}(f~(t)) / Z on the base's interval; alpha >= 1.

    Parameters: ``gamma`` (M,) kernel weights at the ``inducing`` points (M,);
    ``alpha``; ``kernel`` "gaussian" or "laplace" with ``bandwidth``; ``base`` the
    law Q (UniformBase or GaussianBase); ``nodes`` Gauss-Legendre nodes per panel
    (None: 16, as in torch_bridge.kernel_attention).
    ``support_edges`` are the roots of 1 + (alpha-1) f~ in [a, b] and ``support``
    the intervals where it is positive.

    Raises:
        ValueError: shapes, alpha < 1, an unknown kernel, a bandwidth or node count
            out of range, a bandwidth so small that too many panels would be needed
            (the message says what works), or no mass on [a, b].
        TypeError: a base of the wrong type.

    Args:
        gamma: kernel weights (M,), real.
        inducing: the M inducing points.
        alpha: >= 1.
        kernel: "gaussian" or "laplace".
        bandwidth: the kernel bandwidth h > 0.
        base: ``UniformBase`` (default: uniform on [0, 1]) or ``GaussianBase``.
        nodes: Gauss-Legendre nodes per panel, or None (16).

    Examples:
        >>> family = KernelFamily([1.0, -1.0], [0.25, 0.75], alpha=2.0)
        >>> round(float(family.expect(lambda t: t)), 6)
        0.376326
    """

    gamma: ArrayLike
    inducing: ArrayLike
    alpha: float = 1.0
    kernel: str = "gaussian"
    bandwidth: float = 0.1
    base: UniformBase | GaussianBase = field(default_factory=UniformBase)
    nodes: int | None = None

    def __post_init__(self) -> None:
        self.gamma = check.as_float("gamma", self.gamma)
        self.inducing = check.as_float("inducing", self.inducing)
        if self.gamma.ndim != 1 or self.gamma.shape != self.inducing.shape:
            raise ValueError(
                "gamma and inducing must be 1D of one length, "
                f"got {self.gamma.shape} and {self.inducing.shape}"
            )
        self.alpha = float(check.as_float("alpha", self.alpha))
        if self.alpha < 1:
            raise ValueError(f"alpha must be >= 1, got {self.alpha}")
        if self.kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {self.kernel!r}")
        self.bandwidth = float(check.positive("bandwidth", self.bandwidth))
        if not isinstance(self.base, (UniformBase, GaussianBase)):
            raise TypeError("base must be a UniformBase or a GaussianBase")
        if self.nodes is None:
            self.nodes = _core.default_nodes(self.alpha)
        if (
            not isinstance(self.nodes, (int, np.integer))
            or isinstance(self.nodes, bool)
            or self.nodes < 2
        ):
            raise ValueError(f"nodes must be an int >= 2 (or None), got {self.nodes!r}")
        self.nodes = int(self.nodes)
        self._row = self.gamma[None, :]
        self._envelope = _core.envelope(self._row, self.inducing, self.kernel, self.bandwidth)
        self._base_edges = edges = self._edges(math.inf)
        # the roots themselves are found on first use (support_edges): expect_rbf on
        # narrower panels finds them again on its own, and Newton is most of its cost
        if not _core.positive_somewhere(self._row, self.inducing, self._setup(1), edges):
            raise ValueError(_NO_MASS)
        # The nodes on the family's own panels are built on first use (logpdf, expect,
        # normalizer): expect_rbf with narrower RBFs integrates on its own panels.
        self._quadrature: tuple[FloatArray, FloatArray, float] | None = None

    def _nodes_and_mass(self) -> tuple[FloatArray, FloatArray, float]:
        """(nodes, normalized log masses, log Z) on the family's panels, built once."""
        if self._quadrature is None:
            x, log_mass = self._nodes(self._setup(1), self._base_edges)
            log_z = float(logsumexp(log_mass)) if x.size else -math.inf
            if not math.isfinite(log_z):
                raise ValueError(_NO_MASS)
            self._quadrature = (x, log_mass - log_z, log_z)
        return self._quadrature

    @property
    def log_normalizer(self) -> float:
        """log Z, Z = int exp_{2-alpha}(f~) dQ (cached after the first call).

        Returns:
            log Z, a float.

        Examples:
            >>> family = KernelFamily([1.0, -3.0], [0.25, 0.75], alpha=2.0)
            >>> round(family.log_normalizer, 6)
            -0.158654
        """
        return self._nodes_and_mass()[2]

    def _setup(self, values: int) -> _core.Setup:
        return _core.Setup(self.kernel, self.bandwidth, self.base, self.alpha, self.nodes, values)

    def _edges(self, narrowest: float) -> NDArray[np.float64]:
        return _core.panel_edges(
            self.inducing.tolist(),
            self.kernel,
            self.bandwidth,
            self.base,
            narrowest,
            self._envelope,
            caller="KernelFamily",
        )

    def _nodes(self, setup: _core.Setup, edges: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Every node with positive mass and its log mass (log q0 exp_{2-alpha}(f~) w)."""
        ts, logs = [], []
        for chunk in _core.panel_chunks(edges, 1, self.inducing.size, setup):
            with np.errstate(divide="ignore"):  # a zero weight or no support: log mass -inf
                pieces = _core.node_pieces(self._row, self.inducing, setup, chunk)
            for piece in pieces:
                ts.append(np.broadcast_to(piece.t, piece.log_mass.shape).reshape(-1))
                logs.append(piece.log_mass.reshape(-1))
        x, log_mass = np.concatenate(ts), np.concatenate(logs)
        keep = np.isfinite(log_mass)
        return x[keep], log_mass[keep]

    @cached_property
    def support_edges(self) -> FloatArray:
        """The roots of 1 + (alpha-1) f~ in [a, b], sorted (empty for alpha = 1).

        Returns:
            float64 (E,): the support edges.

        Examples:
            >>> family = KernelFamily([1.0, -3.0], [0.25, 0.75], alpha=2.0)
            >>> family.support_edges.round(6)
            array([0.601908, 0.89823 ])
        """
        return _core.support_edges(self._row, self.inducing, self._setup(1), self._base_edges)

    @property
    def support(self) -> list[tuple[float, float]]:
        """The intervals of [a, b] where 1 + (alpha-1) f~ > 0 (all of it for alpha = 1).

        Returns:
            (lo, hi) pairs of floats, in order; disjoint for a multimodal family.

        Examples:
            >>> family = KernelFamily([1.0, -3.0], [0.25, 0.75], alpha=2.0)
            >>> [(round(lo, 4), round(hi, 4)) for lo, hi in family.support]
            [(0.0, 0.6019), (0.8982, 1.0)]
        """
        cuts = [self.base.a, *[float(e) for e in self.support_edges], self.base.b]
        if self.alpha == 1:
            return [(self.base.a, self.base.b)]
        middle = [(lo + hi) / 2 for lo, hi in pairwise(cuts)]
        inside = _core.deformed_base(self.f_tilde(np.array(middle)), self.alpha) > 0
        return [
            (lo, hi) for (lo, hi), on in zip(pairwise(cuts), inside, strict=True) if on and hi > lo
        ]

    def f_tilde(self, t: ArrayLike) -> FloatArray:
        """f~(t) = sum_i gamma_i k(t, t_i).

        Args:
            t: points, real, any shape.

        Returns:
            float64, t's shape.

        Examples:
            >>> family = KernelFamily([1.0, -3.0], [0.25, 0.75], alpha=2.0)
            >>> family.f_tilde([0.25, 0.75]).round(4)
            array([ 1., -3.])
        """
        return kernel_sum(t, self.gamma, self.inducing, self.kernel, self.bandwidth)

    def _log_unnormalized(self, t: FloatArray) -> FloatArray:
        with np.errstate(divide="ignore"):
            log_e = _deformed.log_exp_beta(self.f_tilde(t), 2 - self.alpha)
        return self.base.log_density(t) + log_e

    @property
    def normalizer(self) -> float:
        """Z = int exp_{2-alpha}(f~) dQ (Q a probability law on [a, b]).

        Returns:
            Z, a float.

        Examples:
            >>> family = KernelFamily([1.0, -3.0], [0.25, 0.75], alpha=2.0)
            >>> round(family.normalizer, 6)
            0.853291
        """
        return float(np.exp(self.log_normalizer))

    def logpdf(self, t: ArrayLike) -> FloatArray:
        """log p(t); -inf outside the support and outside [a, b].

        Args:
            t: points, real (+-inf allowed), any shape.

        Returns:
            float64, t's shape.

        Raises:
            ValueError: NaN in t.

        Examples:
            >>> family = KernelFamily([1.0, -3.0], [0.25, 0.75], alpha=2.0)
            >>> family.logpdf([0.25, 0.75]).round(6)
            array([0.851796,     -inf])
        """
        t_ = check.as_float("t", t, allow_inf=True)
        inside = (t_ >= self.base.a) & (t_ <= self.base.b)
        safe = np.where(inside, t_, self.base.a)
        return np.where(inside, self._log_unnormalized(safe) - self.log_normalizer, -np.inf)

    def pdf(self, t: ArrayLike) -> FloatArray:
        """p(t), the density with respect to Lebesgue measure; 0 off the support.

        Args:
            t: points, real, any shape.

        Returns:
            float64, t's shape.

        Raises:
            ValueError: NaN in t.

        Examples:
            >>> family = KernelFamily([1.0, -3.0], [0.25, 0.75], alpha=2.0)
            >>> family.pdf([0.25, 0.75]).round(6)
            array([2.343853, 0.      ])
        """
        return np.exp(self.logpdf(t))

    def expect(self, g: Callable[[FloatArray], ArrayLike]) -> NDArray[np.floating]:
        """E_p[g(T)] for g mapping nodes (n,) to values (..., n).

        Args:
            g: a vectorized function of the quadrature nodes.

        Returns:
            float64 (...,): the expectations.

        Examples:
            >>> import numpy as np
            >>> family = KernelFamily([1.0, -3.0], [0.25, 0.75], alpha=2.0)
            >>> family.expect(lambda t: np.stack([np.ones_like(t), t])).round(6)
            array([1.      , 0.313116])
        """
        x, log_mass, _ = self._nodes_and_mass()
        return np.asarray(g(x)) @ np.exp(log_mass)

    def expect_rbf(self, mu: ArrayLike, sigma: ArrayLike) -> FloatArray:
        """E_p[psi_j] for the Gaussian RBF basis psi_j = N(t; mu_j, sigma_j^2), shape (N,).

        The panels are no wider than the narrowest sigma_j either (the same
        computation as torch_bridge.kernel_attention for one row).

        Args:
            mu: the RBF centres, real (N,).
            sigma: their widths, > 0, (N,).

        Returns:
            float64 (N,).

        Raises:
            ValueError: shapes that differ or are not 1D, NaN, inf or sigma <= 0.

        Examples:
            >>> family = KernelFamily([1.0, -3.0], [0.25, 0.75], alpha=2.0)
            >>> family.expect_rbf([0.25, 0.75], [0.1, 0.1]).round(6)
            array([1.988474, 0.067102])
        """
        mu_ = check.as_float("mu", mu)
        sigma_ = check.positive("sigma", sigma)
        if mu_.ndim != 1 or mu_.shape != sigma_.shape:
            raise ValueError(
                f"mu and sigma must be 1D of one length, got {mu_.shape} and {sigma_.shape}"
            )
        if mu_.size == 0:
            return np.zeros(0)
        edges = self._edges(float(np.min(sigma_)))
        if np.array_equal(edges, self._base_edges):  # the same panels: the nodes at hand
            return self.expect(
                lambda t: np.asarray(_gaussian.pdf(t[None, :], mu_[:, None], sigma_[:, None]))
            )
        with np.errstate(divide="ignore"):  # a zero weight or no support: log mass -inf
            r, _ = _core.integrate(
                self._row,
                self.inducing,
                self._setup(mu_.size),
                edges,
                lambda t: np.asarray(_gaussian.pdf(t[..., None], mu_, sigma_)),
            )
        return r[0]


@dataclass(frozen=True)
class Verdict:
    """Whether a sufficient condition holds, and why.

    Attributes:
        holds: True if the condition is met.
        reason: the check in words, with the numbers compared.

    Examples:
        >>> prop_5_1(0.0, 2.0).holds
        True
    """

    holds: bool
    reason: str


def kernel_growth(kernel: str) -> float:
    """xi in k(t, t) <= L |t|^xi + C; both kernels have k(t, t) = 1: any xi > 0 works (0).

    Args:
        kernel: "gaussian" or "laplace".

    Returns:
        xi = 0.0.

    Raises:
        ValueError: another kernel name.

    Examples:
        >>> print(kernel_growth("gaussian"))
        0.0
    """
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    return 0.0


def tail_decay(base: UniformBase | GaussianBase) -> float:
    """eta in P(|T| >= z) <= C exp(-v z^eta): inf for a bounded support, 2 for a Gaussian.

    Args:
        base: the base law Q (``UniformBase`` or ``GaussianBase``).

    Returns:
        eta: inf for a bounded support, 2.0 for a Gaussian base.

    Examples:
        >>> print(tail_decay(GaussianBase(0.0, 1.0)))
        2.0
    """
    return np.inf if isinstance(base, UniformBase) else 2.0


def prop_5_1(xi: float, eta: float) -> Verdict:
    """Moreno 2022 Prop 5.1: exp(f) is Q-integrable if eta > xi / 2.

    Args:
        xi: the kernel growth exponent (``kernel_growth``).
        eta: the base's tail exponent (``tail_decay``).

    Returns:
        A Verdict: whether the condition holds, and the reason.

    Examples:
        >>> prop_5_1(0.0, 2.0)
        Verdict(holds=True, reason='tail decay eta = 2.0 exceeds half the kernel growth xi/2 = 0.0')
    """
    if eta > xi / 2:
        return Verdict(
            True, f"tail decay eta = {eta} exceeds half the kernel growth xi/2 = {xi / 2}"
        )
    return Verdict(
        False,
        f"tail decay eta = {eta} does not exceed xi/2 = {xi / 2}; Prop 5.1 gives no guarantee",
    )


def prop_5_4(family: KernelFamily, c_t: float) -> Verdict:
    """Moreno 2022 Prop 5.4 (1 < alpha <= 2): (alpha-1) f~(t) + 1 <= 0 for |t| > c_t.

    The kernel growth condition holds for both kernels (k(t, t) = 1).

    Args:
        family: a ``KernelFamily`` with 1 < alpha <= 2.
        c_t: the radius beyond which the tail condition must hold.

    Returns:
        A Verdict: whether the condition holds, and the reason.

    Examples:
        >>> fam = KernelFamily([1.0, 2.0], [0.3, 0.6], alpha=1.5, base=GaussianBase(0.0, 1.0))
        >>> prop_5_4(fam, 3.0).holds
        True
    """
    if not 1 < family.alpha <= 2:
        return Verdict(False, f"Prop 5.4 covers 1 < alpha <= 2, got alpha = {family.alpha}")
    a, b = family.base.a, family.base.b
    outside = [t for t in (a, b) if abs(t) > c_t]
    if not outside:
        return Verdict(
            True, f"S = [{a}, {b}] lies within |t| <= C_t = {c_t}: the tail condition is vacuous"
        )
    grid = np.concatenate(
        [np.linspace(a, -c_t, 257) if a < -c_t else [], np.linspace(c_t, b, 257) if b > c_t else []]
    )
    worst = float(np.max(_core.deformed_base(family.f_tilde(grid), family.alpha)))
    if worst <= 0:
        return Verdict(
            True, f"(alpha-1) f~ + 1 <= 0 on |t| > {c_t} (max {worst:.3g} on a 257-point grid)"
        )
    return Verdict(False, f"(alpha-1) f~ + 1 reaches {worst:.3g} > 0 beyond |t| = {c_t}")
