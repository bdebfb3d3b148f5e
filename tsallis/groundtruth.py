"""mpmath ground truth for any family: density, threshold, moments, entropy.

Nothing here uses a closed form. A family is given by its score f (a
decreasing function of the distance r >= 0 from the mode) and alpha:
p = [(alpha-1)(f - tau)]_+^(1/(alpha-1)) for alpha > 1, exp(f - A) for alpha = 1.
The threshold tau (or A) is found by root-finding int p = 1. Integrals are
split at the mode (the kink of |t - loc|) and at every support edge.

1D: integrals run over t in R. N-D: after whitening, over R^N through
int h(|z|) dz = |S^(N-1)| sqrt(det Sigma) int_0^oo h(r) r^(N-1) dr.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import mpmath as mp
import numpy as np

__all__ = [
    "Estimate",
    "Family",
    "bracketed_root",
    "cdf",
    "density",
    "edge",
    "family_of",
    "integrate",
    "mass",
    "moments",
    "ppf",
    "summary",
    "threshold",
]

MpFunction = Callable[[mp.mpf], mp.mpf]

# The examples use the triangular family, alpha = 2 with score f(r) = -r: p = [-|t| - tau]_+,
# tau = -1, support [-1, 1], variance 1/6, Tsallis entropy (1 - int p^2) / 2 = 1/6.


@dataclass(frozen=True)
class Estimate:
    """A value with mpmath's error estimate (summed over the pieces).

    Attributes:
        value: the mpmath number.
        error: mpmath's estimate of its absolute error.

    Examples:
        >>> Estimate(mp.mpf(1), mp.mpf("1e-40")).value
        mpf('1.0')
    """

    value: mp.mpf
    error: mp.mpf


@dataclass(frozen=True)
class Family:
    """A family for the ground truth: score of the distance, alpha, geometry.

    ``dim`` = 0 means 1D in t (loc, scale used as given); ``dim`` >= 1 means
    N-D in whitened radius with ``logdet`` = log det Sigma. ``scale`` sets the
    length unit used to bracket roots and to split infinite ranges.

    Attributes:
        score: f(r), decreasing in the distance r >= 0 from the mode (mpmath in, out).
        alpha: > 1 for the sparse families, 1 for exp(f - A).
        loc: the mode (1D).
        scale: the length unit.
        dim: 0 for 1D, else N.
        logdet: log det Sigma (N-D).

    Examples:
        >>> triangular = Family(score=lambda r: -r, alpha=mp.mpf(2))
        >>> triangular.dim
        0
    """

    score: MpFunction
    alpha: mp.mpf
    loc: mp.mpf | int = 0
    scale: mp.mpf | int = 1
    dim: int = 0
    logdet: mp.mpf | int = 0


def density(family: Family, threshold: mp.mpf) -> MpFunction:
    """p as a function of the distance r from the mode.

    Args:
        family: the family.
        threshold: tau (alpha > 1) or the log-partition A (alpha = 1).

    Returns:
        r -> p, in mpmath; 0 outside the support.

    Examples:
        >>> p = density(Family(score=lambda r: -r, alpha=mp.mpf(2)), mp.mpf(-1))
        >>> p(mp.mpf("0.25")), p(mp.mpf(2))
        (mpf('0.75'), mpf('0.0'))
    """
    alpha = family.alpha
    if alpha == 1:
        return lambda r: mp.exp(family.score(r) - threshold)
    k = 1 / (alpha - 1)

    def p(r: mp.mpf) -> mp.mpf:
        base = (alpha - 1) * (family.score(r) - threshold)
        return mp.power(base, k) if base > 0 else mp.mpf(0)

    return p


def bracketed_root(f: MpFunction, low: mp.mpf, high: mp.mpf) -> mp.mpf:
    """Root of f in [low, high] (sign change required): Illinois steps, bisection fallback.

    Stops when the bracket is within a few ulps of the working precision.

    Args:
        f: a continuous function (mpmath in, out).
        low: the bracket's lower end.
        high: its upper end; f(low) and f(high) must differ in sign.

    Returns:
        The root, to the working precision (``mp.mp.prec``).

    Raises:
        ValueError: f(low) and f(high) have the same sign.

    Examples:
        >>> with mp.workdps(30):
        ...     mp.nstr(bracketed_root(lambda x: x * x - 2, mp.mpf(0), mp.mpf(2)), 25)
        '1.414213562373095048801689'
    """
    f_low, f_high = f(low), f(high)
    if f_low == 0:
        return low
    if f_high == 0:
        return high
    if (f_low > 0) == (f_high > 0):
        raise ValueError(f"no sign change in [{low}, {high}]")
    side = 0
    tolerance = mp.mpf(2) ** (8 - mp.mp.prec)
    for iteration in range(400):
        if abs(high - low) <= tolerance * max(abs(low), abs(high)):
            break
        if iteration % 4 == 3:  # guaranteed progress
            mid = (low + high) / 2
        else:
            mid = (low * f_high - high * f_low) / (f_high - f_low)
        f_mid = f(mid)
        if f_mid == 0:
            return mid
        if (f_mid > 0) == (f_low > 0):
            low, f_low = mid, f_mid
            if side == -1:
                f_high /= 2
            side = -1
        else:
            high, f_high = mid, f_mid
            if side == 1:
                f_low /= 2
            side = 1
    return (low + high) / 2


def edge(family: Family, threshold: mp.mpf) -> mp.mpf:
    """Distance where f = threshold (the support edge); inf for alpha = 1.

    Args:
        family: the family.
        threshold: tau.

    Returns:
        The edge r > 0, found by doubling ``family.scale`` and ``bracketed_root``.

    Examples:
        >>> edge(Family(score=lambda r: -r, alpha=mp.mpf(2)), mp.mpf(-1))
        mpf('1.0')
    """
    if family.alpha == 1:
        return mp.inf
    high = mp.mpf(family.scale)  # (an int scale would come back as an int root)
    while family.score(high) > threshold:
        high *= 2
    return bracketed_root(lambda r: family.score(r) - threshold, mp.mpf(0), high)


def _pieces(family: Family, width: mp.mpf) -> list[mp.mpf]:
    """Break points in r >= 0: the mode, scale multiples on infinite ranges, the edge."""
    if width == mp.inf:
        return [mp.mpf(0), family.scale, 8 * family.scale, 40 * family.scale, mp.inf]
    return [mp.mpf(0), width]


def integrate(
    family: Family, threshold: mp.mpf, weight: Callable[[mp.mpf, mp.mpf], mp.mpf]
) -> Estimate:
    """int weight(t, p(t)) over the space; in 1D t runs over both sides of loc.

    ``weight(position, p)`` gets the signed offset t - loc in 1D and the radius in N-D.

    Args:
        family: the family.
        threshold: tau or A.
        weight: (position, p) -> integrand.

    Returns:
        The integral, split at the mode, the support edge and (infinite supports)
        multiples of ``family.scale``.

    Examples:
        >>> fam = Family(score=lambda r: -r, alpha=mp.mpf(2))
        >>> mp.nstr(integrate(fam, mp.mpf(-1), lambda t, p: t * t * p).value, 15)
        '0.166666666666667'
    """
    p = density(family, threshold)
    width = edge(family, threshold)
    points = _pieces(family, width)
    if family.dim == 0:
        right, e1 = mp.quad(lambda r: weight(r, p(r)), points, error=True)
        left, e2 = mp.quad(lambda r: weight(-r, p(r)), points, error=True)
        return Estimate(left + right, e1 + e2)
    n = family.dim
    sphere = 2 * mp.pi ** (mp.mpf(n) / 2) / mp.gamma(mp.mpf(n) / 2)
    jac = sphere * mp.exp(family.logdet / 2)
    value, err = mp.quad(lambda r: weight(r, p(r)) * r ** (n - 1), points, error=True)
    return Estimate(jac * value, jac * err)


def mass(family: Family, threshold: mp.mpf) -> Estimate:
    """int p for a given threshold.

    Args:
        family: the family.
        threshold: tau or A (any value: the root-finding of ``threshold`` calls this).

    Returns:
        The mass, with its error estimate.

    Examples:
        >>> mass(Family(score=lambda r: -r, alpha=mp.mpf(2)), mp.mpf(-2)).value
        mpf('4.0')
    """
    return integrate(family, threshold, lambda _t, p: p)


def threshold(family: Family, hint: float | None = None) -> mp.mpf:
    """tau solving int p = 1 (alpha > 1), or the log-partition A (alpha = 1).

    ``hint`` only narrows the first bracket tried (the root is still solved to
    working precision, and a bracket without a sign change is discarded).

    Args:
        family: the family.
        hint: an approximate tau (e.g. a closed form under test), or None.

    Returns:
        tau (or A) to the working precision.

    Examples:
        >>> with mp.workdps(30):
        ...     mp.nstr(threshold(Family(score=lambda r: -r, alpha=mp.mpf(2))), 20)
        '-1.0'
    """
    if family.alpha == 1:
        return mp.log(mass(family, mp.mpf(0)).value)
    top = family.score(mp.mpf(0))
    if hint is not None and hint < top:
        near = mp.mpf(hint)
        low, high = near - abs(near) * mp.mpf("1e-9"), min(near + abs(near) * mp.mpf("1e-9"), top)
        f = lambda tau: mass(family, tau).value - 1  # noqa: E731
        if f(low) > 0 > f(high):
            return bracketed_root(f, low, high)
    step = mp.mpf(1)
    low = top - step
    while mass(family, low).value < 1:  # mass grows as tau decreases
        step *= 2
        low = top - step
    return bracketed_root(lambda tau: mass(family, tau).value - 1, low, top)


def moments(family: Family, tau: mp.mpf) -> dict[str, Estimate]:
    """Mean offset, second central moment and entropy at the threshold tau.

    1D: ``mean`` is E[t - loc] and ``variance`` E[(t-loc)^2]; N-D: ``variance`` is
    E[r^2] / N, the factor c in Cov = c Sigma (mean is 0 by symmetry).
    Entropy is Tsallis (1 - int p^alpha)/(alpha(alpha-1)), Shannon -int p log p at alpha = 1.

    Args:
        family: the family.
        tau: its threshold (``threshold``).

    Returns:
        ``{"mean": ..., "variance": ..., "entropy": ...}`` as ``Estimate`` objects.

    Examples:
        >>> stats = moments(Family(score=lambda r: -r, alpha=mp.mpf(2)), mp.mpf(-1))
        >>> [mp.nstr(stats[k].value, 12) for k in ("mean", "variance", "entropy")]
        ['0.0', '0.166666666667', '0.166666666667']
    """
    alpha = family.alpha
    out = {"mean": integrate(family, tau, lambda t, p: t * p)}
    second = integrate(family, tau, lambda t, p: t * t * p)
    if family.dim:
        second = Estimate(second.value / family.dim, second.error / family.dim)
    out["variance"] = second
    if alpha == 1:
        ent = integrate(family, tau, lambda _t, p: -p * mp.log(p) if p > 0 else mp.mpf(0))
    else:
        power = integrate(family, tau, lambda _t, p: mp.power(p, alpha))
        ent = Estimate(
            (1 - power.value) / (alpha * (alpha - 1)), power.error / (alpha * (alpha - 1))
        )
    out["entropy"] = ent
    return out


def cdf(family: Family, tau: mp.mpf, x: mp.mpf) -> mp.mpf:
    """P(t <= x) in 1D: the mass beyond |x - loc| on one side, split at the break points.

    Args:
        family: a 1D family.
        tau: its threshold.
        x: the point.

    Returns:
        The cdf at x (0 and 1 beyond the support).

    Examples:
        >>> fam = Family(score=lambda r: -r, alpha=mp.mpf(2))
        >>> cdf(fam, mp.mpf(-1), mp.mpf(0)), cdf(fam, mp.mpf(-1), mp.mpf("0.5"))
        (mpf('0.5'), mpf('0.875'))
    """
    p = density(family, tau)
    width = edge(family, tau)
    offset = x - family.loc
    distance = abs(offset)
    if distance >= width:
        return mp.mpf(0) if offset < 0 else mp.mpf(1)
    beyond = mp.quad(p, [distance, *[r for r in _pieces(family, width) if r > distance]])
    return beyond if offset <= 0 else 1 - beyond


def ppf(family: Family, tau: mp.mpf, q: mp.mpf, start: mp.mpf) -> mp.mpf:
    """x with cdf(x) = q, by Newton from ``start`` (the derivative is the density).

    Args:
        family: a 1D family.
        tau: its threshold.
        q: the probability, in (0, 1).
        start: a first guess inside the support (e.g. a closed form under test).

    Returns:
        The quantile, to the working precision.

    Raises:
        ValueError: mpmath's findroot did not converge.

    Examples:
        >>> fam = Family(score=lambda r: -r, alpha=mp.mpf(2))
        >>> mp.nstr(ppf(fam, mp.mpf(-1), mp.mpf("0.875"), mp.mpf("0.4")), 12)
        '0.5'
    """
    p = density(family, tau)
    return mp.findroot(
        lambda x: cdf(family, tau, x) - q,
        mp.mpf(start),
        solver="newton",
        df=lambda x: p(abs(x - family.loc)),
    )


def family_of(dist: object) -> Family:
    """The ground-truth Family of a public distribution (scalar parameters).

    Only the definition is used: the score f and alpha; N-D distributions
    contribute N and log det Sigma. A custom location-scale g is
    differentiated by SymPy (imported here only).

    Args:
        dist: a ``tsallis.distributions`` object with scalar parameters.

    Returns:
        Its ``Family``.

    Raises:
        ValueError: array parameters.
        TypeError: a distribution without a ground truth here.

    Examples:
        >>> from tsallis.distributions import Triangular
        >>> fam = family_of(Triangular(loc=0.0, scale=2.0))
        >>> fam.alpha, fam.score(mp.mpf(1))
        (mpf('2.0'), mpf('-0.5'))
    """
    from tsallis import distributions as D

    if isinstance(dist, D.families.MultivariateFamily):
        alpha = 1 if isinstance(dist, D.Gaussian) else getattr(dist, "alpha", 2)
        return Family(
            score=lambda r: -(r**2) / 2,
            alpha=mp.mpf(float(alpha)),
            dim=dist.dim,
            logdet=mp.mpf(dist._logdet),
        )
    if np.ndim(dist.loc) or np.ndim(dist.scale):
        raise ValueError("dist: ground truth needs scalar parameters")
    loc, s = mp.mpf(float(dist.loc)), mp.mpf(float(dist.scale))
    alpha = mp.mpf(
        float(getattr(dist, "alpha", 1 if isinstance(dist, (D.Gaussian, D.Laplace)) else 2))
    )
    if isinstance(dist, (D.Gaussian, D.TruncatedParabola, D.BetaGaussian)):
        score = lambda r: -(r**2) / (2 * s**2)  # noqa: E731
    elif isinstance(dist, (D.Laplace, D.Triangular)):
        score = lambda r: -r / s  # noqa: E731
    elif isinstance(dist, D.LocationScale):
        import sympy as sp

        t = sp.Symbol("t", nonnegative=True)
        g_prime = sp.lambdify(t, sp.diff(sp.sympify(dist.g, locals={"t": t}), t), modules="mpmath")
        score = lambda r: -g_prime(r / s) / s  # noqa: E731
    else:
        raise TypeError(f"dist: no ground truth for {type(dist).__name__}")
    return Family(score=score, alpha=alpha, loc=loc, scale=s)


def summary(dist: object, dps: int = 40) -> dict[str, Estimate]:
    """Threshold, mass, mean, variance (N-D: Cov/Sigma factor) and entropy of ``dist``.

    Computed at ``dps`` digits from the definition alone. The threshold's error
    is the size of the last root bracket; the mean is E[t] (1D) or 0 (N-D).

    Args:
        dist: a ``tsallis.distributions`` object with scalar parameters.
        dps: mpmath decimal digits.

    Returns:
        ``{"threshold", "mass", "mean", "variance", "entropy"}`` as ``Estimate`` objects.

    Raises:
        ValueError: array parameters (as for ``family_of``).
        TypeError: a distribution without a ground truth here.

    Examples:
        >>> from tsallis.distributions import Triangular
        >>> truth = summary(Triangular(loc=0.5, scale=1.0), dps=30)
        >>> [mp.nstr(truth[k].value, 12) for k in ("threshold", "mean", "variance")]
        ['-1.0', '0.5', '0.166666666667']
    """
    with mp.workdps(dps):
        family = family_of(dist)
        tau = threshold(family)
        stats = moments(family, tau)
        ulp = abs(tau) * mp.mpf(2) ** (8 - mp.mp.prec) if tau else mp.mpf(2) ** (8 - mp.mp.prec)
        mean = stats["mean"]
        return {
            "threshold": Estimate(tau, ulp),
            "mass": mass(family, tau),
            "mean": Estimate(mean.value + family.loc, mean.error),
            "variance": stats["variance"],
            "entropy": stats["entropy"],
        }
